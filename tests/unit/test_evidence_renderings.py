"""The evidence index's rows rendered again only where what they say changed (views/evidence.py,
``_Renderings``): a second rendering of the same home renders only its new turns, pairs and
claims, gives the rows a rendering from nothing gives, and holds no text of an erased turn once
it has rendered the home after the erasure."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pyarrow as pa

from views import evidence
from views.evidence import ENTRY_SCHEMA, index_rows

T0 = datetime(2026, 3, 1, tzinfo=timezone.utc)


def _entry(seq: int, actor: str, content: str, session: str = "s1") -> dict:
    return {
        "seq": seq, "entry_id": f"e{seq}", "recorded_at": T0, "valid_at": T0 + timedelta(minutes=seq), "kind": "message",
        "scope": "team", "session_id": session, "actor": actor, "content": content, "source_ref": f"r{seq}",
        "visibility": ["public"], "attributes": None,
    }  # fmt: skip


def _claim(n: int, subject: str, obj: str) -> dict:
    return {
        "claim_id": f"c{n}", "predicate": "lives_in", "subject": subject, "object": obj, "polarity": "assert",
        "cardinality": "functional", "valid_at": T0, "recorded_at": T0, "subject_id": f"ent_{subject}", "object_id": None,
        "scope": "team", "visibility": ["public"], "source_entry_id": f"e{n}", "source_seq": n,
    }  # fmt: skip


TURNS = [_entry(1, "Ines", "How was the plum cake?"), _entry(2, "Omar", "Lovely! Moist and tart."),
         _entry(3, "Ines", "Did you move to Lisbon?"), _entry(4, "Omar", "Yes, in May.")]  # fmt: skip
CLAIMS = [_claim(4, "Omar", "Lisbon")]


def _rows(turns: list[dict], claims: list[dict]) -> pa.Table:
    return index_rows(pa.Table.from_pylist(turns, schema=ENTRY_SCHEMA), pa.Table.from_pylist(claims))


def _fresh(turns: list[dict], claims: list[dict]) -> pa.Table:
    for kept in (evidence._ENTRY_TEXTS, evidence._EXCHANGE_TEXTS, evidence._CLAIM_TEXTS):
        kept.keep({})
    return _rows(turns, claims)


def test_a_second_rendering_renders_only_what_is_new(monkeypatch):
    first = _fresh(TURNS, CLAIMS)
    rendered: list[str] = []
    real_render, real_sentence = evidence.render, evidence.claim_sentence
    monkeypatch.setattr(evidence, "render", lambda entry: rendered.append(entry["content"]) or real_render(entry))
    monkeypatch.setattr(evidence, "claim_sentence", lambda claim: rendered.append(claim["object"]) or real_sentence(claim))
    assert _rows(TURNS, CLAIMS).equals(first) and rendered == []
    grown = [*TURNS, _entry(5, "Ines", "Where in Lisbon?"), _entry(6, "Omar", "Alfama.")]
    more = [*CLAIMS, _claim(6, "Omar", "Alfama")]
    got = _rows(grown, more)
    # the two new turns, the new pair (its question and reply), the new claim: nothing else
    assert sorted(rendered) == sorted(["Where in Lisbon?", "Alfama.", "Where in Lisbon?", "Alfama.", "Alfama"])
    monkeypatch.undo()
    assert got.equals(_fresh(grown, more))


def test_an_erased_turn_is_rendered_anew_and_its_text_is_not_held():
    _fresh(TURNS, CLAIMS)
    stub = [dict(t, content="[erased]") if t["seq"] == 2 else t for t in TURNS]
    got = _rows(stub, CLAIMS)
    assert got.equals(_fresh(stub, CLAIMS))
    _rows(stub, CLAIMS)
    held = [key for kept in (evidence._ENTRY_TEXTS, evidence._EXCHANGE_TEXTS) for key in kept._last]
    assert held and not any("Moist" in str(part) for key in held for part in key)
    assert not any("Moist" in text for text in got.column("text").to_pylist())
