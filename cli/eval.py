"""`memc eval`: measure retrieval quality on labelled data."""

from __future__ import annotations

import json
from pathlib import Path

import click

from claims.extractors.base import ExtractorError
from query.config import PRESETS


@click.group("eval")
def eval_group():
    """Evaluate the context compiler."""


@eval_group.command("locomo")
@click.argument("data_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--k", "ks", default="1,5,10", show_default=True, help="Comma-separated cut-offs for recall@k.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), help="Write a run file (question_id, retrieved source_refs).")
@click.option("--conversation", "conversations", multiple=True, help="Only these conversation ids (repeatable).")
@click.option("--preset", type=click.Choice(list(PRESETS)), default=None)
@click.option("--work-dir", type=click.Path(file_okay=False, path_type=Path), help="Keep the per-conversation memory homes here.")
@click.option("--json", "as_json", is_flag=True)
def locomo(data_dir, ks, out, conversations, preset, work_dir, as_json):
    """Ingest each conversation of DATA_DIR (LoCoMo format) into a fresh memory home, build, ask
    every question scoped to its conversation, and report evidence recall@k per category."""
    from evaluation.locomo import run_locomo  # lazy: loads Dagster and dbt (cli/__init__.py)

    cutoffs = tuple(sorted({int(k) for k in ks.split(",") if k.strip()}))
    result = run_locomo(
        data_dir,
        ks=cutoffs,
        out=out,
        work_dir=work_dir,
        conversations=list(conversations) or None,
        preset=preset,
        on_progress=lambda msg: click.echo(msg, err=True),
    )
    if as_json:
        click.echo(json.dumps(result.to_dict(), indent=2))
    else:
        click.echo(result.render())


@eval_group.command("observations")
@click.argument("data_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--out", required=True, type=click.Path(file_okay=False, path_type=Path), help="Folder for <conversation_id>.json claim exports.")
@click.option("--extractor", default=None, help="Extractor name or key (default: $MEMC_EXTRACTOR, else rules).")
@click.option("--conversation", "conversations", multiple=True, help="Only these conversation ids (repeatable).")
@click.option("--work-dir", type=click.Path(file_okay=False, path_type=Path), help="Keep the per-conversation memory homes here.")
@click.option("--json", "as_json", is_flag=True)
def observations(data_dir, out, extractor, conversations, work_dir, as_json):
    """Build a fresh home per conversation of DATA_DIR with one extractor and export its claims
    (as `memc claims --admin --json` lists them) to OUT/<conversation_id>.json, for
    observation_score.py; print memc's own count of typed claims beside it."""
    from evaluation.observations import render, run_observations  # lazy: loads Dagster and dbt (cli/__init__.py)

    try:
        result = run_observations(
            data_dir, out, extractor=extractor, work_dir=work_dir, conversations=list(conversations) or None,
            on_progress=lambda msg: click.echo(msg, err=True),
        )
    except ExtractorError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(json.dumps(result, indent=2) if as_json else render(result))
