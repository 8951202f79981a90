"""Token counts by word (query/tokens.py) are the tokenizer's counts of the whole text."""

from __future__ import annotations

import pytest

from query import tokens

LINES = [
    "  3. 2024-05-02 [S2:14] I moved to Kraków last spring, near the old market",
    "    > [S7:3] Ça va? We had crème brûlée and 抹茶ice cream at the café!!",
    "      (superseded: Ana lives_in Porto -> Lyon by S9:1 since 2024-03-01; now Graz)",
    "antidisestablishmentarianism " * 3 + "x" * 120,  # a word past the word-piece limit: one [UNK]
    "tab\tseparated\u00a0and non-breaking,  two  spaces ",
    " leading and trailing spaces \u3000ideographic\u3000space",
    "e \u0301 a combining accent alone, an emoji 🙂 and a control\x07character",
]


@pytest.fixture
def fresh_cache():
    tokens.clear_cache()
    yield
    tokens.clear_cache()


class Counting:
    """The tokenizer, with the texts of each batch it is asked to count."""

    def __init__(self, real):
        self.real, self.batches = real, []

    def encode_batch_fast(self, texts, **kw):
        self.batches.append(list(texts))
        return self.real.encode_batch_fast(texts, **kw)


def test_counts_by_word_are_the_tokenizers_counts_of_the_whole_text(fresh_cache):
    whole = [tokens._count(line) for line in LINES]
    assert [tokens.count_tokens(line) for line in LINES] == whole
    assert tokens.count_tokens("\n".join(LINES)) == sum(whole)
    tokens.clear_cache()
    tokens.prime(["\n".join(LINES)])
    assert [tokens.count_tokens(line) for line in LINES] == whole


def test_primed_words_are_look_ups_and_only_new_words_are_counted(fresh_cache, monkeypatch):
    counting = Counting(tokens._tokenizer())
    monkeypatch.setattr(tokens, "_tokenizer", lambda: counting)
    tokens.prime(LINES)
    assert len(counting.batches) == 1
    counting.batches.clear()
    for line in LINES:
        tokens.count_tokens(line)
    assert counting.batches == []
    tokens.prime([*LINES, "kraków cafe Kraków brand-new"])
    assert counting.batches == [["kraków", "cafe", "brand-new"]]
