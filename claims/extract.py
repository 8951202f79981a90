"""Run an extractor over ledger entries and split its proposals into claims and rejections."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator

import pyarrow as pa
from pydantic import ValidationError

from claims import rules
from claims.model import CLAIM_SCHEMA, REJECTION_SCHEMA, Proposal
from claims.ontology import ONTOLOGY
from claims.validate import first_failure
from memc.ids import content_id, entity_id

# Evidence kinds an extractor reads; erasure tombstones and the like carry no claims.
EXTRACTABLE_KINDS = ("message", "document", "event", "observation", "correction", "derived_claim")


@dataclass(frozen=True)
class Extractor:
    name: str
    version: str
    propose: Callable[[dict[str, Any]], Iterable[Proposal | dict[str, Any]]]

    @property
    def key(self) -> str:
        """Claims are stored per extractor key, so versions live side by side."""
        return f"{self.name}-{self.version}"


RULES = Extractor(rules.NAME, rules.VERSION, rules.propose)


@dataclass
class ExtractionResult:
    claims: pa.Table
    rejections: pa.Table
    entries_read: int


def extract(entries: Iterable[dict[str, Any]], extractor: Extractor = RULES) -> ExtractionResult:
    claims: dict[str, dict[str, Any]] = {}
    rejections: dict[str, dict[str, Any]] = {}
    n = 0
    for entry in entries:
        if entry["kind"] not in EXTRACTABLE_KINDS:
            continue
        n += 1
        for raw in _proposals(entry, extractor, rejections):
            failure = first_failure(raw, entry if raw.source_entry_id == entry["entry_id"] else None)
            if failure:
                _reject(rejections, extractor, entry, failure[0], failure[1], raw.as_json_dict())
                continue
            cid = raw.claim_id(extractor.name, extractor.version, entry["scope"])
            claims[cid] = {
                "claim_id": cid,
                "extractor": extractor.name,
                "extractor_version": extractor.version,
                "scope": entry["scope"],
                "subject": raw.subject,
                "subject_id": entity_id(entry["scope"], raw.subject),
                "predicate": raw.predicate,
                "object": raw.object,
                "cardinality": ONTOLOGY[raw.predicate].cardinality,
                "valid_at": raw.valid_at,
                "recorded_at": entry["recorded_at"],
                "source_entry_id": entry["entry_id"],
                "source_seq": entry["seq"],
                "source_ref": entry["source_ref"],
                "quote": raw.quote,
                "visibility": sorted(raw.visibility),
                "confidence": raw.confidence,
            }
    return ExtractionResult(
        claims=pa.Table.from_pylist(sorted(claims.values(), key=lambda c: (c["source_seq"], c["claim_id"])), schema=CLAIM_SCHEMA),
        rejections=pa.Table.from_pylist(list(rejections.values()), schema=REJECTION_SCHEMA),
        entries_read=n,
    )


def _proposals(entry: dict[str, Any], extractor: Extractor, rejections: dict[str, dict[str, Any]]) -> Iterator[Proposal]:
    try:
        items = list(extractor.propose(entry))
    except ValidationError as exc:  # the extractor built an ill-typed proposal
        _reject(rejections, extractor, entry, "schema", _pydantic_reason(exc), {"error": str(exc)})
        return
    for item in items:
        if isinstance(item, Proposal):
            yield item
            continue
        try:
            yield Proposal.model_validate(item)
        except ValidationError as exc:
            _reject(rejections, extractor, entry, "schema", _pydantic_reason(exc), item)


def _pydantic_reason(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(map(str, e['loc'])) or 'proposal'}: {e['msg']}" for e in exc.errors())


def _reject(rejections, extractor: Extractor, entry, validator: str, reason: str, proposal: dict[str, Any]) -> None:
    body = json.dumps(proposal, sort_keys=True, default=str)
    pid = content_id("p", extractor.name, extractor.version, entry["entry_id"], validator, body)
    rejections[pid] = {
        "proposal_id": pid,
        "extractor": extractor.name,
        "extractor_version": extractor.version,
        "source_entry_id": entry["entry_id"],
        "source_seq": entry["seq"],
        "validator": validator,
        "reason": reason,
        "proposal": body,
    }
