"""The `memc` command line. Every command takes ``--home DIR`` (or ``$MEMC_HOME``; default ./memc_home).

Heavy libraries (Dagster, dbt, torch) are imported inside the commands that need them, so
`memc ledger stats` answers in a fraction of a second.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import click

from memc.home import MemcHome


def _json_default(v: Any) -> Any:
    if hasattr(v, "isoformat"):
        return v.isoformat()
    if isinstance(v, Path):
        return str(v)
    return str(v)


def _dump(obj: Any) -> None:
    click.echo(json.dumps(obj, indent=2, default=_json_default, ensure_ascii=False))


def home_option(f):
    """``--home`` on every command, overriding the one given to ``memc`` itself."""
    return click.option(
        "--home",
        "home_dir",
        type=click.Path(file_okay=False),
        default=None,
        help="Memory home (default: $MEMC_HOME or ./memc_home).",
    )(f)


def _home(ctx: click.Context, home_dir: str | None) -> MemcHome:
    return MemcHome.resolve(home_dir or ctx.obj.get("home_dir"))


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@home_option
@click.version_option(package_name="memc")
@click.pass_context
def cli(ctx: click.Context, home_dir: str | None) -> None:
    """memc: a memory compiler. The ledger keeps the evidence; everything else is a compiled view."""
    ctx.ensure_object(dict)
    ctx.obj["home_dir"] = home_dir


# ---------------------------------------------------------------------------------- ingest


@cli.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--scope", default="default", show_default=True, help="Tenant or namespace of the evidence.")
@click.option(
    "--visibility",
    default="public",
    show_default=True,
    help="Comma-separated principals who may see the evidence ('public' = every asker).",
)
@click.option(
    "--as",
    "writer",
    default=None,
    help="Write as this principal: recorded as who ingested, and it may only write evidence it may see. "
    "Without it the home's operator writes (recorded as memc:cli).",
)
@click.option("--follow-symlinks", is_flag=True, help="Read symlinks in a folder that lead outside it (refused by default).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@home_option
@click.pass_context
def ingest(ctx, paths, scope, visibility, writer, follow_symlinks, as_json, home_dir):
    """Ingest files or folders (conversation JSONL, .txt, .md, .eml, event JSONL) into the ledger.

    Each file is one atomic append; ingesting the same file again, by any path, is a no-op."""
    from ingestion import IngestError, ingest_paths
    from ledger import Ledger
    from memc.visibility import principal_problem

    if writer is not None and principal_problem(writer):
        raise click.BadParameter(principal_problem(writer), param_hint="--as")
    home = _home(ctx, home_dir).ensure()
    principals = tuple(p.strip() for p in visibility.split(",") if p.strip())
    try:
        report = ingest_paths(
            Ledger(home.ledger),
            list(paths),
            scope=scope,
            visibility=principals,
            ingested_by=writer or "memc:cli",
            write_check=writer is not None,
            follow_symlinks=follow_symlinks,
        )
    except IngestError as exc:
        raise click.ClickException(str(exc)) from None
    if as_json:
        _dump(report.to_dict())
        return
    for f in report.files:
        if f.appended == 0 and f.parsed:
            click.echo(f"{f.path}: already ingested ({f.parsed} {f.format} entries), nothing appended")
        else:
            dup = f", {f.duplicates} already present" if f.duplicates else ""
            click.echo(f"{f.path}: {f.appended} {f.format} entries appended (seq {f.first_seq}..{f.last_seq}){dup}")
    click.echo(f"ledger head: {report.head}")


# ---------------------------------------------------------------------------------- ledger


@cli.group()
def ledger():
    """Inspect and verify the ledger."""


@ledger.command("stats")
@click.option("--json", "as_json", is_flag=True)
@home_option
@click.pass_context
def ledger_stats(ctx, as_json, home_dir):
    """Entries, head seq, files and bytes."""
    from ledger import Ledger

    stats = Ledger(_home(ctx, home_dir).ensure().ledger).stats()
    if as_json:
        _dump(stats)
    else:
        for k, v in stats.items():
            click.echo(f"{k:>17}: {v}")


@ledger.command("verify")
@home_option
@click.pass_context
def ledger_verify(ctx, home_dir):
    """Check every file's checksum and seq continuity; exit 1 on damage."""
    from ledger import Ledger

    report = Ledger(_home(ctx, home_dir).ensure().ledger).verify()
    if report.ok:
        click.echo(f"ok: {report.files} files, {report.entries} entries, head seq {report.head}")
        return
    click.echo(f"DAMAGED: {len(report.problems)} problem(s) in {report.files} files", err=True)
    for p in report.problems:
        click.echo(f"  - {p}", err=True)
    sys.exit(1)


@ledger.command("export")
@click.option("--jsonl", "as_jsonl", is_flag=True, default=True, help="One JSON object per entry (the default).")
@home_option
@click.pass_context
def ledger_export(ctx, as_jsonl, home_dir):
    """Every committed entry, in seq order, as JSON lines on stdout."""
    from ledger import Ledger, LedgerCorruption

    try:
        Ledger(_home(ctx, home_dir).ensure().ledger).export_jsonl(sys.stdout)
    except LedgerCorruption as exc:
        raise click.ClickException(f"ledger is damaged: {exc}") from None


# ---------------------------------------------------------------------------------- build


@cli.command()
@click.option("--quiet", is_flag=True, help="No progress display.")
@home_option
@click.pass_context
def build(ctx, quiet, home_dir):
    """Materialize every view through Dagster, in-process, with a progress display."""
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from orchestration.runner import build as run_build

    home = _home(ctx, home_dir)
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

        report = run_build(home, on_event=on_event)
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


# ---------------------------------------------------------------------------------- ask


@cli.command()
@click.argument("question")
@click.option("--as", "asker", required=True, help="The principal asking; only what it may see is used.")
@click.option("--scope", default=None, help="Restrict to one scope.")
@click.option("--as-of", "as_of", default=None, help="Valid time: what held then (ISO date or time).")
@click.option("--known-at", "known_at", default=None, help="Transaction time: as memc knew it then (ISO date or time).")
@click.option("--budget", default=None, type=click.IntRange(50), help="Token budget of the context (default: the preset's, 2000).")
@click.option("--preset", type=click.Choice(["fast", "balanced", "thorough"]), default="balanced", show_default=True)
@click.option("--k", default=None, type=click.IntRange(1, 200), help="Evidence items to return (default: the preset's).")
@click.option("--json", "as_json", is_flag=True, help="The context as JSON (schema: docs/context.md).")
@home_option
@click.pass_context
def ask(ctx, question, asker, scope, as_of, known_at, budget, preset, k, as_json, home_dir):
    """Compile a context for QUESTION as the principal given by --as, with provenance."""
    from query import QueryConfig, StaleViewError, compile_context

    home = _home(ctx, home_dir)
    if not home.ledger.exists():
        raise click.ClickException(f"no ledger at {home.ledger}: run `memc ingest` and `memc build` first")
    config = QueryConfig.preset(preset)
    if k is not None:
        config = config.model_copy(update={"k": k})
    try:
        result = compile_context(
            question, asker, home=home, scope=scope, config=config, budget_tokens=budget,
            as_of=_time_option(as_of, "--as-of"), known_at=_time_option(known_at, "--known-at"),
        )
    except StaleViewError as exc:
        raise click.ClickException(f"{exc}. Run `memc build` (or `memc up` to keep views fresh).") from None
    if as_json:
        _dump(result.to_dict())
    else:
        click.echo(result.render())


def _time_option(value: str | None, name: str):
    from datetime import datetime, timezone

    if value is None:
        return None
    try:
        t = datetime.fromisoformat(value)
    except ValueError:
        raise click.BadParameter(f"{value!r} is not an ISO date or time (e.g. 2024-06-01 or 2024-06-01T12:00)", param_hint=name) from None
    return t.replace(tzinfo=timezone.utc) if t.tzinfo is None else t


# ---------------------------------------------------------------------------------- ui


@cli.command()
@click.option("--port", default=3000, show_default=True, type=int)
@home_option
@click.pass_context
def ui(ctx, port, home_dir):
    """Start the Dagster UI (and its daemon) on 127.0.0.1 for this memory home, telemetry off."""
    from orchestration.runner import prepare_environment

    home = _home(ctx, home_dir)
    prepare_environment(home)
    from orchestration.dbt_project import ensure_manifest

    ensure_manifest()
    from orchestration.platform import CODE_LOCATION, CODE_ROOT, environment

    args = [sys.executable, "-m", "dagster", "dev", *CODE_LOCATION, "-h", "127.0.0.1", "-p", str(port)]
    click.echo(f"Dagster UI on http://127.0.0.1:{port} (memory home {home.root}); Ctrl-C stops it (`memc up` runs it in the background)")
    os.chdir(CODE_ROOT)  # as `memc up`: a home's ledger/ folder in the working directory would shadow the ledger package
    os.execvpe(args[0], args, environment(home))


from memc.commands import register as _register_commands  # noqa: E402

_register_commands(cli)


def main() -> None:
    cli(obj={})


if __name__ == "__main__":
    main()
