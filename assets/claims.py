"""The claims asset: the extraction pass over the ledger, gated by validators."""

from collections import Counter

import dagster as dg
import pyarrow.compute as pc

from claims.extract import RULES, extract
from claims.store import write_extraction
from orchestration.keys import CLAIMS, CLAIMS_GROUP, LEDGER
from orchestration.resources import MemcResource


@dg.asset(key=CLAIMS, deps=[LEDGER], group_name=CLAIMS_GROUP, kinds={"parquet"}, code_version=RULES.key)
def claims(context: dg.AssetExecutionContext, memc: MemcResource) -> dg.MaterializeResult:
    """Typed claims (subject, predicate, object, valid time) extracted from ledger entries, each
    traced to a verbatim quote in its source entry. Grain: one row per claim, keyed by extractor
    name and version (claims/extractor=<name>-<version>/). Proposals that fail a validator
    (ontology, provenance, policy, temporal) are kept beside them in rejections.parquet with the
    validator and the reason; nothing is dropped silently."""
    ledger = memc.ledger()
    watermark = ledger.head()
    result = extract(ledger.iter_entries(until_seq=watermark), RULES)
    path = write_extraction(memc.home.claims, RULES, result, watermark)
    by_validator = Counter(result.rejections.column("validator").to_pylist())
    predicates = Counter(result.claims.column("predicate").to_pylist())
    context.log.info(f"{result.claims.num_rows} claims, {result.rejections.num_rows} rejections at watermark {watermark}")
    return dg.MaterializeResult(
        metadata={
            "dagster/row_count": result.claims.num_rows,
            "rejections": result.rejections.num_rows,
            "rejections_by_validator": dict(by_validator),
            "claims_by_predicate": dict(predicates),
            "entries_read": result.entries_read,
            "ledger_watermark": watermark,
            "extractor": RULES.key,
            "subjects": len(set(pc.unique(result.claims.column("subject_id")).to_pylist())),
            "path": dg.MetadataValue.path(str(path)),
        }
    )

ASSETS = [claims]
