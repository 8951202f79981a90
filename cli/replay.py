"""`memc replay QUERY_ID QUESTION`: compile a logged question again, as the same asker with the
same scope, time travel and settings, and say whether the plan is the logged one or which step
changed first, how, and why (query/replay.py; docs/context.md, "Read policy")."""

from __future__ import annotations

import click

from cli.common import dump, home_option, resolve_home
from query import StaleViewError
from query.replay import ReplayError, replay


@click.command("replay")
@click.argument("query_id")
@click.argument("question")
@click.option("--goal", default=None, help="The goal the compile was asked with, exactly (when it had one).")
@click.option("--json", "as_json", is_flag=True, help="The comparison as JSON: identical, first_change, changes, why.")
@home_option
@click.pass_context
def replay_command(ctx, query_id, question, goal, as_json, home_dir):
    """Compile QUESTION again as the compile QUERY_ID was (`memc ask` prints its query id) and
    compare the plans. The query log keeps no question text, only a keyed fingerprint: a
    QUESTION that is not the logged one is refused."""

    home = resolve_home(ctx, home_dir)
    try:
        result = replay(home, query_id, question, goal=goal)
    except ReplayError as exc:
        raise click.ClickException(str(exc)) from None
    except StaleViewError as exc:
        raise click.ClickException(f"{exc}. Run `memc build` (or `memc up` to keep views fresh).") from None
    if as_json:
        dump(result.to_dict())
    else:
        click.echo(result.render())
