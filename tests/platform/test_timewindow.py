"""The time-window route: the window a question names, pushed into the evidence index as a
prefilter on valid time and fused with the other routes."""

from __future__ import annotations

from query import compile_context


def test_the_time_route_ranks_what_was_said_in_the_window_first(built_home):
    home, _ = built_home
    ctx = compile_context("What did Elena say in February 2024?", "tomasz", home=home, scope="team")
    timed = [it for it in ctx.items if "time" in it.routes]
    assert timed, [(it.source_ref, it.routes) for it in ctx.items]
    assert all(it.valid_at.startswith("2024-02") for it in timed)
    assert ctx.items[0].valid_at.startswith("2024-02")
    assert ctx.to_dict()["time_window"] == {"phrase": "in February 2024", "start": "2024-02-01T00:00:00+00:00", "end": "2024-03-01T00:00:00+00:00"}
    assert 'time window "in February 2024": 2024-02-01 .. 2024-03-01' in ctx.render()
    # the window never lets anything the asker may not see in (the prefilter keeps visibility)
    ctx = compile_context("What did Elena say in May 2024?", "tomasz", home=home)
    assert all(it.scope == "team" for it in ctx.items)


def test_before_she_moved_finds_where_she_lived_then(built_home):
    home, _ = built_home
    ctx = compile_context("Where did Elena live before she moved?", "tomasz", home=home, scope="team")
    first = ctx.items[0]
    assert "time" in first.routes and "Lisbon" in first.text, [(it.source_ref, it.routes) for it in ctx.items]
