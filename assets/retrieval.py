"""The retrieval view: ledger evidence embedded into LanceDB, with LanceDB's full-text index."""

import dagster as dg

from memc.watermark import write_watermark
from orchestration.keys import EVIDENCE_INDEX, LEDGER, RETRIEVAL_GROUP
from orchestration.resources import EmbedderResource, MemcResource
from views.embedder import EMBEDDING_MODEL_VERSION
from views.evidence import evidence_rows


@dg.asset(
    key=EVIDENCE_INDEX,
    deps=[LEDGER],
    group_name=RETRIEVAL_GROUP,
    kinds={"lancedb"},
    code_version=EMBEDDING_MODEL_VERSION,
)
def evidence_index(context: dg.AssetExecutionContext, memc: MemcResource, embedder: EmbedderResource) -> dg.MaterializeResult:
    """Ledger messages, documents and events as searchable chunks: all-MiniLM-L6-v2 vectors
    (384 dimensions) plus LanceDB's own full-text index, with the columns retrieval filters on
    before ranking (scope, visibility, kind, valid and recorded time, source entry). Grain: one
    row per chunk; chunk ids are content hashes, so only new text is ever embedded."""
    from views.vectors import LanceVectorStore

    home = memc.home
    ledger = memc.ledger()
    watermark = ledger.head()
    rows = evidence_rows(ledger.iter_entries(until_seq=watermark))
    stats = LanceVectorStore(str(home.vectors)).sync(rows, embedder.get())
    write_watermark(home.vectors, "evidence_index", watermark, model=EMBEDDING_MODEL_VERSION, rows=rows.num_rows)
    context.log.info(f"evidence index: {stats}")
    return dg.MaterializeResult(
        metadata={
            "dagster/row_count": rows.num_rows,
            "newly_embedded": stats["newly_embedded"],
            "reused": stats["reused"],
            "deleted": stats["deleted"],
            "ledger_watermark": watermark,
            "embedding_model": EMBEDDING_MODEL_VERSION,
        }
    )

ASSETS = [evidence_index]
