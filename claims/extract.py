"""Run an extractor over ledger entries and split its proposals into claims and rejections.

Which extractor is active is configuration: ``MEMC_EXTRACTOR`` = ``rules`` (the default: the
newest rules version), a version's key (``rules-0.2.0``) or ``llm`` (an OpenAI-compatible
chat-completions server, see ``claims.extractors.llm``). Claims are stored per extractor key
(``<name>-<version>``), so switching or upgrading writes beside the old claims.
"""

from __future__ import annotations

import json
import multiprocessing
import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any, Iterable, Iterator

import pyarrow as pa
from pydantic import ValidationError

from claims.extractors.base import EXTRACTORS, Extractor, ExtractorError, UnusableAnswer
from claims.extractors.registry import CURRENT_RULES, RULES, active_extractor, active_extractor_key
from claims.model import CLAIM_SCHEMA, REJECTION_SCHEMA, Proposal
from claims.ontology import ONTOLOGY
from claims.resolve import Resolver
from claims.validate import first_failure
from memc.ids import content_id

# Evidence kinds an extractor reads; erasure tombstones and the like carry no claims.
EXTRACTABLE_KINDS = ("message", "document", "event", "observation", "correction", "derived_claim")

# The extractors themselves live in claims/extractors/; their names are re-exported here for the
# callers that run the pass and pick the extractor in one place.
__all__ = [
    "CURRENT_RULES", "EXTRACTABLE_KINDS", "EXTRACTORS", "RULES", "ExtractionResult", "Extractor", "ExtractorError",
    "UnusableAnswer", "active_extractor", "active_extractor_key", "extract", "extract_workers",
]  # fmt: skip


@dataclass
class ExtractionResult:
    claims: pa.Table
    rejections: pa.Table
    entries_read: int


# The order of a pass's tables, whether one process or several wrote them (a rejection always
# carries its entry's seq).
CLAIM_ORDER = [("source_seq", "ascending"), ("claim_id", "ascending")]
REJECTION_ORDER = [("source_seq", "ascending"), ("proposal_id", "ascending")]

# Below this many entries a pass runs in this process: forking workers and sending them the
# entries costs ~0.1 s, which ~1,000 entries (0.6 s at the clause extractor's ~1,600/s) do not
# earn back (benchmarks/bench_extract.py measures both).
PARALLEL_MIN_ENTRIES = 1_000


def extract_workers() -> int:
    """Worker processes a large pass uses: ``$MEMC_EXTRACT_WORKERS``, else one per core."""
    raw = os.environ.get("MEMC_EXTRACT_WORKERS", "").strip()
    if raw:
        try:
            return max(1, int(raw))
        except ValueError:
            raise ExtractorError(f"MEMC_EXTRACT_WORKERS must be a whole number of processes, got {raw!r}") from None
    return max(1, os.cpu_count() or 1)


def extract(
    entries: Iterable[dict[str, Any]], extractor: Extractor = CURRENT_RULES, resolver: Resolver | None = None, *, workers: int = 1
) -> ExtractionResult:
    """Proposals of ``extractor`` for ``entries``, each passed through every validator.

    ``resolver`` maps names to canonical entities (subject_id, object_id); without one every
    name is its own entity (``memc.ids.entity_id``). With ``workers`` > 1 a deterministic
    extractor's pass over at least PARALLEL_MIN_ENTRIES entries is split over that many forked
    processes, in contiguous chunks; the result is the same table as one process gives."""
    if resolver is None:
        resolver = Resolver()
    if workers > 1 and extractor.parallel and "fork" in multiprocessing.get_all_start_methods():
        entries = list(entries)
        if len(entries) >= PARALLEL_MIN_ENTRIES:
            return _extract_forked(entries, extractor, resolver, workers)
    claims: dict[str, dict[str, Any]] = {}
    rejections: dict[str, dict[str, Any]] = {}
    dialogue = extractor.dialogue() if extractor.dialogue is not None else None
    read: dict[str, dict[str, Any]] = {}  # the entries read so far: what a claim's subject entry may be
    last: dict[tuple[Any, Any], dict[str, Any]] = {}  # each session's turn just before: what an answer's question may be
    n = 0
    for entry in entries:
        if entry["kind"] not in EXTRACTABLE_KINDS:
            continue
        n += 1
        scope = entry["scope"]
        previous = last.get(_session(entry)) if entry.get("session_id") else None
        for raw in _proposals(entry, extractor, resolver, rejections, dialogue):
            antecedent = read.get(raw.subject_entry_id) if raw.subject_entry_id else None
            question = previous if previous is not None and raw.question_entry_id == previous["entry_id"] else None
            failure = first_failure(raw, entry if raw.source_entry_id == entry["entry_id"] else None, resolver, antecedent, question)
            if failure:
                _reject(rejections, extractor, entry, failure[0], failure[1], raw.as_json_dict())
                continue
            cid = raw.claim_id(extractor.name, extractor.version, scope)
            pred = ONTOLOGY[raw.predicate]
            claims[cid] = {
                "claim_id": cid,
                "extractor": extractor.name,
                "extractor_version": extractor.version,
                "scope": scope,
                "subject": raw.subject,
                "subject_id": resolver.entity_id(scope, raw.subject),
                "predicate": raw.predicate,
                "object": raw.object,
                "cardinality": pred.cardinality,
                "valid_at": raw.valid_at,
                "recorded_at": entry["recorded_at"],
                "source_entry_id": entry["entry_id"],
                "source_seq": entry["seq"],
                "source_ref": entry["source_ref"],
                "quote": raw.quote,
                "visibility": sorted(raw.visibility),
                "confidence": raw.confidence,
                "polarity": raw.polarity,
                "time_phrase": raw.time_phrase,
                "object_id": resolver.entity_id(scope, raw.object) if pred.object_type == "person" else None,
                "asserted_by": raw.asserted_by,
                "asserted_by_id": _asserter_id(resolver, scope, raw.asserted_by or entry.get("actor")),
                "subject_entry_id": raw.subject_entry_id,
                "question_entry_id": raw.question_entry_id,
                "question_quote": raw.question_quote,
            }
        if dialogue is not None:
            read[entry["entry_id"]] = entry
            if entry.get("session_id"):
                last[_session(entry)] = entry
    return ExtractionResult(
        claims=pa.Table.from_pylist(list(claims.values()), schema=CLAIM_SCHEMA).sort_by(CLAIM_ORDER),
        rejections=pa.Table.from_pylist(list(rejections.values()), schema=REJECTION_SCHEMA).sort_by(REJECTION_ORDER),
        entries_read=n,
    )


def _extract_forked(entries: list[dict[str, Any]], extractor: Extractor, resolver: Resolver, workers: int) -> ExtractionResult:
    # fork, not spawn: a worker starts with this process's loaded pipeline and lexicon (spawn
    # would import spaCy and load its tables again, ~2-4 s per worker), loaded here first when
    # this process had not (``prepare``). The workers run only this pure function and exit
    # with the pool.
    if extractor.prepare is not None:
        extractor.prepare()
    size = -(-len(entries) // workers)
    cuts = [0]
    while cuts[-1] + size < len(entries):
        cut = cuts[-1] + size
        if extractor.dialogue is not None:  # a session's turns stay in one chunk: what it named carries over
            while cut < len(entries) and _session(entries[cut]) == _session(entries[cut - 1]):
                cut += 1
        cuts.append(cut)
    chunks = [entries[a:b] for a, b in zip(cuts, [*cuts[1:], len(entries)]) if a < b]
    with ProcessPoolExecutor(len(chunks), mp_context=multiprocessing.get_context("fork")) as pool:
        parts = list(pool.map(extract, chunks, [extractor] * len(chunks), [resolver] * len(chunks)))
    # Chunks hold whole entries and ids name their entry, so no claim comes from two chunks;
    # sorted as one pass sorts them.
    return ExtractionResult(
        claims=pa.concat_tables([p.claims for p in parts]).sort_by(CLAIM_ORDER),
        rejections=pa.concat_tables([p.rejections for p in parts]).sort_by(REJECTION_ORDER),
        entries_read=sum(p.entries_read for p in parts),
    )


def _session(entry: dict[str, Any]) -> tuple[Any, Any]:
    return entry["scope"], entry.get("session_id")


def _asserter_id(resolver: Resolver, scope: str, name: str | None) -> str | None:
    return resolver.entity_id(scope, name) if name and name.strip() else None


def _proposals(
    entry: dict[str, Any], extractor: Extractor, resolver: Resolver, rejections: dict[str, dict[str, Any]], dialogue: Any = None
) -> Iterator[Proposal]:
    try:
        if dialogue is not None:
            items = list(extractor.propose(entry, resolver, dialogue=dialogue))
        else:
            items = list(extractor.propose(entry, resolver) if extractor.uses_resolver else extractor.propose(entry))
    except ValidationError as exc:  # the extractor built an ill-typed proposal
        _reject(rejections, extractor, entry, "schema", _pydantic_reason(exc), {"error": str(exc)})
        return
    except UnusableAnswer as exc:
        _reject(rejections, extractor, entry, "schema", str(exc), {"answer": exc.raw[:4000]})
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


def _reject(rejections, extractor: Extractor, entry, validator: str, reason: str, proposal: Any) -> None:
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
        "scope": entry["scope"],
        "source_ref": entry.get("source_ref"),
    }
