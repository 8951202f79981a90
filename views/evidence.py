"""Evidence rows for retrieval: ledger entries rendered as searchable text, long ones chunked,
and claims rendered as short sentences ("Elena lives in Berlin (since 2024-05-14)").

One row per chunk or claim; a row id is a hash of its entry (or claim) and its text, so
re-rendering the same ledger gives the same ids and only new text is ever embedded. Claim rows
are extra keys pointing at their source turn: their ``entry_id`` is the claim's source entry, so
the query module fuses and ACL-checks them like the turn itself.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from ledger.schema import IMAGE_CAPTION, LEDGER_SCHEMA
from memc.ids import content_id, entity_id, text_hash
from views.evidence_schema import EVIDENCE_SCHEMA, differing_rows

# Kinds that carry retrievable evidence. Derived claims reach retrieval through the state view.
RETRIEVABLE_KINDS = ("message", "document", "event", "observation", "correction")

# ~200 tokens: MiniLM truncates at 256 word pieces, so a longer chunk would be embedded in part.
CHUNK_CHARS = 800

# Bump when render(), chunk(), exchange_rows() or claim_sentence() change what a row says: it is
# part of the evidence index's code version, so the change marks the index out of date.
RENDER_VERSION = "evidence-rows-3"

CLAIM_KIND = "claim"

# A reply keyed with the question it answers (:func:`exchange_rows`).
EXCHANGE_KIND = "exchange"


def asks(text: str) -> bool:
    """Whether a turn asks something ("How did the move go?"): what a question about it needs is
    then most often the reply (QueryConfig.narrow_after_statement, :func:`exchange_rows`)."""
    return "?" in text


def render(entry: dict[str, Any]) -> str:
    """The text a person would search for: who said it, what, and any shared picture's caption."""
    attrs = json.loads(entry["attributes"] or "{}")
    parts = []
    if attrs.get("subject"):
        parts.append(f"Subject: {attrs['subject']}.")
    parts.append(f"{entry['actor']}: {entry['content']}" if entry["actor"] else entry["content"])
    if attrs.get(IMAGE_CAPTION):
        parts.append(f"[shared a photo: {attrs[IMAGE_CAPTION]}]")
    return " ".join(parts)


def chunk(text: str, limit: int = CHUNK_CHARS) -> list[str]:
    """Split on paragraph, then sentence boundaries, so that no chunk exceeds ``limit`` chars."""
    if len(text) <= limit:
        return [text]
    pieces: list[str] = []
    for para in text.split("\n\n"):
        while len(para) > limit:
            cut = max(para.rfind(". ", 0, limit), para.rfind(" ", 0, limit))
            cut = cut + 1 if cut > 0 else limit
            pieces.append(para[:cut])
            para = para[cut:]
        pieces.append(para)
    chunks: list[str] = []
    for piece in (p.strip() for p in pieces):
        if not piece:
            continue
        if chunks and len(chunks[-1]) + 2 + len(piece) <= limit:
            chunks[-1] += "\n\n" + piece
        else:
            chunks.append(piece)
    return chunks


def mentions_from_entities(entities: pa.Table | None) -> dict[str, list[str]]:
    """entry_id -> sorted entity ids, from the entities mart (each entity lists the entries that
    mention it: the turns it spoke and the sources of claims about it)."""
    if entities is None or entities.num_rows == 0:
        return {}
    return _mentions_of(_mention_pairs(entities))


def _mention_pairs(entities: pa.Table) -> pa.Table:
    """(entity_id, entry_id) for every entry each entity lists, in Arrow."""
    evidence = entities.column("evidence").combine_chunks()
    owners = entities.column("entity_id").combine_chunks().take(pc.list_parent_indices(evidence))
    return pa.table({"entity_id": owners, "entry_id": pc.list_flatten(evidence)})


def _mentions_of(pairs: pa.Table) -> dict[str, list[str]]:
    """entry_id -> sorted entity ids, from (entity_id, entry_id) pairs."""
    out: dict[str, set[str]] = defaultdict(set)
    for ent, e in zip(pairs.column("entity_id").to_pylist(), pairs.column("entry_id").to_pylist()):
        out[e].add(ent)
    return {k: sorted(v) for k, v in out.items()}


# The ledger columns evidence_rows (and render) read: a ledger read of these alone, not every
# column, turned into dicts (``Ledger.iter_entries(columns=...)``).
ENTRY_COLUMNS = [
    "seq", "entry_id", "recorded_at", "valid_at", "kind", "scope", "session_id", "actor", "content",
    "source_ref", "visibility", "attributes",
]  # fmt: skip


# The ledger's types for the columns evidence_rows reads: entries given as dicts are read into them.
ENTRY_SCHEMA = pa.schema([LEDGER_SCHEMA.field(c) for c in ENTRY_COLUMNS])


def _column(table: pa.Table, name: str) -> pa.Array:
    """One column of ``table`` as a single array (nulls where ``table`` lacks it)."""
    if name not in table.column_names:
        return pa.nulls(table.num_rows, EVIDENCE_SCHEMA.field(name).type)
    return table.column(name).combine_chunks()


def _assemble(passed: pa.Table, made: dict[str, list[Any]], renamed: Mapping[str, str] | None = None) -> pa.Table:
    """The rows in EVIDENCE_SCHEMA's order: the columns ``made`` here, the others taken from
    ``passed`` (one row of it per row made; a column of ``renamed`` from the one it names), cast to
    the schema's types. Timestamps and lists pass in Arrow, never as Python objects: converting
    them was most of the time at 100k entries."""
    arrays = []
    for f in EVIDENCE_SCHEMA:
        if f.name in made:
            arrays.append(pa.array(made[f.name], f.type))
        else:
            arrays.append(_column(passed, (renamed or {}).get(f.name, f.name)).cast(f.type))
    visibility = EVIDENCE_SCHEMA.get_field_index("visibility")
    if arrays[visibility].null_count:  # a row without a visibility list has an empty one
        arrays[visibility] = pc.if_else(pc.is_null(arrays[visibility]), pa.scalar([], arrays[visibility].type), arrays[visibility])
    return pa.Table.from_arrays(arrays, schema=EVIDENCE_SCHEMA)


def _tagged(eid: str, kind: str, scope: str, actor: str | None, mentions: Mapping[str, Sequence[str]] | None) -> list[str]:
    """The entity ids an entry's rows carry: the entities it mentions when ``mentions`` is given,
    else a message's speaker alone."""
    if mentions is not None:
        return sorted(mentions.get(eid, ()))
    return [entity_id(scope, actor)] if kind == "message" and actor else []


def evidence_rows(entries: pa.Table | Iterable[dict[str, Any]], mentions: Mapping[str, Sequence[str]] | None = None) -> pa.Table:
    """One row per chunk of each retrievable entry (``entries``: a ledger read holding
    ENTRY_COLUMNS, or dicts with those keys). ``mentions`` (entry_id -> entity ids, see
    :func:`mentions_from_entities`) fills ``entity_ids``; without it a message is tagged with its
    speaker only."""
    table = entries if isinstance(entries, pa.Table) else pa.Table.from_pylist(list(entries), schema=ENTRY_SCHEMA)
    table = table.filter(pc.is_in(table.column("kind"), pa.array(RETRIEVABLE_KINDS)))
    made: dict[str, list[Any]] = {"id": [], "text": [], "content_hash": [], "entity_ids": [], "claim_id": []}
    take: list[int] = []
    read = [table.column(c).to_pylist() for c in ("entry_id", "kind", "scope", "actor", "content", "attributes")]
    for n, (eid, kind, scope, actor, content, attributes) in enumerate(zip(*read)):
        ents = _tagged(eid, kind, scope, actor, mentions)
        for i, text in enumerate(chunk(render({"attributes": attributes, "actor": actor, "content": content}))):
            h = text_hash(text)
            take.append(n)
            made["id"].append(content_id("ch", eid, i, h))
            made["text"].append(text)
            made["content_hash"].append(h)
            made["entity_ids"].append(ents)
    made["claim_id"] = [None] * len(take)
    return _assemble(table.take(pa.array(take, pa.int64())), made)


def exchange_rows(entries: pa.Table, mentions: Mapping[str, Sequence[str]] | None = None) -> pa.Table:
    """One row per reply to a question: a message whose turn before it in its session (in the
    order windows show them: valid time, then seq) is another speaker's and asks something,
    rendered as both turns ("Ines: How was the plum cake? Omar: Lovely! Moist and tart."),
    pointing at the reply's entry. A reply says "Lovely!" and the words a later question uses
    ("the plum cake he baked") are in the question it answers; the
    turns' searches rank these keys with the turns (QueryConfig.exchange_fulltext and
    exchange_vector; measured in docs/context.md). Only where both turns have the same scope and
    visibility, so that no one reaches a turn through words they may not see; an erased turn is
    no message any more (ledger/stubs.py), so no key holds its words after the rebuild."""
    table = entries.filter(pc.equal(entries.column("kind"), "message")) if entries.num_rows else entries
    if table.num_rows == 0:
        return EVIDENCE_SCHEMA.empty_table()
    cols = ("entry_id", "session_id", "scope", "actor", "content", "attributes", "visibility", "valid_at", "seq")
    rows = list(zip(*(table.column(c).to_pylist() for c in cols)))
    order = sorted(range(len(rows)), key=lambda i: (rows[i][1] or "", rows[i][7], rows[i][8], rows[i][0]))
    made: dict[str, list[Any]] = {"id": [], "text": [], "content_hash": [], "entity_ids": []}
    take: list[int] = []
    for before, at in zip(order, order[1:]):
        (eid, session, scope, actor, content, attributes, visibility, _, _) = rows[at]
        (prev_eid, prev_session, prev_scope, prev_actor, prev_content, prev_attributes, prev_visibility, _, _) = rows[before]
        if not session or session != prev_session or scope != prev_scope or actor == prev_actor:
            continue
        if sorted(visibility or ()) != sorted(prev_visibility or ()) or not asks(prev_content or ""):
            continue
        question = render({"attributes": prev_attributes, "actor": prev_actor, "content": prev_content})
        text = f"{question} {render({'attributes': attributes, 'actor': actor, 'content': content})}"
        h = text_hash(text)
        take.append(at)
        made["id"].append(content_id("ex", eid, prev_eid, h))
        made["text"].append(text)
        made["content_hash"].append(h)
        made["entity_ids"].append(_tagged(eid, "message", scope, actor, mentions))
    if not take:
        return EVIDENCE_SCHEMA.empty_table()
    made["kind"] = [EXCHANGE_KIND] * len(take)
    made["claim_id"] = [None] * len(take)
    return _assemble(table.take(pa.array(take, pa.int64())), made)


def claim_sentence(claim: Mapping[str, Any]) -> str:
    """``Elena lives in Berlin (since 2024-05-14)``: what a person would type, plus the valid time
    (functional predicates hold *since* it; multi-valued ones were stated *as of* it)."""
    verb = str(claim["predicate"]).replace("_", " ")
    when = claim["valid_at"]
    day = when.date().isoformat() if isinstance(when, datetime) else str(when)[:10]
    if claim.get("polarity") == "retract":
        # A retraction closes a claim: rendering it as the claim itself would assert the opposite.
        return f"{claim['subject']} no longer {verb} {claim['object']} (from {day})"
    since = "since" if claim.get("cardinality", "functional") == "functional" else "as of"
    return f"{claim['subject']} {verb} {claim['object']} ({since} {day})"


# Claims whose whole object the source entry's own indexed text already holds: an identifier is in
# the turn's text, where full text finds it; a shared picture's caption is rendered with the turn
# (:func:`render`). A sentence of the claim beside it would rank the same words twice.
SAID_WITH_THE_SOURCE = ("mentions_identifier", "shared_photo")


def claim_rows(claims: pa.Table | Iterable[Mapping[str, Any]], known_entities: Iterable[str] = ()) -> pa.Table:
    """One row per claim, rendered by :func:`claim_sentence`, with the claim's own scope,
    visibility (never broader than its source's) and valid/recorded time. ``entity_ids`` holds the
    subject and, when the object is an entity too (``object_id``, or a name in
    ``known_entities``), the object."""
    known = set(known_entities)
    table = claims if isinstance(claims, pa.Table) else pa.Table.from_pylist(list(claims))
    table = table.filter(pc.invert(pc.is_in(table.column("predicate"), pa.array(SAID_WITH_THE_SOURCE)))) if table.num_rows else table
    n = table.num_rows
    if n == 0:
        return EVIDENCE_SCHEMA.empty_table()

    def values(name: str, default: Any = None) -> list[Any]:
        return table.column(name).to_pylist() if name in table.column_names else [default] * n

    # The sentence's day, as claim_sentence renders a datetime's: its date in UTC, the zone claims keep.
    when = table.column("valid_at")
    days = pc.strftime(when, format="%Y-%m-%d").to_pylist() if pa.types.is_timestamp(when.type) else when.to_pylist()
    made: dict[str, list[Any]] = {"id": [], "text": [], "content_hash": [], "entity_ids": []}
    read = zip(values("claim_id"), values("predicate"), values("subject"), values("object"), values("polarity"),
               values("cardinality", "functional"), days, values("subject_id"), values("object_id"), values("scope"))  # fmt: skip
    for claim_id, predicate, subject, obj, polarity, cardinality, day, subject_id, object_id, scope in read:
        claim = {"predicate": predicate, "subject": subject, "object": obj, "valid_at": day, "polarity": polarity, "cardinality": cardinality}
        text = claim_sentence(claim)
        h = text_hash(text)
        ents = {subject_id}
        other = object_id or entity_id(scope, obj)
        if object_id or other in known:
            ents.add(other)
        made["id"].append(content_id("cl", claim_id, h))
        made["text"].append(text)
        made["content_hash"].append(h)
        made["entity_ids"].append(sorted(ents))
    made["kind"] = [CLAIM_KIND] * n
    made["session_id"] = made["actor"] = [None] * n
    made["claim_id"] = values("claim_id")
    return _assemble(table, made, {"entry_id": "source_entry_id", "seq": "source_seq"})


def index_rows(
    entries: pa.Table | Iterable[dict[str, Any]],
    claims: pa.Table | None = None,
    entities: pa.Table | None = None,
) -> pa.Table:
    """Everything the evidence index holds: entry chunks, replies keyed with their questions, then
    claim sentences, sorted by id (the same inputs give the same table, whatever order they came
    in)."""
    mentions = mentions_from_entities(entities) if entities is not None else None
    known = set(entities.column("entity_id").to_pylist()) if entities is not None and entities.num_rows else set()
    table = entries if isinstance(entries, pa.Table) else pa.Table.from_pylist(list(entries), schema=ENTRY_SCHEMA)
    parts = [evidence_rows(table, mentions), exchange_rows(table, mentions)]
    if claims is not None and claims.num_rows:
        parts.append(claim_rows(claims, known))
    out = pa.concat_tables(parts)
    return out.sort_by([("id", "ascending")]) if out.num_rows else out


# ``index_rows``' inputs: (ledger entries, claims or None, the entities mart's entity_id and
# evidence or None), as views/build.py reads them.
IndexInputs = tuple[pa.Table, "pa.Table | None", "pa.Table | None"]


def _only_in(a: pa.Table, b: pa.Table) -> set[str]:
    """The entry ids of the (entity, entry) pairs ``a`` holds and ``b`` does not."""
    return set(a.join(b, keys=["entity_id", "entry_id"], join_type="left anti").column("entry_id").to_pylist())


def _keyed_changes(after: pa.Table, before: pa.Table, key: str) -> tuple[list[str], list[str]] | None:
    """(keys of ``after`` new or changed in any column, keys ``before`` held and ``after`` does not),
    or None when the two cannot be compared row by row (other columns, or a key held twice)."""
    if after.schema != before.schema or any(pc.count_distinct(t.column(key)).as_py() != t.num_rows for t in (after, before)):
        return None
    if after.num_rows >= before.num_rows and after.slice(0, before.num_rows).equals(before):
        return after.column(key).slice(before.num_rows).to_pylist(), []  # only appended: the usual case
    gone, _, added = differing_rows(after, before, key=key, columns=after.column_names)
    return after.column(key).take(pa.array(added, pa.int64())).to_pylist(), gone


def _isin(table: pa.Table, column: str, values: Iterable[Any]) -> pa.Array:
    return pc.fill_null(pc.is_in(table.column(column), pa.array(list(values), table.schema.field(column).type)), False)


def index_rows_since(before: IndexInputs, rows: pa.Table, after: IndexInputs) -> pa.Table:
    """``index_rows(*after)``, given ``rows == index_rows(*before)``: only what changed is rendered
    again. At 100k entries rendering every entry, reply and claim takes ~4 s (their ids' canonical
    JSON digests a third of it), and a new message changes a few rows.

    Each row depends on little: an entry's chunks on the entry and the entities the mart lists it
    under; a reply's key on the turns of its session; a claim's sentence on the claim and, when
    its object has no id, on whether the object names a known entity. So the rows kept are those
    of entries, sessions and claims whose inputs compare equal (row by row in Arrow: an erased or
    corrected entry changes too), and the rest are made as :func:`index_rows` makes them. Inputs
    that cannot be compared so (another layout, claims or the mart appearing or gone) are rendered
    whole."""
    (entries0, claims0, entities0), (entries1, claims1, entities1) = before, after
    if not (isinstance(entries0, pa.Table) and isinstance(entries1, pa.Table)) or (claims0 is None) != (claims1 is None) or (entities0 is None) != (entities1 is None):
        return index_rows(*after)
    entry_changes = _keyed_changes(entries1, entries0, "entry_id")
    claim_changes = _keyed_changes(claims1, claims0, "claim_id") if claims1 is not None and claims0 is not None else ([], [])
    if entry_changes is None or claim_changes is None:
        return index_rows(*after)
    (touched, gone), (claims_touched, claims_gone) = entry_changes, claim_changes
    entries = set(touched) | set(gone)
    known: set[str] = set()
    mentions: dict[str, list[str]] | None = None
    if entities1 is not None and entities0 is not None:
        pairs, pairs0 = _mention_pairs(entities1), _mention_pairs(entities0)
        entries |= _only_in(pairs, pairs0) | _only_in(pairs0, pairs)
        known = set(entities1.column("entity_id").to_pylist())
        newly = known ^ set(entities0.column("entity_id").to_pylist())
        if newly and claims1 is not None:  # claims whose object without an id is an entity now, or no longer
            free = claims1.filter(pc.is_null(claims1.column("object_id")))
            read = zip(*(free.column(c).to_pylist() for c in ("claim_id", "scope", "object")))
            claims_touched = sorted(set(claims_touched) | {c for c, scope, obj in read if entity_id(scope, obj) in newly})
    # Replies are keyed by session: every session that held or holds a changed entry is keyed again.
    sessions = {s for t in (entries0, entries1) for s in t.filter(_isin(t, "entry_id", entries)).column("session_id").to_pylist() if s}
    chunked = entries1.filter(_isin(entries1, "entry_id", entries))
    replies = entries1.filter(_isin(entries1, "session_id", sessions))
    if entities1 is not None:
        wanted = set(chunked.column("entry_id").to_pylist()) | set(replies.column("entry_id").to_pylist())
        mentions = _mentions_of(pairs.filter(_isin(pairs, "entry_id", wanted)))
    kinds = rows.column("kind")
    drop = pc.or_(
        pc.and_(_isin(rows, "entry_id", entries), pc.invert(pc.is_in(kinds, pa.array([CLAIM_KIND, EXCHANGE_KIND])))),
        pc.or_(
            pc.and_(pc.equal(kinds, EXCHANGE_KIND), _isin(rows, "session_id", sessions)),
            pc.and_(pc.equal(kinds, CLAIM_KIND), _isin(rows, "claim_id", set(claims_touched) | set(claims_gone))),
        ),
    )
    parts = [rows.filter(pc.invert(pc.fill_null(drop, False))), evidence_rows(chunked, mentions), exchange_rows(replies, mentions)]
    if claims1 is not None and claims_touched:
        parts.append(claim_rows(claims1.filter(_isin(claims1, "claim_id", claims_touched)), known))
    out = pa.concat_tables([p.cast(EVIDENCE_SCHEMA) for p in parts])
    return out.sort_by([("id", "ascending")]) if out.num_rows else out

