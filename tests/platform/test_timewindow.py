"""The time-window route: the window a question names, pushed into the evidence index as a
prefilter on valid time and fused with the other routes."""

from __future__ import annotations

from ledger import Ledger
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


def test_the_window_never_shows_an_asker_what_they_may_not_see(built_home):
    """September 2024 holds Elena's talk with Tomasz (team, public) and her private talk with
    Priya (visible to elena and priya). Through the time route Elena gets her private turns, so
    the window does reach them; Tomasz never does. Who may see each shown entry is read from the
    ledger here, not from the compiler's own filters."""
    home, _ = built_home
    vis = {r["entry_id"]: r["visibility"] for r in Ledger(home.ledger).read(["entry_id", "visibility"]).to_pylist()}
    private = {e for e, v in vis.items() if "public" not in (v or [])}
    question = "What did Elena say in September 2024?"

    def shown(ctx) -> set[str]:
        return {e for it in ctx.items for e in {it.entry_id, *it.entry_ids, *it.duplicates}}

    elena = compile_context(question, "elena", home=home, scope="team")
    assert elena.to_dict()["time_window"]["start"].startswith("2024-09-01")
    timed = [it for it in elena.items if "time" in it.routes]
    assert {e for it in timed for e in {it.entry_id, *it.entry_ids}} & private, [(it.source_ref, it.routes) for it in elena.items]

    tomasz = compile_context(question, "tomasz", home=home, scope="team")
    assert [it for it in tomasz.items if "time" in it.routes], "the window found nothing Tomasz may see"
    hidden = {e for e in shown(tomasz) if not _sees("tomasz", vis[e])}
    assert not hidden, hidden
    assert "Potsdam" not in tomasz.render() and "leaving Helio" not in tomasz.render()


def _sees(asker: str, visibility) -> bool:
    """The rule, stated here apart from memc.visibility: public or named, and never when empty."""
    return bool(visibility) and ("public" in visibility or asker in visibility)


def test_before_she_moved_finds_where_she_lived_then(built_home):
    home, _ = built_home
    ctx = compile_context("Where did Elena live before she moved?", "tomasz", home=home, scope="team")
    first = ctx.items[0]
    assert "time" in first.routes and "Lisbon" in first.text, [(it.source_ref, it.routes) for it in ctx.items]
