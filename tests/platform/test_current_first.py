"""Current first (query/current.py), on the sample corpus built through Dagster: when the fold has
a current value for what a question asks, the evidence of superseded values ranks below the
current value's evidence and is labelled (the value, the entry that superseded it, since when);
history comes first only when the question asks for it.

Stale context dominance, as the compiler had it before: asked "Where does Elena live now?", the
old Lisbon turn (it shares "live" with the question) ranked above the move to Berlin, unlabelled.
Each case below failed on that compiler."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from query import compile_context
from query.config import QueryConfig


@pytest.fixture(scope="module")
def home(built_home):
    return built_home[0]


def _refs(item) -> list[str]:
    return [r for r in (item.source_refs or [item.source_ref]) if r]


def _rank(ctx, ref: str) -> int:
    return next(i for i, it in enumerate(ctx.items) if ref in _refs(it))


def _superseded(ctx, ref: str) -> list[dict]:
    return ctx.items[_rank(ctx, ref)].superseded


@pytest.mark.parametrize(
    "question, asker, current_ref, old_refs, old_values",
    [
        # Tomasz sees the team's files: Berlin holds, Lisbon was superseded by the move.
        ("Where does Elena live now?", "tomasz", "ET2:1", ["ET1:3"], ["Lisbon"]),
        ("Which city does Elena live in?", "tomasz", "ET2:1", ["ET1:3"], ["Lisbon"]),
        # Elena sees her private talk with Priya too: Potsdam holds, Berlin and Lisbon do not.
        ("Where does Elena live now?", "elena", "EP1:4", ["ET2:1", "ET1:3"], ["Berlin", "Lisbon"]),
        # Work: Helio Labs holds, Northwind Studio was superseded.
        ("Where does Elena work?", "tomasz", "ET2:3", ["ET1:5"], ["Northwind Studio"]),
    ],
)
def test_superseded_evidence_ranks_below_the_current_value_and_says_so(home, question, asker, current_ref, old_refs, old_values):
    ctx = compile_context(question, asker, home=home, scope="team")
    now = _rank(ctx, current_ref)
    assert "state" in ctx.items[now].routes or ctx.items[now].routes, ctx.items[now]
    for ref, value in zip(old_refs, old_values):
        if not any(ref in _refs(it) for it in ctx.items):
            continue  # not retrieved at all: nothing to rank
        assert _rank(ctx, ref) > now, [(_refs(it), it.superseded) for it in ctx.items]
        labels = _superseded(ctx, ref)
        assert any(s["object"] == value and s["since"] and s["by_entry_id"] for s in labels), labels
    assert "(superseded: Elena" in ctx.render()
    assert not ctx.items[now].superseded


def test_the_current_value_evidence_is_reached_through_its_fact(home):
    """Even with one evidence slot, the turn the current fact was drawn from is the one shown."""
    ctx = compile_context("Where does Elena live now?", "tomasz", home=home, scope="team", config=QueryConfig(k=1))
    assert [_refs(it) for it in ctx.items] and "ET2:1" in _refs(ctx.items[0]), [(_refs(it), it.routes) for it in ctx.items]
    assert "state" in ctx.items[0].routes


@pytest.mark.parametrize(
    "question",
    ["Where did Elena live before Berlin?", "Where did Elena use to live?", "Where did Elena live originally?"],
)
def test_history_comes_first_only_when_asked(home, question):
    ctx = compile_context(question, "tomasz", home=home, scope="team")
    default = compile_context("Where does Elena live now?", "tomasz", home=home, scope="team")
    lisbon = _rank(ctx, "ET1:3")
    assert _superseded(ctx, "ET1:3"), "asked about the past, the old value is still labelled"
    assert lisbon < _rank(ctx, "ET2:1") or lisbon < _rank(default, "ET1:3"), "the past is not pushed down when asked for"


def test_as_of_reads_the_past_in_retrieval_order(home):
    ctx = compile_context("Where does Elena live?", "tomasz", home=home, scope="team", as_of=datetime(2024, 3, 1, tzinfo=timezone.utc))
    assert [f.object for f in ctx.state if f.predicate == "lives_in"] == ["Lisbon"]
    assert all(not it.superseded for it in ctx.items), "as of March, Lisbon superseded nothing the asker is shown"


def test_a_private_change_is_not_shown_to_those_who_may_not_see_it(home):
    """Tomasz may not see the move to Potsdam: for him Berlin is current and unlabelled."""
    ctx = compile_context("Where does Elena live now?", "tomasz", home=home, scope="team")
    assert all("EP1:4" not in _refs(it) for it in ctx.items)
    assert all(s["now"] != "Potsdam" and s["by_source_ref"] != "EP1:4" for it in ctx.items for s in it.superseded)
    assert not ctx.items[_rank(ctx, "ET2:1")].superseded


def test_as_of_labels_only_the_changes_made_by_then(home):
    """As of June 2024, for elena: Berlin held (Potsdam came in September), Lisbon was superseded."""
    june = datetime(2024, 6, 1, tzinfo=timezone.utc)
    ctx = compile_context("Where did Elena live?", "elena", home=home, scope="team", as_of=june)
    assert [f.object for f in ctx.state if f.predicate == "lives_in"] == ["Berlin"]
    labels = [s for it in ctx.items for s in it.superseded]
    assert labels and all(s["object"] == "Lisbon" and s["now"] == "Berlin" and s["by_source_ref"] == "ET2:1" for s in labels), labels
    assert not ctx.items[_rank(ctx, "ET2:1")].superseded
