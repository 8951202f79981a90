"""`memc state` (what holds for an entity, bi-temporally, for one asker) and `memc sql` (read-only
SQL over the warehouse for analysts).

Both read what dbt built, never while holding it: `memc state` reads the marts' Parquet exports
(safe during a build); `memc sql` opens the warehouse read-only for one query, because any
process holding the DuckDB file makes the next `dbt build` fail to take its lock.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import click

from query.state import StateQueryError, run_sql, state_for_entity


def _parse_time(value: str | None, name: str) -> datetime:
    """An ISO date or time option (UTC if no zone given); now when not given."""
    from memc.cli import _time_option

    return _time_option(value, name) or datetime.now(timezone.utc)


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
        by = f.get("source_ingested_by")
        lines.append(
            f"  {'':<20} source {f['source_ref'] or '-'} {f['source_entry_id']} ({f['source_kind'] or '-'}, "
            f"recorded {f['recorded_at']:%Y-%m-%d %H:%M}{', ingested by ' + by if by else ''}): \"{f['quote']}\""
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
        try:
            result = state_for_entity(
                home.marts,
                entity,
                principal=None if admin else asker,
                as_of=_parse_time(as_of, "--as-of"),
                known_at=_parse_time(known_at, "--known-at"),
                scope=scope,
                ledger=home.ledger,
            )
        except StateQueryError as exc:
            raise click.ClickException(str(exc)) from None
        if as_json:
            _dump(result)
        else:
            click.echo(_render(result))

    @cli.command("sql")
    @click.argument("query")
    @click.option("--as", "asker", default=None, help="The principal asking: the marts, with only the rows it may see.")
    @click.option("--admin", is_flag=True, help="The whole warehouse (staging and intermediate models too), every row.")
    @click.option("--marts", "marts_only", is_flag=True, help="With --admin: the marts' Parquet exports instead of the warehouse file (safe during a build).")
    @click.option("--json", "as_json", is_flag=True, help="Rows as a JSON list of objects.")
    @click.option("--limit", default=100, show_default=True, type=click.IntRange(1), help="Rows shown as a table.")
    @home_option
    @click.pass_context
    def sql(ctx, query, asker, admin, marts_only, as_json, limit, home_dir):
        """Run a read-only SQL QUERY (SELECT or EXPLAIN) as a principal, or as admin.

        --as P: the marts (state_current, state_history, state_closings, conflicts, entities,
        interactions, timeline, graph_*) holding only the rows P may see. --admin: every model of
        <home>/warehouse/memc.duckdb. Either way no file outside the home can be read; see
        docs/analysts.md and docs/security.md."""
        if bool(asker) == bool(admin):
            raise click.UsageError("say who is asking: --as PRINCIPAL (the rows it may see), or --admin for everything")
        if marts_only and not admin:
            raise click.UsageError("--marts goes with --admin (--as always reads the marts' exports)")
        home = _home(ctx, home_dir)
        try:
            columns, rows = run_sql(home, query, principal=asker, admin=admin, marts_only=marts_only)
        except StateQueryError as exc:
            raise click.ClickException(str(exc)) from None
        if as_json:
            _dump([dict(zip(columns, r)) for r in rows])
        else:
            click.echo(_table(columns, rows, limit))
