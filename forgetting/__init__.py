"""Forgetting: erasure with a full cascade.

    from forgetting import forget, ForgetReport
    report = forget(home, entry_ids=["e_..."], reason="user request #41", by="alice")
    report.to_dict()   # JSON-able: erasure id, erased ids, what was purged, seconds per step

``forget(home, *, entry_ids=(), source_uri=None, scope=None, subject=None, reason, by,
rebuild=None) -> ForgetReport`` takes exactly one kind of selector (entry ids; a source URI or
path; a scope; a subject entity id ``ent_...``) and raises ValueError with a clear message when
none or several are given, when an id is malformed or unknown, or when ``reason``/``by`` is
empty or malformed. It appends an erasure tombstone (who, when, why, which ids; visible to
administrators only), from which moment no compile serves the erased entries; then it purges
them physically: the ledger files that held them are rewritten with stubs in their place, files
no id leads to (inbox archives, Dagster's run storage and logs) are scrubbed, every view is
dropped and, with a ``rebuild`` (``orchestration.runner.rebuild_views``), compiled again from the purged ledger through Dagster. Derived
entries whose inputs include an erased entry are erased with it (and recomputed by the rebuild).
See :mod:`forgetting.cascade` for the journal that makes a killed erasure resumable, and
``resume(home)`` to finish interrupted ones (``forget`` does that first).

Authorisation is the caller's: the API lets only admin keys forget; the CLI trusts its user.
Decay (older, unused memories ranking lower) is not forgetting and deletes nothing.
"""

from forgetting.cascade import STEPS, ForgetReport, Rebuild, forget, journals, pending, resume

__all__ = ["STEPS", "ForgetReport", "Rebuild", "forget", "journals", "pending", "resume"]
