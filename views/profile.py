"""Profile-guided views (PGO): what the query log says is asked about most, compiled ahead of time.

Every compile appends one line to the query log (query/log.py: the entity ids the question
names, the plan, the entity ids of the state facts returned, tokens, latency, watermarks; never
the question's words or the returned content). Two views
are compiled from it here, as plain functions (assets/profile.py runs them in Dagster):

* the **query profile** (``query_profile``): per scope and entity, how many compiles in the last
  ``window_days`` asked about it, by how many distinct askers, first and last asked, and its
  share of all compiles. An entity is *asked about* by a compile when the question names it
  (its canonical name or an alias from the entities mart, case-folded, as whole words, a
  possessive "Elena's" naming Elena; an unscoped compile names the entity in every scope that
  has one of that name) or when the compile returned a state fact about it (the log's
  ``entities``). The question match counts entities the asker got nothing about (facts private
  to others, none extracted yet); the returned facts count spellings the mart does not know.
  Each entity counts once per compile. ``answered`` says how many of those compiles returned a
  fact about it.
* the **entity dossiers** (``build_dossiers``): for the hot entities (the profile's ``top_n``
  first, asked about at least ``min_asked`` times), every state_current row and every conflicts
  row about them, unfiltered (visibility and ``closed_for`` included, so per-asker filtering at
  query time stays exact), and, when the graph exists, their 1-hop neighbours with the edge
  evidence. Beside them, the name index: every subject name in state_current (case-folded) and
  the subject ids it names, so that the compiler can tell which subjects a question names
  without reading state_current.

The compiler (``state_facts`` in query/facts.py) uses the dossiers only when they were
compiled from exactly the state build it would otherwise read (``state_identity``: the state
watermark and build time, and the size and mtime of state_current.parquet and
conflicts.parquet), and only when every subject the question names has one; it then filters
the very same rows, in the same order, per asker, so the answer is identical to the scan
(tests/test_profile.py compares both for askers with private and closed facts).

Privacy and erasure. Neither view holds question text or asker names: the profile holds entity
ids, names from the entities mart, scopes and counts; the dossiers hold rows of the state marts.
Both live under ``<home>/profile``, one of the home's view directories, which an erasure drops
with the other views (forgetting/cascade.py) and the rebuild compiles again: from the scrubbed
query log and the purged ledger. The query log holds no question text (records written before
it stopped doing so are rewritten by the erasure's scrub).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa

from memc.atomic import read_parquet, write_parquet
from memc.filecache import cached
from memc.home import MemcHome
from memc.watermark import read_watermark, write_watermark
from views.marts import CONFLICTS, ENTITIES, STATE_CURRENT, mart_path, read_mart

PROFILE_VERSION = "query-profile-1"
DOSSIER_VERSION = "entity-dossiers-1"

PROFILE_FILE = "query_profile.parquet"
DOSSIER_FILE = "dossiers.parquet"
NAMES_FILE = "subject_names.parquet"

# A month of compiles: long enough for a weekly pattern to recur, short enough that an entity
# nobody asks about any more drops out of the hot set.
DEFAULT_WINDOW_DAYS = 30
# Dossiers are small (the sample's Elena: 9 facts); twenty cover the head of a skewed profile.
DEFAULT_TOP_N = 20
# Asked about once is not a pattern.
DEFAULT_MIN_ASKED = 2

# The compiler's word rule (query/facts.py): runs of letters, digits, ' and -.
_WORD = re.compile(r"[\w'-]+")
_META = b"memc.profile"

TS = pa.timestamp("us", tz="UTC")
PROFILE_SCHEMA = pa.schema(
    [
        pa.field("rank", pa.int64(), nullable=False),  # 1 = most asked about
        pa.field("scope", pa.string(), nullable=False),
        pa.field("entity_id", pa.string(), nullable=False),
        pa.field("entity", pa.string()),  # the entities mart's canonical name
        pa.field("asked", pa.int64(), nullable=False),  # compiles that asked about it
        pa.field("answered", pa.int64(), nullable=False),  # of those, compiles that returned a fact about it
        pa.field("askers", pa.int64(), nullable=False),  # distinct askers (a count: no names)
        pa.field("share", pa.float64(), nullable=False),  # asked / compiles in the window
        pa.field("first_asked", TS),
        pa.field("last_asked", TS),
    ]
)
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
ROW = "_row"  # a dossier row's position in its mart file: the compiler keeps the scan's order


# ------------------------------------------------------------------------------- the profile


def _tokens(text: str) -> tuple[str, ...]:
    """Case-folded words; a possessive names its owner ("elena's" -> "elena")."""
    out = []
    for t in _WORD.findall(text.casefold()):
        if t.endswith("'s") and len(t) > 2:
            t = t[:-2]
        t = t.strip("'-")
        if t:
            out.append(t)
    return tuple(out)


@dataclass(frozen=True)
class _EntityIndex:
    """The entities mart, indexed for matching names in questions and in the log."""

    phrases: dict[str, list[tuple[tuple[str, ...], str, str]]]  # first word -> (words, scope, entity_id)
    by_name: dict[str, set[tuple[str, str]]]  # case-folded name -> {(scope, entity_id)}
    names: dict[tuple[str, str], str]  # (scope, entity_id) -> canonical name

    @classmethod
    def of(cls, entities: Iterable[dict[str, Any]]) -> "_EntityIndex":
        phrases: dict[str, list[tuple[tuple[str, ...], str, str]]] = {}
        by_name: dict[str, set[tuple[str, str]]] = {}
        names: dict[tuple[str, str], str] = {}
        for e in entities:
            if not e.get("entity_id") or not e.get("scope"):
                continue  # an entity without a key names nothing
            key = (e["scope"], e["entity_id"])
            names[key] = e.get("name")
            for name in {e.get("name"), *(e.get("aliases") or ())}:
                if not name:
                    continue
                by_name.setdefault(name.casefold(), set()).add(key)
                words = _tokens(name)
                if words:
                    phrases.setdefault(words[0], []).append((words, *key))
        return cls(phrases, by_name, names)

    def in_question(self, question: str, scope: str | None) -> set[tuple[str, str]]:
        words = _tokens(question or "")
        found = set()
        for i, w in enumerate(words):
            for phrase, s, eid in self.phrases.get(w, ()):
                if (scope is None or s == scope) and words[i : i + len(phrase)] == phrase:
                    found.add((s, eid))
        return found

    def named(self, names: Iterable[str], scope: str | None) -> set[tuple[str, str]]:
        return {k for n in names if n for k in self.by_name.get(str(n).casefold(), ()) if scope is None or k[0] == scope}


def _at(record: dict[str, Any]) -> datetime | None:
    try:
        at = datetime.fromisoformat(str(record["at"]))
    except (KeyError, TypeError, ValueError):
        return None
    return at if at.tzinfo else at.replace(tzinfo=timezone.utc)


def profile_from(
    records: Iterable[dict[str, Any]],
    entities: Iterable[dict[str, Any]],
    *,
    now: datetime | None = None,
    window_days: float = DEFAULT_WINDOW_DAYS,
) -> pa.Table:
    """The profile of query-log ``records`` against the entities mart's rows (see the module
    docstring for what counts as asked about). Grain: one row per (scope, entity) asked about in
    the window, by rank. The schema metadata says how many compiles the window held."""
    now = now or datetime.now(timezone.utc)
    since = now - timedelta(days=window_days)
    index = _EntityIndex.of(entities)
    compiles = from_dossier = 0
    stats: dict[tuple[str, str], dict[str, Any]] = {}
    for rec in records:
        at = _at(rec)
        if at is None or not since <= at <= now:
            continue
        compiles += 1
        from_dossier += (rec.get("plan") or {}).get("state") == "dossier"
        scope = rec.get("scope")
        if "asked" in rec:  # entity ids resolved at compile time (the log holds no question text)
            answered = {tuple(k) for k in rec.get("answered") or () if len(k) == 2}
            asked = {tuple(k) for k in rec.get("asked") or () if len(k) == 2} | answered
        else:  # records written before: the question and the answered subjects' names
            answered = index.named(rec.get("entities") or (), scope)
            asked = index.in_question(rec.get("question") or "", scope) | answered
        for key in asked:
            s = stats.setdefault(key, {"asked": 0, "answered": 0, "askers": set(), "first": at, "last": at})
            s["asked"] += 1
            s["answered"] += key in answered
            s["askers"].add(rec.get("asker"))
            s["first"], s["last"] = min(s["first"], at), max(s["last"], at)
    ordered = sorted(stats.items(), key=lambda kv: (-kv[1]["asked"], -len(kv[1]["askers"]), -kv[1]["last"].timestamp(), kv[0]))
    rows = [
        {
            "rank": rank,
            "scope": scope,
            "entity_id": eid,
            "entity": index.names.get((scope, eid)),
            "asked": s["asked"],
            "answered": s["answered"],
            "askers": len(s["askers"]),
            "share": round(s["asked"] / compiles, 6),
            "first_asked": s["first"],
            "last_asked": s["last"],
        }
        for rank, ((scope, eid), s) in enumerate(ordered, 1)
    ]
    meta = {"compiles": compiles, "from_dossier": from_dossier, "window_days": window_days, "since": since.isoformat(), "until": now.isoformat()}
    return pa.Table.from_pylist(rows, schema=PROFILE_SCHEMA).replace_schema_metadata({_META: json.dumps(meta)})


def profile_info(table: pa.Table) -> dict[str, Any]:
    """What ``profile_from`` recorded about the window (compiles, from_dossier, window_days, ...)."""
    raw = (table.schema.metadata or {}).get(_META)
    return json.loads(raw) if raw else {}


def _read_entities(home: MemcHome) -> list[dict[str, Any]]:
    path = mart_path(home, ENTITIES)
    if not path.exists():
        return []
    return read_mart(path, columns=["entity_id", "scope", "name", "aliases"]).to_pylist()


def _entity_index(home: MemcHome) -> _EntityIndex:
    path = mart_path(home, ENTITIES)
    if not path.exists():
        return _EntityIndex({}, {}, {})
    return cached("entity_index", [path], lambda: _EntityIndex.of(_read_entities(home)))


def logged_entities(home: MemcHome, question: str, answered_names: Iterable[str], scope: str | None) -> dict[str, list[list[str]]]:
    """What the query log keeps of a compile's question: the (scope, entity id) pairs it names
    (``asked``) and those whose state facts it returned (``answered``), never its words, so that
    no erased text can survive in the log (docs/security.md). Matched against the entities mart
    as ``profile_from`` matches old records that still carry a question."""
    index = _entity_index(home)
    answered = index.named(answered_names, scope)
    return {
        "asked": sorted([s, e] for s, e in index.in_question(question, scope) | answered),
        "answered": sorted([s, e] for s, e in answered),
    }


def _log_records(home: MemcHome, since: datetime) -> Iterable[dict[str, Any]]:
    """The query log's records from the day files that can hold ``since`` or later (a file per
    UTC day: older ones are not read). A line that is not JSON (a writer killed mid-line) is
    skipped."""
    d = home.querylog
    if not d.is_dir():
        return
    first = (since - timedelta(days=1)).strftime("%Y-%m-%d")
    for p in sorted(d.glob("*.jsonl")):
        if p.stem < first:
            continue
        with open(p, encoding="utf-8") as f:
            for line in f:
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue
                if isinstance(rec, dict):
                    yield rec


def query_profile(home: MemcHome, *, now: datetime | None = None, window_days: float = DEFAULT_WINDOW_DAYS) -> pa.Table:
    """The profile of this home's query log (``profile_from``) against its entities mart."""
    now = now or datetime.now(timezone.utc)
    records = _log_records(home, now - timedelta(days=window_days))
    return profile_from(records, _read_entities(home), now=now, window_days=window_days)


def compile_profile(home: MemcHome, *, now: datetime | None = None, window_days: float = DEFAULT_WINDOW_DAYS) -> dict[str, Any]:
    """Compute the profile and write it to ``<home>/profile/query_profile.parquet``."""
    table = query_profile(home, now=now, window_days=window_days)
    path = home.profile / PROFILE_FILE
    write_parquet(table, path)
    info = profile_info(table)
    files = sorted(home.querylog.glob("*.jsonl")) if home.querylog.is_dir() else []
    top = table.slice(0, 5).to_pylist()
    return {
        **info,
        "entities": table.num_rows,
        "log_files": len(files),
        "log_bytes": sum(f.stat().st_size for f in files),
        # ids, not names: run metadata lives in Dagster's event log (memc's metadata never holds content)
        "top": [f"{r['entity_id']} ({r['scope']}): asked {r['asked']} times by {r['askers']} askers" for r in top],
        "path": str(path),
    }


def read_profile(home: MemcHome) -> pa.Table:
    """The last compiled profile (an empty one if none was compiled)."""
    path = home.profile / PROFILE_FILE
    return read_parquet(path) if path.exists() else PROFILE_SCHEMA.empty_table()


# ------------------------------------------------------------------------------- dossiers


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


def _numbered(table: pa.Table) -> pa.Table:
    return table.append_column(ROW, pa.array(range(table.num_rows), pa.int64()))


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
    from views.build import graph_store

    store = graph_store(home, keep_open=False)
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
    state = _numbered(read_mart(state_path))
    conflicts_path = mart_path(home, CONFLICTS)
    conflicts = _numbered(read_mart(conflicts_path)) if conflicts_path.exists() else None
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
    return pa.table(columns).replace_schema_metadata({_META: json.dumps(meta)})


def subject_names(home: MemcHome, *, identity: dict[str, Any] | None = None) -> pa.Table:
    """The name index: every (case-folded subject name, subject id) of state_current. The compiler
    names a subject when the folded name is a word of the question; this says which subject ids
    a word can name, hence whether the dossiers hold all of them."""
    identity = identity or state_identity(home)
    t = read_mart(mart_path(home, STATE_CURRENT), columns=["claim_id", "subject", "subject_id"])
    pairs = sorted({(r["subject"].casefold(), r["subject_id"]) for r in t.to_pylist() if r["subject"] is not None})
    table = pa.table({"name_key": pa.array([p[0] for p in pairs], pa.string()), "subject_id": pa.array([p[1] for p in pairs], pa.string())})
    return table.replace_schema_metadata({_META: json.dumps({"state": identity, "version": DOSSIER_VERSION})})


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
    raw = (table.schema.metadata or {}).get(_META)
    return json.loads(raw) if raw else {}


# ------------------------------------------------------------------------------- readers


@dataclass(frozen=True)
class Dossiers:
    """The compiled dossiers as a reader sees them."""

    identity: dict[str, Any]  # the state build they were compiled from (``state_identity``)
    names: dict[str, frozenset[str]]  # case-folded subject name -> the subject ids it names
    by_subject: dict[str, dict[str, Any]]  # subject id -> dossier (facts, conflicts, neighbours, ...)

    def rows_for(self, words: Iterable[str]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]] | None:
        """Every state_current row and conflicts row about the subjects ``words`` can name, in
        mart order, or None when one of those subjects has no dossier (the caller then scans)."""
        wanted: set[str] = set()
        for w in words:
            wanted |= self.names.get(w, frozenset())
        if not wanted <= self.by_subject.keys():
            return None
        ds = [self.by_subject[s] for s in wanted]
        facts = sorted((r for d in ds for r in d["facts"]), key=lambda r: r[ROW])
        conflicts = sorted((c for d in ds for c in d.get("conflicts") or ()), key=lambda c: c[ROW])
        return facts, conflicts


def _load(dossier_path: Path, names_path: Path) -> Dossiers | None:
    dossiers, names = read_parquet(dossier_path), read_parquet(names_path)
    meta = dossier_info(dossiers)
    if meta.get("version") != DOSSIER_VERSION or not meta.get("state") or dossier_info(names).get("state") != meta["state"]:
        return None  # another version's files, or the two files are from different builds
    index: dict[str, set[str]] = {}
    for k, sid in zip(names.column("name_key").to_pylist(), names.column("subject_id").to_pylist()):
        index.setdefault(k, set()).add(sid)
    return Dossiers(
        identity=meta["state"],
        names={k: frozenset(v) for k, v in index.items()},
        by_subject={d["entity_id"]: d for d in dossiers.to_pylist()},
    )


def load_dossiers(home: MemcHome) -> Dossiers | None:
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


def state_index(home: MemcHome) -> Dossiers | None:
    """Every subject's state_current rows and conflicts rows, indexed by subject and by case-folded
    subject name the way the dossiers are (None without a state_current mart): what the compiler
    reads when no dossier covers a question. Built once per version of the marts in a warm process
    (~15 ms at 40k rows), it spares each compile a filter over every row (at 100k ledger entries
    the state stage went 38 -> 0.7 ms per compile, with the same rows in the same order)."""
    state_path, conflicts_path = mart_path(home, STATE_CURRENT), mart_path(home, CONFLICTS)
    paths = [state_path, *([conflicts_path] if conflicts_path.exists() else [])]
    return cached("state_index", paths, lambda: _index_marts(*paths))


def _index_marts(state_path: Path, conflicts_path: Path | None = None) -> Dossiers:
    by_subject: dict[str, dict[str, Any]] = {}
    names: dict[str, set[str]] = {}
    for r in _numbered(read_mart(state_path)).to_pylist():
        by_subject.setdefault(r["subject_id"], {"facts": [], "conflicts": []})["facts"].append(r)
        if r["subject"] is not None:
            names.setdefault(r["subject"].casefold(), set()).add(r["subject_id"])
    if conflicts_path is not None:
        for c in _numbered(read_mart(conflicts_path)).to_pylist():
            if c.get("subject_id") in by_subject:
                by_subject[c["subject_id"]]["conflicts"].append(c)
    return Dossiers(identity={}, names={k: frozenset(v) for k, v in names.items()}, by_subject=by_subject)


# Which source the compiler's state route read in this thread's (or task's) latest compile:
# "dossier" (the profile-guided dossiers answered it), "state_current" (the mart was scanned) or
# "none" (no state mart, or no state facts wanted). query/facts.py sets it; compile_context
# records it in the query log's plan, and the profile counts the compiles the dossiers served.
STATE_SOURCE: ContextVar[str] = ContextVar("memc_state_source", default="none")


# ------------------------------------------------------------------------------- the audit


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
    state = _numbered(read_mart(mart_path(home, STATE_CURRENT)))
    expected = _rows_by(state, ids, "subject_id")
    conflicts_path = mart_path(home, CONFLICTS)
    expected_conflicts = _rows_by(_numbered(read_mart(conflicts_path)), ids, "subject_id") if conflicts_path.exists() else None
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
