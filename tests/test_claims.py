"""The rule-based extractor and the validators that gate every proposal."""

from __future__ import annotations

from datetime import datetime, timezone

from claims.extract import RULES, Extractor, extract

T = datetime(2024, 5, 14, 9, 30, tzinfo=timezone.utc)


def entry(content: str, *, actor="Elena", visibility=("public",), entry_id="e_1", kind="message") -> dict:
    return {
        "seq": 1,
        "entry_id": entry_id,
        "kind": kind,
        "scope": "team",
        "actor": actor,
        "content": content,
        "valid_at": T,
        "recorded_at": T,
        "source_ref": "ET2:1",
        "visibility": list(visibility),
        "confidence": 1.0,
        "attributes": None,
    }


def test_rules_extract_typed_claims_with_verbatim_quotes():
    r = extract([entry("Big news: I moved to Berlin last month! I started working at Helio Labs.")])
    got = {(c["subject"], c["predicate"], c["object"]) for c in r.claims.to_pylist()}
    assert got == {("Elena", "lives_in", "Berlin"), ("Elena", "works_at", "Helio Labs")}
    for c in r.claims.to_pylist():
        assert c["quote"] in "Big news: I moved to Berlin last month! I started working at Helio Labs."
        assert c["cardinality"] == "functional" and c["source_entry_id"] == "e_1"
    assert r.rejections.num_rows == 0


def test_claim_ids_are_content_addressed():
    a = extract([entry("I live in Lisbon now.")]).claims.column("claim_id").to_pylist()
    b = extract([entry("I live in Lisbon now.")]).claims.column("claim_id").to_pylist()
    assert a == b and len(a) == 1


def _with(proposal: dict) -> Extractor:
    return Extractor("test", "1", lambda e: [proposal])


def _base(**kw) -> dict:
    p = dict(subject="Elena", predicate="lives_in", object="Berlin", valid_at=T, source_entry_id="e_1",
             quote="I moved to Berlin", visibility=["public"], confidence=0.8)
    p.update(kw)
    return p


def _rejected(proposal: dict, src=None) -> list[tuple[str, str]]:
    r = extract([src or entry("I moved to Berlin", visibility=("elena",))], _with(proposal))
    assert r.claims.num_rows == 0, r.claims.to_pylist()
    return [(x["validator"], x["reason"]) for x in r.rejections.to_pylist()]


def test_each_validator_rejects_with_its_reason():
    assert _rejected(_base(predicate="is_secretly"))[0][0] == "ontology"
    v, reason = _rejected(_base(quote="I moved to Paris", visibility=["elena"]))[0]
    assert v == "provenance" and "verbatim" in reason
    v, reason = _rejected(_base(visibility=["public"]))[0]
    assert v == "policy" and "broader" in reason
    assert _rejected(_base(visibility=["elena"], valid_at=datetime(1066, 1, 1, tzinfo=timezone.utc)))[0][0] == "temporal"
    v, reason = _rejected(_base(confidence=3.0))[0]
    assert v == "schema" and "confidence" in reason
    v, _ = _rejected(_base(source_entry_id="e_other", visibility=["elena"]))[0]
    assert v == "provenance"


def test_a_valid_proposal_passes_every_validator():
    r = extract([entry("I moved to Berlin", visibility=("elena",))], _with(_base(visibility=["elena"])))
    assert r.claims.num_rows == 1 and r.rejections.num_rows == 0
