"""State queries over what dbt built: what held for an entity, bi-temporally, for one asker, and
read-only SQL for analysts. Used by `memc state`/`memc sql`, the HTTP API and the MCP server.

Both read what dbt built, never while holding it: entity state reads the marts' Parquet exports
(safe during a build); SQL opens the warehouse read-only for one query, because any process
holding the DuckDB file makes the next `dbt build` fail to take its lock.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from ledger import open_ledger
from memc.ids import normalize_name
from query.acl import ledger_facts
from views.marts import is_empty_export


class StateQueryError(Exception):
    """A refused statement, a missing view, or a warehouse locked by a build; the message says which."""


# Statement types `memc sql` runs; everything else (COPY, ATTACH, INSERT, PRAGMA, SET, ...) is
# refused before the warehouse is opened. A read-only connection refuses writes to the warehouse
# itself, but COPY ... TO and ATTACH would still write files.
READ_ONLY_STATEMENTS = {"SELECT", "EXPLAIN"}

# The same query as the dbt macro state_as_of (dbt_project/macros/state_as_of.sql), over the
# Parquet exports; tests/platform/test_state.py checks the two agree. $principal NULL = administrator.
AS_OF_SQL = """
select
    h.scope, h.subject_id, h.subject, h.predicate, h.object, h.cardinality,
    h.valid_from, k.valid_to, h.recorded_from as recorded_at,
    h.claim_id, h.source_entry_id, h.source_seq, h.source_ref, h.source_kind, h.quote,
    h.visibility, h.confidence
from history as h
left join (
    select claim_id, min(close_at) as valid_to
    from closings
    where closer_recorded_at <= $known_at
      and ($principal is null or list_contains(closer_visibility, 'public') or list_contains(closer_visibility, $principal))
    group by claim_id
) as k using (claim_id)
where h.version = 1
  and h.recorded_from <= $known_at
  and h.valid_from <= $as_of
  and (k.valid_to is null or $as_of < k.valid_to)
  and ($principal is null or list_contains(h.visibility, 'public') or list_contains(h.visibility, $principal))
"""

CONFLICTS_SQL = """
select *
from conflicts
where subject_id in (select unnest($subjects))
  and valid_at <= $as_of
  and recorded_at_a <= $known_at and recorded_at_b <= $known_at
  and ($principal is null or list_contains(visibility, 'public') or list_contains(visibility, $principal))
order by predicate, valid_at, claim_id_a, claim_id_b
"""


def _marts_connection(marts: Path, names: tuple[str, ...], *, con=None, prefix: str = "", missing: str = "run `memc build` first"):
    """An in-memory DuckDB (or ``con``) with one view per mart export, named after the mart
    (after ``prefix``, to hold two folds' marts side by side); ``missing`` says what to do when
    an export is not there."""

    if con is None:
        con = duckdb.connect()
        con.execute("set TimeZone = 'UTC'")
    for name in names:
        path = marts / f"{name}.parquet"
        if not path.exists():
            raise StateQueryError(f"no {path}: {missing}")
        # An export written by dbt-duckdb's `external` (before memc's mart_export) held one
        # all-NULL row for an empty model: seen as no rows (views/marts.is_empty_export).
        empty = " where false" if is_empty_export(path) else ""
        con.execute(f"create view {prefix}{name} as select * from read_parquet('{_sql_str(path)}'){empty}")
    return con


def _admits(column: str, param: str) -> str:
    """SQL: the visibility list in ``column`` admits the principal in ``$param`` (memc.visibility.may_see)."""
    return f"(list_contains({column}, 'public') or list_contains({column}, ${param}))"


def _sql_str(path: Path) -> str:
    return str(path).replace("'", "''")


def _rows(cursor) -> list[dict[str, Any]]:
    cols = [d[0] for d in cursor.description]
    return [dict(zip(cols, r)) for r in cursor.fetchall()]


def resolve_subjects(con, entity: str, *, principal: str | None, scope: str | None) -> list[dict[str, Any]]:
    """The subjects (entity id and scope) ``entity`` names, over a connection holding the
    ``entities`` and ``state_history`` marts: an entity id, a canonical name, an alias entity
    resolution found, or a claim's subject. For a principal, only subjects it has seen evidence
    about: an entity known only from others' private evidence answers as a missing one."""
    key = normalize_name(entity)
    subjects = _rows(
        con.execute(
            """
            select distinct subject_id, scope from (
                select entity_id as subject_id, scope from entities
                where entity_id = $e or lower(name) = $k or list_contains(list_transform(aliases, lambda a: lower(a)), $k)
                union
                select subject_id, scope from state_history
                where subject_id = $e or lower(trim(regexp_replace(subject, '\\s+', ' ', 'g'))) = $k
            )
            where $scope is null or scope = $scope
            order by scope, subject_id
            """,
            {"e": entity, "k": key, "scope": scope},
        )
    )
    if principal is not None and subjects:
        # Only subjects the asker has seen evidence about exist for it: an entity known only from
        # others' private evidence answers exactly as a missing one, and its id is not told.
        seen = _rows(
            con.execute(
                f"""
                select subject_id, scope from state_history
                where subject_id in (select unnest($ids)) and {_admits("visibility", "p")}
                union
                select entity_id as subject_id, scope from entities
                where entity_id in (select unnest($ids)) and {_admits("visibility", "p")}
                """,
                {"ids": [s["subject_id"] for s in subjects], "p": principal},
            )
        )
        keep = {(r["subject_id"], r["scope"]) for r in seen}
        subjects = [s for s in subjects if (s["subject_id"], s["scope"]) in keep]
    return subjects


def state_for_entity(
    marts: Path,
    entity: str,
    *,
    principal: str | None,
    as_of: datetime,
    known_at: datetime,
    scope: str | None = None,
    ledger: Path | None = None,
) -> dict[str, Any]:
    """What held for ``entity`` at valid time ``as_of`` as known at ``known_at``, for
    ``principal`` (None = administrator), with the conflicts that asker may see: one fact per
    value, its restatements merged into ``sources`` (``merge_restatements``). Given the
    ``ledger`` directory, each fact and conflict side also says who wrote its source entry
    (``source_ingested_by``, ``ingested_by_a``/``_b``), read from the ledger itself."""

    con = _marts_connection(marts, ("entities", "state_history", "state_closings", "conflicts"))
    con.execute("create view history as select * from state_history")
    con.execute("create view closings as select * from state_closings")
    subjects = resolve_subjects(con, entity, principal=principal, scope=scope)
    ids = [s["subject_id"] for s in subjects]
    params = {"as_of": as_of, "known_at": known_at, "principal": principal, "subjects": ids}
    facts = _rows(
        con.execute(
            f"select * from ({AS_OF_SQL}) where subject_id in (select unnest($subjects)) "
            "order by scope, predicate, valid_from, claim_id",
            params,
        )
    )
    conflicts = _rows(con.execute(CONFLICTS_SQL, params))
    con.close()
    if ledger is not None and (facts or conflicts):
        writers = ledger_facts(open_ledger(ledger, write=False)).ingested_by
        for f in facts:
            f["source_ingested_by"] = writers.get(f["source_entry_id"])
        for c in conflicts:
            for side in ("a", "b"):
                c[f"ingested_by_{side}"] = writers.get(c.get(f"source_entry_id_{side}"))
    # A value restated from several entries is one fact, since its first claim (the move).
    facts = merge_restatements(facts)
    return {
        "entity": entity,
        "subjects": subjects,
        "asker": principal if principal is not None else "(administrator)",
        "as_of": as_of,
        "known_at": known_at,
        "facts": facts,
        "conflicts": conflicts,
    }


# What a merged fact keeps of each claim behind it, newest first under ``sources``.
SOURCE_FIELDS = ("claim_id", "source_entry_id", "source_ref", "source_kind", "quote", "valid_from", "recorded_at", "source_ingested_by")


def merge_restatements(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One fact per value: the rows (claims) an asker may see of the same scope, subject,
    predicate and value (normalised, as the fold compares objects) become one row. A restatement
    closes nothing in the fold (int_claim_closings_paired), so the value holds since the earliest
    ``valid_from`` among them (the move, not the restatement) and, while any is open, has no
    ``valid_to``; the newest claim (by valid, then transaction time) gives the row's own source
    fields, and ``sources`` lists every claim's source, the newest first. Rows keep their first
    occurrence's order."""

    groups: dict[tuple, list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["scope"], r["subject_id"], r["predicate"], normalize_name(str(r["object"]))), []).append(r)
    merged = []
    for same in groups.values():
        same = sorted(same, key=lambda r: (r["valid_from"], r["recorded_at"], r.get("claim_id") or ""), reverse=True)
        ends = [r.get("valid_to") for r in same]
        fact = {
            **same[0],
            "valid_from": min(r["valid_from"] for r in same),
            "valid_to": None if any(e is None for e in ends) else max(ends),
            "sources": [{k: r.get(k) for k in SOURCE_FIELDS} for r in same],
        }
        if "in_conflict" in fact:
            fact["in_conflict"] = any(r.get("in_conflict") for r in same)
        merged.append(fact)
    return merged


def _visibility_columns(schema) -> list[str]:
    """The columns of a mart that say who may see a row: lists of principals named
    ``visibility`` or ``<side>_visibility`` (a conflict's two sides, a closing's two claims)."""

    return [
        f.name
        for f in schema
        if (f.name == "visibility" or f.name.endswith("_visibility")) and pa.types.is_list(f.type) and pa.types.is_string(f.type.value_type)
    ]


def _asker_connection(marts: Path, principal: str):
    """An in-memory DuckDB holding, per mart with a visibility column, only the rows
    ``principal`` may see (every visibility column of a row must admit it). Marts without one
    (``graph_mentions``) are left out. The rows are copied in, so no query needs a file."""

    con = duckdb.connect()
    con.execute("set TimeZone = 'UTC'")
    for path in sorted(marts.glob("*.parquet")):
        cols = _visibility_columns(pq.read_schema(path))
        if not cols:
            continue
        admits = " and ".join(_admits(c, "p") for c in cols)
        # An older export's all-NULL row of an empty model (views/marts.py) has a NULL
        # visibility: no asker passes it.
        con.execute(f"create table {path.stem} as select * from read_parquet('{_sql_str(path)}') where {admits}", {"p": principal})
    return con


def _lock_down(con, allowed: Path | None = None) -> None:
    """No file outside ``allowed`` (none at all when None) can be read or written from here on,
    and no statement can turn that back on: ``read_text('/etc/passwd')`` and ``read_parquet``
    of another home fail with DuckDB's own permission error."""
    if allowed is not None:
        con.execute(f"set allowed_directories = ['{_sql_str(allowed)}/']")
    con.execute("set enable_external_access = false")
    con.execute("set lock_configuration = true")


def run_sql(
    home,
    sql: str,
    *,
    principal: str | None = None,
    admin: bool = False,
    marts_only: bool = False,
) -> tuple[list[str], list[tuple]]:
    """Run one read-only query as ``principal`` (only the marts' rows it may see) or, with
    ``admin``, over the whole warehouse (or the marts' exports); raise StateQueryError on a
    refused statement or a warehouse locked by a build. Either way DuckDB's external access is
    off: an asker's connection reads no file at all, an admin's only files under the home."""

    if (principal is None) == (not admin):
        raise StateQueryError("say who is asking: a principal (only the rows it may see), or admin for everything")
    try:
        statements = duckdb.connect().extract_statements(sql)
    except duckdb.Error as exc:
        raise StateQueryError(f"cannot parse the query: {exc}") from None
    if not statements:
        raise StateQueryError("no statement given")
    for st in statements:
        kind = st.type.name
        if kind not in READ_ONLY_STATEMENTS:
            raise StateQueryError(f"memc sql is read-only: {kind} statements are refused (only SELECT and EXPLAIN run)")
    if principal is not None:
        if not home.marts.exists():
            raise StateQueryError(f"no marts in {home.marts}: run `memc build` first")
        con = _asker_connection(home.marts, principal)
        _lock_down(con)
    elif marts_only:
        names = tuple(sorted(p.stem for p in home.marts.glob("*.parquet")))
        con = _marts_connection(home.marts, names)
        _lock_down(con, home.root.resolve())
    else:
        if not home.warehouse_db.exists():
            raise StateQueryError(f"no warehouse at {home.warehouse_db}: run `memc build` first")
        con = duckdb.connect()
        try:
            con.execute(f"attach '{_sql_str(home.warehouse_db)}' as memc (read_only)")
        except duckdb.IOException as exc:
            if "lock" in str(exc).lower():
                raise StateQueryError(
                    "the warehouse is locked: a build (dbt) is writing it. Retry when the build is done, "
                    "or add --marts to query the marts' Parquet exports, which are always safe to read. "
                    f"({exc})"
                ) from None
            raise StateQueryError(str(exc)) from None
        con.execute("use memc")
        con.execute("set TimeZone = 'UTC'")
        # The staging views read the ledger's and claims' Parquet in place: files under the home.
        _lock_down(con, home.root.resolve())
    try:
        cur = None
        for st in statements:
            cur = con.execute(st.query)
        columns = [d[0] for d in cur.description] if cur is not None and cur.description else []
        return columns, cur.fetchall() if columns else []
    except duckdb.Error as exc:
        raise StateQueryError(str(exc).splitlines()[0]) from None
    finally:
        con.close()
