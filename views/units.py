"""Consolidated memory units: one speaker's turns about one topic across sessions, grouped ahead
of time, so that one context item can carry evidence scattered over a conversation's history
(the multi-hop case: "where has Mira camped?" has its answers in three sessions months apart).

A unit is a derived view over the evidence index, holding pointers only: its member entry ids,
never their text. The compiler (query/units.py) expands a top hit into the other turns of its
unit, fetched from the index under the asker's visibility and ranked by the question, so a unit
never shows what the asker may not see, and a unit built before an erasure names entries the
index no longer holds (they are simply not found).

Affinity: the same speaker in the same scope (the entity the turns are by) and embedding
similarity: average-linkage agglomerative clustering (scikit-learn) of the turns' MiniLM
vectors at a cosine distance of at most ``DISTANCE``. Kept: groups with turns in at least two
sessions (a group within one session is what a conversation window already shows). Time is not
an affinity here: measured on LoCoMo dev, the turns worth joining are months apart.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from memc.atomic import read_parquet, write_parquet
from memc.filecache import cached
from memc.home import MemcHome
from memc.ids import content_id
from views.audit import Audit

# Bump when the grouping changes: the asset's code version.
UNITS_VERSION = "memory-units-1"

UNITS_FILE = "units.parquet"

# Cosine distance within which average linkage joins two groups. On LoCoMo dev (rules-0.3.0
# homes, 2,000 tokens) 0.5 gave recall 0.857, 0.6 0.865, 0.7 and 0.8 0.868 (docs/context.md).
DISTANCE = 0.5

# Pairwise distances grow with the square of a speaker's turns: a speaker with more turns is
# grouped per block of this many consecutive turns (2,000 turns: a 32 MB distance matrix).
BLOCK = 2000

# Only conversation turns: documents and events have no speaker whose topics recur.
KINDS = ("message",)

# The labels of each block's clustering, by a digest of what decides them (its vectors in order,
# the distance): a block is one speaker's consecutive turns, so a new message changes its
# speaker's last block and no other, and the build groups again only that one. Agglomerative
# clustering was 1.55 s of the view's 2.7 s in a one-message build at 100k entries (py-spy,
# docs/benchmarks.md). Holds the blocks of the last grouping only.
_LABELS: dict[bytes, np.ndarray] = {}

TS = pa.timestamp("us", tz="UTC")

UNITS_SCHEMA = pa.schema(
    [
        pa.field("unit_id", pa.string(), nullable=False),  # content hash of scope, speaker and member ids
        pa.field("scope", pa.string(), nullable=False),
        pa.field("actor", pa.string()),
        pa.field("entry_ids", pa.list_(pa.string()), nullable=False),  # in time order
        pa.field("sessions", pa.int64(), nullable=False),
        pa.field("first_valid_at", TS),
        pa.field("last_valid_at", TS),
    ]
)


def group_units(rows: pa.Table, *, distance: float = DISTANCE, block: int = BLOCK) -> pa.Table:
    """The units of evidence rows (``VectorStore.kind_rows``: entry_id, scope, actor,
    session_id, valid_at, seq, id, vector). One entry counts once (its first chunk). Grain: one
    row per unit, ordered by scope, speaker and first turn."""
    from sklearn.cluster import AgglomerativeClustering  # lazy: only the build groups

    if rows.num_rows == 0:
        return UNITS_SCHEMA.empty_table()
    # The vectors stay one float32 matrix, and the rows Arrow columns taken by position: as dicts
    # (a record per row) they were ~0.5 s of the view's ~1.4 s in a one-message build at 100k.
    vectors = _matrix(rows.column("vector"))
    meta = rows.drop_columns(["vector"]).combine_chunks()
    # One entry counts once: its first chunk by id.
    order = pc.sort_indices(meta, sort_keys=[("entry_id", "ascending"), ("id", "ascending")]).to_numpy()
    ids = meta.column("entry_id").take(order)
    first = np.ones(len(order), dtype=bool)
    first[1:] = pc.not_equal(ids.slice(1), ids.slice(0, len(order) - 1)).to_numpy(zero_copy_only=False)
    kept = meta.take(order[first])
    # Each speaker's turns in time order, speakers one after another.
    turns = pc.sort_indices(kept, sort_keys=[(c, "ascending") for c in ("scope", "actor", "valid_at", "seq", "entry_id")]).to_numpy()
    kept, positions = kept.take(turns), order[first][turns]
    scope, actor, entry = (kept.column(c).to_pylist() for c in ("scope", "actor", "entry_id"))
    sessions = pc.fill_null(pc.dictionary_encode(kept.column("session_id").combine_chunks()).indices, -1).to_numpy(zero_copy_only=False)
    speaker_starts = [i for i in range(len(entry)) if i == 0 or (scope[i], actor[i]) != (scope[i - 1], actor[i - 1])] + [len(entry)]
    made: dict[str, list[Any]] = {"unit_id": [], "scope": [], "actor": [], "entry_ids": [], "sessions": [], "first": [], "last": []}
    labelled: dict[bytes, np.ndarray] = {}
    for lo_speaker, hi_speaker in zip(speaker_starts, speaker_starts[1:]):
        for lo in range(lo_speaker, hi_speaker, block):
            hi = min(lo + block, hi_speaker)
            if hi - lo < 2:
                continue
            matrix = np.ascontiguousarray(vectors[positions[lo:hi]])
            key = hashlib.sha256(f"{distance!r} {matrix.shape} {matrix.dtype}".encode() + matrix.tobytes()).digest()
            labels = _LABELS.get(key)
            if labels is None:
                labels = AgglomerativeClustering(n_clusters=None, distance_threshold=distance, metric="cosine", linkage="average").fit_predict(matrix)
            labelled[key] = labels
            # A group is kept when its turns are in two sessions or more (a null session is one).
            pairs = np.unique(np.stack([labels, sessions[lo:hi]]), axis=1)
            label_of_pair, spread = np.unique(pairs[0], return_counts=True)
            for label, n_sessions in zip(label_of_pair, spread):
                if n_sessions < 2:
                    continue
                members = lo + np.flatnonzero(labels == label)  # in time order
                member_ids = [entry[i] for i in members]
                made["unit_id"].append(content_id("u", scope[lo], actor[lo] or "", *sorted(member_ids)))
                made["scope"].append(scope[lo])
                made["actor"].append(actor[lo])
                made["entry_ids"].append(member_ids)
                made["sessions"].append(int(n_sessions))
                made["first"].append(int(members[0]))
                made["last"].append(int(members[-1]))
    _LABELS.clear()
    _LABELS.update(labelled)
    valid_at = kept.column("valid_at").cast(TS)
    out = pa.table({
        "unit_id": pa.array(made["unit_id"], pa.string()),
        "scope": pa.array(made["scope"], pa.string()),
        "actor": pa.array(made["actor"], pa.string()),
        "entry_ids": pa.array(made["entry_ids"], pa.list_(pa.string())),
        "sessions": pa.array(made["sessions"], pa.int64()),
        "first_valid_at": valid_at.take(pa.array(made["first"], pa.int64())),
        "last_valid_at": valid_at.take(pa.array(made["last"], pa.int64())),
        "speaker": pc.fill_null(pa.array(made["actor"], pa.string()), ""),  # a speaker without a name sorts as ""
    })  # fmt: skip
    order_out = pc.sort_indices(out, sort_keys=[("scope", "ascending"), ("speaker", "ascending"), ("first_valid_at", "ascending"), ("unit_id", "ascending")])
    return out.take(order_out).drop_columns(["speaker"]).cast(UNITS_SCHEMA)


def _matrix(column: pa.ChunkedArray) -> np.ndarray:
    """A column of vectors as a float32 matrix, row i holding row i's vector."""
    vectors = column.combine_chunks()
    if pa.types.is_fixed_size_list(vectors.type):  # the index's own type: no copy per vector
        return vectors.flatten().to_numpy(zero_copy_only=False).astype(np.float32, copy=False).reshape(len(vectors), vectors.type.list_size)
    return np.asarray(vectors.to_pylist(), dtype=np.float32)


def build_units(home: MemcHome, store: Any) -> dict[str, Any]:
    """Group the evidence index's turns into units and write ``<home>/units/units.parquet``."""
    table = group_units(store.kind_rows(KINDS))
    path = home.units / UNITS_FILE
    write_parquet(table, path)
    sizes = [len(ids) for ids in table.column("entry_ids").to_pylist()]
    return {
        "units": table.num_rows,
        "turns": sum(sizes),
        "largest": max(sizes, default=0),
        "path": str(path),
    }


@dataclass(frozen=True)
class Units:
    """The units file, indexed for the compiler: entry id -> unit id, unit id -> member entry ids."""

    unit_of: dict[str, str]
    members: dict[str, list[str]]


def load_units(home: MemcHome) -> Units | None:
    """The last built units (None when none were built), read once per version of the file."""
    path = home.units / UNITS_FILE

    def load() -> Units:
        table = read_parquet(path, columns=["unit_id", "entry_ids"])
        members = dict(zip(table.column("unit_id").to_pylist(), table.column("entry_ids").to_pylist()))
        return Units({e: u for u, ids in members.items() for e in ids}, members)

    return cached("memory_units", [path], load)


def units_sound(units: pa.Table, index_entry_ids: set[str]) -> Audit:
    """Every unit's members exist in the evidence index, span two sessions or more, belong to
    one unit only, and the unit id is the hash of its scope, speaker and members."""
    problems, seen = [], set()
    # Only the columns checked become Python (the two time columns were half of it at 100k).
    for u in units.select(["unit_id", "scope", "actor", "entry_ids", "sessions"]).to_pylist():
        ids = u["entry_ids"]
        if content_id("u", u["scope"], u["actor"] or "", *sorted(ids)) != u["unit_id"]:
            problems.append(f"unit {u['unit_id']}: id is not the hash of its members")
        if u["sessions"] < 2:
            problems.append(f"unit {u['unit_id']}: one session")
        problems += [f"unit {u['unit_id']}: entry {e} not in the index" for e in ids if e not in index_entry_ids]
        problems += [f"unit {u['unit_id']}: entry {e} in two units" for e in ids if e in seen]
        seen.update(ids)
    return Audit.of(problems, units=units.num_rows, turns=len(seen))
