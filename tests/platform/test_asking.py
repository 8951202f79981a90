"""Asked as whom, for what (query/asking.py), on the sample corpus built through Dagster.

Memory-induced bias: memory colours an answer with what it knows of the asker; `uncolored`
compiles without any fact about them, and says so. Session amnesia and selective retrieval: an
agent's current task (`goal`) names entities and predicates the question itself does not, and
the context says which goal shaped it. Every case failed on the compiler before: "I" named no
one, and neither option existed."""

from __future__ import annotations

import pytest

from query import compile_context
from query.asking import Goal, GoalError


@pytest.fixture(scope="module")
def home(built_home):
    return built_home[0]


def _facts(ctx) -> set[tuple[str, str, str]]:
    return {(f.subject, f.predicate, f.object) for f in ctx.state}


@pytest.mark.parametrize(
    "question, fact",
    [
        ("Where do I live now?", ("Elena", "lives_in", "Potsdam")),
        ("Where do I work?", ("Elena", "works_at", "Helio Labs")),
        ("What am I planning?", ("Elena", "plans", "trip to Kyoto")),
    ],
)
def test_i_is_the_asker_and_uncolored_leaves_their_facts_out(home, question, fact):
    coloured = compile_context(question, "elena", home=home, scope="team")
    assert fact in _facts(coloured), _facts(coloured)
    plain = compile_context(question, "elena", home=home, scope="team", uncolored=True)
    assert not any(s == "Elena" for s, _, _ in _facts(plain)), _facts(plain)
    assert plain.uncolored and "uncolored: no facts about elena" in plain.render()
    assert plain.items, "the evidence stays: only the facts about the asker go"


def test_uncolored_drops_the_askers_facts_even_when_named(home):
    ctx = compile_context("Where does Elena live now?", "elena", home=home, scope="team", uncolored=True)
    assert not any(s == "Elena" for s, _, _ in _facts(ctx))
    other = compile_context("Where does Priya work?", "elena", home=home, scope="team", uncolored=True)
    assert ("Priya", "works_at", "Helio Labs") in _facts(other), "facts about others stay"


def test_a_goal_names_entities_and_predicates_the_question_does_not(home):
    question = "What should I prepare for the meeting?"
    plain = compile_context(question, "elena", home=home, scope="team", uncolored=True)
    assert not any(s == "Priya" for s, _, _ in _facts(plain))
    shaped = compile_context(question, "elena", home=home, scope="team", uncolored=True, goal=Goal(text="onboarding redesign review", entities=("Priya",), predicates=("works_at",)))
    assert ("Priya", "works_at", "Helio Labs") in _facts(shaped), _facts(shaped)
    assert shaped.goal == {"text": "onboarding redesign review", "entities": ["Priya"], "predicates": ["works_at"]}
    assert 'shaped by the goal "onboarding redesign review"; entities Priya; predicates works_at' in shaped.render()


def test_a_goal_text_is_a_route_of_its_own(home):
    """The task's words reach the evidence the question's words do not: the offsite email."""
    question = "What is the booking reference?"
    shaped = compile_context(question, "tomasz", home=home, scope="team", goal="moving the design offsite to Porto")
    first = shaped.items[0]
    assert "goal" in first.routes and "TRV-7731" in first.text, [(it.routes, it.text[:60]) for it in shaped.items]


def test_a_goal_with_an_unknown_predicate_is_refused_by_name():
    with pytest.raises(GoalError, match="goal.predicates: unknown predicate 'lives_near'"):
        Goal(predicates=("lives_near",))


@pytest.mark.parametrize(
    "follow_up, fact",
    [
        ("And where does she work?", ("Elena", "works_at", "Helio Labs")),
        ("Where does she live now?", ("Elena", "lives_in", "Berlin")),
        ("What is she planning?", ("Elena", "plans", "trip to Kyoto")),
    ],
)
def test_a_follow_up_keeps_the_sessions_subject_through_the_agent_state(home, follow_up, fact):
    """Session amnesia: a follow-up names no one ("she"); the agent state carries who the talk is
    about, so the follow-up gets her facts (without it, none: the question names nobody)."""
    bare = compile_context(follow_up, "tomasz", home=home, scope="team")
    assert fact not in _facts(bare)
    ctx = compile_context(follow_up, "tomasz", home=home, scope="team", goal=Goal(entities=("Elena",)))
    assert fact in _facts(ctx), _facts(ctx)
    assert ctx.goal == {"text": None, "entities": ["Elena"], "predicates": []}
