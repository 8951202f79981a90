"""Compile the evidence index of a memory home: what the ``evidence_index`` asset and its checks
call (plain functions, no Dagster).

The rows come from three inputs: the ledger up to its head (entry chunks), the active extractor's
claims whose source is within that head (claim sentences) and the entities mart (which entities
each entry mentions). The marts may lag the ledger by one build; entity tags then catch up on the
next build without re-embedding anything (a tag change replaces the row, its vector is reused).
"""

from __future__ import annotations

import os
import threading
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from claims.extractors import active_extractor_key
from claims.store import CLAIMS_FILE, day_dir, days, read_claims
from ledger import open_ledger, storage_uri
from memc.filecache import latest, signature
from memc.home import MemcHome
from memc.objectstore import where_is
from views.dreaming import PRODUCER, dream, held_values, unchanged
from views.evidence import CLAIM_KIND, ENTRY_COLUMNS, EXCHANGE_KIND, IndexInputs, index_rows, index_rows_since
from views.graph import GraphStore, KuzuGraphStore
from views.graph_tables import both_directions
from views.marts import (
    ENTITIES,
    GRAPH_ENTRIES,
    GRAPH_MENTIONS,
    GRAPH_RELATIONS,
    GRAPH_SESSIONS,
    INTERACTIONS,
    mart_path,
    read_mart,
)  # fmt: skip
from views.vectors import LanceVectorStore, VectorStore
from views.vectors_s3 import S3LanceVectorStore


def read_inputs(home: MemcHome, watermark: int) -> tuple[pa.Table, pa.Table | None, pa.Table | None]:
    """(ledger entries up to ``watermark``, claims within it, entities mart) of one memory home."""

    ledger = open_ledger(home.ledger, write=False)
    entries = ledger.read(ENTRY_COLUMNS, until_seq=watermark)
    claims = read_claims(home.claims, active_extractor_key())  # the claims dbt folds, too
    if claims.num_rows:
        claims = claims.filter(pc.less_equal(claims.column("source_seq"), watermark))
    path = mart_path(home, ENTITIES)
    entities = read_mart(path, columns=["entity_id", "evidence"]) if path.exists() else None
    return entries, claims, entities


# expected_rows' last answer in this process is kept per version of the files it was made from
# (memc.filecache.latest): the evidence_index asset and its check `evidence_index_matches_sources`
# each ask for the same rows in one build, and at 100k entries making them from nothing takes
# ~4 s (every entry rendered). None is kept above this many rows: at 100k entries 186k rows held
# 66 MB, and the inputs kept beside them to make the next version's (_MADE_FROM) 53 MB more.
EXPECTED_ROWS_KEPT = 500_000


def _inputs_version(home: MemcHome, watermark: int) -> tuple:
    """What expected_rows reads, by file versions: every ledger batch file, the active
    extractor's claims files, the entities mart (and the extractor and watermark asked for)."""
    key = active_extractor_key()
    claims = [day_dir(home.claims, key, d) / CLAIMS_FILE for d in days(home.claims, key)]
    entities = mart_path(home, ENTITIES)
    return (
        os.path.realpath(home.root), watermark, key,
        open_ledger(home.ledger, write=False).signature(),
        tuple((str(p), signature(p)) for p in claims), signature(entities),
    )  # fmt: skip


# The inputs and rows expected_rows last made in this process, for one home: the next version's
# rows are made from them by rendering only what changed (views/evidence.py index_rows_since).
_MADE_FROM: dict[str, tuple[IndexInputs, pa.Table]] = {}
_MADE_FROM_LOCK = threading.Lock()


def _made(home: MemcHome, watermark: int) -> pa.Table:
    inputs = read_inputs(home, watermark)
    root = os.path.realpath(home.root)
    with _MADE_FROM_LOCK:
        before = _MADE_FROM.get(root)
    rows = index_rows_since(before[0], before[1], inputs) if before else index_rows(*inputs)
    with _MADE_FROM_LOCK:
        _MADE_FROM.clear()  # one home's at a time, like `latest`
        if rows.num_rows <= EXPECTED_ROWS_KEPT:
            _MADE_FROM[root] = (inputs, rows)
    return rows


def expected_rows(home: MemcHome, watermark: int) -> pa.Table:
    """The rows the index must hold at ``watermark`` (rendering only: nothing is embedded)."""
    return latest("expected_rows", _inputs_version(home, watermark), lambda: _made(home, watermark),
                  keep=lambda rows: rows.num_rows <= EXPECTED_ROWS_KEPT)  # fmt: skip


def build_evidence_index(home: MemcHome, embedder: Any, *, previous_watermark: int = 0) -> dict[str, Any]:
    """Make ``<home>/vectors`` hold exactly the rows of the ledger's head. Incremental (``sync``)
    unless an erasure was recorded since ``previous_watermark`` (since the start, for a first
    build that stopped and is resumed): then a full ``rebuild`` into a fresh directory, so the
    erased text leaves the disk (vectors are still reused by hash)."""

    ledger = open_ledger(home.ledger, write=False)
    watermark = ledger.head()
    rows = expected_rows(home, watermark)
    kinds = ledger.read(["kind"], since_seq=previous_watermark, until_seq=watermark).column("kind")
    store = vector_store(home)
    # A first build that stopped left its commits (views/vectors.py) and no watermark: an erasure
    # since, anywhere in the ledger, may have text in them, and deleting rows leaves their bytes.
    resumed = previous_watermark == 0 and store.count() > 0
    erased = (previous_watermark > 0 or resumed) and "erasure" in set(kinds.to_pylist())
    stats = store.rebuild(rows, embedder) if erased else store.sync(rows, embedder)

    def of_kind(kind: str) -> int:
        return int(pc.sum(pc.equal(rows.column("kind"), kind)).as_py() or 0) if rows.num_rows else 0

    claim_rows, exchange_rows = of_kind(CLAIM_KIND), of_kind(EXCHANGE_KIND)
    return {
        **stats,
        "mode": "rebuild" if erased else ("swap" if stats.get("model_changed") or stats.get("layout_changed") else "sync"),
        "entry_rows": rows.num_rows - claim_rows - exchange_rows,
        "claim_rows": claim_rows,
        "exchange_rows": exchange_rows,
        "ledger_watermark": watermark,
        "embedding_model": embedder.model_name,
        "embedding_model_version": embedder.model_version,
    }


# -- the graph ------------------------------------------------------------------------------------

# mart file -> rebuild() argument. entities and interactions are issue-4 marts; the rest are the
# graph marts under dbt_project/models/marts/graph/.
GRAPH_MARTS = {
    "entities": ENTITIES,
    "interactions": INTERACTIONS,
    "entries": GRAPH_ENTRIES,
    "sessions": GRAPH_SESSIONS,
    "mentions": GRAPH_MENTIONS,
    "relations": GRAPH_RELATIONS,
}


def read_graph_marts(home: MemcHome) -> dict[str, pa.Table | None]:
    """The marts the graph is loaded from (None where a mart was not exported)."""
    out: dict[str, pa.Table | None] = {}
    for arg, name in GRAPH_MARTS.items():
        path = mart_path(home, name)
        out[arg] = read_mart(path) if path.exists() else None
    return out


def vector_store(home: MemcHome | None = None) -> VectorStore:
    """The evidence index of ``home`` (LanceDB under ``<home>/vectors``, or under
    ``MEMC_STORAGE/vectors`` when the home's storage is object storage), or, without a home, an
    in-memory twin (``memory://``: the same engine, nothing on disk), for a patched tail."""

    if home is None:
        return LanceVectorStore("memory://")
    storage = storage_uri()
    if storage:  # MEMC_STORAGE: the index beside the ledger on object storage (views/vectors_s3.py)
        return S3LanceVectorStore(storage + "/vectors", builder=lambda: home.home_id, where=where_is(home.root))
    return LanceVectorStore(str(home.vectors))


def graph_store(home: MemcHome, **kw: Any) -> GraphStore:
    """The entity graph of ``home`` (Kùzu under ``<home>/graph``)."""

    return KuzuGraphStore(str(home.graph / "kuzu"), **kw)


def build_graph(home: MemcHome) -> dict[str, Any]:
    """Bulk-load the graph from the marts into a fresh directory and swap it in."""

    marts = read_graph_marts(home)
    if marts["entities"] is None or marts["interactions"] is None:
        raise FileNotFoundError(f"entities/interactions marts missing under {home.marts}: build the state models first")
    store = graph_store(home)
    try:
        return store.rebuild(
            marts["entities"],
            # Interactions are symmetric; Kùzu's page_rank follows direction: store both ways.
            both_directions(marts["interactions"]),
            entries=marts["entries"],
            sessions=marts["sessions"],
            mentions=marts["mentions"],
            relations=marts["relations"],
        )
    finally:
        store.close()


def dream_home(home: MemcHome) -> tuple[list[Any], dict[str, Any]]:
    """Dreaming over the built graph: the derived entries to append (those the ledger does not
    hold already), and what they were computed from."""

    entities = read_mart(mart_path(home, ENTITIES))
    interactions = read_mart(mart_path(home, INTERACTIONS))
    evidence = pc.unique(pc.list_flatten(interactions.column("evidence")))
    ledger = open_ledger(home.ledger, write=False).read(["entry_id", "seq", "kind", "producer", "scope", "attributes", "visibility"])
    cited = ledger.filter(pc.is_in(ledger.column("entry_id"), value_set=evidence))
    seq_of = dict(zip(cited.column("entry_id").to_pylist(), cited.column("seq").to_pylist()))
    store = graph_store(home)
    try:
        derived = dream(store, interactions, entities, seq_of)
    finally:
        store.close()
    # The write policy: what the ledger already holds is not said again (views/dreaming.py).
    ours = pc.and_(pc.equal(ledger.column("kind"), "derived_claim"), pc.equal(ledger.column("producer"), PRODUCER))
    held = held_values(ledger.filter(ours))
    entries = [e for e in derived if not unchanged(e, held)]
    scopes = sorted(set(interactions.column("scope").to_pylist()))
    return entries, {"scopes": len(scopes), "interactions": interactions.num_rows, "unchanged": len(derived) - len(entries)}
