"""Profile-guided views (PGO): what the query log says is asked about most, compiled ahead of time.

Every compile appends one line to the query log (query/log.py: the entity ids the question
names, the plan, the entity ids of the state facts returned, tokens, latency, watermarks; never
the question's words or the returned content). The views
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
* **evidence usage** (``usage_from``, written beside the profile): per ledger entry, how many
  compiles of the window showed it and when last (the log's ``shown`` entry ids); the
  compiler's decay counts an entry's age from its last showing.
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
(tests/platform/test_profile.py compares both for askers with private and closed facts).

Privacy and erasure. Neither view holds question text or asker names: the profile holds entity
ids, names from the entities mart, scopes and counts; the dossiers hold rows of the state marts.
Both live under ``<home>/profile``, one of the home's view directories, which an erasure drops
with the other views (forgetting/cascade.py) and the rebuild compiles again: from the scrubbed
query log and the purged ledger. The query log holds no question text (records written before
it stopped doing so are rewritten by the erasure's scrub).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa

from memc.atomic import read_parquet, write_parquet
from memc.filecache import cached
from memc.home import MemcHome
from views.marts import ENTITIES, mart_path, read_mart


PROFILE_VERSION = "query-profile-1"

PROFILE_FILE = "query_profile.parquet"

USAGE_FILE = "evidence_usage.parquet"

# A month of compiles: long enough for a weekly pattern to recur, short enough that an entity
# nobody asks about any more drops out of the hot set.
DEFAULT_WINDOW_DAYS = 30

# The compiler's word rule (query/facts.py): runs of letters, digits, ' and -.
_WORD = re.compile(r"[\w'-]+")

META_KEY = b"memc.profile"

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
        # An entity the mart no longer holds (an erasure took its only evidence) is not counted:
        # the log keeps its id, but nothing derived may name it again.
        asked = {k for k in asked if k in index.names}
        answered &= asked
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
    return pa.Table.from_pylist(rows, schema=PROFILE_SCHEMA).replace_schema_metadata({META_KEY: json.dumps(meta)})


USAGE_SCHEMA = pa.schema(
    [
        pa.field("entry_id", pa.string(), nullable=False),
        pa.field("shown", pa.int64(), nullable=False),  # compiles in the window whose context showed it
        pa.field("first_shown", TS),
        pa.field("last_shown", TS),
    ]
)


def usage_from(records: Iterable[dict[str, Any]], *, now: datetime | None = None, window_days: float = DEFAULT_WINDOW_DAYS) -> pa.Table:
    """Evidence usage: per ledger entry, how many compiles in the window showed it in their
    context (an item's turn or a state fact's source; the log's ``shown``, entry ids only) and
    when first and last. Decay (query/retrieve.py) counts an entry's age from its last showing.
    Grain: one row per entry shown at least once, by entry id."""
    now = now or datetime.now(timezone.utc)
    since = now - timedelta(days=window_days)
    stats: dict[str, list[Any]] = {}
    for rec in records:
        at = _at(rec)
        if at is None or not since <= at <= now:
            continue
        for eid in set(rec.get("shown") or ()):
            if isinstance(eid, str):
                s = stats.setdefault(eid, [0, at, at])
                s[0] += 1
                s[1], s[2] = min(s[1], at), max(s[2], at)
    rows = [{"entry_id": e, "shown": n, "first_shown": a, "last_shown": b} for e, (n, a, b) in sorted(stats.items())]
    return pa.Table.from_pylist(rows, schema=USAGE_SCHEMA)


def evidence_usage(home: MemcHome) -> dict[str, datetime]:
    """entry id -> when a context last showed it, from the last compiled usage file (empty when
    none was compiled); read once per version of the file in a warm process."""
    path = home.profile / USAGE_FILE

    def load() -> dict[str, datetime]:
        table = read_parquet(path, columns=["entry_id", "last_shown"])
        return dict(zip(table.column("entry_id").to_pylist(), table.column("last_shown").to_pylist()))

    return cached("evidence_usage", [path], load) or {}


def profile_info(table: pa.Table) -> dict[str, Any]:
    """What ``profile_from`` recorded about the window (compiles, from_dossier, window_days, ...)."""
    raw = (table.schema.metadata or {}).get(META_KEY)
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


# What the profile and the usage read of a record; the rest (the plan's steps above all, ~24 KB
# of a record's ~27 KB at 100k entries) is for `memc replay`.
_READ_KEYS = ("at", "scope", "asker", "asked", "answered", "entities", "question", "shown")


def _read(record: dict[str, Any]) -> dict[str, Any]:
    out = {k: record[k] for k in _READ_KEYS if k in record}
    plan = record.get("plan")
    if isinstance(plan, dict) and "state" in plan:
        out["plan"] = {"state": plan["state"]}
    return out


# Each day file's records as read so far in this process: path -> (inode, bytes read, their
# SHA-256, what the profile reads of each record). A file is appended to (O_APPEND, query/log.py),
# so the next read parses only what came after, once the bytes read before hash as they did
# (hashing is ~20x cheaper than parsing them): a file replaced (an erasure's scrub writes a new
# one), removed and written again (an inode can be reused), or shorter is read again whole. At
# most LOG_RECORDS_KEPT records are kept; past that each build parses the window again, as before
# (a 100k-entry bench home's 1,620 records were 43 MB of JSON, 0.35-0.8 s a build).
_LOG_READ: dict[str, tuple[int, int, bytes, list[dict[str, Any]]]] = {}
_LOG_READ_LOCK = threading.Lock()
LOG_RECORDS_KEPT = 200_000


def _prefix_hash(f: Any, size: int) -> Any:
    """A SHA-256 fed the first ``size`` bytes of the open file ``f``, read 8 MB at a time."""
    h = hashlib.sha256()
    f.seek(0)
    while size > 0:
        chunk = f.read(min(size, 8 << 20))
        if not chunk:
            break
        h.update(chunk)
        size -= len(chunk)
    return h


def _day_records(path: Path) -> list[dict[str, Any]]:
    """What the profile reads of one day file's records, a line that is not JSON (a writer killed
    mid-line) skipped. What follows the last newline is read each time and kept only once a
    newline ends it (a record being written)."""
    try:
        f = open(path, "rb")
    except FileNotFoundError:  # removed since it was listed
        return []
    with f:
        st = os.fstat(f.fileno())
        with _LOG_READ_LOCK:
            held = _LOG_READ.get(str(path))
        offset, h, records = 0, hashlib.sha256(), []
        if held is not None:
            inode, at, seen, kept = held
            if inode == st.st_ino and at <= st.st_size and (same := _prefix_hash(f, at)).digest() == seen:
                offset, h, records = at, same, kept
        unended: list[dict[str, Any]] = []
        if offset < st.st_size:
            f.seek(offset)
            data = f.read(st.st_size - offset)
            whole = data.rfind(b"\n") + 1
            records = records + _parsed(data[:whole])  # a new list: a reader may hold the old
            unended = _parsed(data[whole:])
            h.update(data[:whole])
            offset += whole
    with _LOG_READ_LOCK:
        if sum(len(r[3]) for p, r in _LOG_READ.items() if p != str(path)) + len(records) <= LOG_RECORDS_KEPT:
            _LOG_READ[str(path)] = (st.st_ino, offset, h.digest(), records)
        else:
            _LOG_READ.pop(str(path), None)
    return records + unended if unended else records


def _parsed(data: bytes) -> list[dict[str, Any]]:
    out = []
    for line in data.splitlines():
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if isinstance(rec, dict):
            out.append(_read(rec))
    return out


def _log_records(home: MemcHome, since: datetime) -> Iterable[dict[str, Any]]:
    """What the profile reads of the query log's records, from the day files that can hold
    ``since`` or later (a file per UTC day: older ones are not read)."""
    d = home.querylog
    if not d.is_dir():
        return
    first = (since - timedelta(days=1)).strftime("%Y-%m-%d")
    for p in sorted(d.glob("*.jsonl")):
        if p.stem < first:
            continue
        yield from _day_records(p)


def query_profile(home: MemcHome, *, now: datetime | None = None, window_days: float = DEFAULT_WINDOW_DAYS) -> pa.Table:
    """The profile of this home's query log (``profile_from``) against its entities mart."""
    now = now or datetime.now(timezone.utc)
    records = _log_records(home, now - timedelta(days=window_days))
    return profile_from(records, _read_entities(home), now=now, window_days=window_days)


def compile_profile(home: MemcHome, *, now: datetime | None = None, window_days: float = DEFAULT_WINDOW_DAYS) -> dict[str, Any]:
    """Compute the profile and the evidence usage from one read of the log's window and write
    them to ``<home>/profile/query_profile.parquet`` and ``evidence_usage.parquet``."""
    now = now or datetime.now(timezone.utc)
    # Sized before it is read: a compile logged meanwhile leaves the log larger than the size
    # recorded, so the profile shows as behind it (`memc build`'s pending), never as current.
    files, size = query_log_size(home)
    records = list(_log_records(home, now - timedelta(days=window_days)))
    table = profile_from(records, _read_entities(home), now=now, window_days=window_days)
    path = home.profile / PROFILE_FILE
    write_parquet(table, path)
    usage = usage_from(records, now=now, window_days=window_days)
    write_parquet(usage, home.profile / USAGE_FILE)
    info = profile_info(table)
    top = table.slice(0, 5).to_pylist()
    return {
        **info,
        "entities": table.num_rows,
        "entries_shown": usage.num_rows,
        "log_files": files,
        "log_bytes": size,
        # ids, not names: run metadata lives in Dagster's event log (memc's metadata never holds content)
        "top": [f"{r['entity_id']} ({r['scope']}): asked {r['asked']} times by {r['askers']} askers" for r in top],
        "path": str(path),
    }


def query_log_size(home: MemcHome) -> tuple[int, int]:
    """How many day files the query log has and their bytes: a compile appends to it, so a
    profile compiled at another size is behind the log."""
    files = list(home.querylog.glob("*.jsonl")) if home.querylog.is_dir() else []
    return len(files), sum(f.stat().st_size for f in files)


def read_profile(home: MemcHome) -> pa.Table:
    """The last compiled profile (an empty one if none was compiled)."""
    path = home.profile / PROFILE_FILE
    return read_parquet(path) if path.exists() else PROFILE_SCHEMA.empty_table()
