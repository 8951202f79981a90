"""Token counting with a real tokenizer: the word-piece tokenizer shipped with the embedding model.

Loaded from its tokenizer.json alone (~40 ms, no torch import), so counting stays cheap on the
compile path. Agents' LLMs tokenize differently; word pieces run within about 10-20 % of common
BPE vocabularies on English text, which is close enough for a budget.

Counts are cached per line. The packer counts each line it may keep, then the whole rendered
context, which is made of those same lines: with the BERT normalizer and pre-tokenizer a token
never spans a newline (it is whitespace, a split point), so a text's count is the sum of its
lines' counts and the second count costs only cache look-ups. The cache is keyed by a digest of
the line, never the text itself (a process must not keep erased text around as cache keys), and
is used only when the tokenizer is of that kind; any other tokenizer counts the whole text.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections import OrderedDict
from collections.abc import Iterable
from threading import Lock

from tokenizers import Tokenizer

from views.embedder import model_dir

_CACHE_LINES = 16_384
_cache: "OrderedDict[bytes, int]" = OrderedDict()
_lock = Lock()


@functools.lru_cache(maxsize=1)
def _tokenizer():
    tk = Tokenizer.from_file(str(model_dir() / "tokenizer.json"))
    # The shipped config pads and truncates to the model's window; a budget needs the full count.
    tk.no_padding()
    tk.no_truncation()
    return tk


@functools.lru_cache(maxsize=1)
def _splits_on_newlines() -> bool:
    """Whether a newline always separates tokens: a BERT normalizer that cleans text (every
    whitespace character becomes a space) followed by the BERT pre-tokenizer (splits on
    whitespace), with no added tokens that could match across a line break."""
    cfg = json.loads(_tokenizer().to_str())
    norm, pre = cfg.get("normalizer") or {}, cfg.get("pre_tokenizer") or {}
    added = [t for t in cfg.get("added_tokens") or [] if not t.get("special")]
    return norm.get("type") == "BertNormalizer" and norm.get("clean_text") is True and pre.get("type") == "BertPreTokenizer" and not added


def _count(text: str) -> int:
    return len(_tokenizer().encode(text, add_special_tokens=False).ids)


def _key(line: str) -> bytes:
    return hashlib.blake2b(line.encode("utf-8", "surrogatepass"), digest_size=16).digest()


def _count_line(line: str) -> int:
    if not line:
        return 0
    key = _key(line)
    with _lock:
        n = _cache.get(key)
        if n is not None:
            _cache.move_to_end(key)
            return n
    n = _count(line)
    with _lock:
        _cache[key] = n
        if len(_cache) > _CACHE_LINES:
            _cache.popitem(last=False)
    return n


def count_tokens(text: str) -> int:
    if not _splits_on_newlines():
        return _count(text)
    return sum(_count_line(line) for line in text.split("\n"))


def prime(texts: Iterable[str]) -> None:
    """Count in one call of the tokenizer every line of ``texts`` not counted yet, so that the
    counts asked for next are look-ups. A compile's packer primes with every line it may count:
    at 100k entries ~74 lines a compile missed the cache, ~40 us each one by one (the normalizer
    and the pre-tokenizer's own work, ~3 ms a compile); one batch (``encode_batch_fast``: no
    offsets, split over the cores by the tokenizer's own threads) took about half of that."""
    if not _splits_on_newlines():
        return
    todo: dict[bytes, str] = {}
    for text in texts:
        for line in text.split("\n"):
            if line:
                todo.setdefault(_key(line), line)
    with _lock:
        todo = {k: line for k, line in todo.items() if k not in _cache}
    if not todo:
        return
    counts = [len(e.ids) for e in _tokenizer().encode_batch_fast(list(todo.values()), add_special_tokens=False)]
    with _lock:
        for key, n in zip(todo, counts):
            _cache[key] = n
        while len(_cache) > _CACHE_LINES:
            _cache.popitem(last=False)


def clear_cache() -> None:
    with _lock:
        _cache.clear()
