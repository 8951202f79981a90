"""Views benchmark: embedding overhead of the evidence pipeline, graph build and PageRank at scale.

1. Embedding: the same texts (synthetic ledger turns) go (a) straight to the model's ``encode``
   and (b) through the pipeline: evidence rows -> ``LanceVectorStore.sync`` into a fresh table
   (row validation, content hashes, the encode, the Lance write and the full-text index). Same
   process, model loaded and warmed first, best of ``repeats``; the ratio (b)/(a) is the overhead
   (target <= 1.10).
2. Graph: synthetic marts of N ledger entries (sessions of 10 turns among 50 people per scope,
   4 scopes) bulk-loaded into Kùzu (``rebuild``: fresh directory, COPY, swap), then PageRank and
   Louvain over every scope, at N = 10k and 100k.

`python -m benchmarks.bench_views [--texts 2000] [--sizes 10000,100000]` prints the result as JSON.
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pyarrow as pa

T0 = datetime(2025, 1, 1, tzinfo=timezone.utc)
WORDS = (
    "order shipped warehouse Lisbon Berlin budget review meeting Thursday coffee tea allergy "
    "deployment pipeline failed disk release checklist launch invoice overdue payment team lunch "
    "office move new hire starting plan project falcon quarterly notes weather sunny"
).split()


def _texts(n: int, seed: int = 7) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 30)))
        out.append(
            {
                "seq": i + 1,
                "entry_id": f"e_{i:08d}",
                "kind": "message",
                "scope": "bench",
                "session_id": f"s{i // 10}",
                "actor": f"person{i % 50}",
                "source_ref": f"t{i}",
                "visibility": ["public"],
                "valid_at": T0 + timedelta(minutes=i),
                "recorded_at": T0 + timedelta(minutes=i),
                "content": f"Turn {i}: {words}.",
                "attributes": None,
            }
        )
    return out


def bench_embedding(n_texts: int = 2000, repeats: int = 2) -> dict:
    from views.embedder import Embedder
    from views.evidence import evidence_rows, render
    from views.vectors import LanceVectorStore

    entries = _texts(n_texts)
    texts = [render(e) for e in entries]
    emb = Embedder()
    emb.encode(texts[:64])  # load and warm the model outside the timings

    direct, pipeline, stats = [], [], {}
    for _ in range(repeats):
        t = time.perf_counter()
        emb.encode(texts)
        direct.append(time.perf_counter() - t)
        with tempfile.TemporaryDirectory(prefix="memc-bench-") as d:
            t = time.perf_counter()
            rows = evidence_rows(entries)
            stats = LanceVectorStore(Path(d) / "vectors").sync(rows, emb)
            pipeline.append(time.perf_counter() - t)
    assert stats["newly_embedded"] == n_texts, stats
    best_direct, best_pipe = min(direct), min(pipeline)
    return {
        "texts": n_texts,
        "direct_encode_s": round(best_direct, 3),
        "pipeline_s": round(best_pipe, 3),
        "direct_texts_per_s": round(n_texts / best_direct, 1),
        "pipeline_texts_per_s": round(n_texts / best_pipe, 1),
        "overhead_ratio": round(best_pipe / best_direct, 3),
        "target_ratio": 1.10,
    }


def synthetic_marts(n_entries: int, scopes: int = 4, people: int = 50, session_len: int = 10, seed: int = 3) -> dict[str, pa.Table]:
    """Marts shaped like the dbt exports for ``n_entries`` message turns."""
    from memc.visibility import meet

    rng = random.Random(seed)
    ents, entries, sessions, mentions = {}, [], {}, []
    pairs: dict[tuple[str, str, str], dict] = {}
    prev = None
    for i in range(n_entries):
        scope = f"s{(i // session_len) % scopes}"
        skey = f"ses_{i // session_len:08d}"
        actor = f"{scope}_p{rng.randrange(people)}"
        eid = f"e_{i:09d}"
        at = T0 + timedelta(minutes=i)
        ents.setdefault(actor, {"entity_id": actor, "scope": scope, "name": actor, "entity_type": "person", "visibility": ["public"], "evidence": []})["evidence"].append(eid)
        entries.append({"entry_id": eid, "seq": i + 1, "scope": scope, "kind": "message", "session_key": skey, "actor": actor,
                        "source_ref": f"t{i}", "valid_at": at, "recorded_at": at, "visibility": ["public"]})
        s = sessions.setdefault(skey, {"session_key": skey, "scope": scope, "session_id": skey, "entry_count": 0, "first_at": at, "last_at": at, "visibility": ["public"]})
        s["entry_count"] += 1
        s["last_at"] = at
        mentions.append({"entry_id": eid, "entity_id": actor, "scope": scope})
        if prev is not None and prev[0] == skey and prev[1] != actor:
            a, b = sorted((actor, prev[1]))
            p = pairs.setdefault((a, b, scope), {"src": a, "dst": b, "scope": scope, "weight": 0, "first_at": at, "last_at": at, "evidence": []})
            p["weight"] += 1
            p["last_at"] = at
            p["evidence"].append(eid)
        prev = (skey, actor)
    inter = [dict(p, visibility=meet([["public"]])) for p in pairs.values()]
    return {
        "entities": pa.Table.from_pylist(list(ents.values())),
        "interactions": pa.Table.from_pylist(inter),
        "entries": pa.Table.from_pylist(entries),
        "sessions": pa.Table.from_pylist(list(sessions.values())),
        "mentions": pa.Table.from_pylist(mentions),
    }


def bench_graph(n_entries: int) -> dict:
    from views.graph import KuzuGraphStore
    from views.graph_tables import both_directions

    marts = synthetic_marts(n_entries)
    scopes = sorted(set(marts["entities"].column("scope").to_pylist()))
    with tempfile.TemporaryDirectory(prefix="memc-bench-graph-") as d:
        store = KuzuGraphStore(Path(d) / "graph")
        t = time.perf_counter()
        res = store.rebuild(marts["entities"], both_directions(marts["interactions"]), entries=marts["entries"],
                            sessions=marts["sessions"], mentions=marts["mentions"])
        build = time.perf_counter() - t
        t = time.perf_counter()
        for s in scopes:
            store.pagerank(s)
        pagerank = time.perf_counter() - t
        t = time.perf_counter()
        for s in scopes:
            store.communities(s)
        louvain = time.perf_counter() - t
        store.close()
    return {
        "entries": n_entries,
        "nodes": res["nodes"],
        "edges": res["edges"],
        "build_s": round(build, 3),
        "pagerank_s": round(pagerank, 3),
        "louvain_s": round(louvain, 3),
        "scopes": len(scopes),
    }


def run(n_texts: int = 2000, sizes: tuple[int, ...] = (10_000, 100_000)) -> dict:
    return {
        "embedding": bench_embedding(n_texts),
        "graph": [bench_graph(n) for n in sizes],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--texts", type=int, default=2000)
    ap.add_argument("--sizes", default="10000,100000")
    args = ap.parse_args(argv)
    print(json.dumps(run(args.texts, tuple(int(s) for s in args.sizes.split(","))), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
