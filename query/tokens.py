"""Token counting with a real tokenizer: the word-piece tokenizer shipped with the embedding model.

Loaded from its tokenizer.json alone (~40 ms, no torch import), so counting stays cheap on the
compile path. Agents' LLMs tokenize differently; word pieces run within about 10-20 % of common
BPE vocabularies on English text, which is close enough for a budget.

Counts are cached per word: each space- or newline-separated run of a text. With the BERT
normalizer (every change it makes is to one character at a time: case, accents, control
characters, whitespace to a space, spaces around CJK characters) and the BERT pre-tokenizer
(splits on whitespace, then on punctuation) no token spans a space or a newline, so a text's
count is the sum of its words' counts, each counted by the tokenizer. The packer counts every
line it may keep, then the whole rendered context: after the first contexts nearly every word
is a look-up (~3 us a line, where the tokenizer takes ~35-40 us a line of ~75 characters:
docs/benchmarks.md). The cache is keyed by each word's hash (Python's, salted per process),
never the word itself (a process must not keep erased text around as cache keys), and is used
only when the tokenizer is of that kind; any other tokenizer counts the whole text.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable
from threading import Lock

from tokenizers import Tokenizer

from views.embedder import model_dir

_CACHE_WORDS = 65_536  # then the cache starts again (a context has a few hundred distinct words)
_cache: dict[int, int] = {}
_lock = Lock()


@functools.lru_cache(maxsize=1)
def _tokenizer():
    tk = Tokenizer.from_file(str(model_dir() / "tokenizer.json"))
    # The shipped config pads and truncates to the model's window; a budget needs the full count.
    tk.no_padding()
    tk.no_truncation()
    return tk


@functools.lru_cache(maxsize=1)
def _splits_on_spaces() -> bool:
    """Whether a space or a newline always separates tokens, and each side tokenizes alone as it
    does in the whole: a BERT normalizer that cleans text (every whitespace character becomes a
    space) followed by the BERT pre-tokenizer (splits on whitespace), with no added tokens that
    could match across a space."""
    cfg = json.loads(_tokenizer().to_str())
    norm, pre = cfg.get("normalizer") or {}, cfg.get("pre_tokenizer") or {}
    added = [t for t in cfg.get("added_tokens") or [] if not t.get("special")]
    return norm.get("type") == "BertNormalizer" and norm.get("clean_text") is True and pre.get("type") == "BertPreTokenizer" and not added


def _count(text: str) -> int:
    return len(_tokenizer().encode(text, add_special_tokens=False).ids)


def _words(text: str) -> list[str]:
    return [w for w in text.replace("\n", " ").split(" ") if w]


def _counted(words: Iterable[str]) -> dict[str, int]:
    """The counts of these words, the ones not cached counted in one call of the tokenizer
    (``encode_batch_fast``: no offsets, split over the cores by the tokenizer's own threads)."""
    global _cache
    found, todo = {}, {}
    cache = _cache
    for w in words:
        n = cache.get(hash(w))
        if n is not None:
            found[w] = n
        else:
            todo[w] = None
    if todo:
        fresh = dict(zip(todo, (len(e.ids) for e in _tokenizer().encode_batch_fast(list(todo), add_special_tokens=False))))
        with _lock:
            if len(_cache) + len(fresh) > _CACHE_WORDS:
                _cache = {}  # readers holding the old table still read it whole
            _cache.update((hash(w), n) for w, n in fresh.items())
        found |= fresh
    return found


def count_tokens(text: str) -> int:
    if not _splits_on_spaces():
        return _count(text)
    words = _words(text)
    counts = _counted(words)
    return sum(counts[w] for w in words)


def prime(texts: Iterable[str]) -> None:
    """Count in one call of the tokenizer every word of ``texts`` not counted yet, so that the
    counts asked for next are look-ups (the packer primes with every line it may count)."""
    if _splits_on_spaces():
        _counted({w: None for text in texts for w in _words(text)})


def clear_cache() -> None:
    global _cache
    with _lock:
        _cache = {}
