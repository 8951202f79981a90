"""`memc forget`: erase entries with the full cascade (forgetting/), and `memc forget --resume`
to finish erasures a crash interrupted."""

from __future__ import annotations

import click

from cli.common import dump, home_option, require_ledger, resolve_home
from forgetting import forget, resume


def _render(d: dict) -> str:
    if d["status"] == "nothing_to_erase":
        already = f" ({len(d['already_erased'])} already erased)" if d["already_erased"] else ""
        head = f"nothing to erase: no live entry matches{already}"
    else:
        head = (
            f"{'erased' if d['status'] == 'done' else d['status'].upper()}: {len(d['erased'])} entries "
            f"({len(d['named'])} named, {len(d['cascaded'])} derived from them) by erasure {d['erasure_id']}"
        )
    lines = [head]
    if d.get("resumed"):
        lines.append(f"  first completed {len(d['resumed'])} interrupted erasure(s): {', '.join(d['resumed'])}")
    if d["ledger_rows_stubbed"] or d["ledger_files_rewritten"]:
        lines.append(f"  ledger: {d['ledger_files_rewritten']} file(s) rewritten, {d['ledger_rows_stubbed']} entries replaced by stubs")
    if d["views_dropped"]:
        state = "rebuilt" if d["rebuilt"] else "dropped (run `memc build` to compile them again)"
        lines.append(f"  views {', '.join(d['views_dropped'])}: {state}")
    for what in ("files_removed", "files_rewritten", "sqlite_scrubbed"):
        if d[what]:
            lines.append(f"  {what.replace('_', ' ')}: {', '.join(d[what])}")
    if d["files_skipped"]:
        lines.append(f"  NOT searched (too large or unreadable): {', '.join(d['files_skipped'])}")
    if d["build_failed_steps"]:
        lines.append(f"  failed build steps: {', '.join(d['build_failed_steps'])}; run `memc build` (the erasure itself is complete)")
    if "total" in d["seconds"]:
        lines.append(f"  {d['seconds']['total']:.1f} s")
    return "\n".join(lines)


@click.command("forget")
@click.option("--entry", "entry_ids", multiple=True, help="An entry id to erase (repeatable).")
@click.option("--source", "source_uri", default=None, help="Erase every entry from this source URI (or file path).")
@click.option("--scope", default=None, help="Erase every entry of this scope.")
@click.option("--subject", default=None, help="Erase every entry about this entity id (ent_...; see `memc state`).")
@click.option("--reason", default=None, help="Why (recorded in the erasure entry).")
@click.option("--by", "by", default=None, help="The principal asking for the erasure (recorded).")
@click.option("--no-rebuild", is_flag=True, help="Drop the views but do not compile them again now (`memc build` later).")
@click.option("--resume", "resume_only", is_flag=True, help="Only finish erasures a crash interrupted.")
@click.option("--json", "as_json", is_flag=True)
@home_option
@click.pass_context
def forget_cmd(ctx, entry_ids, source_uri, scope, subject, reason, by, no_rebuild, resume_only, as_json, home_dir):
    """Erase entries: a tombstone in the ledger (who, when, why, which ids), then a physical
    purge of the ledger files, the inbox archives, Dagster's logs and every view.

    Exactly one of --entry (repeatable), --source, --scope, --subject; --reason and --by are
    required. Derived entries computed from an erased one are erased with it. Running it
    again after a crash completes the erasure."""
    from orchestration.runner import rebuild_views  # lazy: loads Dagster and dbt (cli/__init__.py)

    home = resolve_home(ctx, home_dir)
    require_ledger(home, "nothing to forget")
    if resume_only:
        if entry_ids or source_uri or scope or subject:
            raise click.UsageError("--resume takes no selector")
        report = resume(home, rebuild=None if no_rebuild else rebuild_views)
    else:
        if not reason or not by:
            raise click.UsageError("an erasure needs --reason TEXT and --by PRINCIPAL")
        try:
            report = forget(
                home, entry_ids=list(entry_ids), source_uri=source_uri, scope=scope, subject=subject,
                reason=reason, by=by, rebuild=None if no_rebuild else rebuild_views,
            )
        except ValueError as exc:
            raise click.ClickException(str(exc)) from None
    d = report.to_dict()
    if as_json:
        dump(d)
    elif resume_only:
        click.echo(f"resumed {len(d['resumed'])} interrupted erasure(s)" + (f": {', '.join(d['resumed'])}" if d["resumed"] else ""))
    else:
        click.echo(_render(d))
    if report.status == "rebuild_failed":
        raise SystemExit(1)
