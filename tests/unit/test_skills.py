"""Skill mining on plain data: the invented trajectory corpus (tests/trajectory_corpus.py) read
through the trajectories format into ledger rows, no ledger, model or Dagster. The expected
skills are found and the failing ways are not, a way that stopped working retires, a skill is
seen only by those who may see every trajectory it came from, and the format rejects a
malformed line naming file, line and field."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest
from trajectory_corpus import SCOPE, corpus, write_corpus

from ingestion import parse_file
from ingestion.errors import IngestError
from ingestion.formats.common import Source
from ingestion.formats.trajectories import trajectory_entry
from memc.home import MemcHome
from views import skills as sk

CANARY = (
    "run_tests(suite=all)", "build_image(tag=*)", "push_image(tag=*)",
    "apply_manifest(strategy=canary, tag=*)", "check_health(target=canary)", "promote_canary()",
)  # fmt: skip
RELOAD = ("create_key(key_id=*, service=*)", "update_secret(name=*)", "reload_config(mode=rolling, service=*)", "verify_auth(service=*)", "revoke_key(service=*)")
RESTART = ("create_key(key_id=*, service=*)", "update_secret(name=*)", "restart_pods(service=*)", "verify_auth(service=*)", "revoke_key(service=*)")
NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)


def rows(lines, *, visibility=("public",), scope=SCOPE) -> list[dict]:
    """Each line as the ledger row its entry becomes (seq in line order)."""
    src = Source(display="t.jsonl", name="t.jsonl", stem="t", source_uri="file:///t.jsonl", scope=scope, visibility=tuple(visibility), mtime=NOW)
    return [trajectory_entry(obj, src, i).to_row(i, NOW) for i, obj in enumerate(lines, 1)]


def by_steps(skills) -> dict[tuple[str, ...], sk.Skill]:
    return {s.steps: s for s in skills}


def test_the_corpus_is_large_enough_and_deterministic():
    assert len(corpus()) >= 40
    assert corpus() == corpus()


def test_the_ways_that_worked_are_skills_and_the_failing_ways_are_not():
    found = by_steps(sk.mine_all(sk.records_from_rows(rows(corpus()))))
    assert set(found) == {CANARY, RELOAD, RESTART}, sorted(found)
    canary = found[CANARY]
    assert canary.status == "active" and canary.support == 10 and canary.success_rate == 0.9
    # compared with the big-bang rollouts and the canaries without tests (2.4 + 1 of 12)
    assert canary.compared == 12 and canary.baseline_rate == pytest.approx(3.4 / 12, abs=1e-4)
    assert set(canary.trigger) == {"deploy", "web", "service"}
    assert canary.termination.startswith("after promote_canary()")
    assert len(canary.source_entry_ids) == 10 and not set(canary.source_entry_ids) & set(canary.compared_entry_ids)
    assert canary.visibility == ("public",)
    # Not skills: the big bang (its two lucky successes are its own followers: 34%), and the
    # canary without tests, which is the canary way described less fully (subsequence).
    assert not any(s[:2] == ("build_image(tag=*)", "push_image(tag=*)") and "strategy=all" in s[2] for s in found)
    assert not any(s[0] == "revoke_key(service=*)" for s in found)


def test_a_way_that_stopped_working_retires_and_its_successor_is_promoted():
    found = by_steps(sk.mine_all(sk.records_from_rows(rows(corpus()))))
    restart, reload = found[RESTART], found[RELOAD]
    assert restart.status == "retired" and restart.recent_rate == 0.0
    assert restart.promoted_at < restart.retired_at
    assert reload.status == "active" and reload.success_rate == 1.0 and reload.support == 6
    # The restart way was good before mid-May: mined from the trajectories up to then, it is active.
    early = [r for r in rows(corpus()) if r["valid_at"] < datetime(2025, 5, 14, tzinfo=timezone.utc)]
    assert by_steps(sk.mine_all(sk.records_from_rows(early)))[RESTART].status == "active"


def test_the_gate_needs_support_contrast_and_margin():
    assert sk.gate([1, 1, 1], [0, 0])
    assert not sk.gate([1, 1], [0, 0]), "two followers are not support"
    assert not sk.gate([1, 1, 1], [0]), "one other trajectory is no comparison"
    assert not sk.gate([1, 1, 0, 1], [1, 0, 1]), "0.75 against 0.67: not better by the margin"
    assert sk.gate([1, 1, 0, 1], [0, 0.4, 1])


def test_matching_skills_returns_active_visible_matching_skills_only(tmp_path):
    home = MemcHome.resolve(tmp_path / "home").ensure()
    assert sk.matching_skills(home, "deploy the web service", "tomasz") == [], "never built: nothing"
    mined = sk.mine_all(sk.records_from_rows(rows(corpus())))
    home.skills.mkdir(parents=True)
    from memc.atomic import write_parquet

    write_parquet(sk.skills_table(mined), home.skills / sk.SKILLS_FILE)
    assert sk.skills_from_table(sk.skills_table(mined)) == mined, "the table round-trips"
    [deploy] = sk.matching_skills(home, "How do I deploy the web service to production?", "tomasz", SCOPE)
    assert deploy.steps == CANARY and deploy.match == 1.0
    [rotate] = sk.matching_skills(home, "Rotating API keys for the billing service", "tomasz")
    assert rotate.steps == RELOAD, "the retired restart way is never shown"
    assert sk.matching_skills(home, "rotate the key", "tomasz") == [], "two of three trigger words do not match"
    assert sk.matching_skills(home, "deploy the web service", "tomasz", scope="elsewhere") == []


def test_a_skill_is_seen_only_by_those_who_may_see_every_trajectory_it_came_from():
    lines = corpus()
    # The deploy family's first two canary successes are private to alice and bob.
    private = [i for i, o in enumerate(lines) if o["trajectory_id"].startswith("deploy-canary")][:2]
    table = rows(lines)
    for i in private:
        table[i]["visibility"] = ["alice", "bob"]
    found = sk.mine_all(sk.records_from_rows(table))
    canaries = [s for s in found if s.steps == CANARY]
    # The audience alice+bob mines every trajectory: its skill is the meet (alice, bob). The
    # public audience mines the public ones only: a public skill, without the private two.
    wide = next(s for s in canaries if s.support == 10)
    assert wide.visibility == ("alice", "bob")
    narrow = next(s for s in canaries if s.visibility == ("public",))
    assert narrow.support == 8 and not {table[i]["entry_id"] for i in private} & set(narrow.source_entry_ids + narrow.compared_entry_ids)
    # Mined as the administrator sees them, a family holding one trajectory only carol may see
    # yields skills only carol may see: public is the identity of the meet, carol the rest.
    recs = sk.records_from_rows(table)
    fam = next(f for f in sk.families(recs) if f.members[0].task.startswith("deploy"))
    carol = [sk.TrajectoryRecord(**{**t.__dict__, "visibility": ("carol",) if t.entry_id in wide.source_entry_ids[2:3] else ("public",)}) for t in fam.members]
    [skill] = sk.mine_family(sk.Family(scope=SCOPE, members=carol, leader=fam.leader))
    assert skill.steps == CANARY and skill.visibility == ("carol",)


def test_the_soundness_audit_finds_missing_and_too_visible_sources():
    table = rows(corpus())
    mined = sk.skills_table(sk.mine_all(sk.records_from_rows(table)))
    assert sk.skills_sound(mined, table).passed
    canary = next(s for s in sk.skills_from_table(mined) if s.steps == CANARY)
    gone = [r for r in table if r["entry_id"] != canary.source_entry_ids[0]]
    audit = sk.skills_sound(mined, gone)
    assert not audit.passed and f"{canary.source_entry_ids[0]} is not a trajectory in the ledger" in audit.problems[0]
    hidden = [dict(r, visibility=["alice"]) if r["entry_id"] == canary.compared_entry_ids[0] else r for r in table]
    audit = sk.skills_sound(mined, hidden)
    assert not audit.passed and any("is not visible to public" in p for p in audit.problems)


def test_task_words_and_step_keys_normalise_what_varies_between_runs():
    assert sk.task_words("Deploying the Web-Service v1.4 (hotfix 12)") == {"deploy", "web", "service", "hotfix"}
    assert sk.task_words("rotated keys") == sk.task_words("Rotating the key") == {"rotate", "key"}
    # Lemmas, not stripped suffixes: irregular forms meet, and a word is a word in any alphabet.
    assert sk.task_words("ran the backups") == sk.task_words("running a backup") == {"run", "backup"}
    assert sk.task_words("Update the café menu") == {"update", "café", "menu"}
    words = sk.task_words("rotate the API key for billing")
    assert sk.step_key("Create_Key", {"service": "billing", "key_id": "key_0007"}, words) == "create_key(key_id=*, service=*)"
    assert sk.step_key("apply_manifest", {"strategy": "Canary", "replicas": 3}, words) == "apply_manifest(replicas=*, strategy=canary)"


def test_a_malformed_trajectory_line_is_rejected_naming_file_line_and_field(tmp_path):
    good = corpus()[:2]
    bad = json.loads(json.dumps(corpus()[2]))
    bad["steps"][1] = {"args": {"tag": "v1"}}  # neither action nor tool
    path = write_corpus(tmp_path / "runs.jsonl", [*good, bad])
    with pytest.raises(IngestError) as ei:
        parse_file(path)
    assert (ei.value.path, ei.value.line, ei.value.field) == (str(path), 3, "steps[2]")
    assert str(ei.value) == f"{path}:3: field 'steps[2]': give exactly one of 'action' or 'tool'"
    for change, field in (
        ({"outcome": 1.5}, "outcome"),
        ({"outcome": "ok"}, "outcome"),
        ({"steps": []}, "steps"),
        ({"visiblity": ["public"]}, "visiblity"),
        ({"valid_at": "yesterday"}, "valid_at"),
    ):
        path = write_corpus(tmp_path / "one.jsonl", [{**corpus()[0], **change}])
        with pytest.raises(IngestError) as ei:
            parse_file(path)
        assert (ei.value.line, ei.value.field) == (1, field), (change, str(ei.value))
    # a step's own unknown key, named by its place
    line = json.loads(json.dumps(corpus()[0]))
    line["steps"][0]["obs"] = "x"
    with pytest.raises(IngestError) as ei:
        parse_file(write_corpus(tmp_path / "obs.jsonl", [line]))
    assert ei.value.field == "steps[1].obs" and "unknown field" in ei.value.message


def test_a_trajectory_is_one_event_entry_with_readable_content(tmp_path):
    parsed = parse_file(write_corpus(tmp_path / "runs.jsonl"), scope=SCOPE)
    assert parsed.format == "trajectories" and len(parsed.entries) == len(corpus())
    e = parsed.entries[0]
    assert e.kind == "event" and e.source_ref == "deploy-canary-00" and e.actor == "opsbot"
    assert e.content.splitlines()[0] == "task: deploy the web service to staging"
    assert e.content.splitlines()[1] == '1. run_tests(suite="all") -> 200 passed'
    assert e.content.splitlines()[-1] == "outcome: success"
    assert e.attributes["trajectory"]["score"] == 1.0
    # the same file again gives the same entries (the ledger's idempotency rests on it)
    again = parse_file(write_corpus(tmp_path / "again.jsonl"), scope=SCOPE).entries
    assert [x.entry_id for x in again] == [x.entry_id for x in parsed.entries]


def test_words_are_split_as_the_bert_pre_tokenizer_splits():
    # claims.nlp.split_words: what questions and tasks are matched on, without loading spaCy.
    from claims.nlp import split_words

    assert split_words("Élodie's re-deploy, v4.2 (HOTFIX)") == ["élodie", "s", "re", "deploy", "hotfix"]
