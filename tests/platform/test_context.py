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


def test_a_reply_is_found_by_the_words_of_the_question_it_answers(home):
    """"Still full of boxes!" says nothing of an apartment; the question it answers does. With
    exchange keys (views/evidence.py exchange_rows) the full-text search ranks the replies keyed
    with their questions among the turns, each key's hit standing for its reply."""
    from views.build import vector_store
    from views.evidence import EXCHANGE_KIND

    question = "What state was the new apartment in?"

    def asked(**update) -> tuple[list[str], object]:
        ctx = compile_context(question, "tomasz", home=home, scope="team", config=QueryConfig().model_copy(update=update))
        routes = {s["name"]: s["entry_ids"] for s in read_log(home)[-1]["plan"]["steps"] if s["step"] == "route"}
        return routes["fulltext"], ctx

    keys = vector_store(home).search(text=question, principals=["tomasz"], scope="team", k=5, kinds=(EXCHANGE_KIND,))
    assert keys and keys[0]["source_ref"] == "ET1:2" and keys[0]["text"].startswith("Elena: Hi Tomasz!")
    reply = keys[0]["entry_id"]
    without, _ = asked(exchange_fulltext=False)
    assert reply not in without  # no word of the question is in the reply itself
    found, ctx = asked(exchange_fulltext=True)
    assert reply in found[:2]
    item = next(it for it in ctx.items if reply in it.entry_ids)
    assert "Still full of boxes!" in item.text
    # a key is never shown: every item is the ledger's turns
    assert not any(it.kind == EXCHANGE_KIND or "apartment? Tomasz:" in it.text for it in ctx.items)


def test_the_facts_route_brings_the_turns_its_claims_were_drawn_from_and_leaves_the_vector_route_as_it_was(home):
    """Balanced runs the facts route by vectors (candidates for the learned order): its hits are
    the turns of the claims' own search, read through the evidence rows held in memory, and the
    vector route finds what it finds without it."""
    from query.config import EVIDENCE_KINDS
    from views.build import vector_store
    from views.embedder_onnx import question_embedder
    from views.evidence import CLAIM_KIND

    question = "Where does Elena work these days?"

    def routes(config: QueryConfig) -> dict[str, list[str]]:
        compile_context(question, "tomasz", home=home, scope="team", config=config)
        steps = read_log(home)[-1]["plan"]["steps"]
        return {s["name"]: s["entry_ids"] for s in steps if s["step"] == "route"}

    balanced = QueryConfig()
    assert balanced.facts_weight > 0 and not balanced.facts_fulltext
    together = routes(balanced)
    assert set(together) >= {"fulltext", "vector", "facts/vector"} and "facts/fulltext" not in together
    # the vector route is the one a compile without the facts route searches
    assert together["vector"] == routes(balanced.model_copy(update={"facts_weight": 0.0}))["vector"]
    # the facts route: the claims' own search, each hit standing for the turn it was drawn from
    store = vector_store(home)
    vector = question_embedder().encode([question])[0]
    claims = store.search(vector=vector, principals=["tomasz"], scope="team", k=balanced.vector_k, kinds=(CLAIM_KIND,))
    drawn_from = list(dict.fromkeys(h["entry_id"] for h in claims))
    turns = {r["entry_id"] for r in store.entry_rows(entry_ids=drawn_from, principals=["tomasz"], scope="team", kinds=EVIDENCE_KINDS)}
    assert together["facts/vector"] == [e for e in drawn_from if e in turns]
    assert together["facts/vector"], "the sample home's claims about Elena's work lead to turns"
