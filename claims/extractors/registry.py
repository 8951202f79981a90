"""Which extractor runs: ``rules`` (the default: the newest deterministic version, today the clause
extractor over claims/lexicon.toml, ``rules-0.6.4``), ``rules-0.2.0`` (the sentence patterns it
replaced, kept to read and compare the claims it wrote) or ``llm`` (an OpenAI-compatible server),
by name or ``$MEMC_EXTRACTOR``. ``active_extractor_key()`` is the one answer every
reader uses for which claims folder is live: dbt's ``var('extractor_key')``, the evidence
index's and the compiler's claims watermark."""

from __future__ import annotations

import os

from claims.extractors import clauses, rules
from claims.extractors.base import Extractor, ExtractorError

RULES = Extractor(rules.NAME, rules.VERSION, rules.propose, uses_resolver=True, parallel=True)
CLAUSES = Extractor(
    clauses.NAME, clauses.VERSION, clauses.propose, uses_resolver=True, parallel=True, prepare=clauses.prepare, dialogue=clauses.Dialogue
)
# What "rules" and the default name. A home built by an older version re-extracts under the new
# key at its next build (the claims asset's code version is the key), beside the old folder,
# which stays readable (`memc compare`) until it is deleted.
CURRENT_RULES = CLAUSES
# What a command may name as its extractor.
EXTRACTOR_CHOICES = ("rules", RULES.key, CLAUSES.key, "llm")


def active_extractor(name: str | None = None) -> Extractor:
    """The extractor named by ``name`` or ``$MEMC_EXTRACTOR`` (default ``rules``: the newest rules version).

    Read when definitions are built and when a command starts, never at import."""
    name = (name or os.environ.get("MEMC_EXTRACTOR") or "rules").strip().lower()
    # Looked up now, not at import: a new rules version replaces CURRENT_RULES (tests/platform/test_backfill.py).
    deterministic = {"rules": CURRENT_RULES, RULES.key: RULES, CLAUSES.key: CLAUSES, CURRENT_RULES.key: CURRENT_RULES}
    if name in deterministic:
        return deterministic[name]
    if name == "llm":
        from claims.extractors.llm import llm_extractor  # only when asked for: it reads its server's settings

        return llm_extractor()
    raise ExtractorError(f"unknown extractor {name!r} in MEMC_EXTRACTOR (use one of: {', '.join(EXTRACTOR_CHOICES)})")


def active_extractor_key(name: str | None = None) -> str:
    """The key (``<name>-<version>``) under which the active extractor's claims are stored:
    what dbt reads as ``var('extractor_key')``."""
    return active_extractor(name).key
