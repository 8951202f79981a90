"""`memc state` (what holds for an entity, bi-temporally, for one asker) and `memc sql` (read-only
SQL over the warehouse for analysts).

Both read what dbt built, never while holding it: `memc state` reads the marts' Parquet exports
(safe during a build); `memc sql` opens the warehouse read-only for one query, because any
process holding the DuckDB file makes the next `dbt build` fail to take its lock.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import click

# Statement types `memc sql` runs; everything else (COPY, ATTACH, INSERT, PRAGMA, SET, ...) is
# refused before the warehouse is opened. A read-only connection refuses writes to the warehouse
# itself, but COPY ... TO and ATTACH would still write files.
READ_ONLY_STATEMENTS = {"SELECT", "EXPLAIN"}

# The same query as the dbt macro state_as_of (dbt_project/macros/state_as_of.sql), over the
# Parquet exports; tests/test_state.py checks the two agree. $principal NULL = administrator.
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


def _parse_time(value: str | None, name: str) -> datetime:
    if value is None:
        return datetime.now(timezone.utc)
    try:
        t = datetime.fromisoformat(value)
    except ValueError:
        raise click.BadParameter(f"{value!r} is not an ISO date or time (e.g. 2024-06-01 or 2024-06-01T12:00)", param_hint=name) from None
    return t.replace(tzinfo=timezone.utc) if t.tzinfo is None else t


def _marts_connection(marts: Path, names: tuple[str, ...]):
    """An in-memory DuckDB with one view per mart export, named after the mart."""
    import duckdb

    con = duckdb.connect()
    con.execute("set TimeZone = 'UTC'")
    for name in names:
        path = marts / f"{name}.parquet"
        if not path.exists():
            raise click.ClickException(f"no {path}: run `memc build` first")
        con.execute(f"create view {name} as select * from read_parquet('{_sql_str(path)}')")
        # dbt-duckdb writes one all-NULL row into the export of an empty model (to keep its
        # schema); its warehouse view filters it out, and so do we.
        first = con.execute(f"select * from {name} limit 2").fetchall()
        if len(first) == 1 and all(v is None for v in first[0]):
            con.execute(f"create or replace view {name} as select * from read_parquet('{_sql_str(path)}') where false")
    return con


def _sql_str(path: Path) -> str:
    return str(path).replace("'", "''")


def _rows(cursor) -> list[dict[str, Any]]:
    cols = [d[0] for d in cursor.description]
    return [dict(zip(cols, r)) for r in cursor.fetchall()]


def state_for_entity(
    marts: Path,
    entity: str,
    *,
    principal: str | None,
    as_of: datetime,
    known_at: datetime,
    scope: str | None = None,
) -> dict[str, Any]:
    """What held for ``entity`` at valid time ``as_of`` as known at ``known_at``, for
    ``principal`` (None = administrator), with the conflicts that asker may see."""
    from memc.ids import normalize_name

    con = _marts_connection(marts, ("entities", "state_history", "state_closings", "conflicts"))
    con.execute("create view history as select * from state_history")
    con.execute("create view closings as select * from state_closings")
    key = normalize_name(entity)
    # An entity id, a canonical name, an alias entity resolution found, or a claim's subject.
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
    return {
        "entity": entity,
        "subjects": subjects,
        "asker": principal if principal is not None else "(administrator)",
        "as_of": as_of,
        "known_at": known_at,
        "facts": facts,
        "conflicts": conflicts,
    }


def _render(result: dict[str, Any]) -> str:
    lines = [
        f"{result['entity']} as {result['asker']}: valid at {result['as_of']:%Y-%m-%d %H:%M}Z, "
        f"as known at {result['known_at']:%Y-%m-%d %H:%M}Z"
    ]
    if not result["subjects"]:
        return lines[0] + "\n  no such entity"
    if not result["facts"]:
        lines.append("  nothing holds for this asker")
    for f in result["facts"]:
        until = f" until {f['valid_to']:%Y-%m-%d}" if f["valid_to"] else ""
        lines.append(f"  {f['predicate']:<20} {f['object']}  (since {f['valid_from']:%Y-%m-%d}{until})")
        lines.append(
            f"  {'':<20} source {f['source_ref'] or '-'} {f['source_entry_id']} ({f['source_kind'] or '-'}, "
            f"recorded {f['recorded_at']:%Y-%m-%d %H:%M}): \"{f['quote']}\""
        )
    if result["conflicts"]:
        lines.append("Conflicts (same valid time, different values):")
        for c in result["conflicts"]:
            lines.append(f"  {c['predicate']} at {c['valid_at']:%Y-%m-%d}: {c['resolution']}")
            for side in ("a", "b"):
                lines.append(
                    f"    {c['object_' + side]!s:<24} source {c['source_ref_' + side] or '-'} {c['source_entry_id_' + side]}: "
                    f"\"{c['quote_' + side]}\""
                )
    return "\n".join(lines)


def run_sql(home, sql: str, *, marts_only: bool = False) -> tuple[list[str], list[tuple]]:
    """Run one read-only query against the warehouse (or the marts' exports); raise ClickException
    on a refused statement or a warehouse locked by a build."""
    import duckdb

    try:
        statements = duckdb.connect().extract_statements(sql)
    except duckdb.Error as exc:
        raise click.ClickException(f"cannot parse the query: {exc}") from None
    if not statements:
        raise click.ClickException("no statement given")
    for st in statements:
        kind = st.type.name
        if kind not in READ_ONLY_STATEMENTS:
            raise click.ClickException(f"memc sql is read-only: {kind} statements are refused (only SELECT and EXPLAIN run)")
    if marts_only:
        names = tuple(sorted(p.stem for p in home.marts.glob("*.parquet")))
        con = _marts_connection(home.marts, names)
    else:
        if not home.warehouse_db.exists():
            raise click.ClickException(f"no warehouse at {home.warehouse_db}: run `memc build` first")
        try:
            con = duckdb.connect(str(home.warehouse_db), read_only=True)
        except duckdb.IOException as exc:
            if "lock" in str(exc).lower():
                raise click.ClickException(
                    "the warehouse is locked: a build (dbt) is writing it. Retry when the build is done, "
                    "or add --marts to query the marts' Parquet exports, which are always safe to read. "
                    f"({exc})"
                ) from None
            raise click.ClickException(str(exc)) from None
        con.execute("set TimeZone = 'UTC'")
    try:
        cur = None
        for st in statements:
            cur = con.execute(st.query)
        columns = [d[0] for d in cur.description] if cur is not None and cur.description else []
        return columns, cur.fetchall() if columns else []
    except duckdb.Error as exc:
        raise click.ClickException(str(exc).splitlines()[0]) from None
    finally:
        con.close()


def _table(columns: list[str], rows: list[tuple], limit: int) -> str:
    def cell(v: Any) -> str:
        s = v.isoformat() if hasattr(v, "isoformat") else str(v) if v is not None else "NULL"
        s = " ".join(s.split())
        return s if len(s) <= 60 else s[:59] + "…"

    shown = [[cell(v) for v in r] for r in rows[:limit]]
    widths = [max([len(c)] + [len(r[i]) for r in shown]) for i, c in enumerate(columns)]
    out = [" | ".join(c.ljust(w) for c, w in zip(columns, widths)), "-+-".join("-" * w for w in widths)]
    out += [" | ".join(v.ljust(w) for v, w in zip(r, widths)) for r in shown]
    more = f" (first {limit} shown)" if len(rows) > limit else ""
    out.append(f"({len(rows)} row{'s' if len(rows) != 1 else ''}{more})")
    return "\n".join(out)


def register(cli: click.Group) -> None:
    # Here, not at the top: memc.cli imports this module while it registers its commands.
    from memc.cli import _dump, _home, home_option

    @cli.command("state")
    @click.argument("entity")
    @click.option("--as", "asker", default=None, help="The principal asking; only what it may see counts.")
    @click.option("--admin", is_flag=True, help="Fold every claim, whoever may see it (instead of --as).")
    @click.option("--as-of", "as_of", default=None, help="Valid time: what held then (ISO date or time; default now).")
    @click.option("--known-at", "known_at", default=None, help="Transaction time: as memc knew it then (default now).")
    @click.option("--scope", default=None, help="Restrict to one scope.")
    @click.option("--json", "as_json", is_flag=True)
    @home_option
    @click.pass_context
    def state(ctx, entity, asker, admin, as_of, known_at, scope, as_json, home_dir):
        """What holds for ENTITY (a name, an alias or an entity id), with its sources and conflicts.

        Bi-temporal: --as-of picks the valid time, --known-at what memc knew at a past moment."""
        if bool(asker) == bool(admin):
            raise click.UsageError("say who is asking: --as PRINCIPAL, or --admin for every claim")
        home = _home(ctx, home_dir)
        result = state_for_entity(
            home.marts,
            entity,
            principal=None if admin else asker,
            as_of=_parse_time(as_of, "--as-of"),
            known_at=_parse_time(known_at, "--known-at"),
            scope=scope,
        )
        if as_json:
            _dump(result)
        else:
            click.echo(_render(result))

    @cli.command("sql")
    @click.argument("query")
    @click.option("--marts", "marts_only", is_flag=True, help="Query the marts' Parquet exports instead of the warehouse file (safe during a build).")
    @click.option("--json", "as_json", is_flag=True, help="Rows as a JSON list of objects.")
    @click.option("--limit", default=100, show_default=True, type=click.IntRange(1), help="Rows shown as a table.")
    @home_option
    @click.pass_context
    def sql(ctx, query, marts_only, as_json, limit, home_dir):
        """Run a read-only SQL QUERY (SELECT or EXPLAIN) against the warehouse.

        The marts (state_current, state_history, state_closings, conflicts, entities, interactions,
        timeline) and the staging and intermediate models are tables and views of
        <home>/warehouse/memc.duckdb; see docs/analysts.md."""
        home = _home(ctx, home_dir)
        columns, rows = run_sql(home, query, marts_only=marts_only)
        if as_json:
            _dump([dict(zip(columns, r)) for r in rows])
        else:
            click.echo(_table(columns, rows, limit))
