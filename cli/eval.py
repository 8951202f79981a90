"""`memc eval`: measure retrieval quality on labelled data."""

from __future__ import annotations

import json
from pathlib import Path

import click
from pydantic import ValidationError

from claims.extractors.base import ExtractorError

from query.config import PRESETS, QueryConfig


@click.group("eval")
def eval_group():
    """Evaluate the context compiler."""


@eval_group.command("locomo")
@click.argument("data_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--k", "ks", default="1,5,10", show_default=True, help="Comma-separated cut-offs for recall@k.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), help="Write a run file (question_id, retrieved source_refs).")
@click.option("--conversation", "conversations", multiple=True, help="Only these conversation ids (repeatable).")
@click.option("--preset", type=click.Choice(list(PRESETS)), default=None)
@click.option(
    "--budget", "budgets", default=None, metavar="N[,N...]",
    help="Context token budget(s), e.g. 500,1000,2000: one build, every question compiled at each (default: the preset's).",
)  # fmt: skip
@click.option("--work-dir", type=click.Path(file_okay=False, path_type=Path), help="Keep the per-conversation memory homes here.")
@click.option(
    "--reuse-homes", is_flag=True,
    help="With --work-dir: ask the homes an earlier run built there again, without ingesting or building (a home built from other turns, or not up to its ledger, is built anew).",
)  # fmt: skip
@click.option("--set", "settings", multiple=True, metavar="FIELD=VALUE", help="A QueryConfig field over the preset's, e.g. --set window_before=1 (repeatable).")
@click.option("--json", "as_json", is_flag=True)
def locomo(data_dir, ks, out, conversations, preset, budgets, work_dir, reuse_homes, settings, as_json):
    """Ingest each conversation of DATA_DIR (LoCoMo format) into a fresh memory home, build, ask
    every question scoped to its conversation, and report evidence recall per category: of the
    whole context (the headline, comparable with ../shared/eval/budget_baseline.py at the same
    budget) and of the top k items. With several budgets, --out run.jsonl writes run.b500.jsonl, ..."""
    from evaluation.locomo import render_sweep, run_locomo_sweep  # lazy: loads Dagster and dbt (cli/__init__.py)

    cutoffs = tuple(sorted({int(k) for k in ks.split(",") if k.strip()}))
    sweep = _budgets(budgets)
    if reuse_homes and work_dir is None:
        raise click.BadParameter("--reuse-homes needs --work-dir", param_hint="--reuse-homes")
    overrides = _settings(settings)
    outs: tuple[Path, ...] = ()
    if out:
        outs = (out,) if len(sweep) <= 1 else tuple(out.with_name(f"{out.stem}.b{b}{out.suffix}") for b in sweep)
    results = run_locomo_sweep(
        data_dir,
        budgets=sweep,
        ks=cutoffs,
        outs=outs,
        work_dir=work_dir,
        conversations=list(conversations) or None,
        preset=preset,
        settings=overrides,
        reuse=reuse_homes,
        on_progress=lambda msg: click.echo(msg, err=True),
    )
    if as_json:
        click.echo(json.dumps(results[0].to_dict() if len(results) == 1 else {"sweep": [r.to_dict() for r in results]}, indent=2))
    elif len(results) == 1:
        click.echo(results[0].render())
    else:
        click.echo("\n\n".join([render_sweep(results), *(r.render() for r in results)]))


def _settings(settings: tuple[str, ...]) -> dict[str, str]:
    """``--set FIELD=VALUE`` pairs as QueryConfig fields, validated."""
    overrides = {}
    for pair in settings:
        field, eq, value = pair.partition("=")
        if not eq or field.strip() not in QueryConfig.model_fields:
            raise click.BadParameter(f"FIELD=VALUE with a QueryConfig field, got {pair!r}", param_hint="--set")
        overrides[field.strip()] = value.strip()
    try:
        QueryConfig.model_validate(overrides)
    except ValidationError as e:
        raise click.BadParameter(str(e), param_hint="--set") from None
    return overrides


def _budgets(budgets: str | None) -> tuple[int, ...]:
    try:
        sweep = tuple(int(b) for b in budgets.split(",") if b.strip()) if budgets else ()
    except ValueError:
        raise click.BadParameter(f"a comma-separated list of token counts, got {budgets!r}", param_hint="--budget") from None
    if any(b < 50 for b in sweep):
        raise click.BadParameter("a context budget is at least 50 tokens", param_hint="--budget")
    return sweep


@eval_group.command("ranker")
@click.argument("data_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--out", required=True, type=click.Path(dir_okay=False, path_type=Path), help="The ranker's JSON, e.g. query/rankers/linear-1.json.")
@click.option("--budget", "budgets", default="500,1000,2000", show_default=True, metavar="N[,N...]", help="Budgets the cross-validation compiles at.")
@click.option("--work-dir", type=click.Path(file_okay=False, path_type=Path), help="Keep the per-conversation memory homes here.")
@click.option("--reuse-homes", is_flag=True, help="With --work-dir: use the homes an earlier run built there (as `memc eval locomo --reuse-homes`).")
@click.option("--set", "settings", multiple=True, metavar="FIELD=VALUE", help="A QueryConfig field over the balanced preset's, for the compiles it is fitted and measured on (repeatable).")
@click.option("--json", "as_json", is_flag=True)
def ranker(data_dir, out, budgets, work_dir, reuse_homes, settings, as_json):
    """Fit the compiler's learned order of the fused hits (query/rerank.py) on DATA_DIR (LoCoMo
    format), report it cross-validated over the conversations against the fused order at each
    budget, and write it to OUT with those figures."""
    from evaluation.ranker import train_ranker  # lazy: loads Dagster and dbt (cli/__init__.py)

    sweep = _budgets(budgets)
    if reuse_homes and work_dir is None:
        raise click.BadParameter("--reuse-homes needs --work-dir", param_hint="--reuse-homes")
    try:
        report = train_ranker(
            data_dir, out=out, work_dir=work_dir, budgets=sweep or (2000,), reuse=reuse_homes, settings=_settings(settings),
            on_progress=lambda msg: click.echo(msg, err=True),
        )  # fmt: skip
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(json.dumps(report.__dict__, indent=2) if as_json else report.render())


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


@eval_group.command("spans")
@click.argument("data_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--out", required=True, type=click.Path(file_okay=False, path_type=Path), help="Folder for <conversation_id>.json exports (replaced).")
@click.option("--unit", type=click.Choice(["sentence", "clause"]), default="sentence", show_default=True)
@click.option("--first-person", is_flag=True, help="Only spans that say I, me, my, we, us or our.")
@click.option("--add-to", type=click.Path(exists=True, file_okay=False, path_type=Path), help="An export of `memc eval observations` to add the spans to.")
@click.option("--json", "as_json", is_flag=True)
def spans(data_dir, out, unit, first_person, add_to, as_json):
    """The yardsticks of the extraction figures (no extractor): every short sentence or clause of
    DATA_DIR's turns as an `activity` claim of its speaker, alone (the trivial row) or added to a
    real export (the ceiling of copying spans), for observation_score.py."""
    from evaluation.spans import render, run_spans  # lazy: loads spaCy

    try:
        result = run_spans(data_dir, out, unit=unit, first_person=first_person, add_to=add_to)
    except (ValueError, FileNotFoundError) as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(json.dumps(result, indent=2) if as_json else render(result))
