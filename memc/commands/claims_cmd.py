"""`memc claims` (inspect claims or rejections) and `memc backfill` (re-extract ledger days)."""

from __future__ import annotations

import sys

import click

_CLAIM_COLUMNS = (
    "subject", "subject_id", "predicate", "polarity", "object", "object_id", "valid_at", "time_phrase", "quote",
    "source_entry_id", "source_ref", "extractor", "extractor_version", "visibility", "claim_id",
)  # fmt: skip
_REJECTION_COLUMNS = ("validator", "reason", "source_entry_id", "source_ref", "extractor", "extractor_version", "proposal", "proposal_id")


def _match_entity(rows: list[dict], entity: str, resolver, rejected: bool) -> list[dict]:
    """Rows about ``entity``: by name, alias (resolved per scope) or entity id."""
    import json

    from memc.ids import normalize_name

    want = normalize_name(entity)
    out = []
    for r in rows:
        if rejected:
            p = json.loads(r["proposal"]) if r["proposal"] else {}
            names = [str(p.get("subject", "")), str(p.get("object", ""))]
            scope = r.get("scope") or ""
            if any(normalize_name(n) == want or (n and resolver.entity_id(scope, n) == resolver.entity_id(scope, entity)) for n in names):
                out.append(r)
            continue
        ids = {r["subject_id"], r.get("object_id")}
        if entity in ids or normalize_name(r["subject"]) == want or resolver.entity_id(r["scope"], entity) in ids:
            out.append(r)
    return out


def _visible(rows: list[dict], home, asker: str) -> list[dict]:
    """The rows ``asker`` may see: the claim's own visibility admits it and, by the ledger's
    record (the independent checker's), so does its source entry's (rejections carry none)."""
    from ledger import Ledger
    from memc.visibility import may_see
    from query.acl import Checker, ledger_facts

    checker = Checker(ledger_facts(Ledger(home.ledger)), asker)
    return [
        r for r in rows
        if checker.why_not(r["source_entry_id"]) is None and ("visibility" not in r or may_see(asker, r["visibility"]))
    ]  # fmt: skip


def register(cli: click.Group) -> None:
    # Imported here, not at the top: under `python -m memc.cli` the CLI module is __main__, and a
    # top-level import would load memc.cli a second time while this module is half-initialised.
    from memc.cli import _dump, _home, home_option

    @cli.command("claims")
    @click.option("--entity", default=None, help="Only claims about this person or thing (name, alias or entity id).")
    @click.option("--extractor", "extractor_key", default=None, help="Extractor version key, e.g. rules-0.2.0 (default: the active one).")
    @click.option("--rejected", is_flag=True, help="List rejected proposals with the validator and reason instead.")
    @click.option("--as", "asker", default=None, help="The principal asking: only claims drawn from evidence it may see.")
    @click.option("--admin", is_flag=True, help="Every claim, whoever may see its evidence (instead of --as).")
    @click.option("--json", "as_json", is_flag=True)
    @home_option
    @click.pass_context
    def claims_command(ctx, entity, extractor_key, rejected, asker, admin, as_json, home_dir):
        """List extracted claims (or rejections) with their quotes and sources, as a principal
        (only those whose source entry it may see, by the ledger's own record) or as admin."""
        from claims.extract import ExtractorError, active_extractor_key
        from claims.resolve import Resolver
        from claims.store import extractor_keys, read_aliases, read_claims

        if bool(asker) == bool(admin):
            raise click.UsageError("say who is asking: --as PRINCIPAL, or --admin for every claim")
        home = _home(ctx, home_dir)
        try:
            key = extractor_key or active_extractor_key()
        except ExtractorError as exc:
            raise click.ClickException(str(exc)) from None
        known = extractor_keys(home.claims)
        if key not in known:
            hint = f"known: {', '.join(known)}" if known else "run `memc build` first"
            raise click.ClickException(f"no claims for extractor {key!r} in {home.claims} ({hint})")
        rows = read_claims(home.claims, key, rejected=rejected).to_pylist()
        if asker:
            rows = _visible(rows, home, asker)
        if entity:
            rows = _match_entity(rows, entity, Resolver(read_aliases(home.claims)), rejected)
        cols = _REJECTION_COLUMNS if rejected else _CLAIM_COLUMNS
        rows = [{c: r.get(c) for c in cols} for r in rows]
        if as_json:
            _dump(rows)
            return
        what = "rejections" if rejected else "claims"
        click.echo(f"{len(rows)} {what} of {key}" + (f" about {entity!r}" if entity else ""))
        for r in rows:
            if rejected:
                click.echo(f"- [{r['validator']}] {r['reason']}")
                click.echo(f"    entry {r['source_entry_id']} ({r['source_ref'] or '-'}), proposal {r['proposal'][:160]}")
            else:
                neg = "NOT " if r["polarity"] == "retract" else ""
                when = r["valid_at"].date().isoformat() + (f" ({r['time_phrase']})" if r["time_phrase"] else "")
                click.echo(f"- {r['subject']} {neg}{r['predicate']} {r['object']}  [valid {when}]")
                click.echo(f"    \"{r['quote']}\" — entry {r['source_entry_id']} ({r['source_ref'] or '-'}), {r['extractor']}-{r['extractor_version']}")

    @cli.command("backfill")
    @click.option("--from", "start", required=True, help="First ledger day, YYYY-MM-DD (UTC date of recorded_at).")
    @click.option("--to", "end", required=True, help="Last ledger day, YYYY-MM-DD, inclusive.")
    @click.option("--extractor", type=click.Choice(["rules", "llm"]), default=None, help="Extractor (default: $MEMC_EXTRACTOR or rules).")
    @click.option("--claims-only", is_flag=True, help="Re-extract only; do not recompile the views below the claims.")
    @click.option("--json", "as_json", is_flag=True)
    @home_option
    @click.pass_context
    def backfill_command(ctx, start, end, extractor, claims_only, as_json, home_dir):
        """Re-extract the ledger days in a range that are out of date for the active extractor.

        A day is out of date when it was never materialized with the extractor's current
        version (its code version in Dagster) or its files are missing. Older versions' claims
        stay on disk beside the new ones."""
        from claims.extract import ExtractorError
        from orchestration.runner import backfill

        home = _home(ctx, home_dir)
        if not home.ledger.exists():
            raise click.ClickException(f"no ledger at {home.ledger}: run `memc ingest` first")
        try:
            report = backfill(home, start, end, extractor=extractor, views=not claims_only)
        except (ValueError, ExtractorError) as exc:
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
            _dump(summary)
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
