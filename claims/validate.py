"""Deterministic validators: nothing reaches the claims table without passing all of them.

Each returns None when the proposal passes, or a reason. Order matters only for the report:
the first failing validator is the one recorded.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Callable

from claims.model import Proposal
from claims.ontology import ONTOLOGY
from ledger.schema import PUBLIC

Validator = Callable[[Proposal, dict[str, Any] | None], str | None]

_EARLIEST = datetime(1900, 1, 1, tzinfo=timezone.utc)
_LATEST = datetime(2200, 1, 1, tzinfo=timezone.utc)


def ontology(p: Proposal, source: dict[str, Any] | None) -> str | None:
    if p.predicate not in ONTOLOGY:
        return f"unknown predicate {p.predicate!r} (known: {', '.join(sorted(ONTOLOGY))})"
    return None


def provenance(p: Proposal, source: dict[str, Any] | None) -> str | None:
    if source is None:
        return f"source entry {p.source_entry_id} is not in the ledger"
    if p.quote not in source["content"]:
        return f"quote {p.quote[:60]!r} does not occur verbatim in entry {p.source_entry_id}"
    return None


def policy(p: Proposal, source: dict[str, Any] | None) -> str | None:
    src = set(source["visibility"] or ()) if source else set()
    if not src:
        return "source entry has no visibility: nothing may be derived from it"
    if PUBLIC in src:
        return None
    broader = set(p.visibility) - src
    if broader:
        return f"visibility {sorted(p.visibility)} is broader than the source's {sorted(src)}"
    return None


def temporal(p: Proposal, source: dict[str, Any] | None) -> str | None:
    if not (_EARLIEST <= p.valid_at < _LATEST):
        return f"valid time {p.valid_at.isoformat()} is outside 1900..2200"
    return None


VALIDATORS: list[tuple[str, Validator]] = [
    ("ontology", ontology),
    ("provenance", provenance),
    ("policy", policy),
    ("temporal", temporal),
]


def first_failure(p: Proposal, source: dict[str, Any] | None) -> tuple[str, str] | None:
    for name, check in VALIDATORS:
        reason = check(p, source)
        if reason:
            return name, reason
    return None
