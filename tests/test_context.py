"""The context compiler: staleness policies, bi-temporal asks, conflicts, budget and the query log."""

from __future__ import annotations

import json
import shutil
from datetime import datetime, timezone

import pytest

from ledger import Ledger, NewEntry
from memc.home import MemcHome
from query import QueryConfig, StaleViewError, ViewPolicy, compile_context
from query.log import read_log
from query.tokens import count_tokens


@pytest.fixture
def home(built_home, tmp_path):
    """A private copy of the built sample home, so a test may append without disturbing others."""
    src, _ = built_home
    dst = tmp_path / "home"
    shutil.copytree(src.root, dst)
    return MemcHome.resolve(dst)


def _say(home, text: str, *, actor="Tomasz", ref="late:1", visibility=("public",), kind="message") -> None:
    Ledger(home.ledger).append(
        [NewEntry(kind=kind, scope="team", content=text, actor=actor, session_id="late:S1", source_ref=ref,
                  valid_at=datetime(2024, 10, 1, tzinfo=timezone.utc), visibility=visibility)]
    )


def test_a_fact_ingested_after_the_build_is_answered_by_patching_the_tail(home):
    _say(home, "The new espresso machine in the kitchen is a Quokka Q9, serial QK-5521.")
    ctx = compile_context("Which espresso machine is in the kitchen?", "tomasz", home=home, scope="team")
    assert ctx.staleness["evidence_index"]["decision"] == "patched"
    assert ctx.staleness["evidence_index"]["lag_entries"] == 1
    assert ctx.staleness["state"]["decision"] == "tolerated"
    assert any("QK-5521" in it.text for it in ctx.items[:3])
    assert "staleness:" in ctx.render()


def test_fail_closed_names_the_view_its_watermark_the_head_and_the_lag(home):
    _say(home, "A note that the state view has not folded yet.")
    config = QueryConfig(staleness={**QueryConfig().staleness, "state": ViewPolicy(policy="fail")})
    with pytest.raises(StaleViewError) as err:
        compile_context("What does Elena like?", "tomasz", home=home, scope="team", config=config)
    e = err.value
    assert e.view == "state" and e.head == Ledger(home.ledger).head() and e.lag_entries == 1
    assert f"watermark {e.watermark}" in str(e) and "lag 1 entries" in str(e)


def test_a_lag_beyond_the_tolerance_fails_closed(home):
    _say(home, "one more thing")
    config = QueryConfig(staleness={**QueryConfig().staleness, "entity_graph": ViewPolicy(policy="tolerate", max_lag_entries=0)})
    with pytest.raises(StaleViewError, match="entity_graph"):
        compile_context("Who talks to whom?", "tomasz", home=home, scope="team", config=config)


def test_a_pending_erasure_is_never_served(home):
    ledger = Ledger(home.ledger)
    berlin = next(r for r in ledger.iter_entries() if r["source_ref"] == "ET2:1")
    ledger.append([NewEntry(kind="erasure", scope="team", content="erasure of 1 entry", actor="admin",
                            valid_at=datetime.now(timezone.utc), visibility=("admin",),
                            attributes={"entry_ids": [berlin["entry_id"]], "reason": "test"})])
    ctx = compile_context("Where does Elena live now?", "tomasz", home=home, scope="team")
    cited = {e for it in ctx.items for e in it.entry_ids} | {f.source_entry_id for f in ctx.state}
    assert berlin["entry_id"] not in cited
    assert ctx.staleness["evidence_index"].get("pending_erasure")


def test_as_of_gives_what_held_then(built_home):
    home, _ = built_home
    then = compile_context("Where does Elena live?", "tomasz", home=home, scope="team",
                           as_of=datetime(2024, 3, 1, tzinfo=timezone.utc))
    assert [f.object for f in then.state if f.predicate == "lives_in"] == ["Lisbon"]
    assert then.items and all(it.valid_at <= "2024-03-01T00:00:00+00:00" for it in then.items)
    assert not any("moved to Berlin" in it.text for it in then.items), "evidence from after the as-of time"
    now = compile_context("Where does Elena live?", "tomasz", home=home, scope="team")
    assert [f.object for f in now.state if f.predicate == "lives_in"] == ["Berlin"]


def test_budget_is_respected_with_a_real_tokenizer(built_home):
    home, _ = built_home
    for budget in (150, 400, 2000):
        ctx = compile_context("What did Elena and Tomasz talk about?", "tomasz", home=home, scope="team", budget_tokens=budget)
        assert ctx.tokens == count_tokens(ctx.render())
        assert ctx.tokens <= budget + 20, (budget, ctx.tokens)  # +20: numbering of the kept lines
    small = compile_context("What did Elena and Tomasz talk about?", "tomasz", home=home, scope="team", budget_tokens=150)
    assert len(small.items) < len(ctx.items)


def test_an_item_too_big_for_the_rest_of_the_budget_is_shown_with_a_narrower_window():
    from query.context import Context, ContextItem
    from query.pack import pack as _pack

    def window(n: int) -> ContextItem:
        refs = [f"D{n}:{t}" for t in range(1, 6)]
        return ContextItem(
            entry_id=f"e_{n}_3", source_ref=refs[2], scope="team", kind="message", actor="Elena",
            text="\n".join(f"turn {t} of session {n}: we talked about moving house and the new job" for t in range(1, 6)),
            valid_at="2024-05-01T10:00:00+00:00", recorded_at="2024-05-02T10:00:00+00:00", routes=["fulltext"], score=0.1,
            source_refs=refs, entry_ids=[f"e_{n}_{t}" for t in range(1, 6)],
        )  # fmt: skip

    def packed(budget: int, n: int = 3) -> Context:
        ctx = Context(question="Why did Elena move?", asker="tomasz", scope="team", ledger_head=9, watermarks={})
        ctx.items = [window(i) for i in range(1, n + 1)]
        _pack(ctx, budget, 0.1)
        return ctx

    whole = packed(10_000)
    assert [len(it.entry_ids) for it in whole.items] == [5, 5, 5]
    one = packed(10_000, n=1).tokens  # the header and the first window
    ctx = packed(one + 100)  # room for the first window and a part of the second (a turn is ~20 tokens)
    assert ctx.tokens <= one + 100
    assert [len(it.entry_ids) for it in ctx.items[:1]] == [5]
    second = ctx.items[1]
    assert second.entry_id == "e_2_3" and second.entry_id in second.entry_ids and 1 <= len(second.entry_ids) < 5
    # narrowed a turn at a time, the turn before the hit first: the reply after it stays longest
    assert second.entry_ids in (["e_2_2", "e_2_3", "e_2_4", "e_2_5"], ["e_2_2", "e_2_3", "e_2_4"], ["e_2_3", "e_2_4"], ["e_2_3"])
    assert second.source_refs == [e.replace("e_2_", "D2:") for e in second.entry_ids]
    assert second.text.split("\n") == [f"turn {e[-1]} of session 2: we talked about moving house and the new job" for e in second.entry_ids]
    assert len(packed(one + 3).items) == 1  # not even the hit of the second fits: left out


def test_the_rendering_cites_turns_by_source_ref_and_by_entry_id_without_one():
    from query.context import ContextItem, item_lines as _item_lines

    def item(refs: list) -> ContextItem:
        return ContextItem(entry_id="e_2", source_ref=refs[1], scope="team", kind="message", actor=None, text="a\nb\nc",
                           valid_at="2024-05-01T10:00:00+00:00", recorded_at="", routes=["fulltext"], score=0.1,
                           source_refs=refs, entry_ids=["e_1", "e_2", "e_3"])  # fmt: skip

    lines = _item_lines(1, item(["D1:1", "D1:2", None]), "tomasz")
    assert lines == ["   1. 2024-05-01", "      [D1:1] a", "    > [D1:2] b", "      [entry e_3] c"]
    one = ContextItem(entry_id="e_9", source_ref=None, scope="team", kind="document", actor=None, text="a note",
                      valid_at="2024-05-01T10:00:00+00:00", recorded_at="", routes=["vector"], score=0.1, entry_ids=["e_9"])  # fmt: skip
    assert _item_lines(2, one, "tomasz") == ["   2. 2024-05-01 [entry e_9]", "      a note"]
    # a turn another principal wrote says so; the home's own writers and the asker's own go unsaid
    written = item(["D1:1", "D1:2", "D1:3"])
    written.ingested_by = ["memc:cli", "bob", "tomasz"]
    assert _item_lines(1, written, "tomasz") == ["   1. 2024-05-01", "      [D1:1] a", "    > [D1:2 via bob] b", "      [D1:3] c"]


def test_hits_a_few_turns_apart_show_as_one_stretch_of_the_conversation():
    from query.context import ContextItem
    from query.windows import join_stretch as _join_stretch, set_turns as _set_turns

    def turn(session: str, n: int) -> dict:
        return {"entry_id": f"e_{session}_{n}", "source_ref": f"{session}:{n}", "session_id": session, "turn_no": n, "text": f"turn {n}"}

    def item(turns: list[dict]) -> ContextItem:
        return _set_turns(ContextItem(entry_id=turns[len(turns) // 2]["entry_id"], source_ref=None, scope="team", kind="message",
                                      actor=None, text="", valid_at="", recorded_at="", routes=["fulltext"], score=0.1), turns)  # fmt: skip

    stretch = [turn("S1", n) for n in range(3, 8)]
    items, stretches = [item(stretch)], [stretch]
    assert _join_stretch(items, stretches, [turn("S2", n) for n in range(8, 11)], limit=10) is None  # another session
    assert _join_stretch(items, stretches, [turn("S1", n) for n in range(9, 12)], limit=10) is None  # a turn between
    joined = _join_stretch(items, stretches, [turn("S1", n) for n in range(8, 11)], limit=10)  # runs on from turn 7
    assert joined is items[0] and joined.entry_id == "e_S1_5"  # still cited by its first hit
    assert joined.source_refs == [f"S1:{n}" for n in range(3, 11)] and joined.text.split("\n") == [f"turn {n}" for n in range(3, 11)]
    assert _join_stretch(items, stretches, [turn("S1", n) for n in range(0, 3)], limit=10) is None  # 11 turns: too long


def test_every_compile_is_logged_without_its_content_or_words(home):
    ctx = compile_context("Which order did Tomasz mention?", "tomasz", home=home, scope="team")
    last = read_log(home)[-1]
    assert last["tokens"] == ctx.tokens and "question" not in last
    assert set(last) >= {"plan", "latency_ms", "watermarks", "asker", "asked", "answered"}
    # the question names Tomasz: the log keeps his entity id, not the words
    from memc.ids import entity_id

    assert ["team", entity_id("team", "Tomasz")] in last["asked"]
    dumped = json.dumps(last)
    assert "order" not in dumped and "Which" not in dumped and "Tomasz" not in dumped
    assert all(it.text not in dumped for it in ctx.items)


def test_windows_show_neighbouring_turns_and_json_schema_fields(built_home):
    home, _ = built_home
    ctx = compile_context("Why did Elena move to Berlin?", "tomasz", home=home, scope="team")
    d = ctx.to_dict()
    assert {"question", "asker", "as_of", "known_at", "ledger_head", "watermarks", "staleness", "items", "state", "conflicts", "tokens"} <= set(d)
    first = d["items"][0]
    assert {"entry_id", "source_ref", "scope", "text", "valid_at", "recorded_at", "routes", "score", "source_refs", "entry_ids"} <= set(first)
    assert len(first["source_refs"]) > 1 and first["source_ref"] in first["source_refs"]
    assert len({r for it in ctx.items for r in it.source_refs}) == sum(len(it.source_refs) for it in ctx.items), "windows overlap"
    assert all(it.text.count("\n") + 1 == len(it.entry_ids) for it in ctx.items if len(it.entry_ids) > 1)
