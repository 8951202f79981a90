"""Evidence in: `memc ingest` (files and folders into the ledger) and `memc ledger` (stats, verify, export)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from cli.common import dump, home_option, principal_arg, resolve_home
from ingestion import IngestError, ingest_paths, load_ingest_settings, public_default_warning, resolve_visibility
from ledger import LedgerCorruption, open_ledger


@click.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--scope", default="default", show_default=True, help="Tenant or namespace of the evidence.")
@click.option(
    "--visibility",
    default=None,
    help="Comma-separated principals who may see the evidence ('public' = every asker of the scope). "
    "Default: the home's [ingest] default_visibility in memc.toml, 'public' unless set (a warning says so); "
    "'writer' makes it private to --as.",
)
@click.option(
    "--as",
    "writer",
    default=None,
    callback=principal_arg,
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

    home = resolve_home(ctx, home_dir).ensure()
    given = tuple(p.strip() for p in visibility.split(",") if p.strip()) if visibility is not None else None
    try:
        vis = resolve_visibility(
            given if given is None or given else ("",),  # '--visibility ""' is an error, not the default
            writer=writer,
            settings=load_ingest_settings(home.root),
            how="--visibility P,...",
        )
        report = ingest_paths(
            open_ledger(home.ledger),
            list(paths),
            scope=scope,
            visibility=vis.principals,
            ingested_by=writer or "memc:cli",
            write_check=writer is not None,
            follow_symlinks=follow_symlinks,
        )
    except IngestError as exc:
        raise click.ClickException(str(exc)) from None
    if as_json:
        dump(report.to_dict())
    else:
        for f in report.files:
            if f.appended == 0 and f.parsed:
                click.echo(f"{f.path}: already ingested ({f.parsed} {f.format} entries), nothing appended")
            else:
                dup = f", {f.duplicates} already present" if f.duplicates else ""
                click.echo(f"{f.path}: {f.appended} {f.format} entries appended (seq {f.first_seq}..{f.last_seq}){dup}")
        click.echo(f"ledger head: {report.head}")
    if vis.public_by_default and report.appended:
        # One line on stderr, after the report: --json output stays parseable.
        click.echo("warning: " + public_default_warning(report.appended, scope, how="--visibility P,..."), err=True)


# ---------------------------------------------------------------------------------- ledger


@click.group()
def ledger():
    """Inspect and verify the ledger."""


@ledger.command("stats")
@click.option("--json", "as_json", is_flag=True)
@home_option
@click.pass_context
def ledger_stats(ctx, as_json, home_dir):
    """Entries, head seq, files and bytes."""

    stats = open_ledger(resolve_home(ctx, home_dir).ensure().ledger, write=False).stats()
    if as_json:
        dump(stats)
    else:
        for k, v in stats.items():
            click.echo(f"{k:>17}: {v}")


@ledger.command("verify")
@home_option
@click.pass_context
def ledger_verify(ctx, home_dir):
    """Check every file's checksum and seq continuity; exit 1 on damage."""

    report = open_ledger(resolve_home(ctx, home_dir).ensure().ledger, write=False).verify()
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

    try:
        open_ledger(resolve_home(ctx, home_dir).ensure().ledger, write=False).export_jsonl(sys.stdout)
    except LedgerCorruption as exc:
        raise click.ClickException(f"ledger is damaged: {exc}") from None
