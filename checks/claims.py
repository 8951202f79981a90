"""Checks on the claims view and the entity aliases, independent of the code that wrote them."""


import dagster as dg
import pyarrow.compute as pc

from catalog.keys import CLAIMS, ENTITY_ALIASES
from catalog.resources import MemcResource
from claims.extract import active_extractor_key
from claims.resolve import RULES as ALIAS_RULES
from claims.store import read_aliases, read_claims
from ledger.schema import PUBLIC, said_in
from memc.ids import entity_id


@dg.asset_check(
    asset=CLAIMS,
    blocking=True,
    description=(
        "Every claim of the active extractor (all days) names a source entry in the ledger, its quote "
        "occurs there verbatim (in its content or its picture's caption), and its visibility is no broader than that entry's."
    ),
)
def claims_provenance(memc: MemcResource) -> dg.AssetCheckResult:
    key = active_extractor_key()
    claims = read_claims(memc.home.claims, key)
    ledger = memc.ledger().read(["entry_id", "content", "attributes", "visibility"])
    # Each claim's source row, matched in Arrow (null where the ledger has no such entry): dicts of
    # every entry and claim were ~1 s of this check at 100k entries.
    source = ledger.take(pc.index_in(claims.column("source_entry_id"), value_set=ledger.column("entry_id")))
    rows = zip(
        *(claims.column(c).to_pylist() for c in ("claim_id", "quote", "visibility")),
        *(source.column(c).to_pylist() for c in ("entry_id", "content", "attributes", "visibility")),
    )  # fmt: skip
    bad_quote, too_broad = [], []
    for claim_id, quote, visibility, found, content, attributes, source_visibility in rows:
        if found is None or not said_in(quote, content, attributes):
            bad_quote.append(claim_id)
        elif PUBLIC not in source_visibility and set(visibility) - set(source_visibility):
            too_broad.append(claim_id)
    bad = bad_quote + too_broad
    return dg.AssetCheckResult(
        passed=not bad,
        metadata={
            "extractor": key,
            "claims": claims.num_rows,
            "quote_not_in_source": len(bad_quote),
            "visibility_too_broad": len(too_broad),
            "failing_claim_ids": ", ".join(bad[:50]) or "none",
        },
    )


@dg.asset_check(
    asset=ENTITY_ALIASES,
    blocking=True,
    description=(
        "Every alias row is explainable: a known rule, evidence entries that exist in the ledger, "
        "and an entity id computed from its own scope (no merge across scopes)."
    ),
)
def entity_aliases_explainable(memc: MemcResource) -> dg.AssetCheckResult:
    table = read_aliases(memc.home.claims)
    rows = table.to_pylist() if table is not None else []
    ids = {r["entry_id"] for r in memc.ledger().read(["entry_id"]).to_pylist()}
    problems = []
    for r in rows:
        if r["rule"] not in ALIAS_RULES:
            problems.append(f"{r['alias']}: unknown rule {r['rule']!r}")
        elif not r["evidence"] or not set(r["evidence"]) <= ids:
            problems.append(f"{r['alias']}: evidence missing or not in the ledger")
        elif r["entity_id"] != entity_id(r["scope"], r["canonical_name"]):
            problems.append(f"{r['alias']}: entity id is not that of {r['canonical_name']!r} in scope {r['scope']!r}")
    return dg.AssetCheckResult(
        passed=not problems,
        metadata={"aliases": len(rows), "failing": len(problems), "problems": "; ".join(problems[:20]) or "none"},
    )


CHECKS = [claims_provenance, entity_aliases_explainable]
