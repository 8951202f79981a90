"""Operating the platform: `memc up` / `memc down` (the Dagster webserver and daemon, so that sensors,
schedules, automation and freshness run), `memc ui` (the Dagster UI in the foreground) and
`memc docs` (dbt's catalog of the models, in a folder of its own)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from cli.common import home_option, resolve_home


@click.command("up")
@click.option("--port", default=3000, show_default=True, type=int)
@click.option("--timeout", default=180, show_default=True, type=int, help="Seconds to wait for the UI to answer.")
@home_option
@click.pass_context
def up_command(ctx, port, timeout, home_dir):
    """Start the Dagster webserver (127.0.0.1) and daemon in the background, telemetry off.

    Returns once the UI answers. The daemon runs the inbox and ledger-head sensors, the
    automation (views refresh when the ledger grows, dreaming nightly), view compaction and
    freshness. Pids are kept in <home>/dagster/run/; `memc down` stops both."""
    from orchestration.platform import start  # lazy: loads Dagster and dbt (cli/__init__.py)

    home = resolve_home(ctx, home_dir)
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

@click.command("down")
@click.option("--timeout", default=30, show_default=True, type=int, help="Seconds to wait before killing.")
@home_option
@click.pass_context
def down_command(ctx, timeout, home_dir):
    """Stop the webserver and daemon `memc up` started (by pid, whole process groups)."""
    from orchestration.platform import stop  # lazy: loads Dagster and dbt (cli/__init__.py)

    outcome = stop(resolve_home(ctx, home_dir), timeout=timeout)
    if not outcome:
        click.echo("nothing to stop")
    for name, what in outcome.items():
        click.echo(f"{name}: {what}")



@click.command()
@click.option("--port", default=3000, show_default=True, type=int)
@home_option
@click.pass_context
def ui(ctx, port, home_dir):
    """Start the Dagster UI (and its daemon) on 127.0.0.1 for this memory home, telemetry off."""
    from orchestration.runner import prepare_environment  # lazy: loads Dagster and dbt (cli/__init__.py)

    home = resolve_home(ctx, home_dir)
    prepare_environment(home)
    from catalog.dbt_project import ensure_manifest  # lazy: loads dagster-dbt (cli/__init__.py)

    ensure_manifest()
    from orchestration.platform import CODE_LOCATION, CODE_ROOT, environment  # lazy: loads Dagster and dbt (cli/__init__.py)

    args = [sys.executable, "-m", "dagster", "dev", *CODE_LOCATION, "-h", "127.0.0.1", "-p", str(port)]
    click.echo(f"Dagster UI on http://127.0.0.1:{port} (memory home {home.root}); Ctrl-C stops it (`memc up` runs it in the background)")
    os.chdir(CODE_ROOT)  # as `memc up`: a home's ledger/ folder in the working directory would shadow the ledger package
    os.execvpe(args[0], args, environment(home))


@click.command("docs")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path), help="Folder for dbt's target and logs (default: <home>/dbt-docs).")
@home_option
@click.pass_context
def docs_command(ctx, out, home_dir):
    """Write dbt's catalog of every model and column (descriptions, types, tests, lineage) for
    this home to one offline page, <out>/target/static_index.html. The dbt project's own target/
    (the manifest Dagster loads) is not touched. Needs a build; waits for none: refused while a
    build holds the home."""
    from memc.locks import HomeBusy
    from orchestration.dbt_docs import DocsError, generate_docs  # lazy: runs dbt (cli/__init__.py)

    try:
        page = generate_docs(resolve_home(ctx, home_dir), out)
    except (DocsError, HomeBusy) as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"dbt catalog: {page}")
    click.echo(f"  open it in a browser, or `dbt docs serve --target-path {page.parent}` from the dbt project")
