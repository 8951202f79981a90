"""The entity dossiers: for the entities the query profile (views/profile.py) says are asked
about most, every state_current and conflicts row about them and their 1-hop neighbours,
compiled against one state build; the name index beside them; and the audit that proves a
dossier equals the marts it was compiled from. How the compiler uses them: views/profile.py.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa

from memc.atomic import read_parquet, write_parquet
from memc.filecache import cached
from memc.home import MemcHome
from memc.watermark import read_watermark, write_watermark
from views.build import graph_store
from views.marts import CONFLICTS, STATE_CURRENT, mart_path, read_mart
from views.profile import META_KEY, read_profile
from views.state_index import SubjectIndex, numbered

DOSSIER_VERSION = "entity-dossiers-1"

DOSSIER_FILE = "dossiers.parquet"

NAMES_FILE = "subject_names.parquet"

# SubjectIndex are small (the sample's Elena: 9 facts); twenty cover the head of a skewed profile.
DEFAULT_TOP_N = 20

# Asked about once is not a pattern.
DEFAULT_MIN_ASKED = 2

NEIGHBOUR_TYPE = pa.struct(
    [
        pa.field("entity_id", pa.string()),
        pa.field("scope", pa.string()),
        pa.field("name", pa.string()),
        pa.field("visibility", pa.list_(pa.string())),
        pa.field("edge_evidence", pa.list_(pa.string())),  # ledger entry ids: ACL-filter before showing
        pa.field("edge_weight", pa.int64()),
        pa.field("relations", pa.list_(pa.string())),  # predicates of the claims linking them
    ]
)


def _file_sig(path: Path) -> list[int] | None:
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return [st.st_size, st.st_mtime_ns]


def state_identity(home: MemcHome) -> dict[str, Any] | None:
    """Which state build the marts hold now: the watermark and build time the state asset
    recorded, and the size and mtime of the two marts a dossier copies rows from. A dossier is
    used only while this equals the identity it was compiled from (the watermark alone does not
    change when the state is rebuilt at the same ledger head, e.g. by a new extractor)."""
    mark = read_watermark(home.warehouse)
    if mark is None:
        return None
    return {
        "watermark": int(mark["watermark"]),
        "built_at": mark.get("built_at"),
        "state_current": _file_sig(mart_path(home, STATE_CURRENT)),
        "conflicts": _file_sig(mart_path(home, CONFLICTS)),
    }


def _lists(table: pa.Table, key: str, ids: Sequence[str]) -> pa.Array:
    """One list per id of ``ids``: the rows of ``table`` whose ``key`` column is that id, in file
    order, as structs of every column (types kept exactly: no round trip through Python)."""
    positions: dict[str, list[int]] = {i: [] for i in ids}
    for pos, v in enumerate(table.column(key).to_pylist()):
        if v in positions:
            positions[v].append(pos)
    offsets, take = [0], []
    for i in ids:
        take += positions[i]
        offsets.append(len(take))
    taken = table.take(pa.array(take, pa.int64()))
    structs = pa.StructArray.from_arrays([c.combine_chunks() for c in taken.columns], fields=list(taken.schema))
    return pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), structs)


def _neighbours(home: MemcHome, hot: list[dict[str, Any]]) -> tuple[list[list[dict[str, Any]] | None], str]:
    """1-hop neighbours of each hot entity in its scope (no principal filter: every reader filters
    by visibility itself), or None each when the graph is not built or cannot be opened."""

    # Opened once for all hot entities and closed below (each call opening the database itself
    # cost ~30 ms a hot entity).
    store = graph_store(home, keep_open=True)
    if not store.exists():
        return [None] * len(hot), "no graph"
    out: list[list[dict[str, Any]] | None] = []
    try:
        for h in hot:
            out.append(
                [
                    {k: n.get(k) for k in NEIGHBOUR_TYPE.names}
                    for n in store.neighbours([h["entity_id"]], depth=1, scope=h["scope"])
                ]
            )
    except Exception as exc:  # another process holds Kùzu's write lock: dossiers without neighbours
        return [None] * len(hot), f"graph unavailable: {type(exc).__name__}: {exc}"[:300]
    finally:
        store.close()
    graph = read_watermark(home.graph) or {}
    return out, f"entity_graph at {graph.get('watermark')}"


def hot_entities(profile: pa.Table, *, top_n: int = DEFAULT_TOP_N, min_asked: int = DEFAULT_MIN_ASKED) -> list[dict[str, Any]]:
    """The profile's first ``top_n`` rows asked about at least ``min_asked`` times."""
    rows = sorted(profile.to_pylist(), key=lambda r: r["rank"])
    return [r for r in rows if r["asked"] >= min_asked][:top_n]


def build_dossiers(
    home: MemcHome,
    profile: pa.Table,
    *,
    top_n: int = DEFAULT_TOP_N,
    min_asked: int = DEFAULT_MIN_ASKED,
    identity: dict[str, Any] | None = None,
) -> pa.Table:
    """One dossier per hot entity: its state_current rows (``facts``), its conflicts rows
    (``conflicts``), both in mart order with every column, and its 1-hop graph neighbours
    (``neighbours``; null without a graph). The schema metadata names the state build
    (``identity``, default: the current one) and says how the neighbours were found."""
    state_path = mart_path(home, STATE_CURRENT)
    if not state_path.exists():
        raise FileNotFoundError(f"no state_current mart under {home.marts}: build the state models first")
    identity = identity or state_identity(home)
    state = numbered(read_mart(state_path))
    conflicts_path = mart_path(home, CONFLICTS)
    conflicts = numbered(read_mart(conflicts_path)) if conflicts_path.exists() else None
    hot = hot_entities(profile, top_n=top_n, min_asked=min_asked)
    ids = [h["entity_id"] for h in hot]
    neighbours, graph_note = _neighbours(home, hot) if hot else ([], "no hot entities")
    columns: dict[str, Any] = {
        "entity_id": pa.array(ids, pa.string()),
        "scope": pa.array([h["scope"] for h in hot], pa.string()),
        "entity": pa.array([h["entity"] for h in hot], pa.string()),
        "rank": pa.array([h["rank"] for h in hot], pa.int64()),
        "asked": pa.array([h["asked"] for h in hot], pa.int64()),
        "facts": _lists(state, "subject_id", ids),
    }
    if conflicts is not None:
        columns["conflicts"] = _lists(conflicts, "subject_id", ids)
    columns["neighbours"] = pa.array(neighbours, pa.list_(NEIGHBOUR_TYPE))
    meta = {"state": identity, "graph": graph_note, "version": DOSSIER_VERSION, "top_n": top_n, "min_asked": min_asked}
    return pa.table(columns).replace_schema_metadata({META_KEY: json.dumps(meta)})


def subject_names(home: MemcHome, *, identity: dict[str, Any] | None = None) -> pa.Table:
    """The name index: every (case-folded subject name, subject id) of state_current. The compiler
    names a subject when the folded name is a word of the question; this says which subject ids
    a word can name, hence whether the dossiers hold all of them."""
    identity = identity or state_identity(home)
    t = read_mart(mart_path(home, STATE_CURRENT), columns=["claim_id", "subject", "subject_id"])
    pairs = sorted({(r["subject"].casefold(), r["subject_id"]) for r in t.to_pylist() if r["subject"] is not None})
    table = pa.table({"name_key": pa.array([p[0] for p in pairs], pa.string()), "subject_id": pa.array([p[1] for p in pairs], pa.string())})
    return table.replace_schema_metadata({META_KEY: json.dumps({"state": identity, "version": DOSSIER_VERSION})})


def compile_dossiers(home: MemcHome, *, top_n: int = DEFAULT_TOP_N, min_asked: int = DEFAULT_MIN_ASKED) -> dict[str, Any]:
    """Build the dossiers of the last compiled profile against the current state build and write
    them, with the name index and a watermark (the state's), to ``<home>/profile/dossiers``."""
    identity = state_identity(home)
    if identity is None:
        raise FileNotFoundError(f"no state watermark under {home.warehouse}: build the state models first")
    dossiers = build_dossiers(home, read_profile(home), top_n=top_n, min_asked=min_asked, identity=identity)
    names = subject_names(home, identity=identity)
    if state_identity(home) != identity:
        raise RuntimeError("the state marts changed while the dossiers were compiled: materialize entity_dossiers again")
    write_parquet(dossiers, home.dossiers / DOSSIER_FILE)
    write_parquet(names, home.dossiers / NAMES_FILE)
    info = dossier_info(dossiers)
    write_watermark(home.dossiers, "entity_dossiers", identity["watermark"], state_built_at=identity["built_at"], dossiers=dossiers.num_rows)
    facts = sum(len(f) for f in dossiers.column("facts").to_pylist())
    conflicts = sum(len(c) for c in dossiers.column("conflicts").to_pylist()) if "conflicts" in dossiers.column_names else 0
    return {
        "dossiers": dossiers.num_rows,
        "facts": facts,
        "conflicts": conflicts,
        "subject_names": names.num_rows,
        "entities": [f"{e} ({s})" for e, s in zip(dossiers.column("entity_id").to_pylist(), dossiers.column("scope").to_pylist())],
        "graph": info.get("graph"),
        "ledger_watermark": identity["watermark"],
        "path": str(home.dossiers),
    }


def dossier_info(table: pa.Table) -> dict[str, Any]:
    raw = (table.schema.metadata or {}).get(META_KEY)
    return json.loads(raw) if raw else {}


def _load(dossier_path: Path, names_path: Path) -> SubjectIndex | None:
    dossiers, names = read_parquet(dossier_path), read_parquet(names_path)
    meta = dossier_info(dossiers)
    if meta.get("version") != DOSSIER_VERSION or not meta.get("state") or dossier_info(names).get("state") != meta["state"]:
        return None  # another version's files, or the two files are from different builds
    index: dict[str, set[str]] = {}
    for k, sid in zip(names.column("name_key").to_pylist(), names.column("subject_id").to_pylist()):
        index.setdefault(k, set()).add(sid)
    return SubjectIndex(
        identity=meta["state"],
        names={k: frozenset(v) for k, v in index.items()},
        by_subject={d["entity_id"]: d for d in dossiers.to_pylist()},
    )


def load_dossiers(home: MemcHome) -> SubjectIndex | None:
    """The dossiers, if they were compiled from the state build the marts hold now (else None:
    read state_current instead). Read once per version of the files in a warm process; each
    call costs a few stats and the state's watermark file."""
    paths = [home.dossiers / DOSSIER_FILE, home.dossiers / NAMES_FILE]
    loaded = cached("dossiers", paths, lambda: _load(*paths))
    if loaded is None or loaded.identity != state_identity(home):
        return None
    return loaded


def load_dossier(home: MemcHome, subject_ids: Iterable[str]) -> dict[str, dict[str, Any]]:
    """The current dossiers (see ``load_dossiers``) of those ``subject_ids`` that have one, by id:
    ``facts`` and ``conflicts`` (mart rows, unfiltered: filter them per asker), ``neighbours``."""
    loaded = load_dossiers(home)
    if loaded is None:
        return {}
    return {s: loaded.by_subject[s] for s in subject_ids if s in loaded.by_subject}


def audit_dossiers(home: MemcHome) -> tuple[list[str], dict[str, Any]]:
    """Problems (named by ids, never content) if the dossiers are not exactly the state marts'
    rows about their entities at the state build they name, or are not that of the marts now."""
    dossier_path, names_path = home.dossiers / DOSSIER_FILE, home.dossiers / NAMES_FILE
    if not dossier_path.exists() or not names_path.exists():
        return ["no dossiers written"], {}
    dossiers, names = read_parquet(dossier_path), read_parquet(names_path)
    meta = dossier_info(dossiers)
    problems: list[str] = []
    current = state_identity(home)
    if meta.get("state") != current:
        problems.append(f"built against state {json.dumps(meta.get('state'))}, the marts hold {json.dumps(current)}")
    if dossier_info(names).get("state") != meta.get("state"):
        problems.append("the name index and the dossiers name different state builds")
    want = subject_names(home, identity=current)
    if sorted(zip(*[names.column(c).to_pylist() for c in ("name_key", "subject_id")])) != sorted(
        zip(*[want.column(c).to_pylist() for c in ("name_key", "subject_id")])
    ):
        problems.append("the name index differs from state_current's subjects")
    ids = dossiers.column("entity_id").to_pylist()
    if len(set(ids)) != len(ids):
        problems.append("an entity has two dossiers")
    state = numbered(read_mart(mart_path(home, STATE_CURRENT)))
    expected = _rows_by(state, ids, "subject_id")
    conflicts_path = mart_path(home, CONFLICTS)
    expected_conflicts = _rows_by(numbered(read_mart(conflicts_path)), ids, "subject_id") if conflicts_path.exists() else None
    facts = dossiers.column("facts").to_pylist()
    have_conflicts = dossiers.column("conflicts").to_pylist() if "conflicts" in dossiers.column_names else None
    for i, eid in enumerate(ids):
        got = {r["claim_id"]: r for r in facts[i]}
        exp = {r["claim_id"]: r for r in expected[i]}
        problems += [f"{eid}: fact {c} is not in state_current" for c in sorted(got.keys() - exp.keys())]
        problems += [f"{eid}: state_current row {c} is missing from the dossier" for c in sorted(exp.keys() - got.keys())]
        problems += [f"{eid}: fact {c} differs from state_current" for c in sorted(got.keys() & exp.keys()) if got[c] != exp[c]]
        if (have_conflicts is None) != (expected_conflicts is None) or (
            have_conflicts is not None and have_conflicts[i] != expected_conflicts[i]
        ):
            problems.append(f"{eid}: conflicts differ from the conflicts mart")
    return problems, {
        "dossiers": len(ids),
        "facts": sum(len(f) for f in facts),
        "subject_names": names.num_rows,
        "ledger_watermark": (meta.get("state") or {}).get("watermark", -1),
    }


def _rows_by(table: pa.Table, ids: Sequence[str], key: str) -> list[list[dict[str, Any]]]:
    """``_lists`` as Python values (what a reader of the dossier file sees)."""
    return _lists(table, key, ids).to_pylist()
