"""`memc eval spans`: the span yardsticks of the extraction figures (evaluation/spans.py)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from cli.main import cli
from evaluation.spans import run_spans, span_claims, spans

TURNS = [
    {"conversation_id": "c1", "turn_id": "D1:1", "speaker": "Ana",
     "text": "We bake bread, play cards and sing. Rain brings calm."},
    {"conversation_id": "c1", "turn_id": "D1:2", "speaker": "Ben",
     "text": "That sounds lovely and I agree with every single word you wrote about the long summer evenings there!"},
    {"conversation_id": "c2", "turn_id": "D1:1", "speaker": "Cy", "text": "My dog Rex loves the beach."},
]  # fmt: skip


def test_spans_are_the_sentences_or_their_clauses():
    text = TURNS[0]["text"]
    assert list(spans(text, "sentence")) == [
        "We bake bread, play cards and sing.",
        "Rain brings calm.",
    ]
    assert list(spans(text, "clause")) == [
        "We bake bread", "play cards", "sing.", "Rain brings calm.",
    ]  # fmt: skip


def test_span_claims_keep_compact_spans_of_the_speaker():
    claims = span_claims(TURNS[0], "sentence")
    assert [(c["subject"], c["predicate"], c["object"], c["source_ref"]) for c in claims] == [
        ("Ana", "activity", "We bake bread, play cards and sing.", "D1:1"),
        ("Ana", "activity", "Rain brings calm.", "D1:1"),
    ]
    # only sentences that say I, me, my, we, us or our
    assert [c["object"] for c in span_claims(TURNS[0], "sentence", first_person=True)] == [claims[0]["object"]]
    # more than six content words: a sentence, not a fact (its first clause is short)
    assert span_claims(TURNS[1], "sentence") == []
    assert [c["object"] for c in span_claims(TURNS[1], "clause")] == ["That sounds lovely"]


def test_run_spans_adds_to_an_export_and_refuses_to_overwrite_it(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "conversations.jsonl").write_text("".join(json.dumps(t) + "\n" for t in TURNS))
    base = tmp_path / "obs"
    base.mkdir()
    real = {"subject": "Cy", "predicate": "has_pet", "object": "Rex", "source_ref": "D1:1"}
    (base / "c1.json").write_text("[]")
    (base / "c2.json").write_text(json.dumps([real]))

    result = run_spans(data, tmp_path / "out", unit="clause", add_to=base)
    assert (result["conversations"], result["turns"], result["span_claims"]) == (2, 3, 6)
    c2 = json.loads((tmp_path / "out" / "c2.json").read_text())
    assert c2[0] == real and [c["object"] for c in c2[1:]] == ["My dog Rex loves the beach."]

    with pytest.raises(ValueError, match="is the export it adds to"):
        run_spans(data, base, add_to=base)
    (base / "c2.json").unlink()
    out = CliRunner().invoke(cli, ["eval", "spans", str(data), "--out", str(tmp_path / "o2"), "--add-to", str(base)])
    assert out.exit_code == 1 and "c2.json: no export of c2" in out.output
