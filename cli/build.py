"""Compiling views: `memc build` (every view, through Dagster), `memc backfill` (re-extract ledger days),
`memc backfill-views` (views whose code version changed) and `memc dream` (dreaming now)."""

from __future__ import annotations

import sys
from types import SimpleNamespace

import click

from claims.extract import ExtractorError
from claims.extractors.registry import EXTRACTOR_CHOICES
from cli.common import dump, home_option, require_ledger, resolve_home
from memc.locks import HomeBusy, exclusive


@click.command()
@click.option("--quiet", is_flag=True, help="No progress display.")
@click.option("--force", is_flag=True, help="Build every view even when none is out of date.")
@click.option("--no-server", "no_server", is_flag=True, help="Build in this process even when a `memc serve` runs on this home.")
@home_option
@click.pass_context
def build(ctx, quiet, force, no_server, home_dir):
    """Materialize every view through Dagster, in-process, with a progress display.

    Views that are all current (each at the ledger head, built by the current code, the profile
    compiled from the whole query log) are left as they are: nothing runs.

    When a `memc serve` runs on this home, it builds, in its own process where Dagster, dbt and
    the extractor's models are loaded already (the answer is its report; no step-by-step display);
    when it cannot, the build runs here, with a one-line note. --no-server always builds here."""
    home = resolve_home(ctx, home_dir)
    if not no_server and (report := _build_in_server(home, force)) is not None:
        _print_report(report)
        return
    # The home's build lock before Dagster loads (seconds): a second build is refused at once.
    # The runner takes it again (re-entrant) for the callers that do not come through here.
    try:
        with exclusive(home.build_lock, "memc build", wait=False):
            _print_report(_build(home, quiet, force))
    except HomeBusy as exc:
        raise click.ClickException(str(exc)) from None


def _build_in_server(home, force: bool):
    """The report of the build the running server did (api/local.py), or None: no server
    recorded for this home (silently), or it could not build (with a one-line note on stderr)."""
    from api import local  # lazy: the stdlib's HTTP client only

    record = local.read_record(home)
    if record is None:
        return None
    where = f"memc serve (pid {record['pid']}, port {record['port']})"
    click.echo(f"memc build: building in {where}...", err=True)
    try:
        return SimpleNamespace(**local.build(record, force=force))
    except local.ServerUnavailable as exc:
        click.echo(f"memc build: {where} {exc}; building in this process", err=True)
        return None


def _build(home, quiet: bool, force: bool):
    from rich.console import Console  # lazy: only `memc build` draws progress
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn  # lazy: only `memc build` draws progress

    from orchestration.runner import build as run_build  # lazy: loads Dagster and dbt (cli/__init__.py)

    with Progress(
        SpinnerColumn(), TextColumn("[bold]{task.description}"), TextColumn("{task.completed} steps done"),
        TimeElapsedColumn(), console=Console(stderr=True), disable=quiet,
    ) as progress:
        tasks: list = []

        def on_event(kind: str, step: str | None) -> None:
            if kind == "RUN_START":
                label = "compiling views" if not tasks else "recompiling after dreaming"
                tasks.append(progress.add_task(label, total=None))
            elif not tasks:
                return
            elif kind == "STEP_START" and step:
                progress.update(tasks[-1], description=f"running {step}")
            elif kind in ("STEP_SUCCESS", "STEP_FAILURE", "STEP_SKIPPED"):
                progress.advance(tasks[-1])
            elif kind in ("PIPELINE_SUCCESS", "PIPELINE_FAILURE"):
                done = progress.tasks[-1].completed  # stop the spinner, keep the step count
                label = "compiled" if kind == "PIPELINE_SUCCESS" else "FAILED"
                progress.update(tasks[-1], description=label, total=done, completed=done)

        return run_build(home, on_event=on_event, force=force)


def _print_report(report) -> None:
    """A BuildReport, or the server's (its fields, by name), as one line; exit 1 if it failed."""
    if report.up_to_date:
        click.echo(f"up to date: every view is at ledger head {report.ledger_head}; nothing to build (--force builds anyway)")
        return
    failed_checks = [k for k, ok in report.checks.items() if not ok]
    if report.erasures_finished:
        click.echo(f"finished {len(report.erasures_finished)} interrupted erasure(s) first: {', '.join(report.erasures_finished)}")
    click.echo(
        f"{'built' if report.success else 'FAILED'}: {len(set(report.materialized))} assets materialized in "
        f"{len(report.runs)} run(s); {len(report.checks)} checks, {len(failed_checks)} failing; ledger head {report.ledger_head}"
    )
    for name in failed_checks:
        click.echo(f"  check failed: {name}", err=True)
    if not report.success:
        click.echo(f"  failed steps: {', '.join(report.failed_steps)} (see `memc ui` for the run logs)", err=True)
        sys.exit(1)


@click.command("backfill")
@click.option("--from", "start", required=True, help="First ledger day, YYYY-MM-DD (UTC date of recorded_at).")
@click.option("--to", "end", required=True, help="Last ledger day, YYYY-MM-DD, inclusive.")
@click.option("--extractor", type=click.Choice(EXTRACTOR_CHOICES), default=None, help="Extractor (default: $MEMC_EXTRACTOR or rules).")
@click.option("--claims-only", is_flag=True, help="Re-extract only; do not recompile the views below the claims.")
@click.option("--json", "as_json", is_flag=True)
@home_option
@click.pass_context
def backfill_command(ctx, start, end, extractor, claims_only, as_json, home_dir):
    """Re-extract the ledger days in a range that are out of date for the active extractor.

    A day is out of date when it was never materialized with the extractor's current
    version (its code version in Dagster) or its files are missing. Older versions' claims
    stay on disk beside the new ones."""
    from orchestration.runner import backfill  # lazy: loads Dagster and dbt (cli/__init__.py)

    home = resolve_home(ctx, home_dir)
    require_ledger(home, "run `memc ingest` first")
    try:
        report = backfill(home, start, end, extractor=extractor, views=not claims_only)
    except (ValueError, ExtractorError, HomeBusy) as exc:
        raise click.ClickException(str(exc)) from None
    summary = {
        "extractor": report.extractor,
        "days_with_entries": report.days_with_entries,
        "out_of_date": report.out_of_date,
        "runs": report.ranges,
        "success": report.success,
        "failed_steps": report.failed_steps,
        "ledger_head": report.ledger_head,
    }
    if as_json:
        dump(summary)
    elif not report.out_of_date:
        click.echo(f"{report.extractor}: all {len(report.days_with_entries)} ledger day(s) from {start} to {end} are up to date")
    else:
        click.echo(
            f"{report.extractor}: re-extracted {len(report.out_of_date)} of {len(report.days_with_entries)} ledger day(s) "
            f"in {len(report.ranges)} run(s): " + ", ".join(a if a == b else f"{a}..{b}" for a, b in report.ranges)
        )
    if not report.success:
        click.echo(f"FAILED steps: {', '.join(report.failed_steps)} (see `memc ui` for the run logs)", err=True)
        sys.exit(1)


@click.command("dream")
@click.option("--no-recompile", is_flag=True, help="Do not recompile the views after dreaming appended claims.")
@click.option("--json", "as_json", is_flag=True)
@home_option
@click.pass_context
def dream_command(ctx, no_recompile, as_json, home_dir):
    """Run dreaming now: PageRank and communities over the entity graph, written back to the
    ledger as derived claims (in-process, through Dagster)."""
    from orchestration.runner import dream  # lazy: loads Dagster and dbt (cli/__init__.py)

    home = resolve_home(ctx, home_dir)
    try:
        report = dream(home, recompile=not no_recompile)
    except (FileNotFoundError, HomeBusy) as exc:
        raise click.ClickException(str(exc)) from None
    summary = {"success": report.success, "materialized": sorted(set(report.materialized)), "runs": len(report.runs),
               "failed_steps": report.failed_steps, "ledger_head": report.ledger_head}  # fmt: skip
    if as_json:
        dump(summary)
    else:
        click.echo(
            f"{'dreamt' if report.success else 'FAILED'}: {len(summary['materialized'])} asset(s) in {len(report.runs)} run(s); "
            f"ledger head {report.ledger_head}"
        )
    if not report.success:
        click.echo(f"FAILED steps: {', '.join(report.failed_steps)} (see `memc ui` for the run logs)", err=True)
        sys.exit(1)

@click.command("backfill-views")
@click.option("--dry-run", is_flag=True, help="Only list the out-of-date views.")
@click.option("--json", "as_json", is_flag=True)
@home_option
@click.pass_context
def backfill_views_command(ctx, dry_run, as_json, home_dir):
    """Re-materialize the unpartitioned views whose code version changed since their last
    materialization (an embedding-model upgrade re-embeds the evidence index and swaps it in
    whole). Claims partitions: `memc backfill`."""
    from orchestration.runner import backfill_views  # lazy: loads Dagster and dbt (cli/__init__.py)

    home = resolve_home(ctx, home_dir)
    require_ledger(home, "run `memc ingest` first")
    try:
        report = backfill_views(home, dry_run=dry_run)
    except HomeBusy as exc:
        raise click.ClickException(str(exc)) from None
    summary = {"out_of_date": report.out_of_date, "materialized": sorted(set(report.materialized)),
               "success": report.success, "failed_steps": report.failed_steps, "dry_run": dry_run}  # fmt: skip
    if as_json:
        dump(summary)
    elif not report.out_of_date:
        click.echo("every view is up to date with its code version")
    else:
        verb = "out of date" if dry_run else "re-materialized"
        click.echo(f"{verb}: {', '.join(report.out_of_date)}")
    if not report.success:
        click.echo(f"FAILED steps: {', '.join(report.failed_steps)}", err=True)
        sys.exit(1)
