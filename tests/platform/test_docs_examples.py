"""The documented examples run on the demo's home (issue 20, "docs that return nothing"): the
as-of / known-at commands of docs/analysts.md are read out of the page, run with the real CLI
on the session's built home (the demo's corpus, ingested in the demo's order) and must print
what the page shows; `memc docs` writes dbt's catalog into a folder of its own, never the
project's target/ that Dagster loads. About 25 s on top of the shared home."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys

from conftest import REPO

MEMC = [sys.executable, "-m", "cli.main"]
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "DAGSTER_DISABLE_TELEMETRY": "1"}
PAGE = REPO / "docs" / "analysts.md"
# The T the page was written with: the team files' last recorded_at on the run that made it.
DOC_T = "2026-12-02T03:52:22.138265+00:00"
WHEN = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}Z")


def memc(home, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*MEMC, "--home", str(home.root), *args], capture_output=True, text=True, env=ENV, timeout=300)


def documented_runs(page: str) -> list[tuple[list[str], list[str]]]:
    """Each `$ memc state ...` of the page's fenced blocks, with the lines shown below it."""
    runs: list[tuple[list[str], list[str]]] = []
    in_block = collecting = False
    for line in page.splitlines():
        if line.startswith("```"):
            in_block, collecting = not in_block, False
        elif in_block and line.startswith("$ "):
            collecting = line.startswith("$ memc state ")
            if collecting:
                runs.append((line[len("$ memc "):].split(), []))
        elif collecting:
            runs[-1][1].append(line)
    return runs


def without_sources(text: str) -> list[str]:
    return [line for line in text.splitlines() if not line.lstrip().startswith(("source ", "also "))]


def test_the_as_of_and_known_at_examples_print_what_the_page_shows(built_home):
    home, _ = built_home
    sql = re.search(r"\$ memc sql --admin \"(select list_sort\(visibility\).*?)\"\n", PAGE.read_text()).group(1)
    rows = json.loads(memc(home, "sql", "--admin", "--json", sql).stdout)
    assert [(r["visibility"], r["entries"]) for r in rows][:1] == [("[public]", 19)], rows
    assert rows[1]["visibility"] == "[elena, priya]", rows
    t = rows[0]["last_recorded"]

    runs = documented_runs(PAGE.read_text())
    assert len(runs) >= 2, "the page lost its worked as-of / known-at examples"
    for cmd, shown in runs:
        cmd = [t if a == DOC_T else a for a in cmd]
        r = memc(home, *cmd)
        assert r.returncode == 0, (cmd, r.stderr)
        printed = without_sources(r.stdout)
        assert "nothing holds" not in r.stdout, (cmd, r.stdout)
        # The header's "now" and the run's own T differ from the page's; the facts may not.
        assert WHEN.sub("<t>", printed[0]).split(",")[0] == WHEN.sub("<t>", shown[0]).split(",")[0], (printed[0], shown[0])
        assert printed[1:] == shown[1:], (cmd, printed, shown)


def test_memc_docs_writes_the_catalog_outside_the_project_target(built_home, tmp_path):
    home, _ = built_home
    target = REPO / "dbt_project" / "target"
    before = hashlib.sha256((target / "manifest.json").read_bytes()).hexdigest()
    had_catalog = (target / "catalog.json").exists()

    from memc.locks import exclusive

    with exclusive(home.build_lock, "memc build", wait=False):  # a build holds the home
        busy = memc(home, "docs", "--out", str(tmp_path / "docs"))
    assert busy.returncode == 1 and "memc build" in busy.stderr and "Traceback" not in busy.stderr, busy.stderr

    r = memc(home, "docs", "--out", str(tmp_path / "docs"))
    assert r.returncode == 0, r.stderr
    page = tmp_path / "docs" / "target" / "static_index.html"
    assert f"dbt catalog: {page}" in r.stdout
    catalog = json.loads((tmp_path / "docs" / "target" / "catalog.json").read_text())
    columns = catalog["nodes"]["model.memc.state_current"]["columns"]
    assert columns["subject"]["type"] == "VARCHAR"  # types come from the built warehouse
    assert "state_current" in page.read_text()
    assert hashlib.sha256((target / "manifest.json").read_bytes()).hexdigest() == before
    assert (target / "catalog.json").exists() == had_catalog


def test_memc_docs_before_a_build_says_to_build(tmp_path):
    r = subprocess.run([*MEMC, "--home", str(tmp_path / "empty"), "docs"], capture_output=True, text=True, env=ENV, timeout=120)
    assert r.returncode == 1 and "run `memc build` first" in r.stderr, r.stderr
