"""The extraction pass as assets: entity aliases, then claims per ledger day, gated by validators.

The claims asset is built for the active extractor (``MEMC_EXTRACTOR``) when the definitions
are built: its code version is that extractor's key, so an upgrade shows every materialized
day as out of date in the UI, and a backfill re-extracts exactly those days.
"""


import functools
from collections import Counter

import dagster as dg

from assets.columns import column_metadata, field_comments
from catalog.keys import CLAIMS, CLAIMS_GROUP, ENTITY_ALIASES, LEDGER
from catalog.partitions import LEDGER_DAYS, SINGLE_RUN
from catalog.resources import MemcResource
from claims import model as claim_model
from claims import resolve as claim_resolve
from claims.extract import Extractor, active_extractor
from claims.resolve import resolution_tables
from claims.run import extract_days
from claims.store import aliases_path, participants_path
from memc.atomic import write_parquet
from memc.watermark import FILE as WATERMARK_FILE


@dg.asset(
    key=ENTITY_ALIASES,
    deps=[LEDGER],
    group_name=CLAIMS_GROUP,
    kinds={"parquet"},
    code_version="resolve-0.2.0",
    metadata=column_metadata(claim_resolve.ALIAS_SCHEMA, field_comments(claim_resolve)),
)
def entity_aliases(context: dg.AssetExecutionContext, memc: MemcResource) -> dg.MaterializeResult:
    """Entity resolution: which written names are one entity. Grain: one row per (scope, alias
    as written), with its canonical entity id (per scope: people who share a name in different
    scopes never merge), the canonical name, the rule that merged it ("exact", "case/space",
    "prefix-in-conversation": a nickname a participant is addressed by, "email-local-part": a
    sender's address whose local part is a speaker's whole name) and the entry ids that
    support the merge. Beside it, participants.parquet: who speaks in each session (one row
    per scope, session and speaker, with their turns), which is whom "you" means in a two-party
    session. Deterministic, rebuilt from the whole ledger; claims resolve their subjects and
    person objects through it."""

    ledger = memc.ledger()
    watermark = ledger.head()
    table, participants = resolution_tables(ledger, watermark)
    path = aliases_path(memc.home.claims)
    write_parquet(table, path)
    write_parquet(participants, participants_path(memc.home.claims))
    memc.publish("claims", ("entities",))
    rules = Counter(table.column("rule").to_pylist())
    entities = len(set(table.column("entity_id").to_pylist()))
    context.log.info(f"{table.num_rows} aliases of {entities} entities at watermark {watermark}")
    return dg.MaterializeResult(
        metadata={
            "dagster/row_count": table.num_rows,
            "entities": entities,
            "aliases_by_rule": dict(rules),
            "merged_aliases": table.num_rows - rules.get("exact", 0),
            "sessions": len(set(participants.column("session_id").to_pylist())),
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
        metadata=column_metadata(claim_model.CLAIM_SCHEMA, field_comments(claim_model)),
    )
    def claims(context: dg.AssetExecutionContext, memc: MemcResource) -> dg.MaterializeResult:
        """Typed claims (subject, predicate, object, polarity, valid time) extracted from the
        ledger entries recorded on one ledger day (UTC date of recorded_at), each traced to a
        verbatim quote in its source entry. Grain: one row per claim, per extractor name and
        version (claims/extractor=<name>-<version>/day=<day>/claims.parquet); subject_id is
        the canonical entity from entity_aliases, relative times ("last month") are resolved
        against the entry's valid time and kept in time_phrase. Proposals that fail a validator
        (schema, ontology, provenance, policy, temporal) are kept beside them in
        rejections.parquet with the validator and the reason; nothing is dropped silently.

        Partitioned by ledger day (dynamic partitions `ledger_days`: one per UTC day that has
        ledger entries, added by the ledger-head sensor, `memc build` and `memc backfill`, not a
        calendar); a run over a range of days is one run. Re-extracted by the daemon for the
        newest day after entity_aliases updates and for any day still missing; an extractor
        upgrade marks every day out of date (the code version is the extractor's key)."""

        home = memc.home
        days = list(context.partition_keys)
        run = extract_days(home, memc.ledger(), extractor, days)
        memc.publish("claims", (*(f"extractor={extractor.key}/day={d}" for d in days), f"extractor={extractor.key}/{WATERMARK_FILE}"))
        context.log.info(run.summary())
        return dg.MaterializeResult(
            metadata={**run.metadata(), "path": dg.MetadataValue.path(str(home.claims / f"extractor={extractor.key}"))}
        )

    return claims


def __getattr__(name: str):
    # ``ASSETS`` is resolved on access, when the definitions are built, not at import: the
    # active extractor is configuration (MEMC_EXTRACTOR), and its key is the code version.
    if name == "ASSETS":
        return [entity_aliases, claims_asset(active_extractor())]
    raise AttributeError(name)
