"""`python -m benchmarks`: run every benchmark and write docs/benchmarks.md with plots.

Numbers are reported as ratios against a baseline measured in the same process where one
exists, so that they compare across machines; the absolute figures are for this machine only.
"""

from __future__ import annotations

import json
import os
import platform
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
IMG = DOCS / "img"


def _plot_ledger(res: dict) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = [str(r["batch_size"]) for r in res["results"]]
    fig, ax = plt.subplots(figsize=(6, 3.2))
    x = range(len(sizes))
    ax.bar([i - 0.2 for i in x], [r["ledger_entries_per_s"] for r in res["results"]], 0.4, label="ledger append")
    ax.bar([i + 0.2 for i in x], [r["baseline_entries_per_s"] for r in res["results"]], 0.4, label="bare Parquet write")
    ax.set_xticks(list(x), sizes)
    ax.set_yscale("log")
    ax.set_xlabel("entries per batch")
    ax.set_ylabel("entries / s (log)")
    ax.legend()
    ax.set_title("Ledger append throughput")
    fig.tight_layout()
    IMG.mkdir(parents=True, exist_ok=True)
    fig.savefig(IMG / "ledger_append.png", dpi=110)
    plt.close(fig)
    return "img/ledger_append.png"


def _plot_build(res: dict) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = sorted(set(res["cold_steps_s"]) | set(res["rebuild_steps_s"]))
    fig, ax = plt.subplots(figsize=(6.5, 3.4))
    y = range(len(steps))
    ax.barh([i + 0.2 for i in y], [res["cold_steps_s"].get(s, 0) for s in steps], 0.4, label="cold build")
    ax.barh([i - 0.2 for i in y], [res["rebuild_steps_s"].get(s, 0) for s in steps], 0.4, label="rebuild, nothing new")
    ax.set_yticks(list(y), steps)
    ax.set_xlabel("seconds")
    ax.legend()
    ax.set_title("Build of the sample corpus, per Dagster step")
    fig.tight_layout()
    fig.savefig(IMG / "build_steps.png", dpi=110)
    plt.close(fig)
    return "img/build_steps.png"


def _flat(d: Any, prefix: str = "") -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    if isinstance(d, dict):
        for k, v in d.items():
            out += _flat(v, f"{prefix}.{k}" if prefix else str(k))
    elif isinstance(d, list) and all(isinstance(x, dict) for x in d):
        for i, v in enumerate(d):
            label = next((f"{k}={v[k]}" for k in ("entries", "n", "size", "batch_size") if k in v), str(i))
            out += _flat(v, f"{prefix}[{label}]")
    elif isinstance(d, (int, float, str, bool)) or d is None:
        out.append((prefix, d))
    return out


def _section(title: str, intro: str, result: dict) -> list[str]:
    """A results table of every scalar the benchmark reported, and the raw JSON."""
    rows = [(k, v) for k, v in _flat(result) if not isinstance(v, str) or len(v) < 80][:60]
    return [
        f"## {title}",
        "",
        intro,
        "",
        "| measure | value |",
        "|---|---:|",
        *(f"| {k} | {v:,.3f} |" if isinstance(v, float) else f"| {k} | {v} |" for k, v in rows),
        "",
    ]


# Benchmarks beyond the ledger and the build, each a module with run() -> dict: title and what
# its baseline is.
SECTIONS = [
    ("bench_extract", "Rule-based extraction on the LoCoMo dev conversations",
     "Entries/s of the rule-based extractor against a baseline in the same process that only splits the same entries into sentences (read from ../shared/eval/locomo-dev in place)."),
    ("bench_state", "State models (dbt on DuckDB) at 10k and 100k ledger entries",
     "dbt build time of the state models: full build, then incremental and full refresh after a 1% append."),
    ("bench_views", "Retrieval and graph views",
     "Embedding throughput through the pipeline (evidence rows -> LanceDB sync) against calling the model's encode directly on the same texts in the same process (target ratio <= 1.10); graph build, PageRank and Louvain at 10k and 100k entries."),
    ("bench_http", "HTTP API",
     "Ask throughput and latency over HTTP on loopback with a few concurrent clients."),
]


def main() -> None:
    import importlib

    from benchmarks import bench_build, bench_ledger

    started = datetime.now(timezone.utc)
    ledger = bench_ledger.run(REPO / ".bench")
    build = bench_build.run()
    extra: dict[str, dict] = {}
    for module, _, _ in SECTIONS:
        try:
            mod = importlib.import_module(f"benchmarks.{module}")
        except ModuleNotFoundError:
            continue
        print(f"running {module}...", file=sys.stderr)
        extra[module] = mod.run()
    machine = f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"

    lines = [
        "# Benchmarks",
        "",
        f"Measured by `make bench` on {started:%Y-%m-%d} ({machine}). Absolute numbers are for this machine;",
        "ratios against a baseline run in the same process are the comparable figures.",
        "",
        "## Ledger append throughput",
        "",
        "Baseline: writing the same rows with `pyarrow.parquet.write_table` alone. The ledger adds",
        "validation, the idempotency check, fsyncs, a checksum and the put-if-absent publish.",
        "",
        "| batch size | ledger entries/s | bare Parquet entries/s | ledger time / bare time |",
        "|---:|---:|---:|---:|",
    ]
    for r in ledger["results"]:
        lines.append(
            f"| {r['batch_size']:,} | {r['ledger_entries_per_s']:,.0f} | {r['baseline_entries_per_s']:,.0f} | {r['ratio']:.2f} |"
        )
    lines += ["", f"![ledger append]({_plot_ledger(ledger)})", ""]
    lines += [
        "## Full build of the sample corpus",
        "",
        f"{build['entries']} ledger entries, every asset materialized through Dagster in-process",
        "(observe the ledger, claims, dbt build, embeddings, graph, dreaming, and the recompile after",
        "dreaming writes back). The rebuild runs right after in the same process with nothing new:",
        "only content-hash misses are embedded and dreaming appends nothing.",
        "",
        f"| build | seconds |",
        "|---|---:|",
        f"| cold (includes loading the embedding model) | {build['cold_build_s']} |",
        f"| rebuild, nothing new | {build['rebuild_s']} |",
        f"| rebuild / cold | {build['rebuild_over_cold']} |",
        "",
        f"![build steps]({_plot_build(build)})",
        "",
    ]
    for module, title, intro in SECTIONS:
        if module in extra:
            lines += _section(title, intro, extra[module])
    lines += [
        "<details><summary>raw results</summary>",
        "",
        "```json",
        json.dumps({"ledger": ledger, "build": build, **extra}, indent=2, default=str),
        "```",
        "</details>",
        "",
    ]
    DOCS.mkdir(exist_ok=True)
    (DOCS / "benchmarks.md").write_text("\n".join(lines))
    print("\n".join(lines[:40]))
    print(f"\nwritten to {DOCS / 'benchmarks.md'}", file=sys.stderr)


if __name__ == "__main__":
    main()
