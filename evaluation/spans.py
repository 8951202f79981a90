"""`memc eval spans DIR`: the yardsticks of the extraction pass's figures, made by copying spans.

Not an extractor: each short sentence (or clause) of a turn becomes an ``activity`` claim of its
speaker, its object the span itself, exported like `memc eval observations` does, so
../shared/eval/observation_score.py scores it the same way. Two uses:

- the trivial row of docs/extraction.md: first-person sentences of at most six content words
  (``--unit sentence --first-person``: a sentence that says I, me, my, we, us or our) show how cheap typed coverage is;
- the ceiling of copying: every short sentence and clause of every speaker, added to a real
  export (``--unit clause --add-to OBS``), bounds what any extractor whose objects are spans of
  one turn can reach on answer-bearing claims, however many claims a turn yields.

Sentences are spaCy's (claims/nlp.py); a clause is a stretch of a sentence between punctuation
or a coordinating word; content words are counted as the extractor counts an object's.
"""

from __future__ import annotations

import json
import shutil
from collections import defaultdict
from pathlib import Path
from typing import Any, Iterator, Literal

from claims.extractors.clauses import MAX_CONTENT_WORDS, content_words
from claims.nlp import pipeline
from evaluation.locomo import read_jsonl

Unit = Literal["sentence", "clause"]
_CLAUSE_BREAKS = {",", ";", ":", "-", "–", "—", "(", ")", "and", "but", "so"}
_FIRST_PERSON = {"i", "me", "my", "mine", "myself", "we", "us", "our", "ours", "ourselves"}


def spans(text: str, unit: Unit) -> Iterator[str]:
    """The sentences of ``text``, or the clauses of each, as they read in it."""
    for sent in pipeline()(text).sents:
        if unit == "sentence":
            yield sent.text
            continue
        start = sent.start
        for tok in sent:
            if tok.lower_ in _CLAUSE_BREAKS:
                if tok.i > start:
                    yield sent.doc[start : tok.i].text
                start = tok.i + 1
        if start < sent.end:
            yield sent.doc[start : sent.end].text


def span_claims(turn: dict[str, Any], unit: Unit, *, first_person: bool = False) -> list[dict[str, Any]]:
    """One ``activity`` claim of the turn's speaker per compact span (1 to 6 content words)."""
    out = []
    for span in spans(turn["text"], unit):
        if first_person and not any(w.split("'")[0] in _FIRST_PERSON for w in span.lower().split()):
            continue
        if 0 < len(content_words(span)) <= MAX_CONTENT_WORDS:
            out.append(
                {"subject": turn["speaker"], "predicate": "activity", "polarity": "assert", "object": span,
                 "quote": span, "source_ref": turn["turn_id"], "extractor": f"spans-{unit}"}
            )  # fmt: skip
    return out


def run_spans(
    data_dir: Path, out: Path, *, unit: Unit = "sentence", first_person: bool = False, add_to: Path | None = None
) -> dict[str, Any]:
    """Write ``<out>/<conversation_id>.json`` for every conversation of ``data_dir``: the span claims,
    after the claims of ``add_to``'s export of the same conversation when one is given."""
    by_conv: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for t in read_jsonl(Path(data_dir) / "conversations.jsonl"):
        by_conv[t["conversation_id"]].append(t)
    out = Path(out)
    if add_to is not None and out.resolve() == Path(add_to).resolve():
        raise ValueError(f"--out {out} is the export it adds to: write the sum to another folder")
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    n_spans = n_turns = 0
    for conv, turns in sorted(by_conv.items()):
        claims: list[dict[str, Any]] = []
        if add_to is not None:
            path = Path(add_to) / f"{conv}.json"
            if not path.exists():
                raise FileNotFoundError(f"{path}: no export of {conv} to add the spans to")
            claims = json.loads(path.read_text(encoding="utf-8"))
        for t in turns:
            made = span_claims(t, unit, first_person=first_person)
            claims.extend(made)
            n_spans += len(made)
        n_turns += len(turns)
        (out / f"{conv}.json").write_text(json.dumps(claims, indent=1, ensure_ascii=False))
    return {
        "unit": unit, "first_person": first_person, "added_to": str(add_to) if add_to else None,
        "conversations": len(by_conv), "turns": n_turns, "span_claims": n_spans,
        "span_claims_per_turn": round(n_spans / n_turns, 3) if n_turns else 0.0, "out": str(out),
    }  # fmt: skip


def render(result: dict[str, Any]) -> str:
    who = "first-person " if result["first_person"] else ""
    added = f", added to the claims of {result['added_to']}" if result["added_to"] else ""
    return (
        f"{result['span_claims']} {who}{result['unit']} spans of at most {MAX_CONTENT_WORDS} content words over "
        f"{result['turns']} turns ({result['span_claims_per_turn']:.3f} per turn){added}; exported to "
        f"{result['out']}/<conversation_id>.json; score them with ../shared/eval/observation_score.py "
        f"--claims-dir {result['out']}"
    )
