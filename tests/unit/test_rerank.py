"""The learned order of the fused hits (query/rerank.py): its features, what it keeps in fused
order, and the ranker files it accepts."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from memc.ids import entity_id
from query.config import PRESETS, QueryConfig
from query.rerank import FEATURES, RANKERS_DIR, Ranker, collecting, features, load_ranker, rerank


def turn(eid: str, actor: str, text: str, session: str = "s1") -> dict:
    return {"entry_id": eid, "actor": actor, "text": f"{actor}: {text}", "scope": "c1", "session_id": session, "kind": "message"}


def session(*turns: dict) -> dict[str, list[dict]]:
    """Every turn's window: the whole session here, numbered as query/windows.py numbers it."""
    rows = [dict(t, turn_no=i, session_turns=len(turns)) for i, t in enumerate(turns)]
    return {t["entry_id"]: rows for t in rows}


def slot(hit: dict, score: float, **ranks: int) -> dict:
    return {"hit": hit, "score": score, "ranks": ranks}


ASK = turn("e1", "Tomasz", "What do you do on weekends?")
REPLY = turn("e2", "Elena", "Mostly pottery and long walks by the river with my sister")
OTHER = turn("e3", "Tomasz", "Nice.")


def test_features_read_the_routes_the_session_and_the_speakers():
    windows = session(ASK, REPLY, OTHER)
    ranked = [slot(ASK, 1 / 31, fulltext=0), slot(REPLY, 0.2 / 36, vector=5, **{"facts/vector": 2})]
    x = features(ranked, windows, {entity_id("c1", "Elena"): "Elena"}, rrf_k=30)
    ask, reply = (dict(zip(FEATURES, row)) for row in x)
    assert ask["fulltext"] == pytest.approx(30 / 31) and ask["vector"] == 0
    assert reply["vector"] == pytest.approx(30 / 36) and reply["fulltext"] == 0
    assert ask["fused"] == pytest.approx(30 / 31)
    # the reply's turn before is the hit that asks: its fused score, and that it asks
    assert reply["prev"] == pytest.approx(30 / 31) and reply["asks_prev"] == 1 and reply["asks"] == 0
    assert ask["next"] == pytest.approx(0.2 * 30 / 36) and ask["asks"] == 1 and ask["prev"] == 0
    # the speaker prefix of the index is not counted as the turn's words
    assert reply["words"] == pytest.approx(math.log1p(len(REPLY["text"].split()) - 1))
    # Elena is named: her turn is the named speaker's, Tomasz's the other one's
    assert (reply["speaker_named"], reply["other_named"]) == (1, 0)
    assert (ask["speaker_named"], ask["other_named"]) == (0, 1)
    assert (ask["position"], reply["position"]) == (0, pytest.approx(1 / 3))
    # a claim drawn from the reply was the facts route's third hit
    assert reply["facts_vector"] == pytest.approx(30 / 33) and ask["facts_vector"] == 0


def test_no_speaker_named_is_neither_feature_and_a_hit_without_a_session_has_no_neighbours():
    doc = {"entry_id": "d1", "actor": None, "text": "A note on the move", "scope": "c1", "kind": "document"}
    x = features([slot(doc, 0.5, fulltext=3)], {}, {}, rrf_k=30)
    row = dict(zip(FEATURES, x[0]))
    assert row["prev"] == row["next"] == row["asks_prev"] == row["position"] == 0
    assert row["speaker_named"] == row["other_named"] == 0
    # a document is nobody's turn: not the other speaker's when the question names one
    x = features([slot(doc, 0.5, fulltext=3), slot(REPLY, 0.2, vector=1)], {}, {entity_id("c1", "Elena"): "Elena"}, rrf_k=30)
    assert dict(zip(FEATURES, x[0]))["other_named"] == 0 and dict(zip(FEATURES, x[1]))["speaker_named"] == 1


def ranker(coef: dict[str, float]) -> Ranker:
    n = len(FEATURES)
    return Ranker(name="t", mean=np.zeros(n), scale=np.ones(n), coef=np.array([coef.get(f, 0.0) for f in FEATURES]), intercept=0.0)


def test_the_first_items_keep_their_fused_order_and_the_rest_follow_the_ranker():
    hits = [turn(f"e{i}", "Elena", "word " * i, session=f"s{i}") for i in range(1, 6)]
    ranked = [slot(h, 1.0 / (31 + i), fulltext=i) for i, h in enumerate(hits)]
    by_length = ranker({"words": 1.0})  # longer turns first
    order = [s["hit"]["entry_id"] for s in rerank(ranked, {}, {}, ranker=by_length, keep=2, rrf_k=30)]
    assert order == ["e1", "e2", "e5", "e4", "e3"]
    assert rerank(ranked, {}, {}, ranker=None, keep=2, rrf_k=30) is ranked
    # ties keep the fused order
    flat = ranker({})
    assert [s["hit"]["entry_id"] for s in rerank(ranked, {}, {}, ranker=flat, keep=0, rrf_k=30)] == [h["entry_id"] for h in hits]


def test_collecting_records_every_compiles_features_without_changing_the_order():
    ranked = [slot(ASK, 1 / 31, fulltext=0), slot(REPLY, 1 / 32, fulltext=1)]
    with collecting() as got:
        assert rerank(ranked, session(ASK, REPLY), {}, ranker=None, keep=2, rrf_k=30) is ranked
    assert [ids for ids, _ in got] == [["e1", "e2"]]
    assert got[0][1].shape == (2, len(FEATURES))
    assert rerank(ranked, {}, {}, ranker=None, keep=2, rrf_k=30) is ranked  # the block is over: nothing collected


def test_the_shipped_ranker_loads_and_only_the_balanced_preset_uses_it():
    shipped = load_ranker(QueryConfig().ranker)
    assert shipped.coef.shape == (len(FEATURES),)
    data = json.loads((RANKERS_DIR / f"{QueryConfig().ranker}.json").read_text())
    assert data["fitted"]["preset"] == "balanced" and set(data["cross_validated"]) >= {"1000", "2000"}
    assert PRESETS["balanced"].ranker == QueryConfig().ranker
    assert PRESETS["fast"].ranker is None and PRESETS["thorough"].ranker is None
    # fitted on the routes the preset runs: a setting it was fitted with is the preset's own
    for name, value in data["fitted"]["settings"].items():
        assert getattr(PRESETS["balanced"], name) == value, name
    # `--set ranker=` turns it off; a name is a file name or path, nothing else
    assert not QueryConfig.model_validate({"ranker": ""}).ranker
    with pytest.raises(ValueError, match="ranker"):
        QueryConfig.model_validate({"ranker": "linear 1; rm"})


def test_a_ranker_file_is_checked_before_it_is_used(tmp_path):
    good = ranker({"words": 1.0}).to_dict()
    with pytest.raises(ValueError, match="features"):
        Ranker.from_dict("x", {**good, "features": list(FEATURES)[:-1]})
    with pytest.raises(ValueError, match="coef must be"):
        Ranker.from_dict("x", {**good, "coef": [float("nan")] * len(FEATURES)})
    with pytest.raises(ValueError, match="scale must be positive"):
        Ranker.from_dict("x", {**good, "scale": [0.0] * len(FEATURES)})
    with pytest.raises(ValueError, match="intercept"):
        Ranker.from_dict("x", {**good, "intercept": "high"})
    with pytest.raises(ValueError, match="no ranker 'nope'.*shipped: .*linear-2"):
        load_ranker("nope")
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    with pytest.raises(ValueError, match="broken.json: not JSON"):
        load_ranker(str(broken))
    path = tmp_path / "mine.json"
    path.write_text(json.dumps({"ranker": good}))
    assert load_ranker(str(path)).coef.tolist() == good["coef"]
