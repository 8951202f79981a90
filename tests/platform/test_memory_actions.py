"""The write policy through real Dagster builds: a conversation ingested and extracted by the
default extractor, its memory_actions read back (a move, a restatement, a retraction), an
erasure recorded as a DELETE, and every view deleted and rebuilt from the ledger reproducing
the mart row for row. The fold's rules themselves are tested case by case on written claims in
tests/platform/test_state.py."""

from __future__ import annotations

import json
import shutil

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from cli.main import cli
from forgetting import forget
from ingestion import ingest_paths
from ledger import Ledger
from memc.home import MemcHome
from orchestration.runner import build, rebuild_views
from views.marts import MEMORY_ACTIONS, mart_path

# One speaker who moves, says so again, and stops working somewhere; another who likes things.
TURNS = [
    ("S1", "2024-01-10T10:00:00", "Ana", "I live in Lisbon and I work at Acme."),
    ("S1", "2024-01-10T10:01:00", "Ben", "I like tea."),
    ("S2", "2024-03-05T10:00:00", "Ana", "Big news: I moved to Berlin last month."),
    ("S2", "2024-03-05T10:01:00", "Ben", "I like coffee too."),
    ("S3", "2024-04-01T10:00:00", "Ana", "I live in Berlin now, still unpacking."),
    ("S4", "2024-06-01T10:00:00", "Ana", "I don't work at Acme anymore."),
]


def _conversation(path) -> None:
    path.write_text(
        "".join(
            json.dumps(
                {
                    "conversation_id": "ana-ben", "session_id": f"ana-ben:{s}", "turn_id": f"{s}:{i}",
                    "speaker": who, "text": text, "timestamp": ts,
                }
            )
            + "\n"
            for i, (s, ts, who, text) in enumerate(TURNS)
        )
    )


def _actions(home: MemcHome) -> list[dict]:
    rows = [r for r in pq.read_table(mart_path(home, MEMORY_ACTIONS)).to_pylist() if r["action_id"]]
    return sorted(rows, key=lambda r: r["action_id"])


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    root = tmp_path_factory.mktemp("actions")
    home = MemcHome.resolve(root / "home").ensure()
    source = root / "ana-ben.jsonl"
    _conversation(source)
    ingest_paths(Ledger(home.ledger), [source], scope="s", visibility=("public",))
    report = build(home)
    assert report.success, report.failed_steps
    return home


def test_the_conversation_as_actions(home):
    decided = [
        (r["source_ref"], r["predicate"], r["object"], r["action"], r["rule"])
        for r in sorted(_actions(home), key=lambda r: (r["source_seq"], r["predicate"]))
        if r["predicate"] in ("lives_in", "works_at", "likes")
    ]
    assert decided == [
        ("S1:0", "lives_in", "Lisbon", "ADD", "first_value"),
        ("S1:0", "works_at", "Acme", "ADD", "first_value"),
        ("S1:1", "likes", "tea", "ADD", "first_value"),
        ("S2:2", "lives_in", "Berlin", "UPDATE", "newer_value"),
        ("S2:3", "likes", "coffee", "ADD", "accumulate"),
        ("S3:4", "lives_in", "Berlin", "NONE", "duplicate"),
        ("S4:5", "works_at", "Acme", "DELETE", "retraction"),
    ]
    by_id = {r["action_id"]: r for r in _actions(home)}
    berlin = next(r for r in by_id.values() if r["source_ref"] == "S2:2" and r["predicate"] == "lives_in")
    assert [by_id[i]["object"] for i in berlin["closes"]] == ["Lisbon"]
    # The dbt test behind the Dagster check: every UPDATE and DELETE names what it closed.
    assert all(r["closes"] for r in by_id.values() if r["action"] in ("UPDATE", "DELETE"))


def test_memc_actions_lists_the_entity(home):
    out = CliRunner().invoke(cli, ["--home", str(home.root), "actions", "Ana", "--as", "ben"])
    assert out.exit_code == 0, out.output
    assert "UPDATE  newer_value" in out.output and "closes Lisbon (S1:0)" in out.output
    assert "DELETE  retraction" in out.output and "closes Acme (S1:0)" in out.output
    refused = CliRunner().invoke(cli, ["--home", str(home.root), "actions", "Ana"])
    assert refused.exit_code != 0 and "--as PRINCIPAL" in refused.output


def test_an_erasure_is_a_delete_and_a_rebuild_reproduces_the_actions(home):
    ledger = Ledger(home.ledger)
    restated = next(r["entry_id"] for r in ledger.read().to_pylist() if r.get("source_ref") == "S3:4")
    report = forget(home, entry_ids=[restated], reason="asked to", by="ana", rebuild=rebuild_views)
    assert report.status == "done", report
    after = _actions(home)
    erasures = [r for r in after if r["considered_kind"] == "erasure"]
    assert [(r["action"], r["rule"], r["closes"], r["visibility"]) for r in erasures] == [
        ("DELETE", "erasure", [restated], ["memc:admin"])
    ]
    assert not any(r["source_entry_id"] == restated for r in after)  # the restatement's action is gone
    # Only administrators see the erasure row: an asker's `memc actions` has none.
    out = CliRunner().invoke(cli, ["--home", str(home.root), "actions", "--as", "ben", "--json"])
    assert out.exit_code == 0 and all(a["considered_kind"] != "erasure" for a in json.loads(out.output)["actions"])

    # Every view deleted and compiled again from the ledger: the same actions, row for row.
    for path in home.view_dirs().values():
        shutil.rmtree(path, ignore_errors=True)
    report = build(home)
    assert report.success, report.failed_steps
    assert _actions(home) == after
