"""`python -m benchmarks`: run every benchmark and write docs/benchmarks.md with plots.

Numbers are reported as ratios against a baseline measured in the same process where one
exists, so that they compare across machines; the absolute figures are for this machine only.

`python -m benchmarks build` runs only the build of the sample corpus, and
`python -m benchmarks compile` runs only the compile-latency benchmark and the LoCoMo evaluation
and splices their sections into the existing docs/benchmarks.md; `python -m benchmarks
bench_extract` (or any other module of SECTIONS) does the same for that one benchmark.
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
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(9, 3.2))
    x = range(len(sizes))
    ax.bar([i - 0.2 for i in x], [r["ledger_entries_per_s"] for r in res["results"]], 0.4, label="ledger append")
    ax.bar([i + 0.2 for i in x], [r["baseline_entries_per_s"] for r in res["results"]], 0.4, label="bare Parquet write")
    ax.set_xticks(list(x), sizes)
    ax.set_yscale("log")
    ax.set_xlabel("entries per batch")
    ax.set_ylabel("entries / s (log)")
    ax.legend()
    ax.set_title("Ledger append throughput")
    g = res["growth"]
    labels = [f"{g['appends']} one-entry\nbatches", "after\ncompaction", "one bulk\nbatch"]
    ax2.bar(labels, [g["read_small_batches_ms"], g["read_compacted_ms"], g["read_bulk_ms"]])
    ax2.set_yscale("log")
    ax2.set_ylabel("ms, fresh handle (log)")
    ax2.set_title(f"Reading the same {g['appends']} entries")
    fig.tight_layout()
    IMG.mkdir(parents=True, exist_ok=True)
    fig.savefig(IMG / "ledger_append.png", dpi=110)
    plt.close(fig)
    return "img/ledger_append.png"


def _plot_build(res: dict) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = (("cold_steps_s", "cold build"), ("rebuild_steps_s", "nothing new, forced"), ("one_new_entry_steps_s", "one new message"))
    # Steps of 0.3 s or more in some build; the rest (checks, small views) would be unreadable bars.
    steps = sorted(s for s in set().union(*(res[k] for k, _ in runs)) if max(res[k].get(s, 0) for k, _ in runs) >= 0.3)
    fig, ax = plt.subplots(figsize=(6.5, 3.4))
    y = range(len(steps))
    for j, (k, label) in enumerate(runs):
        ax.barh([i + 0.27 * (1 - j) for i in y], [res[k].get(s, 0) for s in steps], 0.27, label=label)
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


def _plot_extract(res: dict) -> str | None:
    """Entries/s of each extractor, and of the clause extractor over two worker processes."""
    if "clauses" not in res:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    c = res["clauses"]
    names = [res["extractor"], f"{c['extractor']}\none process", f"{c['extractor']}\ntwo workers"]
    values = [res["extract_entries_per_s"], c["extract_entries_per_s"], c["two_workers_entries_per_s"]]
    fig, ax = plt.subplots(figsize=(6, 3.2))
    ax.bar(names, values, color=["#999999", "#4c72b0", "#55a868"])
    ax.axhline(2000, color="#c44e52", linestyle="--", linewidth=1, label="2,000 entries/s")
    ax.set_ylabel("entries / s")
    ax.legend()
    fig.tight_layout()
    IMG.mkdir(parents=True, exist_ok=True)
    fig.savefig(IMG / "extract_throughput.png", dpi=110)
    plt.close(fig)
    return "img/extract_throughput.png"


def _plot_ask(res: dict) -> str:
    """Median wall time of each command in a fresh process, against the bare interpreter."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = ["interpreter", "help", "ask_warm", "model_floor", "ask_cold"]
    labels = ["python -c\n'import memc'", "memc --help", "memc ask\n(memc serve up)", "load MiniLM,\nembed one question", "memc ask\n--no-server"]
    values = [res["median_s"][n] for n in names]
    fig, ax = plt.subplots(figsize=(7, 3.4))
    ax.bar(labels, values, color=["#999999", "#999999", "#55a868", "#dd8452", "#4c72b0"])
    for i, v in enumerate(values):
        ax.text(i, v, f"{v:.2f} s", ha="center", va="bottom", fontsize=8)
    ax.axhline(2.0, color="#c44e52", linestyle="--", linewidth=1, label="2 s target")
    ax.set_ylabel("seconds, median of a fresh process")
    ax.tick_params(axis="x", labelsize=8)
    ax.legend()
    fig.tight_layout()
    IMG.mkdir(parents=True, exist_ok=True)
    fig.savefig(IMG / "ask_cold.png", dpi=110)
    plt.close(fig)
    return "img/ask_cold.png"


# Plots of the generic sections, by benchmark module.
PLOTS = {"bench_extract": _plot_extract, "bench_ask": _plot_ask}


def _section(title: str, intro: str, result: dict, module: str | None = None) -> list[str]:
    """A results table of every scalar the benchmark reported (and its plot, if it has one)."""
    rows = [(k, v) for k, v in _flat(result) if not isinstance(v, str) or len(v) < 80][:60]
    plot = PLOTS[module](result) if module in PLOTS else None
    return [
        f"## {title}",
        "",
        intro,
        "",
        "| measure | value |",
        "|---|---:|",
        *(f"| {k} | {v:,.3f} |" if isinstance(v, float) else f"| {k} | {v} |" for k, v in rows),
        "",
        *([f"![{title}]({plot})", ""] if plot else []),
    ]


# Benchmarks beyond the ledger and the build, each a module with run() -> dict: title and what
# its baseline is.
SECTIONS = [
    ("bench_extract", "Rule-based extraction on the LoCoMo dev conversations",
     "Entries/s of the rule-based extractors (0.2.0, and the clause extractor, rules 0.3.0 on, under `clauses` with its key, in one process and split over two forked workers as the claims asset runs it on two cores) against a baseline in the same process that only splits the same entries into sentences (read from ../shared/eval/locomo-dev in place)."),
    ("bench_state", "State models (dbt on DuckDB) at 10k and 100k ledger entries",
     "dbt build time of the state models: full build, then incremental and full refresh after a 1% append."),
    ("bench_views", "Retrieval and graph views",
     "Embedding throughput through the pipeline (evidence rows -> LanceDB sync) against calling the model's encode directly on the same texts in the same process (target ratio <= 1.10); graph build, PageRank and Louvain at 10k and 100k entries."),
    ("bench_http", "HTTP API",
     "Ask throughput and latency of `POST /v1/ask` on loopback with 1, 2 and 4 concurrent clients, against `memc serve` with one worker process (the baseline) and with two (`--workers 2`, one per core); `workers_ratio` is the best asks/s of two workers over one's. `in_process`: the same questions compiled sequentially in one process with the server's question model. Target: >= 50 asks/s with 4 clients on 2 cores."),
    ("bench_ask", "`memc ask` from a cold process",
     "Wall time of whole commands, each in a fresh subprocess over the built sample corpus (median of 5, interleaved): `memc ask` handed to a running `memc serve` (`ask_warm`, api/local.py) and compiled in the CLI process (`ask_cold`, `--no-server`), against the bare interpreter (`python -c 'import memc'`) and the floor of the local compile (a process that only loads the ask's question embedder, MiniLM on ONNX Runtime, and embeds the question). `imports_*`: the costliest packages of one `-X importtime` run of each ask (cumulative ms; the route threads' imports overlap). Target: <= 2 s."),
]


COMPILE_TITLE = "Compile latency at 10k and 100k ledger entries"
LOCOMO_TITLE = "Retrieval quality on LoCoMo dev"


def _plot_compile(res: dict) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = res["sizes"]
    labels = [f"{r['entries']:,}" for r in sizes]
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4.8), gridspec_kw={"width_ratios": [1, 1.6]})
    x = range(len(sizes))
    for off, key, name in ((-0.3, "compile", "compile"), (0.0, "bare_retrieval", "bare LanceDB (FTS + vector)"), (0.3, "embed_question", "embed question")):
        a.bar([i + off - 0.075 for i in x], [r[key]["p50_ms"] for r in sizes], 0.15, label=f"{name} p50")
        a.bar([i + off + 0.075 for i in x], [r[key]["p95_ms"] for r in sizes], 0.15, label=f"{name} p95", alpha=0.55)
    a.axhline(100, color="grey", ls="--", lw=1)
    a.text(len(sizes) - 0.55, 103, "p95 target", color="grey", fontsize=8)
    a.set_xticks(list(x), labels)
    a.set_xlabel("ledger entries")
    a.set_ylabel("ms")
    a.set_title("Compile latency, warm process")
    a.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2)
    stages = sorted({s for r in sizes for s in r["stages"]}, key=lambda s: -max(r["stages"].get(s, {}).get("mean_ms", 0) for r in sizes))
    left = [0.0] * len(sizes)
    cmap = plt.get_cmap("tab20")
    for n, st in enumerate(stages):
        vals = [r["stages"].get(st, {}).get("mean_ms", 0.0) for r in sizes]
        b.barh(list(x), vals, left=left, color=cmap(n % 20), label=st)
        left = [l + v for l, v in zip(left, vals)]
    b.set_yticks(list(x), labels)
    b.set_xlabel("mean ms per compile (exclusive time per stage)")
    b.set_title("Where a compile spends its time")
    b.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.tight_layout()
    IMG.mkdir(parents=True, exist_ok=True)
    fig.savefig(IMG / "compile_latency.png", dpi=110)
    plt.close(fig)
    return "img/compile_latency.png"


def compile_sections(res: dict) -> list[str]:
    """The compile-latency section (table, stages, plot) and the LoCoMo section."""
    sizes = res["sizes"]
    lines = [
        f"## {COMPILE_TITLE}",
        "",
        "`benchmarks/bench_compile.py`: invented multi-party conversation (sessions of 2-4 people, a",
        "third of them private to their participants; people move, change jobs and hobbies; ticket",
        "identifiers), every view built through the real pipeline, homes cached under `.bench/compile`.",
        "One warm process (model loaded once, warm-up compiles first); each compile of a varied question",
        "(entities, identifiers, times; random askers and scopes) is followed by the baseline on the same",
        "question: one full-text and one vector query straight on an open LanceDB table, with the same",
        "visibility prefilter and k. The process embeds questions as the servers do, on one thread (MiniLM",
        "on ONNX Runtime, views/embedder_onnx.py), and the compiler runs its routes concurrently. Stages are timed in a",
        "second pass by wrapping the compiler's module functions, with the routes run one after another",
        "(exclusive times: they add up to that pass's compile). The last column is the first compile on",
        "a home the process has not read yet (its marts' indexes, its evidence rows and its ledger's",
        "ACL facts loaded), what a serving process pays after a build that changed them.",
        "",
        "| entries | compiles | p50 ms | p95 ms | mean ms | bare retrieval p50 / p95 ms | compile / bare (p50) | embed question p50 ms | compile / (bare + embed) | first compile on the home, ms |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in sizes:
        c, b = r["compile"], r["bare_retrieval"]
        first = f"{r['first_compile_ms']:,.0f}" if "first_compile_ms" in r else "-"
        lines.append(
            f"| {r['entries']:,} | {r['compiles']} | {c['p50_ms']:.1f} | {c['p95_ms']:.1f} | {c['mean_ms']:.1f} | "
            f"{b['p50_ms']:.1f} / {b['p95_ms']:.1f} | {r['compile_over_bare_p50']:.1f}x | {r['embed_question']['p50_ms']:.1f} | "
            f"{r['compile_over_bare_plus_embed_p50']:.1f}x | {first} |"
        )
    stages = list(dict.fromkeys(s for r in sizes for s in r["stages"]))
    lines += [
        "",
        "Targets on two cores: p95 <= 50 ms up to 100k entries, <= 100 ms at 1M. Stage breakdown (mean ms per compile, share of the compile):",
        "",
        "| stage | " + " | ".join(f"{r['entries']:,}" for r in sizes) + " |",
        "|---|" + "---:|" * len(sizes),
    ]
    for st in stages:
        cells = []
        for r in sizes:
            v = r["stages"].get(st)
            cells.append(f"{v['mean_ms']:.1f} ({v['share'] * 100:.0f} %)" if v else "-")
        lines.append(f"| {st} | " + " | ".join(cells) + " |")
    lines.append("| (total, staged pass) | " + " | ".join(f"{r['staged_mean_ms']:.1f}" for r in sizes) + " |")
    lines += [
        "",
        "| home | " + " | ".join(f"{r['entries']:,}" for r in sizes) + " |",
        "|---|" + "---:|" * len(sizes),
    ]
    for key in ("ledger_files", "index_rows", "state_current_rows", "conflicts_rows", "build_s"):
        lines.append(f"| {key} | " + " | ".join(str(r["home"].get(key, "-")) for r in sizes) + " |")
    lines += ["", f"![compile latency]({_plot_compile(res)})", ""]
    if res.get("notes"):
        lines += [*res["notes"], ""]
    lines += [f"## {LOCOMO_TITLE}", ""]
    lo = res.get("locomo") or {}
    if "recall" not in lo:
        lines += [f"Not run: {lo.get('skipped') or lo.get('failed') or 'disabled'}.", ""]
        return lines
    # "context": recall of everything the context shows (items and state facts), then R@k over items.
    keys = {k for g in lo["recall"].values() for k in g}
    cols = [c for c in ("context",) if c in keys] + sorted((k for k in keys if k.startswith("R@")), key=lambda c: int(c[2:]))
    lines += [
        "`memc eval locomo ../shared/eval/locomo-dev --json` (run by `make bench` when that directory exists;",
        f"the data is read in place, never copied): {lo['questions']} questions over {lo['conversations']} conversations,",
        "evidence recall of the compiled contexts at the default budget: of the whole context (`context`), and",
        "at k items (an item showing a window of turns covers each of them).",
        "",
        "| group | n | " + " | ".join(cols) + " |",
        "|---|---:|" + "---:|" * len(cols),
    ]
    order = ["multi-hop", "temporal", "open-domain", "single-hop", "adversarial", "overall"]
    for g in sorted(lo["recall"], key=lambda g: order.index(g) if g in order else len(order)):
        lines.append(f"| {g} | {lo['counts'][g]} | " + " | ".join(f"{lo['recall'][g][c]:.3f}" for c in cols) + " |")
    lines += [
        "",
        *(
            ["The run file scored by `../shared/eval/locomo_score.py` (the scorer every system's run gets): "
             + ", ".join(f"{g} R@10 {lo['official_scorer_recall'][g]['R@10']:.3f}" for g in order if g in lo["official_scorer_recall"]) + ".", ""]
            if lo.get("official_scorer_recall")
            else []
        ),  # fmt: skip
        f"Median context tokens {lo['median_tokens']:.0f}; compile latency p50 {lo['latency_ms_p50']:.1f} ms, p95 {lo['latency_ms_p95']:.1f} ms",
        f"(homes of a few hundred turns each); the evaluation took {lo['wall_s']:.0f} s, {lo['build_s_total']:.0f} s of it building.",
        "",
    ]
    return lines


def splice(doc: str, sections: list[str], key: str, result: dict) -> str:
    """Put ``sections`` (markdown lines, each section starting with "## ") into an existing report,
    in place of the sections of the same titles (else before the raw results); and ``result`` into
    the raw JSON under ``key``. The rest of the report (hand-written notes too) is left as it was."""
    titles = [l for l in sections if l.startswith("## ")]
    lines = doc.split("\n")
    out, skip, at = [], False, None
    for l in lines:
        if l.startswith("## ") or l.startswith("<details>"):
            skip = l in titles
            if skip and at is None:
                at = len(out)  # where the old sections were
        if not skip:
            out.append(l)
    if at is None:
        at = next((i for i, l in enumerate(out) if l.startswith("<details>")), len(out))
    out[at:at] = sections
    text = "\n".join(out)
    start, end = text.find("```json\n"), text.rfind("\n```")
    if start >= 0 and end > start:
        raw = json.loads(text[start + 8 : end])
        raw[key] = result
        text = text[: start + 8] + json.dumps(raw, indent=2, default=str) + text[end:]
    return text


def _build_section(build: dict) -> list[str]:
    return [
        "## Full build of the sample corpus",
        "",
        f"{build['entries']} ledger entries, every asset materialized through Dagster in-process",
        "(observe the ledger, claims, dbt build, embeddings, graph, dreaming, and the recompile after",
        "dreaming writes back). Then, in the same process: a build with nothing new (every view",
        "current: `memc build` launches no run), the same build forced (`--force`: every asset again",
        "through its incremental path; only content-hash misses are embedded, dreaming appends",
        "nothing), and a build after one new message in a running conversation (its day extracted,",
        "the fold appended to).",
        "",
        "| build | seconds | / cold |",
        "|---|---:|---:|",
        f"| cold (includes loading the embedding model) | {build['cold_build_s']} | 1 |",
        f"| nothing new | {build['nothing_new_s']} | {build['nothing_new_over_cold']} |",
        f"| nothing new, forced | {build['rebuild_s']} | {build['rebuild_over_cold']} |",
        f"| one new message | {build['one_new_entry_s']} | {build['one_new_entry_over_cold']} |",
        "",
        f"![build steps]({_plot_build(build)})",
        "",
    ]


def main() -> None:
    import importlib

    sections = {module: (title, intro) for module, title, intro in SECTIONS}

    def splice_one(key: str, res: dict, lines: list[str]) -> None:
        """One benchmark's sections, spliced into the existing report."""
        doc = DOCS / "benchmarks.md"
        doc.write_text(splice(doc.read_text(), lines, key, res))
        print(f"written to {doc}", file=sys.stderr)

    if len(sys.argv) == 2 and sys.argv[1] in sections:  # python -m benchmarks bench_extract
        module = sys.argv[1]
        res = importlib.import_module(f"benchmarks.{module}").run()
        return splice_one(module, res, _section(*sections[module], res, module))
    if sys.argv[1:] == ["build"]:  # only the full build of the sample corpus
        from benchmarks import bench_build

        res = bench_build.run()
        return splice_one("build", res, _build_section(res))
    if sys.argv[1:] == ["compile"]:  # only the compile benchmark and the LoCoMo evaluation
        from benchmarks import bench_compile

        res = bench_compile.run()
        return splice_one("bench_compile", res, compile_sections(res))

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
        "ids and keys, the idempotency check, the columnar table, a checksum, fsyncs and the",
        "put-if-absent publish. Building the entries (pydantic validation) is beside, not in the append.",
        "",
        "| batch size | ledger entries/s | bare Parquet entries/s | ledger time / bare time | ledger / (write + fsync) | validating the batch, ms |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    for r in ledger["results"]:
        lines.append(
            f"| {r['batch_size']:,} | {r['ledger_entries_per_s']:,.0f} | {r['baseline_entries_per_s']:,.0f} | {r['ratio']:.2f} "
            f"| {r['ratio_vs_write_plus_fsync']:.2f} | {r['validate_ms']:,.1f} |"
        )
    g = ledger["growth"]
    lines += [
        "",
        f"One-entry append, median of the last 50 of {g['appends']} against the first 50: "
        f"{g['append_1_ms_last_50']} ms / {g['append_1_ms_first_50']} ms ({g['last_over_first']}x).",
        "",
        f"Reading the {g['appends']} entries with a fresh handle (every checksum verified):",
        "",
        "| written as | files | ms | / bulk |",
        "|---|---:|---:|---:|",
        f"| {g['appends']} one-entry batches | {g['appends']} | {g['read_small_batches_ms']:,.1f} | {g['small_over_bulk']} |",
        f"| the same after `Ledger.compact` ({g['compact_ms']:,.0f} ms) | {g['files_after_compaction']} | {g['read_compacted_ms']:,.1f} | {g['compacted_over_bulk']} |",
        f"| one batch of {g['appends']} | 1 | {g['read_bulk_ms']:,.1f} | 1.0 |",
    ]
    lines += ["", f"![ledger append]({_plot_ledger(ledger)})", ""]
    lines += _build_section(build)
    for module, title, intro in SECTIONS:
        if module in extra:
            lines += _section(title, intro, extra[module], module)
    print("running bench_compile...", file=sys.stderr)
    from benchmarks import bench_compile

    extra["bench_compile"] = bench_compile.run()
    lines += compile_sections(extra["bench_compile"])
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
