"""Operating the platform: `memc up` / `memc down` (the Dagster webserver and daemon, so that
sensors, schedules, automation and freshness run), `memc dream` (dreaming now) and
`memc backfill-views` (re-materialize the views an upgrade left out of date)."""

from __future__ import annotations

import sys

import click


def register(cli: click.Group) -> None:
    # Imported here, not at the top: under `python -m memc.cli` the CLI module is __main__ (see claims_cmd).
    from memc.cli import _dump, _home, home_option

    @cli.command("up")
    @click.option("--port", default=3000, show_default=True, type=int)
    @click.option("--timeout", default=180, show_default=True, type=int, help="Seconds to wait for the UI to answer.")
    @home_option
    @click.pass_context
    def up_command(ctx, port, timeout, home_dir):
        """Start the Dagster webserver (127.0.0.1) and daemon in the background, telemetry off.

        Returns once the UI answers. The daemon runs the inbox and ledger-head sensors, the
        automation (views refresh when the ledger grows, dreaming nightly), view compaction and
        freshness. Pids are kept in <home>/dagster/run/; `memc down` stops both."""
        from orchestration.platform import start

        home = _home(ctx, home_dir)
        try:
            started = start(home, port, timeout=timeout)
        except RuntimeError as exc:
            raise click.ClickException(str(exc)) from None
        if started.already_running:
            click.echo(f"already running for {home.root}: {started.url} (pids {started.pids})")
            return
        click.echo(f"Dagster UI on {started.url} (memory home {home.root})")
        click.echo(f"  webserver pid {started.pids['webserver']}, daemon pid {started.pids['daemon']}; logs in {home.dagster / 'logs'}")
        click.echo("  `memc down` stops them")

    @cli.command("down")
    @click.option("--timeout", default=30, show_default=True, type=int, help="Seconds to wait before killing.")
    @home_option
    @click.pass_context
    def down_command(ctx, timeout, home_dir):
        """Stop the webserver and daemon `memc up` started (by pid, whole process groups)."""
        from orchestration.platform import stop

        outcome = stop(_home(ctx, home_dir), timeout=timeout)
        if not outcome:
            click.echo("nothing to stop")
        for name, what in outcome.items():
            click.echo(f"{name}: {what}")

    @cli.command("dream")
    @click.option("--no-recompile", is_flag=True, help="Do not recompile the views after dreaming appended claims.")
    @click.option("--json", "as_json", is_flag=True)
    @home_option
    @click.pass_context
    def dream_command(ctx, no_recompile, as_json, home_dir):
        """Run dreaming now: PageRank and communities over the entity graph, written back to the
        ledger as derived claims (in-process, through Dagster)."""
        from orchestration.runner import dream

        home = _home(ctx, home_dir)
        try:
            report = dream(home, recompile=not no_recompile)
        except FileNotFoundError as exc:
            raise click.ClickException(str(exc)) from None
        summary = {"success": report.success, "materialized": sorted(set(report.materialized)), "runs": len(report.runs),
                   "failed_steps": report.failed_steps, "ledger_head": report.ledger_head}  # fmt: skip
        if as_json:
            _dump(summary)
        else:
            click.echo(
                f"{'dreamt' if report.success else 'FAILED'}: {len(summary['materialized'])} asset(s) in {len(report.runs)} run(s); "
                f"ledger head {report.ledger_head}"
            )
        if not report.success:
            click.echo(f"FAILED steps: {', '.join(report.failed_steps)} (see `memc ui` for the run logs)", err=True)
            sys.exit(1)

    @cli.command("backfill-views")
    @click.option("--dry-run", is_flag=True, help="Only list the out-of-date views.")
    @click.option("--json", "as_json", is_flag=True)
    @home_option
    @click.pass_context
    def backfill_views_command(ctx, dry_run, as_json, home_dir):
        """Re-materialize the unpartitioned views whose code version changed since their last
        materialization (an embedding-model upgrade re-embeds the evidence index and swaps it in
        whole). Claims partitions: `memc backfill`."""
        from orchestration.runner import backfill_views

        home = _home(ctx, home_dir)
        if not home.ledger.exists():
            raise click.ClickException(f"no ledger at {home.ledger}: run `memc ingest` first")
        report = backfill_views(home, dry_run=dry_run)
        summary = {"out_of_date": report.out_of_date, "materialized": sorted(set(report.materialized)),
                   "success": report.success, "failed_steps": report.failed_steps, "dry_run": dry_run}  # fmt: skip
        if as_json:
            _dump(summary)
        elif not report.out_of_date:
            click.echo("every view is up to date with its code version")
        else:
            verb = "out of date" if dry_run else "re-materialized"
            click.echo(f"{verb}: {', '.join(report.out_of_date)}")
        if not report.success:
            click.echo(f"FAILED steps: {', '.join(report.failed_steps)}", err=True)
            sys.exit(1)
