"""The LLM extractor over real HTTP against a scripted OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest

from claims.extract import ExtractorError, active_extractor, extract
from claims.extractors.llm import LLMConfig, llm_extractor
from fake_llm import FakeLLM, Reply, claims_answer, completion

T = datetime(2024, 5, 14, 9, 30, tzinfo=timezone.utc)
TEXT = "Big news: I moved to Berlin last month! Also my sister Ana visits on Friday."


def entry(content=TEXT, *, visibility=("elena", "tomasz")) -> dict:
    return {
        "seq": 7, "entry_id": "e_llm", "kind": "message", "scope": "team", "actor": "Elena", "content": content,
        "valid_at": T, "recorded_at": T, "source_ref": "ET2:1", "visibility": list(visibility), "confidence": 1.0,
        "attributes": None,
    }  # fmt: skip


def cfg(fake: FakeLLM, **kw) -> LLMConfig:
    return LLMConfig(base_url=fake.base_url, model="fake-model", api_key="sk-test", **{"timeout_s": 2.0, "max_retries": 2, "backoff_s": 0.01, **kw})


GOOD = {"subject": "Elena", "predicate": "lives_in", "object": "Berlin", "quote": "I moved to Berlin last month", "time_phrase": "last month", "confidence": 0.95}


def test_good_json_becomes_validated_claims_with_resolved_time():
    with FakeLLM(claims_answer(GOOD, {"subject": "Elena", "predicate": "has_relative", "object": "Ana", "quote": "my sister Ana"})) as fake:
        r = extract([entry()], llm_extractor(cfg(fake)))
        req = fake.requests[0]
    assert req["path"] == "/v1/chat/completions" and req["auth"] == "Bearer sk-test"
    assert req["body"]["model"] == "fake-model" and req["body"]["response_format"] == {"type": "json_object"}
    assert json.loads(req["body"]["messages"][1]["content"])["text"] == TEXT
    assert r.rejections.num_rows == 0, r.rejections.to_pylist()
    by = {c["predicate"]: c for c in r.claims.to_pylist()}
    assert by["lives_in"]["valid_at"] == datetime(2024, 4, 1, tzinfo=timezone.utc)  # resolved here, not by the model
    assert by["lives_in"]["extractor"] == "llm" and by["lives_in"]["extractor_version"] == "0.3.2+fake-model"
    assert by["lives_in"]["confidence"] == 0.95 and by["lives_in"]["visibility"] == ["elena", "tomasz"]
    assert by["has_relative"]["object_id"] is not None


def test_a_reply_is_sent_with_the_question_before_it_and_its_claim_checked_there():
    # Two turns of one session: the reply goes out with the turn before, and the model's claim
    # joining the question's words with the answer's passes the same validators as the rules'.
    ask = dict(entry("Lovely photo! How often do you go sailing?"), entry_id="e_q", seq=6, actor="Tomasz", session_id="s9")
    reply = dict(entry("Twice a month, weather allowing."), session_id="s9")
    good = {"subject": "Elena", "predicate": "practices", "object": "go sailing Twice a month", "quote": "Twice a month",
            "question_entry_id": "e_q", "question_quote": "How often do you go sailing?"}  # fmt: skip
    forged = dict(good, object="go rowing Twice a month")  # the question does not say it
    with FakeLLM(claims_answer(), claims_answer(good, forged)) as fake:
        r = extract([ask, reply], llm_extractor(cfg(fake)))
        sent = [json.loads(req["body"]["messages"][1]["content"]) for req in fake.requests]
    assert "turns_before" not in sent[0]  # the session's first turn
    assert sent[1]["turns_before"] == [{"entry_id": "e_q", "speaker": "Tomasz", "text": ask["content"]}]
    (c,) = r.claims.to_pylist()
    assert (c["object"], c["question_entry_id"], c["question_quote"]) == ("go sailing Twice a month", "e_q", "How often do you go sailing?")
    (rej,) = r.rejections.to_pylist()
    assert rej["validator"] == "provenance" and "go rowing" in rej["reason"]
    # Without a session, or after a turn fewer people saw, a turn goes alone; after one's own turn,
    # with that turn only (nothing before it).
    alone = [dict(ask, session_id=None), dict(reply, session_id=None)]
    own = [ask, reply, dict(reply, entry_id="e_2", seq=8)]
    private = [dict(ask, visibility=["tomasz"]), reply]
    for turns, sent_with in ((alone, [[], []]), (own, [[], ["e_q"], ["e_llm"]]), (private, [[], []])):
        with FakeLLM() as fake:
            extract(turns, llm_extractor(cfg(fake)))
            bodies = [json.loads(req["body"]["messages"][1]["content"]) for req in fake.requests]
            assert [[t["entry_id"] for t in b.get("turns_before", [])] for b in bodies] == sent_with


def test_a_pictures_caption_is_sent_and_a_claim_may_quote_it():
    # The caption goes with the turn; the model's shared_photo quotes it and passes provenance,
    # a quote made of the text and the caption together does not.
    pictured = dict(entry("Look what I finished!"), attributes=json.dumps({"image_caption": "a photo of a cedar canoe on a lake"}))
    good = {"subject": "Elena", "predicate": "shared_photo", "object": "a cedar canoe on a lake", "quote": "a photo of a cedar canoe on a lake"}
    across = dict(good, object="finished", quote="finished! a photo")
    with FakeLLM(claims_answer(good, across)) as fake:
        r = extract([pictured], llm_extractor(cfg(fake)))
        sent = json.loads(fake.requests[0]["body"]["messages"][1]["content"])
    assert sent["picture_caption"] == "a photo of a cedar canoe on a lake"
    (c,) = r.claims.to_pylist()
    assert (c["predicate"], c["object"], c["quote"]) == ("shared_photo", "a cedar canoe on a lake", "a photo of a cedar canoe on a lake")
    (rej,) = r.rejections.to_pylist()
    assert rej["validator"] == "provenance" and "verbatim" in rej["reason"]
    with FakeLLM() as fake:
        extract([entry()], llm_extractor(cfg(fake)))
        assert "picture_caption" not in json.loads(fake.requests[0]["body"]["messages"][1]["content"])


def test_an_it_is_read_by_the_speakers_turn_before_and_checked_there():
    # "It" in the third turn names what the speaker's own first turn named: the model says which
    # turn, and the provenance validator checks the subject in it (as for the clause extractor).
    turns = [
        dict(entry("Yay! I completed my first wooden canoe."), entry_id="e_1", seq=1, session_id="s3"),
        dict(entry("Oh nice! What is it made of?"), entry_id="e_2", seq=2, actor="Tomasz", session_id="s3"),
        dict(entry("It's a blend of cedar and walnut!"), entry_id="e_3", seq=3, session_id="s3"),
    ]
    good = {"subject": "Elena's first wooden canoe", "predicate": "described_as", "object": "blend of cedar and walnut", "quote": "It's a blend of cedar and walnut", "subject_entry_id": "e_1"}
    unnamed = dict(good, subject="Elena's first kayak")  # the turn does not name it
    with FakeLLM(claims_answer(), claims_answer(), claims_answer(good, unnamed)) as fake:
        r = extract(turns, llm_extractor(cfg(fake)))
        third = json.loads(fake.requests[2]["body"]["messages"][1]["content"])
    assert [t["entry_id"] for t in third["turns_before"]] == ["e_1", "e_2"]
    (c,) = r.claims.to_pylist()
    assert (c["subject"], c["subject_entry_id"], c["source_entry_id"]) == ("Elena's first wooden canoe", "e_1", "e_3")
    (rej,) = r.rejections.to_pylist()
    assert rej["validator"] == "provenance" and "not named in entry e_1" in rej["reason"]


def _rejections(*replies: Reply, content=TEXT, **kw) -> list[dict]:
    with FakeLLM(*replies) as fake:
        r = extract([entry(content)], llm_extractor(cfg(fake, **kw)))
    assert r.claims.num_rows == 0, r.claims.to_pylist()
    return r.rejections.to_pylist()


def test_malformed_json_is_a_schema_rejection_with_the_raw_answer():
    (rej,) = _rejections(completion('{"claims": [ {"subject": "Elena", '))
    assert rej["validator"] == "schema" and "not valid JSON" in rej["reason"]
    assert '"subject": "Elena"' in json.loads(rej["proposal"])["answer"]
    (rej,) = _rejections(claims_answer({"subject": "Elena", "predicate": "lives_in"}))
    assert rej["validator"] == "schema" and "object" in rej["reason"] and "quote" in rej["reason"]


def test_hallucinated_quote_and_unsupported_fact_are_rejected_by_provenance():
    (rej,) = _rejections(claims_answer({**GOOD, "quote": "I moved to Berlin with my husband"}))
    assert rej["validator"] == "provenance" and "verbatim" in rej["reason"]
    (rej,) = _rejections(claims_answer({**GOOD, "object": "Munich", "time_phrase": None}))
    assert rej["validator"] == "provenance" and "not supported" in rej["reason"]


def test_reported_speech_goes_through_the_same_validators():
    said = "Tomasz says my sister Ana moved to Berlin last month"
    with FakeLLM(claims_answer({**GOOD, "subject": "Ana", "quote": said, "asserted_by": "Tomasz"})) as fake:
        r = extract([entry(said)], llm_extractor(cfg(fake)))
    assert r.rejections.num_rows == 0, r.rejections.to_pylist()
    (claim,) = r.claims.to_pylist()
    assert claim["asserted_by"] == "Tomasz" and claim["subject"] == "Ana"
    (rej,) = _rejections(claims_answer({**GOOD, "asserted_by": "Jonas"}))
    assert rej["validator"] == "provenance" and "asserted_by 'Jonas'" in rej["reason"]


def test_visibility_broader_than_the_source_is_rejected_by_policy():
    (rej,) = _rejections(claims_answer({**GOOD, "visibility": ["public"]}))
    assert rej["validator"] == "policy" and "broader" in rej["reason"]


def test_a_slow_answer_times_out_and_is_retried():
    with FakeLLM(Reply(delay=1.5, body={}), claims_answer(GOOD)) as fake:
        r = extract([entry()], llm_extractor(cfg(fake, timeout_s=0.3)))
        assert len(fake.requests) == 2
    assert r.claims.num_rows == 1


def test_timeouts_past_the_retry_budget_fail_loudly():
    slow = Reply(delay=1.0, body={})
    with FakeLLM(slow, slow, default=slow) as fake:
        with pytest.raises(ExtractorError, match="failed after 1 retries"):
            extract([entry()], llm_extractor(cfg(fake, timeout_s=0.2, max_retries=1)))
        assert len(fake.requests) == 2


def test_429_with_retry_after_is_honoured_then_succeeds():
    with FakeLLM(Reply(429, {"error": {"message": "rate limited"}}, headers={"Retry-After": "1"}), claims_answer(GOOD)) as fake:
        r = extract([entry()], llm_extractor(cfg(fake, backoff_s=0.0)))
        gap = fake.requests[1]["at"] - fake.requests[0]["at"]
    assert r.claims.num_rows == 1
    assert gap >= 0.95, f"retried after {gap:.2f}s, before the server's Retry-After of 1 s"


def test_5xx_is_retried_with_backoff_and_gives_up_cleanly():
    with FakeLLM(Reply(503, {"error": "busy"}), Reply(500, "oops"), claims_answer(GOOD)) as fake:
        assert extract([entry()], llm_extractor(cfg(fake))).claims.num_rows == 1
        assert len(fake.requests) == 3
    with FakeLLM(default=Reply(502, "bad gateway")) as fake:
        with pytest.raises(ExtractorError, match="LLM server"):
            extract([entry()], llm_extractor(cfg(fake, max_retries=1)))


def test_configuration_from_the_environment(monkeypatch):
    monkeypatch.delenv("MEMC_LLM_BASE_URL", raising=False)
    with pytest.raises(ExtractorError, match="MEMC_LLM_BASE_URL"):
        active_extractor("llm")
    monkeypatch.setenv("MEMC_LLM_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("MEMC_LLM_MODEL", "acme/tiny:7b")
    monkeypatch.setenv("MEMC_EXTRACTOR", "llm")
    assert active_extractor().key == "llm-0.3.2+acme_tiny_7b"  # building it opens no connection
    monkeypatch.setenv("MEMC_EXTRACTOR", "oracle")
    with pytest.raises(ExtractorError, match="unknown extractor 'oracle'"):
        active_extractor()
