"""Ask over HTTP: throughput and latency of `POST /v1/ask` with a few concurrent clients on
loopback, against a real `memc serve` over the built sample corpus.

Each server, one `memc serve --workers N` per entry of ``workers``, is measured on its own.
Each concurrency level sends at most ``requests_per_level`` asks or runs for at most
``seconds_per_level`` seconds, whichever comes first; the server is stopped at the end. The same
questions are also compiled in-process (``compile_context``, sequentially), so the report can
give the HTTP latency as a ratio of the compiler's own."""

from __future__ import annotations

import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from benchmarks import built_sample_home

QUESTIONS = [
    "Where does Elena live now?",
    "Which order did Tomasz mention?",
    "When is the design offsite?",
    "Where does Elena work?",
    "Who joined Helio Labs?",
    "When does the design team meet?",
]


def _pct(values: list[float], p: float) -> float:
    if not values:
        return 0.0
    s = sorted(values)
    return s[min(len(s) - 1, max(0, int(round(p / 100 * len(s) + 0.5)) - 1))]


def _level(url: str, key: str, clients: int, max_requests: int, max_seconds: float) -> dict[str, Any]:
    import httpx2 as httpx

    latencies: list[float] = []
    errors: list[int] = []
    lock = threading.Lock()
    counter = iter(range(max_requests))
    deadline = time.perf_counter() + max_seconds

    def worker(n: int) -> None:
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=60) as c:
            while time.perf_counter() < deadline:
                with lock:
                    i = next(counter, None)
                if i is None:
                    return
                t0 = time.perf_counter()
                r = c.post("/v1/ask", json={"question": QUESTIONS[i % len(QUESTIONS)], "scope": "team"})
                dt = time.perf_counter() - t0
                with lock:
                    (latencies if r.status_code == 200 else errors).append(dt if r.status_code == 200 else r.status_code)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(clients)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    return {
        "clients": clients,
        "requests": len(latencies),
        "errors": len(errors),
        "asks_per_s": round(len(latencies) / wall, 2) if wall else 0.0,
        "p50_ms": round(statistics.median(latencies) * 1000, 1) if latencies else None,
        "p95_ms": round(_pct(latencies, 95) * 1000, 1) if latencies else None,
    }


def _in_process(home, n: int) -> dict[str, Any]:
    from query import compile_context
    from views.embedder_onnx import question_embedder

    embedder = question_embedder(1)  # what the server asks with
    compile_context(QUESTIONS[0], "tomasz", home=home, scope="team", embedder=embedder)  # load the model
    lat = []
    for i in range(n):
        t0 = time.perf_counter()
        compile_context(QUESTIONS[i % len(QUESTIONS)], "tomasz", home=home, scope="team", embedder=embedder)
        lat.append(time.perf_counter() - t0)
    return {"requests": n, "p50_ms": round(statistics.median(lat) * 1000, 1), "p95_ms": round(_pct(lat, 95) * 1000, 1)}


def _served(home, key: str, workers: int, tmp: Path, levels: tuple[int, ...], requests_per_level: int, seconds_per_level: float) -> dict[str, Any]:
    """The levels against one `memc serve --workers N`, started and stopped here."""
    from api.process import ServerProcess
    import httpx2 as httpx

    with ServerProcess(home.root, args=["--workers", str(workers)], log_path=tmp / f"serve-{workers}.log") as srv:
        auth = {"Authorization": f"Bearer {key}"}
        t0 = time.perf_counter()
        httpx.post(f"{srv.url}/v1/ask", json={"question": QUESTIONS[0]}, headers=auth, timeout=120).raise_for_status()  # the model loads once
        first_ask_s = time.perf_counter() - t0
        # First-touch costs (table opens, caches) stay out of the levels: over fresh connections,
        # twice per worker, so that each worker has most likely answered every question once.
        for q in QUESTIONS * workers * 2:
            httpx.post(f"{srv.url}/v1/ask", json={"question": q, "scope": "team"}, headers={**auth, "Connection": "close"}, timeout=120).raise_for_status()
        results = [_level(srv.url, key, n, requests_per_level, seconds_per_level) for n in levels]
    best = max(results, key=lambda r: r["asks_per_s"])
    return {"workers": workers, "levels": results, "first_ask_s": round(first_ask_s, 2), "best_asks_per_s": best["asks_per_s"], "best_clients": best["clients"]}


def run(
    home=None, *, levels: tuple[int, ...] = (1, 2, 4), workers: tuple[int, ...] = (1, 2), requests_per_level: int = 400, seconds_per_level: float = 45.0,
) -> dict[str, Any]:  # fmt: skip
    """``home``: a built memory home to serve (default: the sample corpus, built in a temp dir).
    ``workers``: each a `memc serve --workers N` measured on its own (the first is the baseline)."""
    from api.auth import KeyStore

    with tempfile.TemporaryDirectory() as tmp:
        if home is None:
            home = built_sample_home(Path(tmp))
        key, record = KeyStore(home).add("tomasz")
        try:
            servers = [_served(home, key, n, Path(tmp), levels, requests_per_level, seconds_per_level) for n in workers]
        finally:
            KeyStore(home).revoke(record["key_id"])
        baseline = _in_process(home, 12)
    one = servers[0]["levels"][0]
    best = max(servers, key=lambda s: s["best_asks_per_s"])
    return {
        "servers": servers,
        "in_process": baseline,
        "best_asks_per_s": best["best_asks_per_s"],
        "best_workers": best["workers"],
        "best_clients": best["best_clients"],
        # The same clients against more worker processes: what the extra cores give.
        "workers_ratio": round(servers[-1]["best_asks_per_s"] / servers[0]["best_asks_per_s"], 2) if servers[0]["best_asks_per_s"] else None,
        "http_overhead_ratio_p50": round(one["p50_ms"] / baseline["p50_ms"], 2) if one["p50_ms"] and baseline["p50_ms"] else None,
    }


if __name__ == "__main__":
    import json

    print(json.dumps(run(), indent=2))
