"""The context's packing and rendering on hand-made items: budgets, windows, citations (no home, no index)."""

from __future__ import annotations


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
    from query.context import ContextItem
    from query.context import item_lines as _item_lines

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


def test_a_fact_cites_its_sources_by_ref_and_by_entry_id_only_without_one():
    # The same citation as an item's turns: an entry id costs ~21 word pieces of a ~50-token line.
    from query.context import StateFact, state_line

    def fact(ref: str | None) -> StateFact:
        return StateFact(subject="Omar", predicate="lives_in", object="Bergen", valid_from="2024-02-26T00:00:00+00:00", valid_to=None,
                         source_entry_id="e_14190c6bc4565212c472b9b9", source_ref=ref, quote="I live in Bergen", scope="team",
                         sources=[{"source_entry_id": "e_14190c6bc4565212c472b9b9", "source_ref": ref},
                                  {"source_entry_id": "e_140c37da9b8d9f723c897cba", "source_ref": "OA2:1"}])  # fmt: skip

    assert state_line(fact("OA3:1"), "tomasz") == '  Omar lives_in Bergen  (since 2024-02-26; source OA3:1: "I live in Bergen"; also OA2:1)'
    assert 'source entry e_14190c6bc4565212c472b9b9: "I live in Bergen"' in state_line(fact(None), "tomasz")


def test_hits_a_few_turns_apart_show_as_one_stretch_of_the_conversation():
    from query.context import ContextItem
    from query.windows import join_stretch as _join_stretch
    from query.windows import set_turns as _set_turns

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


def test_superseded_values_are_labelled_with_what_replaced_them_and_what_holds_now():
    from query.context import ContextItem, item_lines

    def item(*labels: dict) -> ContextItem:
        return ContextItem(
            entry_id="e_1", source_ref="ET1:3", scope="team", kind="message", actor="Elena", text="I live in Lisbon now.",
            valid_at="2024-02-10T18:02:00+00:00", recorded_at="2024-02-10T18:02:00+00:00", routes=["fulltext"], score=0.1,
            superseded=list(labels),
        )  # fmt: skip

    moved = {"subject": "Elena", "predicate": "lives_in", "object": "Lisbon", "now": "Potsdam", "by_object": "Berlin",
             "since": "2024-04-01T00:00:00+00:00", "reason": "superseded", "by_entry_id": "e_9", "by_source_ref": "ET2:1"}  # fmt: skip
    lines = item_lines(1, item(moved), "tomasz")
    assert "(superseded: Elena lives_in Lisbon -> Berlin by ET2:1 since 2024-04-01; now Potsdam)" in lines[1]
    lines = item_lines(1, item({**moved, "now": "Berlin"}), "tomasz")
    assert lines[1].strip() == "(superseded: Elena lives_in Lisbon -> Berlin by ET2:1 since 2024-04-01)"
    gone = {**moved, "reason": "retracted", "by_object": "Lisbon", "by_source_ref": None, "by_entry_id": "e_7"}
    assert "(no longer holds: Elena lives_in Lisbon, retracted by entry e_7 since 2024-04-01)" in item_lines(1, item(gone), "tomasz")[1]


def test_the_header_says_in_a_few_words_that_every_view_holds_the_head_and_names_them_otherwise():
    from query.context import Context
    from query.tokens import count_tokens

    marks = {"claims": 9, "state": 9, "evidence_index": 9, "entity_graph": 9}
    fresh = Context(question="Where does Elena live?", asker="tomasz", scope="team", ledger_head=9, watermarks=marks)
    assert fresh.header()[1] == "ledger head 9; every view built to it"
    behind = Context(question="Where does Elena live?", asker="tomasz", scope="team", ledger_head=9, watermarks={**marks, "state": 7})
    assert behind.header()[1] == "ledger head 9; views claims@9, state@7, evidence_index@9, entity_graph@9"
    never = Context(question="Where does Elena live?", asker="tomasz", scope="team", ledger_head=9, watermarks={**marks, "entity_graph": None})
    assert "entity_graph@missing" in never.header()[1]
    assert count_tokens(fresh.header()[1]) <= count_tokens(behind.header()[1]) - 15  # 9 tokens, not 24


def test_a_narrowed_window_keeps_the_turns_around_the_hit_that_it_asks_for():
    from query.windows import narrowed

    window = [{"entry_id": f"e{i}"} for i in range(5)]
    assert [t["entry_id"] for t in narrowed(window, "e2", 0, 1)] == ["e2", "e3"]
    assert [t["entry_id"] for t in narrowed(window, "e0", 1, 1)] == ["e0", "e1"]
    assert [t["entry_id"] for t in narrowed(window, "e4", 1, 2)] == ["e3", "e4"]
    assert narrowed(window, "elsewhere", 0, 0) == window  # not a window around that hit: unchanged


def test_a_later_hit_that_asks_shows_its_reply_and_one_that_states_shows_itself():
    from query.config import QueryConfig
    from query.windows import asks, later_window

    said = ["Elena: We landed in Berlin.", "Tomasz: How was the flight?", "Elena: Long, but the view was great.", "Tomasz: Nice!"]
    window = [{"entry_id": f"e{i}", "text": t} for i, t in enumerate(said)]
    config = QueryConfig()
    assert asks(said[1]) and not asks(said[2])
    # the question's reply is what a question about it needs; a statement is its own answer
    assert [t["entry_id"] for t in later_window(window, window[1], config)] == ["e1", "e2"]
    assert [t["entry_id"] for t in later_window(window, window[2], config)] == ["e2"]
    # the old behaviour, the reply after every later hit, is one setting away
    both = QueryConfig(narrow_after_statement=1)
    assert [t["entry_id"] for t in later_window(window, window[2], both)] == ["e2", "e3"]
    assert [t["entry_id"] for t in later_window(window, window[1], QueryConfig(narrow_before=1))] == ["e0", "e1", "e2"]


def test_the_asked_value_is_kept_whatever_the_facts_share_and_the_rest_fill_what_the_evidence_leaves():
    # The first fact is the current value of the predicate the question asks for (query/facts.py
    # rank_facts; query/compile.py says so with keep_first): shown whenever the budget holds it,
    # even when the facts' share holds none. The share bounds the facts before the evidence; the
    # facts it left out come after the evidence, into what the evidence leaves.
    from query.context import Context, ContextItem, StateFact
    from query.pack import pack
    from query.tokens import count_tokens

    def fact(predicate: str, obj: str) -> StateFact:
        return StateFact(subject="Elena", predicate=predicate, object=obj, valid_from="2024-04-01T00:00:00+00:00", valid_to=None,
                         source_entry_id=f"e_{predicate}", source_ref=f"ET:{predicate}", quote=f"I {predicate} {obj}", scope="team")  # fmt: skip

    def turn(n: int) -> ContextItem:
        return ContextItem(entry_id=f"e_{n}", source_ref=f"D1:{n}", scope="team", kind="message", actor="Elena",
                           text=f"turn {n}: we talked about moving house and the new job at length", valid_at="2024-05-01T10:00:00+00:00",
                           recorded_at="", routes=["fulltext"], score=0.1, entry_ids=[f"e_{n}"])  # fmt: skip

    facts = [fact("works_at", "Helio Labs"), fact("lives_in", "Berlin"), fact("likes", "green tea"), fact("has_pet", "a cat")]

    def packed(share: float, *, items: int = 40, keep_first: bool = True, budget: int = 400) -> Context:
        ctx = Context(question="Where does Elena work?", asker="tomasz", scope=None, ledger_head=3, watermarks={})
        ctx.state, ctx.items = list(facts), [turn(n) for n in range(1, items + 1)]
        pack(ctx, budget, share, keep_first=keep_first)
        assert ctx.tokens <= budget
        return ctx

    assert packed(0.01, keep_first=False).state == []  # a share of 4 tokens, evidence to fill the rest: no fact line
    assert [f.predicate for f in packed(0.01).state] == ["works_at"]  # ...but the asked value is shown
    more = packed(0.3)  # 120 tokens before the evidence: more lines, in rank order
    assert [f.predicate for f in more.state][:2] == ["works_at", "lives_in"] and len(more.state) > 1
    # Little evidence: the facts the share left out fill what it leaves, in rank order.
    few = packed(0.0, items=2)
    assert [f.predicate for f in few.state] == ["works_at", "lives_in", "likes", "has_pet"] and len(few.items) == 2
    ctx = Context(question="Where does Elena work?", asker="tomasz", scope=None, ledger_head=3, watermarks={})
    ctx.state = list(facts)
    fixed = count_tokens("\n".join([*ctx.header(), "", "What holds now:", "", "Evidence:"]))
    pack(ctx, fixed + 3, 1.0, keep_first=True)  # the whole budget cannot hold one line: none
    assert ctx.state == []


def test_skills_past_the_first_fill_what_the_evidence_leaves():
    from query.context import Context, ContextItem
    from query.pack import pack

    def skill(n: int) -> dict:
        return {"skill_id": f"sk_{n}", "example_task": f"deploy service {n}", "support": 3, "success_rate": 1.0, "baseline_rate": 0.5,
                "compared": 4, "steps": ["build the image", "run the migrations", "switch the traffic"], "termination": "health checks pass"}  # fmt: skip

    def packed(items: int) -> Context:
        ctx = Context(question="How do we deploy?", asker="tomasz", scope=None, ledger_head=3, watermarks={})
        ctx.skills = [skill(1), skill(2)]
        ctx.items = [
            ContextItem(entry_id=f"e_{n}", source_ref=f"D1:{n}", scope="team", kind="message", actor="Elena", text=f"turn {n}: we deployed the service by hand again",
                        valid_at="2024-05-01T10:00:00+00:00", recorded_at="", routes=["fulltext"], score=0.1, entry_ids=[f"e_{n}"])  # fmt: skip
            for n in range(1, items + 1)
        ]
        pack(ctx, 400, 0.0)
        return ctx

    assert [sk["skill_id"] for sk in packed(40).skills] == ["sk_1"]  # the evidence fills the budget: the first only
    few = packed(2)
    assert [sk["skill_id"] for sk in few.skills] == ["sk_1", "sk_2"] and len(few.items) == 2


def test_facts_filling_a_context_without_evidence_stay_within_the_budget():
    # With no item packed the section's title is longer ("Evidence: none visible to this asker."):
    # the facts after the evidence are counted against it (a 60-token budget once rendered 65).
    from query.context import Context, ContextItem, StateFact
    from query.pack import pack
    from query.tokens import count_tokens

    facts = [
        StateFact(subject="Elena", predicate=p, object=o, valid_from="2024-04-01T00:00:00+00:00", valid_to=None, source_entry_id=f"e_{p}",
                  source_ref=f"ET:{p}", quote=f"I {p} {o}", scope="team")  # fmt: skip
        for p, o in (("works_at", "Helio Labs"), ("lives_in", "Berlin"), ("likes", "green tea"), ("has_pet", "a cat"))
    ]
    long_turn = ContextItem(entry_id="e_1", source_ref="D1:1", scope="team", kind="message", actor="Elena", text="words " * 300,
                            valid_at="2024-05-01T10:00:00+00:00", recorded_at="", routes=["fulltext"], score=0.1, entry_ids=["e_1"])  # fmt: skip
    probe = Context(question="Where does Elena work?", asker="tomasz", scope=None, ledger_head=3, watermarks={})
    empty = count_tokens(probe.render())  # the header and "Evidence: none visible ...": always shown
    for budget in range(empty, empty + 120, 3):
        ctx = Context(question="Where does Elena work?", asker="tomasz", scope=None, ledger_head=3, watermarks={})
        ctx.state, ctx.items = list(facts), [long_turn]
        pack(ctx, budget, 0.0, keep_first=True)
        assert ctx.items == [] and ctx.tokens <= budget, (budget, ctx.tokens, len(ctx.state))
