""""What holds now" is chosen by what the question asks (query/intent.py), on the sample
corpus built through Dagster: the asked predicate's current value is there, `mentions` never
is a fact line, and dreaming's analytics (centrality, community) appear only when the question
asks about importance or groups. Five of the seven cases failed on the compiler before the
intent step: facts were ranked by word overlap without lemmas ("work" never met works_at),
"Elena's" named no one, and a derived "community" line could take the place of the job."""

from __future__ import annotations

import pytest

from query import compile_context
from query.config import QueryConfig

# Two fact lines, as a tight budget leaves: the asked one must be among them.
TIGHT = QueryConfig(max_state_facts=2)


@pytest.fixture(scope="module")
def home(built_home):
    return built_home[0]


def _facts(home, question: str, asker: str = "elena", config: QueryConfig = TIGHT) -> list[tuple[str, str, str]]:
    ctx = compile_context(question, asker, home=home, scope="team", config=config)
    return [(f.subject, f.predicate, f.object) for f in ctx.state]


@pytest.mark.parametrize(
    "question, predicate",
    [
        ("Where does Elena work?", "works_at"),
        ("Who is Elena's employer these days?", "works_at"),
        ("Where does Elena live now?", "lives_in"),
    ],
)
def test_the_asked_predicate_is_shown(home, question, predicate):
    facts = _facts(home, question)
    assert any(p == predicate for _, p, _ in facts), facts


@pytest.mark.parametrize("question", ["Where does Elena work?", "What does Elena like?", "Tell me about Tomasz and Elena."])
def test_mentions_and_analytics_are_not_facts_unless_asked(home, question):
    facts = _facts(home, question, config=QueryConfig())
    assert facts, "the question names Elena: something holds for her"
    assert not any(p == "mentions" for _, p, _ in facts), facts
    assert not any(p in ("centrality", "community") for _, p, _ in facts), facts


def test_analytics_appear_when_asked_about_importance_or_groups(home):
    facts = _facts(home, "Which community is Elena in, and how central is she?", config=QueryConfig())
    assert any(p in ("centrality", "community") for _, p, _ in facts), facts


def test_time_travel_chooses_facts_as_the_present_does(home):
    """As of a valid time the facts come from state_history: the same choice holds there (the
    asked predicate first, no `mentions` line, no analytics unless asked). Before this, the
    as-of path listed every claim in mart order, mentions and centrality included."""
    from datetime import datetime, timezone

    march = datetime(2024, 3, 1, tzinfo=timezone.utc)
    ctx = compile_context("Where did Elena live?", "tomasz", home=home, scope="team", as_of=march, config=TIGHT)
    facts = [(f.subject, f.predicate, f.object) for f in ctx.state]
    assert facts[0] == ("Elena", "lives_in", "Lisbon"), facts
    assert not any(p in ("mentions", "centrality", "community") for _, p, _ in facts), facts
