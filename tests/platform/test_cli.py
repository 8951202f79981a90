"""The `memc` command as a user runs it: a real subprocess against a real memory home."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import SAMPLES

MEMC = [sys.executable, "-m", "cli.main"]


def memc(*args: str, home: Path | None = None, check: bool = True, env: dict | None = None) -> subprocess.CompletedProcess:
    cmd = [*MEMC, *(["--home", str(home)] if home else []), *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **(env or {})}, timeout=300)
    if check and proc.returncode != 0:
        raise AssertionError(f"{cmd} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


def test_ingest_stats_verify_export_and_damage(tmp_path):
    home = tmp_path / "home"
    out = memc("ingest", str(SAMPLES / "team"), "--scope", "team", home=home).stdout
    assert "appended" in out
    again = memc("ingest", str(SAMPLES / "team"), "--scope", "team", home=home).stdout
    assert again.count("already ingested") == 4, again

    stats = json.loads(memc("ledger", "stats", "--json", home=home).stdout)
    assert stats["entries"] == stats["head_seq"] == 19 and stats["files"] == 4
    assert "ok: 4 files, 19 entries" in memc("ledger", "verify", home=home).stdout

    lines = memc("ledger", "export", "--jsonl", home=home).stdout.splitlines()
    assert [json.loads(l)["seq"] for l in lines] == list(range(1, 20))

    # --home after the subcommand and $MEMC_HOME work too
    assert json.loads(memc("ledger", "stats", "--json", "--home", str(home)).stdout)["entries"] == 19
    assert json.loads(memc("ledger", "stats", "--json", env={"MEMC_HOME": str(home)}).stdout)["entries"] == 19

    victim = sorted((home / "ledger").glob("*.parquet"))[1]
    data = bytearray(victim.read_bytes())
    data[len(data) // 2] ^= 0xFF
    victim.write_bytes(bytes(data))
    bad = memc("ledger", "verify", home=home, check=False)
    assert bad.returncode == 1 and victim.name in bad.stderr and "checksum" in bad.stderr


def test_bad_input_names_file_line_and_field(tmp_path):
    home = tmp_path / "home"
    bad = tmp_path / "chat.jsonl"
    good = (SAMPLES / "team" / "elena_tomasz.jsonl").read_text().splitlines()
    lines = good[:3] + [json.dumps({**json.loads(good[3]), "timestamp": "yesterday-ish"})] + good[4:]
    bad.write_text("\n".join(lines) + "\n")
    proc = memc("ingest", str(bad), home=home, check=False)
    assert proc.returncode != 0
    assert "chat.jsonl:4" in proc.stderr and "timestamp" in proc.stderr
    assert json.loads(memc("ledger", "stats", "--json", home=home).stdout)["entries"] == 0


def test_ask_json_on_a_built_home(built_home):
    home, _ = built_home
    proc = memc("ask", "Which order did Tomasz mention?", "--as", "tomasz", "--scope", "team", "--k", "3", "--json", home=home.root)
    ctx = json.loads(proc.stdout)
    assert ctx["asker"] == "tomasz" and len(ctx["items"]) <= 3
    assert all({"entry_id", "source_ref", "valid_at", "recorded_at", "routes", "score"} <= set(i) for i in ctx["items"])
    assert any("ORD-48213" in i["text"] for i in ctx["items"])
