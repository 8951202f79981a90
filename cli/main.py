"""The `memc` entry point: the top-level group and its commands, in the order a user meets them
(evidence in, compile, ask, forget, serve, operate, evaluate). Every command takes ``--home DIR``
(or ``$MEMC_HOME``; default ./memc_home)."""

from __future__ import annotations

import click

from cli import ask, build, eval, evidence, forget, ops, policy, replay, serve
from cli.common import home_option


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@home_option
@click.version_option(package_name="memc")
@click.pass_context
def cli(ctx: click.Context, home_dir: str | None) -> None:
    """memc: a memory compiler. The ledger keeps the evidence; everything else is a compiled view."""
    ctx.ensure_object(dict)
    ctx.obj["home_dir"] = home_dir


for command in (
    evidence.ingest, evidence.ledger,
    build.build, build.backfill_command, build.backfill_views_command, build.dream_command,
    ask.ask, ask.state, ask.claims_command, ask.sql, replay.replay_command,
    policy.actions_command, policy.compare_command,
    forget.forget_cmd,
    serve.serve, serve.mcp_command, serve.keys,
    ops.up_command, ops.down_command, ops.ui,
    eval.eval_group,
):  # fmt: skip
    cli.add_command(command)


def main() -> None:
    cli(obj={})


if __name__ == "__main__":
    main()
