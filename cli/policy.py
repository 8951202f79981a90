"""The policy, read back: `memc actions` (what the fold did with every claim about an entity:
ADD, UPDATE, DELETE or NONE, by which rule, against which candidates), and `memc compare` (what
it would decide differently, and what would hold now, folded from another extractor version)."""

from __future__ import annotations

import click

from cli.common import dump, home_option, principal_arg, resolve_home, time_or_now
from query.actions import StateQueryError, actions_for_entity, render_actions


@click.command("actions")
@click.argument("entity", required=False)
@click.option("--as", "asker", default=None, callback=principal_arg, help="The principal asking; only the actions it may see.")
@click.option("--admin", is_flag=True, help="Every action, whoever may see it (instead of --as).")
@click.option("--as-of", "as_of", default=None, help="Valid time: actions about times up to then (ISO date or time; default now).")
@click.option("--known-at", "known_at", default=None, help="Transaction time: the actions decided by then (default now).")
@click.option("--scope", default=None, help="Restrict to one scope.")
@click.option("--json", "as_json", is_flag=True)
@home_option
@click.pass_context
def actions_command(ctx, entity, asker, admin, as_of, known_at, scope, as_json, home_dir):
    """The write policy for ENTITY (a name, an alias or an entity id; every entity when left
    out): each claim the fold considered, as ADD, UPDATE, DELETE or NONE, with the rule that
    decided, what it closed, its source and the extractor and fold versions. From the
    memory_actions mart, so `memc build` first."""
    if bool(asker) == bool(admin):
        raise click.UsageError("say who is asking: --as PRINCIPAL, or --admin for every action")
    home = resolve_home(ctx, home_dir)
    try:
        result = actions_for_entity(
            home.marts,
            entity,
            principal=None if admin else asker,
            as_of=time_or_now(as_of, "--as-of"),
            known_at=time_or_now(known_at, "--known-at"),
            scope=scope,
        )
    except StateQueryError as exc:
        raise click.ClickException(str(exc)) from None
    if as_json:
        dump(result)
    else:
        click.echo(render_actions(result))


@click.command("compare")
@click.option("--extractor", "keys", multiple=True, metavar="KEY", help="An extractor version with claims on disk (e.g. rules-0.2.0); given twice: A, then B.")
@click.option("--entity", default=None, help="Only this entity (a name, an alias or an entity id).")
@click.option("--as", "asker", default=None, callback=principal_arg, help="The principal asking; only what it may see.")
@click.option("--admin", is_flag=True, help="Everything, whoever may see it (instead of --as).")
@click.option("--scope", default=None, help="Restrict to one scope.")
@click.option("--json", "as_json", is_flag=True)
@home_option
@click.pass_context
def compare_command(ctx, keys, entity, asker, admin, scope, as_json, home_dir):
    """Policy A/B: fold the same ledger from extractor version A's claims and from B's, each in
    a scratch warehouse of its own, and show per entity the write-policy actions that differ
    (decided differently, or considered by one version only) and the state rows B adds or
    removes, with their sources. The live view (warehouse, marts, Dagster runs) is not touched.
    Both versions' claims must be on disk: `memc backfill --claims-only --extractor KEY` first."""
    if len(keys) != 2:
        raise click.UsageError("name two extractor versions: --extractor A --extractor B")
    if bool(asker) == bool(admin):
        raise click.UsageError("say who is asking: --as PRINCIPAL, or --admin for everything")
    from orchestration.compare import CompareError, compare_extractors  # lazy: loads dbt and the claims store (cli/__init__.py)
    from query.compare import render_diff

    home = resolve_home(ctx, home_dir)
    try:
        result = compare_extractors(home, keys[0], keys[1], principal=None if admin else asker, entity=entity, scope=scope)
    except (CompareError, StateQueryError) as exc:
        raise click.ClickException(str(exc)) from None
    if as_json:
        dump(result)
    else:
        click.echo(render_diff(result))
