"""Token counts primed in one batch are the counts of the lines one by one."""

from __future__ import annotations

import pytest

from query import tokens

LINES = [
    "  3. 2024-05-02 [S2:14] I moved to Kraków last spring, near the old market",
    "    > [S7:3] Ça va? We had crème brûlée and 抹茶 ice cream at the café!!",
    "      (superseded: Ana lives_in Porto -> Lyon by S9:1 since 2024-03-01; now Graz)",
    "antidisestablishmentarianism " * 3 + "x" * 120,  # a word past the word-piece limit: one [UNK]
    "tab\tseparated\u00a0and non-breaking",
]


@pytest.fixture
def fresh_cache():
    tokens.clear_cache()
    yield
    tokens.clear_cache()


def test_primed_counts_are_the_counts_one_by_one(fresh_cache, monkeypatch):
    one_by_one = [tokens.count_tokens(line) for line in LINES]
    whole = tokens.count_tokens("\n".join(LINES))
    tokens.clear_cache()
    tokens.prime(["\n".join(LINES[:2]), *LINES[2:], ""])

    def no_call(text: str) -> int:
        raise AssertionError(f"counted one by one after priming: {text!r}")

    monkeypatch.setattr(tokens, "_count", no_call)
    assert [tokens.count_tokens(line) for line in LINES] == one_by_one
    assert tokens.count_tokens("\n".join(LINES)) == whole == sum(one_by_one)


def test_priming_again_counts_nothing(fresh_cache, monkeypatch):
    tokens.prime(LINES)
    calls = []
    real = tokens._tokenizer()

    class Counting:
        def encode_batch_fast(self, lines, **kw):
            calls.append(list(lines))
            return real.encode_batch_fast(lines, **kw)

    monkeypatch.setattr(tokens, "_tokenizer", lambda: Counting())
    tokens.prime([*LINES, "a line not seen before"])
    assert calls == [["a line not seen before"]]
