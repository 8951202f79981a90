"""The evidence index on object storage against the same index on the local disk, in one process:

    .venv/bin/python -m benchmarks.bench_vectors_s3 s3://bucket/prefix [--texts 2000] [--queries 60]

The same synthetic turns (benchmarks/bench_views.py) go into a local :class:`LanceVectorStore` and
an :class:`S3LanceVectorStore` under ``prefix`` (the AWS variables name the store; a Ceph RGW on
loopback: ``python tests/ceph_rgw.py``). Timed for each: the first build (vectors are computed once
beforehand and reused by content hash, so both times are LanceDB's writes and index builds, not
the model), a rebuild (the erasure path), and searches as the compiler runs them (a full-text and
a vector query with the visibility prefilter, then the session rows of the best hit), medians over
``queries`` questions. Prints JSON with the S3 / local ratios."""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from benchmarks.bench_views import WORDS, _texts


class _Cached:
    """The real embedder behind a cache by text, so the timed builds reuse one set of vectors."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.cache = inner, {}
        self.model_name, self.model_version, self.dim = inner.model_name, inner.model_version, inner.dim

    def encode(self, texts: list[str]):
        import numpy as np

        todo = [t for t in dict.fromkeys(texts) if t not in self.cache]
        if todo:
            self.cache.update(zip(todo, self.inner.encode(todo)))
        return np.stack([self.cache[t] for t in texts]) if texts else self.inner.encode([])


def _searches(store: Any, emb: Any, questions: list[str]) -> list[float]:
    out = []
    for q in questions:
        v = emb.encode([q])[0]
        t = time.perf_counter()
        hits = store.search(text=q, vector=v, principals=["public"], scope="bench", k=40)
        if hits:
            store.session_rows(session_ids=[hits[0]["session_id"]], principals=["public"], scope="bench")
        out.append(time.perf_counter() - t)
    return out


def run(uri: str, n_texts: int = 2000, queries: int = 60) -> dict[str, Any]:
    from memc.objectstore import delete_every_version
    from views.embedder import Embedder
    from views.evidence import evidence_rows
    from views.vectors import LanceVectorStore
    from views.vectors_s3 import S3LanceVectorStore

    entries = _texts(n_texts)
    rows = evidence_rows(entries)
    emb = _Cached(Embedder())
    emb.encode(rows.column("text").to_pylist())  # every vector computed once, outside the timings
    questions = [" ".join(WORDS[(i * 7 + j) % len(WORDS)] for j in range(4)) for i in range(queries)]
    emb.encode(questions)
    out: dict[str, Any] = {"texts": n_texts, "queries": queries}
    with tempfile.TemporaryDirectory(prefix="memc-bench-") as d:
        LanceVectorStore(Path(d) / "warm").sync(rows.slice(0, 50), emb)  # LanceDB's first-use costs outside the timings
        stores = {"local": LanceVectorStore(Path(d) / "vectors"), "s3": S3LanceVectorStore(f"{uri.rstrip('/')}/{uuid.uuid4().hex}")}
        for name, store in stores.items():
            t = time.perf_counter()
            store.sync(rows, emb)
            build = time.perf_counter() - t
            t = time.perf_counter()
            store.rebuild(rows.slice(1), emb)
            rebuild = time.perf_counter() - t
            _searches(store, emb, questions[:5])  # first touches outside the timings
            lat = _searches(store, emb, questions)
            out[name] = {"build_s": round(build, 2), "rebuild_s": round(rebuild, 2),
                         "search_p50_ms": round(statistics.median(lat) * 1000, 1),
                         "search_p95_ms": round(sorted(lat)[int(0.95 * (len(lat) - 1))] * 1000, 1),
                         "bytes": store.bytes_stored()}
        s3 = stores["s3"]
        delete_every_version(s3.client, s3.bucket, s3.prefix + "/")  # the run's tables, pointer, watermark and builder claim
    for k in ("build_s", "rebuild_s", "search_p50_ms", "search_p95_ms"):
        out[f"s3_over_local_{k}"] = round(out["s3"][k] / out["local"][k], 2) if out["local"][k] else None
    return out


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("uri")
    ap.add_argument("--texts", type=int, default=2000)
    ap.add_argument("--queries", type=int, default=60)
    a = ap.parse_args()
    print(json.dumps(run(a.uri, a.texts, a.queries), indent=2))
