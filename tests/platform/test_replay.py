"""Read policy as a plan (query/plan.py, query/replay.py, `memc replay`), on copies of the sample
home built through Dagster: a compile logs its plan under a query id; replayed on the unchanged
home the plan is identical; after new evidence about the question is ingested and built, the
replay names the step that changed first and the new entries; a question (or goal) that is not
the logged one is refused; an erasure ends replay of what was logged before it; and the query
log never holds the question's words."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from datetime import datetime, timezone

import pytest

from forgetting import forget
from ingestion import ingest_paths
from ledger import Ledger
from memc.home import MemcHome
from query import compile_context
from query.log import find_record
from query.replay import ReplayError, replay

QUESTION = "Where does Elena live now?"
GOAL = "organise a surprise housewarming"
LATER = [  # Elena moves again: a new lives_in fact, and turns that share the question's words
    {"conversation_id": "elena-tomasz", "session_id": "elena-tomasz:S4", "session_index": 4, "turn_index": 0, "turn_id": "ET4:1",
     "speaker": "Elena", "text": "Guess what: I live in Hamburg now, we moved in January.", "timestamp": "2025-02-03T19:00:00"},
    {"conversation_id": "elena-tomasz", "session_id": "elena-tomasz:S4", "session_index": 4, "turn_index": 1, "turn_id": "ET4:2",
     "speaker": "Tomasz", "text": "Hamburg! Do you still live near the harbour?", "timestamp": "2025-02-03T19:01:00"},
]  # fmt: skip


@pytest.fixture
def home(built_home, tmp_path):
    """A copy of the built sample home with an empty query log (other tests ask the shared one)."""
    src, _ = built_home
    copy = MemcHome.resolve(tmp_path / "home")
    shutil.copytree(src.root, copy.root)
    shutil.rmtree(copy.querylog, ignore_errors=True)
    saved = {k: os.environ.get(k) for k in ("DAGSTER_HOME", "MEMC_HOME")}
    yield copy
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v


def memc(home: MemcHome, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "cli.main", "--home", str(home.root), *args], capture_output=True, text=True, timeout=300)
    if check and proc.returncode != 0:
        raise AssertionError(f"memc {args} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


def _log_text(home: MemcHome) -> str:
    return "".join(p.read_text(encoding="utf-8") for p in sorted(home.querylog.glob("*.jsonl")))


def test_ask_shows_the_query_id_and_replay_on_the_unchanged_home_is_identical(home):
    out = memc(home, "ask", QUESTION, "--as", "tomasz", "--scope", "team").stdout
    query_id = re.search(r"^query (q_[0-9a-f]{16})", out, re.M).group(1)
    record = find_record(home, query_id)
    steps = [s["step"] + (f" {s['name']}" if s.get("name") else "") for s in record["plan"]["steps"]]
    assert steps[:5] == ["staleness", "prefilter", "state", "skills", "current"] and steps[-1] == "packed", steps
    assert {"route fulltext", "route vector", "route state", "fusion", "items", "cut relevance_floor", "cut budget"} <= set(steps)
    packed = record["plan"]["steps"][-1]
    assert packed["items"] and all(i["entry_id"].startswith("e_") and i["tokens"] > 0 for i in packed["items"])
    assert packed["tokens"] == record["tokens"]

    again = json.loads(memc(home, "replay", query_id, QUESTION, "--json").stdout)
    assert again["identical"] and again["changes"] == [] and again["first_change"] is None, again
    assert again["replayed_id"] != query_id and find_record(home, again["replayed_id"])["replay_of"] == query_id
    plain = memc(home, "replay", query_id, QUESTION).stdout
    assert f"identical: all {len(steps)} steps of the plan are as logged" in plain, plain


def test_a_question_that_is_not_the_logged_one_is_refused(home):
    ctx = compile_context(QUESTION, "tomasz", home=home, scope="team", goal=GOAL)
    for question in ("Where does Elena live?", QUESTION + " ", "where does elena live now?"):
        proc = memc(home, "replay", ctx.query_id, question, "--goal", GOAL, check=False)
        assert proc.returncode != 0 and "not the question of" in proc.stderr, proc.stderr
    with pytest.raises(ReplayError, match="compiled for a goal"):
        replay(home, ctx.query_id, QUESTION)
    with pytest.raises(ReplayError, match="not the goal of"):
        replay(home, ctx.query_id, QUESTION, goal="organise a housewarming")
    assert replay(home, ctx.query_id, QUESTION, goal=GOAL).identical
    with pytest.raises(ReplayError, match="no compile q_0000000000000000"):
        replay(home, "q_0000000000000000", QUESTION)


def test_new_evidence_changes_the_plan_and_the_replay_names_the_step(home, tmp_path):
    from orchestration.runner import build

    ctx = compile_context(QUESTION, "tomasz", home=home, scope="team")
    assert replay(home, ctx.query_id, QUESTION).identical
    # Asked as memc knew it at a moment: what is recorded later cannot change that plan.
    then = compile_context(QUESTION, "tomasz", home=home, scope="team", known_at=datetime.now(timezone.utc))

    later = tmp_path / "later.jsonl"
    later.write_text("".join(json.dumps(t) + "\n" for t in LATER))
    ingest_paths(Ledger(home.ledger), [later], scope="team", visibility=("public",))
    report = build(home)
    assert report.success, report.failed_steps
    hamburg = next(r["entry_id"] for r in Ledger(home.ledger).iter_entries() if r["source_ref"] == "ET4:1")

    result = replay(home, ctx.query_id, QUESTION)
    assert not result.identical
    by_step = {c.step: c for c in result.changes}
    first = result.changes[0]
    # The fold now holds Hamburg: the first step that changed is the state facts, then the keys
    # of the state route, and the full-text route found the new turns.
    assert first.step == "state" and hamburg in first.fields["entry_ids"]["added"], result.render()
    assert hamburg in by_step["current"].fields["keys"]["added"]
    fulltext = by_step["route fulltext"].fields
    assert fulltext["candidates"]["now"] > fulltext["candidates"]["was"] and hamburg in fulltext["entry_ids"]["added"]
    assert hamburg in by_step["packed"].fields["items"]["added"]
    assert any(re.match(r"\d+ entries were added to the ledger since \(head \d+ -> \d+: .*message", w) for w in result.why), result.why
    assert any(w.startswith("new since: ") and hamburg in w for w in result.why), result.why
    text = result.render()
    assert f"differs: first at step {first.index} of " in text and f"step {first.index} state:" in text, text

    pinned = replay(home, then.query_id, QUESTION)
    assert pinned.identical, pinned.render()


def test_an_erasure_ends_replay_of_what_was_logged_before_it(home):
    ctx = compile_context(QUESTION, "tomasz", home=home, scope="team")
    shown = find_record(home, ctx.query_id)["plan"]["steps"][-1]["items"][0]["entry_id"]
    forget(home, entry_ids=[shown], reason="test: erase a packed entry", by="admin")
    assert not home.querylog_key.exists(), "the erasure deleted the fingerprint key"
    with pytest.raises(ReplayError, match="earlier key"):
        replay(home, ctx.query_id, QUESTION)
    # The plan keeps the erased entry's id, as the log's `shown` does: an id, never its text.
    record = find_record(home, ctx.query_id)
    assert shown in record["shown"] and shown in json.dumps(record["plan"])


def test_the_query_log_never_holds_the_question_or_goal_words(home):
    ctx = compile_context(QUESTION, "tomasz", home=home, scope="team", goal=GOAL)
    replay(home, ctx.query_id, QUESTION, goal=GOAL)
    with pytest.raises(ReplayError):
        replay(home, ctx.query_id, "Which harbour does Elena prefer?", goal=GOAL)
    text = _log_text(home)
    assert ctx.query_id in text and text.count("\n") == 2, "two compiles logged: the ask and its replay"
    words = {w for w in re.findall(r"\w+", f"{QUESTION} {GOAL} harbour prefer") if len(w) > 2}
    assert len(words) == 10
    for word in words:
        assert not re.search(rf"\b{word}\b", text, re.I), f"{word!r} is in the query log"
