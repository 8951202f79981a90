"""The `memc` entry point: the top-level group and its commands, in the order a user meets them
(evidence in, compile, ask, forget, serve, operate, evaluate). Every command takes ``--home DIR``
(or ``$MEMC_HOME``; default ./memc_home).

Each command's module loads when that command runs (click's lazy subcommands): `memc ask`
imports cli/ask.py and nothing of ingestion, the build, replay or policy. With every module
imported up front, `import cli.main` took 0.66 s on the 2-core machine (`python -X importtime`;
docs/benchmarks.md, "`memc ask` from a cold process"), a third of the 2 s a warm `memc ask` may
take. `memc --help` still loads them all, for their one-line help."""

from __future__ import annotations

import click

from cli.common import home_option

# name -> (module, attribute), in the order a user meets them.
COMMANDS = {
    "ingest": ("cli.evidence", "ingest"), "ledger": ("cli.evidence", "ledger"),
    "build": ("cli.build", "build"), "backfill": ("cli.build", "backfill_command"),
    "backfill-views": ("cli.build", "backfill_views_command"), "dream": ("cli.build", "dream_command"),
    "ask": ("cli.ask", "ask"), "state": ("cli.ask", "state"), "claims": ("cli.ask", "claims_command"), "sql": ("cli.ask", "sql"),
    "replay": ("cli.replay", "replay_command"),
    "actions": ("cli.policy", "actions_command"), "compare": ("cli.policy", "compare_command"),
    "forget": ("cli.forget", "forget_cmd"),
    "serve": ("cli.serve", "serve"), "mcp": ("cli.serve", "mcp_command"), "keys": ("cli.serve", "keys"),
    "up": ("cli.ops", "up_command"), "down": ("cli.ops", "down_command"), "ui": ("cli.ops", "ui"),
    "docs": ("cli.ops", "docs_command"),
    "eval": ("cli.eval", "eval_group"),
}  # fmt: skip


class LazyGroup(click.Group):
    """A group whose commands are imported by name, when asked for."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in COMMANDS:
            return None
        module, attr = COMMANDS[name]
        # __import__, not importlib.import_module: that one bypasses `python -X importtime`,
        # which then hides the command's own module from the profile.
        return getattr(__import__(module, fromlist=[attr]), attr)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@home_option
@click.version_option(package_name="memc")
@click.pass_context
def cli(ctx: click.Context, home_dir: str | None) -> None:
    """memc: a memory compiler. The ledger keeps the evidence; everything else is a compiled view."""
    ctx.ensure_object(dict)
    ctx.obj["home_dir"] = home_dir


def main() -> None:
    cli(obj={})


if __name__ == "__main__":
    main()
