"""`memc compare`: policy A/B over the same ledger, each extractor version folded by a real dbt run
into a scratch warehouse of its own, while the live warehouse, its marts and the Dagster instance
stay exactly as they were.

The first test writes two versions' claims straight into the claims layout (as test_state.py does)
so that every kind of difference is there: a value only B read, which UPDATEs another; a
restatement A keeps as a duplicate and B rejects; a private fact the two read differently. The
second runs the real extractors on the demo home: rules 0.2.0 from the build, rules 0.3.0 by
`memc backfill --claims-only`, as an operator would before a switch."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import dagster as dg
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from catalog.dbt_project import dbt_home_env
from claims.extractors.registry import CLAUSES, RULES
from claims.ledger_days import ledger_days
from claims.model import CLAIM_SCHEMA, REJECTION_SCHEMA
from claims.store import CLAIMS_FILE, REJECTIONS_FILE, day_dir, read_claims
from ledger import Ledger
from ledger.schema import NewEntry
from memc.home import MemcHome
from memc.ids import content_id, entity_id, normalize_name
from orchestration.compare import CompareError, check_versions, compare_extractors, fold_versions
from query.compare import diff_folds

REPO = Path(__file__).resolve().parents[2]
DBT_DIR = REPO / "dbt_project"
A, B = "test-1", "test-2"
FUNCTIONAL = {"lives_in", "works_at"}


def t(day: str) -> datetime:
    return datetime.fromisoformat(day).replace(tzinfo=timezone.utc)


def _claim(key: str, entry: NewEntry, seq: int, it: dict, predicate: str, obj: str) -> dict:
    name, version = key.rsplit("-", 1)
    return {
        "claim_id": content_id("c", key, entry.entry_id, predicate, obj), "extractor": name, "extractor_version": version,
        "scope": "s", "subject": it["actor"], "subject_id": entity_id("s", it["actor"]), "predicate": predicate,
        "object": obj, "cardinality": "functional" if predicate in FUNCTIONAL else "multi",
        "valid_at": it["at"], "recorded_at": it["at"], "source_entry_id": entry.entry_id, "source_seq": seq,
        "source_ref": it["ref"], "quote": it["text"], "visibility": sorted(it.get("visibility", ("public",))),
        "confidence": 0.9, "polarity": "assert", "time_phrase": None, "object_id": None,
        "asserted_by": None, "asserted_by_id": None,
    }  # fmt: skip


def write_home(home: MemcHome, items: list[dict]) -> None:
    """One ledger batch per item (recorded on its own day), and each version's claims of it:
    ``A``/``B`` are [(predicate, object)]; ``B_rejected`` the proposals B's validators refused."""
    ledger = Ledger(home.ledger)
    out: dict[tuple[str, str, str], list[dict]] = {}
    for it in items:
        entry = NewEntry(
            kind="message", scope="s", content=it["text"], valid_at=it["at"], actor=it["actor"],
            source_ref=it["ref"], visibility=tuple(it.get("visibility", ("public",))),
        )  # fmt: skip
        seq = ledger.append([entry], recorded_at=it["at"]).first_seq
        day = it["at"].date().isoformat()
        for key in (A, B):
            out.setdefault((key, day, CLAIMS_FILE), []).extend(_claim(key, entry, seq, it, p, o) for p, o in it.get(key, []))
            out.setdefault((key, day, REJECTIONS_FILE), []).extend(
                {
                    "proposal_id": content_id("p", key, entry.entry_id, json.dumps(proposal, sort_keys=True)),
                    "extractor": "test", "extractor_version": key.rsplit("-", 1)[1], "source_entry_id": entry.entry_id,
                    "source_seq": seq, "validator": validator, "reason": reason, "proposal": json.dumps(proposal),
                    "scope": "s", "source_ref": it["ref"],
                }  # fmt: skip
                for validator, reason, proposal in it.get(f"{key}_rejected", [])
            )
    for (key, day, name), rows in out.items():
        if not out[key, day, CLAIMS_FILE] and not out[key, day, REJECTIONS_FILE]:
            continue  # a day a version has not compiled: no files (B alone has the day of the move)
        path = day_dir(home.claims, key, day) / name
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.Table.from_pylist(rows, schema=CLAIM_SCHEMA if name == CLAIMS_FILE else REJECTION_SCHEMA), path)


def live_build(home: MemcHome, key: str) -> None:
    """The live view, built as the state asset builds it: the default warehouse and marts."""
    home.marts.mkdir(parents=True, exist_ok=True)
    exe = Path(sys.executable).with_name("dbt")
    env = {**os.environ, "DO_NOT_TRACK": "1", **dbt_home_env(home.root)}
    env.pop("MEMC_WAREHOUSE_DB", None)
    proc = subprocess.run(
        [
            str(exe if exe.exists() else "dbt"), "run", "--quiet", "--vars", json.dumps({"extractor_key": key}),
            "--profiles-dir", str(DBT_DIR), "--project-dir", str(DBT_DIR),
            "--target-path", str(home.root / "dbt_target"), "--log-path", str(home.root / "dbt_logs"),
        ],  # fmt: skip
        env=env, capture_output=True, text=True, cwd=DBT_DIR,
    )
    assert proc.returncode == 0, proc.stdout[-4000:]


def fingerprint(folder: Path) -> dict[str, tuple[int, str]]:
    """Every file under ``folder``: its modification time and content hash."""
    return {
        str(p.relative_to(folder)): (p.stat().st_mtime_ns, hashlib.sha256(p.read_bytes()).hexdigest())
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


ELENA, OMAR, PRIYA = "Elena", "Omar", "Priya"
ITEMS = [
    {"actor": ELENA, "text": "I live in Paris", "ref": "s1:1", "at": t("2024-01-10"), A: [("lives_in", "Paris")], B: [("lives_in", "Paris")]},
    # Only B reads the move: it UPDATEs Paris, and B's Elena lives in Berlin now.
    {"actor": ELENA, "text": "Just moved to Berlin!", "ref": "s1:2", "at": t("2024-03-01"), B: [("lives_in", "Berlin")]},
    {"actor": OMAR, "text": "I like chess", "ref": "s2:1", "at": t("2024-03-02"), A: [("likes", "chess")], B: [("likes", "chess")]},
    # A keeps the restatement (NONE, duplicate); B's validator refuses it (NONE, rejected): one
    # fact decided differently, matched although a rejection has no claim and no entity id.
    {
        "actor": OMAR, "text": "Chess, always chess", "ref": "s2:2", "at": t("2024-03-03"), A: [("likes", "Chess")],
        f"{B}_rejected": [("provenance", "quote not in the entry", {"subject": OMAR, "predicate": "likes", "object": "chess"})],
    },
    # Private to Priya: the two versions read another company; nobody else may see either.
    {
        "actor": PRIYA, "text": "I work at Acme Corp now", "ref": "s3:1", "at": t("2024-03-04"), "visibility": ("priya",),
        A: [("works_at", "Acme")], B: [("works_at", "Acme Corp")],
    },
]


def _actions(result) -> list[tuple]:
    return sorted(
        (
            e["subject"], r["change"], r["predicate"], r["object"], r["source_ref"], r["quote"],
            tuple((d["action"], d["rule"], tuple(d["closes"])) for d in r["a"] or []),
            tuple((d["action"], d["rule"], tuple(d["closes"])) for d in r["b"] or []),
        )  # fmt: skip
        for e in result["entities"]
        for r in e["actions"]
    )


def _state(result) -> list[tuple]:
    return sorted(
        (e["subject"], r["change"], r["predicate"], r["object"], tuple((s["source_ref"], s["quote"]) for s in r["sources"]))
        for e in result["entities"]
        for r in e["state"]
    )


def test_compare_reports_the_differing_actions_and_state_and_leaves_the_live_view_alone(tmp_path):
    home = MemcHome.resolve(tmp_path / "home")
    write_home(home, ITEMS)
    live_build(home, A)
    live = fingerprint(home.warehouse)
    assert "memc.duckdb" in live and "marts/memory_actions.parquet" in live and "marts/state_current.parquet" in live

    admin = compare_extractors(home, A, B, principal=None)

    assert admin["ledger_watermark"] == len(ITEMS)
    assert admin["days_only_in"] == {A: [], B: ["2024-03-01"]}  # B alone has claims of the day of the move
    assert _actions(admin) == [
        (ELENA, "only_b", "lives_in", "Berlin", "s1:2", "Just moved to Berlin!", (), (("UPDATE", "newer_value", ("Paris",)),)),
        (OMAR, "changed", "likes", "Chess", "s2:2", "Chess, always chess", (("NONE", "duplicate", ()),), (("NONE", "rejected", ()),)),
        (PRIYA, "only_a", "works_at", "Acme", "s3:1", "I work at Acme Corp now", (("ADD", "first_value", ()),), ()),
        (PRIYA, "only_b", "works_at", "Acme Corp", "s3:1", "I work at Acme Corp now", (), (("ADD", "first_value", ()),)),
    ]
    # Omar likes chess in both folds (from another statement in each): no change in what holds.
    assert _state(admin) == [
        (ELENA, "added", "lives_in", "Berlin", (("s1:2", "Just moved to Berlin!"),)),
        (ELENA, "removed", "lives_in", "Paris", (("s1:1", "I live in Paris"),)),
        (PRIYA, "added", "works_at", "Acme Corp", (("s3:1", "I work at Acme Corp now"),)),
        (PRIYA, "removed", "works_at", "Acme", (("s3:1", "I work at Acme Corp now"),)),
    ]
    assert admin["counts"] == {"actions_changed": 1, "actions_only_a": 1, "actions_only_b": 2, "state_added": 2, "state_removed": 2}

    # An asker sees what it may see: Priya's private fact is not there for Tomasz, not even by
    # name. (One more fold of each version, diffed per asker: the folds do not depend on who asks.)
    marts = fold_versions(home, (A, B), tmp_path / "scratch", len(ITEMS))
    tomasz = diff_folds(marts[A], marts[B], principal="tomasz")
    priya = diff_folds(marts[A], marts[B], principal="priya")
    assert [a for a in _actions(admin) if a[0] != PRIYA] == _actions(tomasz)
    assert [s for s in _state(admin) if s[0] != PRIYA] == _state(tomasz)
    assert "Acme" not in json.dumps(tomasz, default=str) and PRIYA not in json.dumps(tomasz, default=str)
    assert _actions(priya) == _actions(admin) and _state(priya) == _state(admin)

    # One entity, through the command line, as the text an operator reads.
    from cli.main import cli

    out = CliRunner().invoke(cli, ["compare", "--extractor", A, "--extractor", B, "--entity", "elena", "--as", "elena", "--home", str(home.root)], obj={})
    assert out.exit_code == 0, out.output
    assert "Omar" not in out.output and "Priya" not in out.output
    assert "B: UPDATE newer_value (closes Paris)" in out.output and '[s1:2] "Just moved to Berlin!"' in out.output
    assert "state +  lives_in Berlin" in out.output and "state -  lives_in Paris" in out.output
    assert "note: only test-2 has claims of ledger days 2024-03-01" in out.output

    # The live view is byte for byte what it was, and no Dagster instance was even created.
    assert fingerprint(home.warehouse) == live
    assert not home.dagster.exists()


def test_compare_refuses_equal_versions_and_versions_without_claims(tmp_path):
    from cli.main import cli

    home = MemcHome.resolve(tmp_path / "home")
    write_home(home, ITEMS[:1])
    (home.claims / "extractor=empty-1").mkdir()  # a folder with no claims file is no version on disk

    with pytest.raises(CompareError, match="both are 'test-1'"):
        check_versions(home, A, A)
    with pytest.raises(CompareError, match=r"no claims on disk for empty-1, rules-0.3.0 .*versions with claims: test-1, test-2\)"):
        check_versions(home, "empty-1", "rules-0.3.0")
    out = CliRunner().invoke(cli, ["compare", "--extractor", A, "--extractor", "rules-0.3.0", "--admin", "--home", str(home.root)], obj={})
    assert out.exit_code == 1 and "no claims on disk for rules-0.3.0" in out.output and "test-1, test-2" in out.output
    out = CliRunner().invoke(cli, ["compare", "--extractor", A, "--admin", "--home", str(home.root)], obj={})
    assert out.exit_code == 2 and "name two extractor versions" in out.output
    out = CliRunner().invoke(cli, ["compare", "--extractor", A, "--extractor", B, "--home", str(home.root)], obj={})
    assert out.exit_code == 2 and "--as PRINCIPAL, or --admin" in out.output
    # Refused before anything ran: no scratch warehouse, no live one.
    assert not home.warehouse.exists()


def _facts(claims) -> set[tuple]:
    return {(c["source_entry_id"], c["subject_id"], c["predicate"], normalize_name(c["object"]), c["polarity"]) for c in claims.to_pylist()}


def test_compare_on_the_demo_home_against_the_version_the_clause_extractor_replaced(built_home, tmp_path, monkeypatch):
    """The real extractors on the sample corpus: the demo home is built by the clause extractor
    (the default, rules 0.3.0 and on); the old rules 0.2.0 is extracted beside it, claims only, and what
    the two versions decide differently is exactly the facts one has and the other has not."""
    from cli.main import cli

    for var in ("DAGSTER_HOME", "MEMC_HOME", "MEMC_EXTRACTOR"):
        monkeypatch.setenv(var, "")  # the runner sets them; monkeypatch restores them afterwards
    monkeypatch.delenv("MEMC_EXTRACTOR")
    src, _ = built_home
    home = MemcHome.resolve(tmp_path / "home")
    shutil.copytree(src.root, home.root)
    day_list = [str(d) for d in ledger_days(Ledger(home.ledger))]
    out = CliRunner().invoke(
        cli, ["backfill", "--claims-only", "--from", day_list[0], "--to", day_list[-1], "--extractor", RULES.key, "--home", str(home.root)], obj={}
    )
    assert out.exit_code == 0, out.output

    instance = dg.DagsterInstance.from_config(str(home.dagster))
    runs_before = instance.get_runs_count()
    live = fingerprint(home.warehouse)

    out = CliRunner().invoke(cli, ["compare", "--extractor", RULES.key, "--extractor", CLAUSES.key, "--admin", "--json", "--home", str(home.root)], obj={})
    assert out.exit_code == 0, out.output
    result = json.loads(out.output)

    old, new = _facts(read_claims(home.claims, RULES.key)), _facts(read_claims(home.claims, CLAUSES.key))
    assert new - old, "the clause extractor reads facts rules 0.2.0 does not (the test needs a difference)"

    def facts(change: str) -> set[tuple]:
        return {
            (r["source_entry_id"], e["subject_id"], r["predicate"], normalize_name(r["object"]), r["polarity"])
            for e in result["entities"]
            for r in e["actions"]
            if r["change"] == change and all(d["considered_kind"] == "claim" for d in r["a" if change == "only_a" else "b"])
        }

    assert facts("only_b") == new - old
    assert facts("only_a") == old - new
    assert all(r["quote"] and r["source_ref"] for e in result["entities"] for r in e["actions"])
    # Every value B holds now and A does not is one of the facts B alone has.
    added = {(e["subject_id"], r["predicate"], normalize_name(r["object"])) for e in result["entities"] for r in e["state"] if r["change"] == "added"}
    assert added and added <= {(s, p, o) for _, s, p, o, _ in new - old}

    assert fingerprint(home.warehouse) == live, "the live warehouse and marts are untouched"
    assert dg.DagsterInstance.from_config(str(home.dagster)).get_runs_count() == runs_before, "no Dagster run"
