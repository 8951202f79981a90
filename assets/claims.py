"""The extraction pass as assets: entity aliases, then claims per ledger day, gated by validators.

The claims asset is built for the active extractor (``MEMC_EXTRACTOR``) when the definitions
are built: its code version is that extractor's key, so an upgrade shows every materialized
day as out of date in the UI, and a backfill re-extracts exactly those days.
"""


import functools
from collections import Counter

import dagster as dg

from claims.extract import Extractor
from catalog.keys import CLAIMS, CLAIMS_GROUP, ENTITY_ALIASES, LEDGER
from catalog.partitions import LEDGER_DAYS, SINGLE_RUN
from catalog.resources import MemcResource


@dg.asset(key=ENTITY_ALIASES, deps=[LEDGER], group_name=CLAIMS_GROUP, kinds={"parquet"}, code_version="resolve-0.1.0")
def entity_aliases(context: dg.AssetExecutionContext, memc: MemcResource) -> dg.MaterializeResult:
    """Entity resolution: which written names are one entity. Grain: one row per (scope, alias
    as written), with its canonical entity id (per scope: people who share a name in different
    scopes never merge), the canonical name, the rule that merged it ("exact", "case/space",
    "prefix-in-conversation": a nickname a participant is addressed by) and the entry ids that
    support the merge. Deterministic, rebuilt from the whole ledger; claims resolve their
    subjects and person objects through it."""
    from claims.resolve import build_aliases
    from claims.store import aliases_path
    from memc.atomic import write_parquet

    ledger = memc.ledger()
    watermark = ledger.head()
    table = build_aliases(ledger.iter_entries(until_seq=watermark))
    path = aliases_path(memc.home.claims)
    write_parquet(table, path)
    rules = Counter(table.column("rule").to_pylist())
    entities = len(set(table.column("entity_id").to_pylist()))
    context.log.info(f"{table.num_rows} aliases of {entities} entities at watermark {watermark}")
    return dg.MaterializeResult(
        metadata={
            "dagster/row_count": table.num_rows,
            "entities": entities,
            "aliases_by_rule": dict(rules),
            "merged_aliases": table.num_rows - rules.get("exact", 0),
            "ledger_watermark": watermark,
            "path": dg.MetadataValue.path(str(path)),
        }
    )


@functools.cache
def claims_asset(extractor: Extractor) -> dg.AssetsDefinition:
    """The claims asset for one extractor (cached: one definition per extractor per process)."""

    @dg.asset(
        key=CLAIMS,
        deps=[LEDGER, ENTITY_ALIASES],
        group_name=CLAIMS_GROUP,
        kinds={"parquet"},
        code_version=extractor.key,
        partitions_def=LEDGER_DAYS,
        backfill_policy=SINGLE_RUN,
    )
    def claims(context: dg.AssetExecutionContext, memc: MemcResource) -> dg.MaterializeResult:
        """Typed claims (subject, predicate, object, polarity, valid time) extracted from the
        ledger entries recorded on one ledger day (UTC date of recorded_at), each traced to a
        verbatim quote in its source entry. Grain: one row per claim, per extractor name and
        version (claims/extractor=<name>-<version>/day=<day>/claims.parquet); subject_id is
        the canonical entity from entity_aliases, relative times ("last month") are resolved
        against the entry's valid time and kept in time_phrase. Proposals that fail a validator
        (schema, ontology, provenance, policy, temporal) are kept beside them in
        rejections.parquet with the validator and the reason; nothing is dropped silently."""
        from claims.extract import extract
        from claims.ledger_days import entries_by_day, ledger_days
        from claims.resolve import Resolver
        from claims.store import days as stored_days
        from claims.store import read_aliases, write_day, write_run_watermark

        home = memc.home
        ledger = memc.ledger()
        watermark = ledger.head()
        resolver = Resolver(read_aliases(home.claims))
        keys = list(context.partition_keys)
        totals: Counter = Counter()
        rejected: Counter = Counter()
        predicates: Counter = Counter()
        per_day: dict[str, int] = {}
        for day, entries in entries_by_day(ledger, keys, until_seq=watermark).items():
            if not entries:
                # A day inside the run's range with no ledger entries (the range spans the first
                # to the last ledger day): nothing to write, and no folder to mistake for data.
                continue
            result = extract(entries, extractor, resolver)
            write_day(home.claims, extractor, day, result, watermark)
            per_day[day] = result.claims.num_rows
            totals.update(claims=result.claims.num_rows, rejections=result.rejections.num_rows, entries=result.entries_read)
            rejected.update(result.rejections.column("validator").to_pylist())
            predicates.update(result.claims.column("predicate").to_pylist())
        missing = set(ledger_days(ledger)) - set(stored_days(home.claims, extractor.key))
        if not missing:  # every ledger day is compiled: the view is current up to this head
            write_run_watermark(home.claims, extractor, watermark, days_last_run=[keys[0], keys[-1]])
        context.log.info(
            f"{extractor.key}: {totals['claims']} claims, {totals['rejections']} rejections from "
            f"{totals['entries']} entries over {len(keys)} day(s) at watermark {watermark}"
        )
        return dg.MaterializeResult(
            metadata={
                "dagster/row_count": totals["claims"],
                "rejections": totals["rejections"],
                "rejections_by_validator": dict(rejected),
                "claims_by_predicate": dict(predicates),
                "entries_read": totals["entries"],
                "days": len(keys),
                "days_with_entries": len(per_day),
                "claims_by_day": {d: n for d, n in per_day.items() if n},
                "ledger_watermark": watermark,
                "extractor": extractor.key,
                "days_missing": len(missing),
                "path": dg.MetadataValue.path(str(home.claims / f"extractor={extractor.key}")),
            }
        )

    return claims


def __getattr__(name: str):
    # ``ASSETS`` is resolved on access, when the definitions are built, not at import: the
    # active extractor is configuration (MEMC_EXTRACTOR), and its key is the code version.
    if name == "ASSETS":
        from claims.extract import active_extractor

        return [entity_aliases, claims_asset(active_extractor())]
    raise AttributeError(name)
