"""One default visibility for `memc ingest` (issue 20), the same as HTTP, MCP and the inbox: public
within the scope unless the home's memc.toml says ``[ingest] default_visibility = "writer"``, and a
one-line warning on stderr whenever entries were made public because nothing said otherwise.
`memc` as a subprocess on a fresh home, no build: six CLI starts, 33 s measured on the busy shared
2 cores (about 1 s each when idle)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from ledger import Ledger

from conftest import SAMPLES

MEMC = [sys.executable, "-m", "cli.main"]


def memc(home: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*MEMC, "--home", str(home), *args], capture_output=True, text=True, timeout=120)


def _visibility(home: Path) -> dict[str, list[str]]:
    return {r["source_ref"] or r["content"][:20]: list(r["visibility"]) for r in Ledger(home / "ledger").iter_entries()}


def test_memc_ingest_defaults_to_public_with_a_warning_and_the_home_can_make_it_the_writers(tmp_path):
    home = tmp_path / "home"
    notes = SAMPLES / "team" / "team-notes.md"

    first = memc(home, "ingest", str(notes), "--scope", "team")
    assert first.returncode == 0, first.stderr
    (line,) = first.stderr.splitlines()  # one line, on stderr: stdout stays the report
    assert line.startswith("warning: 1 entry made public in scope 'team' because no visibility was given")
    assert "--visibility P,..." in line and '[ingest] default_visibility = "writer"' in line
    assert "warning" not in first.stdout
    assert list(_visibility(home).values()) == [["public"]]

    again = memc(home, "ingest", str(notes), "--scope", "team")
    assert again.returncode == 0 and again.stderr == ""  # a no-op makes nothing public

    said = memc(home, "ingest", str(SAMPLES / "team" / "offsite.eml"), "--scope", "team", "--visibility", "public", "--json")
    assert said.returncode == 0 and said.stderr == ""  # public because asked: no warning
    assert json.loads(said.stdout)["appended"] == 1

    (home / "memc.toml").write_text('[ingest]\ndefault_visibility = "writer"\n')
    orders = SAMPLES / "team" / "orders.jsonl"
    refused = memc(home, "ingest", str(orders), "--scope", "team")
    assert refused.returncode == 1
    assert "default_visibility is 'writer'" in refused.stderr and "--visibility P,..." in refused.stderr
    mine = memc(home, "ingest", str(orders), "--scope", "team", "--as", "bob", "--json")
    assert mine.returncode == 0 and mine.stderr == "", mine.stderr
    assert json.loads(mine.stdout)["appended"] > 0
    rows = [r for r in Ledger(home / "ledger").iter_entries() if r["ingested_by"] == "bob"]
    assert rows and all(list(r["visibility"]) == ["bob"] for r in rows)

    (home / "memc.toml").write_text('[ingest]\ndefault_visibility = "nobody"\n')
    bad = memc(home, "ingest", str(SAMPLES / "private" / "elena_priya.jsonl"), "--visibility", "elena")
    assert bad.returncode == 1 and "memc.toml: field 'ingest.default_visibility'" in bad.stderr
