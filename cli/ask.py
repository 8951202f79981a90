"""Asking memory: `memc ask` (a compiled context for one asker), `memc state` (what holds for an entity,
bi-temporally), `memc claims` (the extraction pass's claims and rejections) and `memc sql`
(read-only SQL for analysts). Every one runs as a principal (`--as`) or, where it says so, `--admin`."""

from __future__ import annotations

import json
import time
from datetime import datetime
from typing import Any

import click

from cli.common import dump, home_option, parse_time, principal_arg, pull_views, require_ledger, resolve_home, time_or_now
from query.config import PRESETS

# The stages these commands run are imported inside each command: `memc ask` answered by a
# running `memc serve` (api/local.py) needs none of them, and `memc --help` lists the commands
# without loading them (importing cli.main: 0.74 s with them at the top, measured with
# `python -X importtime`; see docs/benchmarks.md, "`memc ask` from a cold process").


def _render(result: dict[str, Any]) -> str:
    lines = [
        f"{result['entity']} as {result['asker']}: valid at {result['as_of']:%Y-%m-%d %H:%M}Z, "
        f"as known at {result['known_at']:%Y-%m-%d %H:%M}Z"
    ]
    if not result["subjects"]:
        return lines[0] + "\n  no such entity"
    if not result["facts"]:
        lines.append("  nothing holds for this asker")
    # Two scopes can each hold an entity of this name (a team's Elena, an inbox drop's Elena):
    # then the facts are grouped under their scope, or two current cities would read as one.
    scopes = sorted({s["scope"] for s in result["subjects"]} | {f["scope"] for f in result["facts"]})
    mixed = len(scopes) > 1
    if mixed:
        lines[0] += f"; in {len(scopes)} scopes ({', '.join(scopes)}): --scope S shows one"
    shown_scope = None
    for f in result["facts"]:
        if mixed and f["scope"] != shown_scope:
            shown_scope = f["scope"]
            lines.append(f" scope {shown_scope}:")
        until = f" until {f['valid_to']:%Y-%m-%d}" if f["valid_to"] else ""
        lines.append(f"  {f['predicate']:<20} {f['object']}  (since {f['valid_from']:%Y-%m-%d}{until})")
        by = f.get("source_ingested_by")
        lines.append(
            f"  {'':<20} source {f['source_ref'] or '-'} {f['source_entry_id']} ({f['source_kind'] or '-'}, "
            f"recorded {f['recorded_at']:%Y-%m-%d %H:%M}{', ingested by ' + by if by else ''}): \"{f['quote']}\""
        )
        # A value said again in other entries is one fact: its older sources follow, newest first.
        for src in f.get("sources", [])[1:]:
            lines.append(
                f"  {'':<20} also   {src['source_ref'] or '-'} {src['source_entry_id']} ({src['source_kind'] or '-'}, "
                f"since {src['valid_from']:%Y-%m-%d}): \"{src['quote']}\""
            )
    if result["conflicts"]:
        lines.append("Conflicts (same valid time, different values):")
        for c in result["conflicts"]:
            where = f"[{c['scope']}] " if mixed and c.get("scope") else ""
            lines.append(f"  {where}{c['predicate']} at {c['valid_at']:%Y-%m-%d}: {c['resolution']}")
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



def _match_entity(rows: list[dict], entity: str, resolver, rejected: bool) -> list[dict]:
    """Rows about ``entity``: by name, alias (resolved per scope) or entity id."""
    from memc.ids import normalize_name  # lazy: see the imports above

    want = normalize_name(entity)
    out = []
    for r in rows:
        if rejected:
            p = json.loads(r["proposal"]) if r["proposal"] else {}
            names = [str(p.get("subject", "")), str(p.get("object", ""))]
            scope = r.get("scope") or ""
            if any(normalize_name(n) == want or (n and resolver.entity_id(scope, n) == resolver.entity_id(scope, entity)) for n in names):
                out.append(r)
            continue
        ids = {r["subject_id"], r.get("object_id")}
        if entity in ids or normalize_name(r["subject"]) == want or resolver.entity_id(r["scope"], entity) in ids:
            out.append(r)
    return out


def _visible(rows: list[dict], home, asker: str) -> list[dict]:
    """The rows ``asker`` may see: the claim's own visibility admits it and, by the ledger's
    record (the independent checker's), so does its source entry's (rejections carry none)."""
    from ledger import open_ledger  # lazy: see the imports above
    from memc.visibility import may_see
    from query.acl import Checker, ledger_facts

    checker = Checker(ledger_facts(open_ledger(home.ledger, write=False)), asker)
    return [
        r for r in rows
        if checker.why_not(r["source_entry_id"]) is None and ("visibility" not in r or may_see(asker, r["visibility"]))
    ]  # fmt: skip


@click.command()
@click.argument("question")
@click.option("--as", "asker", required=True, callback=principal_arg, help="The principal asking; only what it may see is used.")
@click.option("--scope", default=None, help="Restrict to one scope.")
@click.option("--as-of", "as_of", default=None, help="Valid time: what held then (ISO date or time).")
@click.option("--known-at", "known_at", default=None, help="Transaction time: as memc knew it then (ISO date or time).")
@click.option("--budget", default=None, type=click.IntRange(50), help="Token budget of the context (default: the preset's, 2000).")
@click.option("--preset", type=click.Choice(list(PRESETS)), default="balanced", show_default=True)
@click.option("--k", default=None, type=click.IntRange(1, 200), help="Evidence items to return (default: the preset's).")
@click.option("--goal", default=None, help="The task the answer is for: its entities and predicates rank first, and the context names it.")
@click.option("--uncolored", is_flag=True, help="Leave out every fact about the asker: a take not coloured by what memory knows of them.")
@click.option("--json", "as_json", is_flag=True, help="The context as JSON (schema: docs/context.md).")
@click.option("--no-server", "no_server", is_flag=True, help="Compile in this process even when a `memc serve` runs on this home.")
@click.option("-v", "--verbose", is_flag=True, help="Say on stderr where the context was compiled (a running `memc serve`, or here) and in how long.")
@home_option
@click.pass_context
def ask(ctx, question, asker, scope, as_of, known_at, budget, preset, k, goal, uncolored, as_json, no_server, verbose, home_dir):
    """Compile a context for QUESTION as the principal given by --as, with provenance.

    When a `memc serve` runs on this home, it compiles the context (the same compiler, with the
    model already loaded: about 1 s instead of about 10 s from a cold process); when it cannot
    answer, the context is compiled here, with a one-line note on stderr. --no-server always
    compiles here."""

    home = resolve_home(ctx, home_dir)
    require_ledger(home, "run `memc ingest` and `memc build` first")
    when = parse_time(as_of, "--as-of"), parse_time(known_at, "--known-at")
    started = time.perf_counter()
    answer = server = None
    if not no_server:
        body = {
            "question": question, "asker": asker, "scope": scope, "as_of": when[0], "known_at": when[1], "budget_tokens": budget,
            "preset": preset, "k": k, "goal": goal or None, "uncolored": uncolored,
        }  # fmt: skip
        answer, server = _ask_server(home, {n: v.isoformat() if isinstance(v, datetime) else v for n, v in body.items() if v is not None})
    if answer is None:
        data, rendered = _compile_here(home, question, asker, scope, when, budget, preset, k, goal, uncolored)
        where = "in this process"
    else:
        rendered = answer.pop("rendered")
        data, where = answer, f"by memc serve (pid {server['pid']}, port {server['port']})"
    if verbose:
        click.echo(f"memc ask: compiled {where} in {(time.perf_counter() - started) * 1000:.0f} ms", err=True)
    if as_json:
        dump(data)
    else:
        click.echo(rendered)
        # Below the context, not in it: the agent's budget is for evidence (query/context.py).
        click.echo(f"\nquery {data['query_id']} (memc replay {data['query_id']} QUESTION)")


def _ask_server(home, body: dict[str, Any]) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """The running server's answer and its record (api/local.py), or (None, None): no server
    recorded for this home (silently), or it could not answer (with a one-line note on stderr)."""
    from api import local  # lazy: the stdlib's HTTP client only

    record = local.read_record(home)
    if record is None:
        return None, None
    try:
        return local.ask(record, body), record
    except local.ServerUnavailable as exc:
        click.echo(f"memc ask: memc serve (pid {record['pid']}, port {record['port']}) {exc}; compiling in this process", err=True)
        return None, None


def _compile_here(home, question, asker, scope, when, budget, preset, k, goal, uncolored) -> tuple[dict[str, Any], str]:
    """Compile in this process: what `memc serve` would (its JSON-ready dict, and the rendering)."""
    # lazy: LanceDB (1.3 s), the question's model (0.2 s on ONNX Runtime, ~7 s with torch) and
    # the rest of the pipeline, which a running server spares
    from query import QueryConfig, StaleViewError, compile_context
    from query.acl import UnknownScopeError
    from views.embedder_onnx import question_embedder

    config = QueryConfig.preset(preset)
    if k is not None:
        config = config.model_copy(update={"k": k})
    try:
        result = compile_context(
            question, asker, home=home, scope=scope, config=config, budget_tokens=budget, as_of=when[0], known_at=when[1], goal=goal,
            uncolored=uncolored,
            # The servers' embedder (views/embedder_onnx.py): without torch to import when the ONNX
            # export exists, else one torch thread; one question encodes as fast on one as on two.
            embedder=question_embedder(threads=1),
        )  # fmt: skip
    except StaleViewError as exc:
        raise click.ClickException(f"{exc}. Run `memc build` (or `memc up` to keep views fresh).") from None
    except UnknownScopeError as exc:
        raise click.ClickException(str(exc)) from None
    return result.to_dict(), result.render()





@click.command("state")
@click.argument("entity")
@click.option("--as", "asker", default=None, callback=principal_arg, help="The principal asking; only what it may see counts.")
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
    from query.state import StateQueryError, state_for_entity  # lazy: see the imports above

    home = resolve_home(ctx, home_dir)
    pull_views(home, "warehouse")
    try:
        result = state_for_entity(
            home.marts,
            entity,
            principal=None if admin else asker,
            as_of=time_or_now(as_of, "--as-of"),
            known_at=time_or_now(known_at, "--known-at"),
            scope=scope,
            ledger=home.ledger,
        )
    except StateQueryError as exc:
        raise click.ClickException(str(exc)) from None
    if as_json:
        dump(result)
    else:
        click.echo(_render(result))

@click.command("sql")
@click.argument("query")
@click.option("--as", "asker", default=None, callback=principal_arg, help="The principal asking: the marts, with only the rows it may see.")
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
    from query.state import StateQueryError, run_sql  # lazy: see the imports above

    home = resolve_home(ctx, home_dir)
    pull_views(home, "warehouse")
    try:
        columns, rows = run_sql(home, query, principal=asker, admin=admin, marts_only=marts_only)
    except StateQueryError as exc:
        raise click.ClickException(str(exc)) from None
    if as_json:
        dump([dict(zip(columns, r)) for r in rows])
    else:
        click.echo(_table(columns, rows, limit))


@click.command("claims")
@click.option("--entity", default=None, help="Only claims about this person or thing (name, alias or entity id).")
@click.option("--extractor", "extractor_key", default=None, help="Extractor version key, e.g. rules-0.2.0 (default: the active one).")
@click.option("--rejected", is_flag=True, help="List rejected proposals with the validator and reason instead.")
@click.option("--as", "asker", default=None, callback=principal_arg, help="The principal asking: only claims drawn from evidence it may see.")
@click.option("--admin", is_flag=True, help="Every claim, whoever may see its evidence (instead of --as).")
@click.option("--json", "as_json", is_flag=True)
@home_option
@click.pass_context
def claims_command(ctx, entity, extractor_key, rejected, asker, admin, as_json, home_dir):
    """List extracted claims (or rejections) with their quotes and sources, as a principal
    (only those whose source entry it may see, by the ledger's own record) or as admin."""

    if bool(asker) == bool(admin):
        raise click.UsageError("say who is asking: --as PRINCIPAL, or --admin for every claim")
    from claims.extract import ExtractorError, active_extractor_key  # lazy: see the imports above
    from claims.store import extractor_keys, listed, read_claims, read_resolver

    home = resolve_home(ctx, home_dir)
    pull_views(home, "claims")
    try:
        key = extractor_key or active_extractor_key()
    except ExtractorError as exc:
        raise click.ClickException(str(exc)) from None
    known = extractor_keys(home.claims)
    if key not in known:
        hint = f"known: {', '.join(known)}" if known else "run `memc build` first"
        raise click.ClickException(f"no claims for extractor {key!r} in {home.claims} ({hint})")
    rows = read_claims(home.claims, key, rejected=rejected).to_pylist()
    if asker:
        rows = _visible(rows, home, asker)
    if entity:
        rows = _match_entity(rows, entity, read_resolver(home.claims), rejected)
    rows = listed(rows, rejected=rejected)
    if as_json:
        dump(rows)
        return
    what = "rejections" if rejected else "claims"
    click.echo(f"{len(rows)} {what} of {key}" + (f" about {entity!r}" if entity else ""))
    for r in rows:
        if rejected:
            click.echo(f"- [{r['validator']}] {r['reason']}")
            click.echo(f"    entry {r['source_entry_id']} ({r['source_ref'] or '-'}), proposal {r['proposal'][:160]}")
        else:
            neg = "NOT " if r["polarity"] == "retract" else ""
            when = r["valid_at"].date().isoformat() + (f" ({r['time_phrase']})" if r["time_phrase"] else "")
            click.echo(f"- {r['subject']} {neg}{r['predicate']} {r['object']}  [valid {when}]")
            click.echo(f"    \"{r['quote']}\" — entry {r['source_entry_id']} ({r['source_ref'] or '-'}), {r['extractor']}-{r['extractor_version']}")
            if r.get("question_quote"):  # a reply read by the question it answers (rules 0.5.0 on)
                click.echo(f"    answering \"{r['question_quote']}\" — entry {r['question_entry_id']}")
