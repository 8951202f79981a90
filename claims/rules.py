"""The rule-based extractor: deterministic patterns over first-person statements, no model.

It proposes (subject, predicate, object) with the matched span as the quote, so provenance
holds by construction; the validators still check it like any other extractor's output.
"""

from __future__ import annotations

import json
import re
from typing import Any, Iterator

from claims.model import Proposal

NAME = "rules"
VERSION = "0.1.0"

# A capitalised name of one to four words ("Berlin", "Helio Labs", "Northwind Studio").
_PROPER = r"(?P<obj>[A-Z][\w'\-]*(?:\s+[A-Z][\w'\-]*){0,3})"
_PHRASE = r"(?P<obj>[^.,!?;]{2,80})"

_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("lives_in", re.compile(rf"\bI(?: now)? (?:live|am living|'m living) in {_PROPER}")),
    ("lives_in", re.compile(rf"\bI (?:just |recently )?moved to {_PROPER}")),
    ("works_at", re.compile(rf"\bI (?:work|am working|'m working) (?:at|for) {_PROPER}")),
    ("works_at", re.compile(rf"\bI (?:started working at|started at|joined) {_PROPER}")),
    ("likes", re.compile(rf"\bI (?:really )?(?:like|love|enjoy) {_PHRASE}")),
    ("plans", re.compile(rf"\bI(?: am|'m) planning {_PHRASE}")),
    (
        "has_relative",
        re.compile(r"\b[Mm]y (?:sister|brother|mother|father|wife|husband|partner|son|daughter|cousin) (?P<obj>[A-Z]\w+)"),
    ),
]
_IDENTIFIER = re.compile(r"\b[A-Z]{2,5}-\d{3,}\b")
_LEADING_ARTICLE = re.compile(r"^(?:a|an|the)\s+", re.I)


def propose(entry: dict[str, Any]) -> Iterator[Proposal]:
    """Proposals for one ledger entry (a dict with the ledger's columns)."""
    base = dict(
        valid_at=entry["valid_at"],
        source_entry_id=entry["entry_id"],
        visibility=tuple(entry["visibility"] or ()),
        confidence=min(float(entry["confidence"]), 0.9),  # a regex is never surer than its source
    )
    if entry["kind"] == "derived_claim":
        yield from _from_derived(entry, base)
        return
    text, actor = entry["content"], entry["actor"]
    if entry["kind"] == "message" and actor:
        for predicate, pattern in _PATTERNS:
            for m in pattern.finditer(text):
                obj = _LEADING_ARTICLE.sub("", m.group("obj").strip())
                yield Proposal(subject=actor, predicate=predicate, object=obj, quote=m.group(0), **base)
    subject = actor or entry["source_ref"] or entry["entry_id"]
    for m in _IDENTIFIER.finditer(text):
        yield Proposal(subject=subject, predicate="mentions_identifier", object=m.group(0), quote=m.group(0), **base)


def _from_derived(entry: dict[str, Any], base: dict[str, Any]) -> Iterator[Proposal]:
    # A derived entry states its claim in its attributes; the whole content is the quote.
    attrs = json.loads(entry["attributes"] or "{}")
    if {"subject", "predicate", "object"} <= attrs.keys():
        yield Proposal(
            subject=str(attrs["subject"]),
            predicate=str(attrs["predicate"]),
            object=str(attrs["object"]),
            quote=entry["content"],
            **{**base, "confidence": float(entry["confidence"])},
        )
