"""Retrieval misfire (similar but wrong), on the sample corpus built through Dagster: asked where
Elena is based or who employs her, the compiler before the state route put a turn that only
shares words with the question first (Tomasz's sister's wedding and Priya joining Helio Labs;
the first session, at Northwind), and the turn the current fact was drawn from below it. Now the
fold's current value of the asked predicate reaches its own turn (query/current.py), which ranks
first. Each case failed on the compiler of 4418b19 (its first item shown in the comment)."""

from __future__ import annotations

import pytest

from query import compile_context


@pytest.fixture(scope="module")
def home(built_home):
    return built_home[0]


@pytest.mark.parametrize(
    "question, fact, turn",
    [
        ("Where is Elena based?", ("Elena", "lives_in", "Berlin"), "ET2:1"),  # was ET3: the wedding, Priya
        ("Which company does Elena work for?", ("Elena", "works_at", "Helio Labs"), "ET2:3"),  # was ET1: Northwind
        ("Who employs Elena?", ("Elena", "works_at", "Helio Labs"), "ET2:3"),  # was ET3
        ("Where has Elena settled?", ("Elena", "lives_in", "Berlin"), "ET2:1"),  # was ET3
        ("Who is Elena's employer?", ("Elena", "works_at", "Helio Labs"), "ET2:3"),  # was ET3
    ],
)
def test_the_current_facts_own_turn_ranks_first(home, question, fact, turn):
    ctx = compile_context(question, "tomasz", home=home, scope="team")
    assert fact in {(f.subject, f.predicate, f.object) for f in ctx.state}
    first = ctx.items[0]
    assert turn in (first.source_refs or [first.source_ref]), [(it.source_refs, it.routes) for it in ctx.items[:3]]
    assert "state" in first.routes
