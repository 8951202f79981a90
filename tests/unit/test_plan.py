"""The plan a compile records and the diff replay reports (query/plan.py): identical plans have
no change; a route that returned more names the step, the count and the new ids; steps that
appear or disappear do not shift the others; packed items added and dropped are named; a plan
refuses text."""

from __future__ import annotations

import pytest

from query.log import fingerprint, key_id, question_key
from query.plan import PlanRecorder, diff, new_query_id


def _plan(fulltext=("e_a", "e_b"), packed=(("e_a", 40), ("e_b", 30)), graph=False) -> list[dict]:
    rec = PlanRecorder()
    rec.add("staleness", views={"evidence_index": "fresh"}, patched=False)
    rec.add("route", "fulltext", weight=1.0, k=40, candidates=len(fulltext), entry_ids=list(fulltext))
    if graph:
        rec.add("route", "graph/fulltext", weight=0.5, k=40, candidates=1, entry_ids=["e_g"])
    rec.add("route", "vector", weight=0.2, k=40, candidates=2, entry_ids=["e_b", "e_a"])
    rec.add("cut", "budget", budget=2000, entry_ids=[])
    rec.add("packed", tokens=sum(t for _, t in packed), items=[{"entry_id": e, "turns": 1, "tokens": t} for e, t in packed])
    return rec.steps


def test_identical_plans_have_no_change():
    assert diff(_plan(), _plan()) == []


def test_a_route_that_returned_more_names_the_step_the_count_and_the_new_ids():
    changes = diff(_plan(), _plan(fulltext=("e_a", "e_new", "e_b"), packed=(("e_new", 25), ("e_a", 40))))
    first = changes[0]
    assert (first.index, first.step, first.how) == (2, "route fulltext", "changed")
    assert first.fields["candidates"] == {"was": 2, "now": 3}
    assert first.fields["entry_ids"] == {"added": ["e_new"], "removed": []}
    assert first.line() == "step 2 route fulltext: candidates 2 -> 3; entry_ids added [e_new]"
    packed = changes[-1]
    assert packed.step == "packed" and packed.fields["items"]["added"] == ["e_new"] and packed.fields["items"]["dropped"] == ["e_b"]
    assert "items added [e_new], dropped [e_b]" in packed.line()
    assert [c.step for c in changes] == ["route fulltext", "packed"], "the vector route and the budget cut did not change"


def test_the_same_ids_in_another_order_is_a_reorder():
    (change,) = diff(_plan(fulltext=("e_a", "e_b")), _plan(fulltext=("e_b", "e_a")))
    assert change.fields["entry_ids"] == {"order": {"was": ["e_a", "e_b"], "now": ["e_b", "e_a"]}}
    assert "reordered [e_a, e_b] -> [e_b, e_a]" in change.line()


def test_a_route_only_one_plan_ran_does_not_shift_the_others():
    changes = diff(_plan(), _plan(graph=True))
    assert [(c.index, c.step, c.how) for c in changes] == [(3, "route graph/fulltext", "new")]
    back = diff(_plan(graph=True), _plan())
    assert [(c.index, c.step, c.how) for c in back] == [(3, "route graph/fulltext", "gone")]
    assert back[0].line() == "step 3 route graph/fulltext: not run now"


def test_a_packed_item_with_other_tokens_says_so():
    (change,) = diff(_plan(), _plan(packed=(("e_a", 40), ("e_b", 35))))
    assert change.fields["tokens"] == {"was": 70, "now": 75}
    assert change.fields["items"]["changed"] == {"e_b": {"tokens": {"was": 30, "now": 35}}}


@pytest.mark.parametrize("value", ["Where does Elena live now?", "two words", "x" * 101, b"bytes"])
def test_a_plan_refuses_text(value):
    with pytest.raises(ValueError, match="plan"):
        PlanRecorder().add("route", "fulltext", entry_ids=[value])
    with pytest.raises(ValueError, match="plan"):  # among ids, which are matched in one pass
        PlanRecorder().add("route", "fulltext", entry_ids=["e_1", value, "e_2"])


def test_a_plan_takes_ids_names_times_and_numbers():
    rec = PlanRecorder()
    rec.add("prefilter", principals=["tomasz"], scope="team", known_at="2024-06-01T00:00:00+00:00", floor=0.3, kinds=["message"], goal=False, as_of=None)
    rec.add("route", "time/fulltext", valid_between=["2024-05-01T00:00:00+00:00", None], entry_ids=["e_3453db27546b00eb02a92997"])
    assert [s["step"] for s in rec.steps] == ["prefilter", "route"]


def test_query_ids_are_random_and_fingerprints_keyed(tmp_path):
    from memc.home import MemcHome

    assert new_query_id() != new_query_id() and new_query_id().startswith("q_")
    home, other = MemcHome.resolve(tmp_path / "a"), MemcHome.resolve(tmp_path / "b")
    key = question_key(home)
    assert question_key(home) == key, "made once, then read"
    assert (home.querylog_key.stat().st_mode & 0o777) == 0o600
    assert fingerprint(key, "Where does Elena live now?") == fingerprint(question_key(home), "Where does Elena live now?")
    assert fingerprint(key, "Where does Elena live now?") != fingerprint(key, "Where does Elena live now")
    assert fingerprint(key, "Where does Elena live now?") != fingerprint(question_key(other), "Where does Elena live now?"), "a key per home"
    assert key_id(key) != key_id(question_key(other))
