"""The language pipeline of the clause extractor: spaCy's English tokenizer and its rule-based
sentencizer, and the English lemma lookup table of the spacy-lookups-data package (installed
with memc: nothing is downloaded at run time, no model hub is asked).

No trained pipeline: the small English model is not published on PyPI by its authors, and a
tagger and parser would cost most of the extraction pass's budget (2,000 entries/s on two
cores). The extractor reads lemmas and its lexicon (claims/lexicon.toml) instead of parts of
speech: a frame names the words that carry a predicate, so it also says where the verb is.

Lemmas are looked up here, per word, rather than by spaCy's lookup lemmatizer run over every
turn: the extractor asks for the lemma of a few words of a clause, and the frames are matched
on the lower-case forms of their lemmas (``forms``), so no turn pays for lemmatizing every
token (17% of the pass with the lemmatizer in the pipeline, benchmarks/bench_extract.py).
"""

from __future__ import annotations

import functools
import itertools
from collections import defaultdict
from typing import Any

# A frame of four words of about ten forms each would be 10,000 patterns; none comes close
# (the lexicon's largest has 96), and a phrase beyond this is a mistake in the lexicon.
MAX_VARIANTS = 2_000


@functools.cache
def pipeline() -> Any:
    """The one pipeline of this process: tokenizer and sentencizer (spaCy loads in ~1.5 s)."""
    import spacy  # lazy: only the extraction pass needs it

    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    return nlp


@functools.cache
def lemma_table() -> dict[str, str]:
    """form -> lemma, lower case (41,582 English forms; a base form is not listed)."""
    import spacy_lookups_data  # lazy: with the pipeline
    import srsly

    table = srsly.read_gzip_json(spacy_lookups_data.get_file("en_lemma_lookup.json.gz"))
    return {form.lower(): lemma.lower() for form, lemma in table.items()}


def lemma(word: str) -> str:
    """The lemma of one word, lower-cased ("Thinking" and "thinks" -> "think")."""
    low = word.lower()
    return lemma_table().get(low, low)


@functools.cache
def _pre_tokenizer() -> Any:
    from tokenizers.pre_tokenizers import BertPreTokenizer  # lazy: 10 ms; spaCy would be 1.5 s

    return BertPreTokenizer()


def split_words(text: str) -> list[str]:
    """The alphabetic words of ``text``, case-folded, split at whitespace and punctuation as the
    BERT pre-tokenizer splits (the one the packer counts with): the words a question or a task
    is matched on at ask time, where spaCy's tokenizer is not loaded ("Élodie's re-deploy, v4"
    -> élodie, s, re, deploy)."""
    return [w for w, _ in _pre_tokenizer().pre_tokenize_str(text.casefold()) if w.isalpha()]


def lemmas(phrase: str) -> tuple[str, ...]:
    """The lemmas of a phrase's tokens, as the extractor reads them in a turn ("can't" -> ca, not)."""
    return tuple(lemma(t.text) for t in pipeline().tokenizer(phrase))


@functools.cache
def _forms_by_lemma() -> dict[str, frozenset[str]]:
    out: dict[str, set[str]] = defaultdict(set)
    for form, lem in lemma_table().items():
        out[lem].add(form)
    return {lem: frozenset(forms | {lem}) for lem, forms in out.items()}


def forms(word: str) -> frozenset[str]:
    """Every lower-case form whose lemma is ``word``'s ("move" -> move, moves, moved, moving)."""
    lem = lemma(word)
    return _forms_by_lemma().get(lem, frozenset({lem}))


def surface_variants(phrase: str) -> list[list[str]]:
    """The token sequences that read as ``phrase`` lemma by lemma: what a frame matches."""
    options = [sorted(forms(t.text)) for t in pipeline().tokenizer(phrase)]
    variants = [list(v) for v in itertools.islice(itertools.product(*options), MAX_VARIANTS + 1)]
    if len(variants) > MAX_VARIANTS:
        raise ValueError(f"the phrase {phrase!r} has more than {MAX_VARIANTS} forms: split it in claims/lexicon.toml")
    return variants


@functools.cache
def word_classes() -> dict[str, frozenset[str]]:
    """The base forms English can use as each part of speech ("noun", "verb", "adj", "adv"), from
    the same package's lemmatizer index (WordNet's lists): what a word may be, not what it is in a
    sentence ("tell" is a verb and a noun, "explore" only a verb, "car" only a noun)."""
    import spacy_lookups_data  # lazy: with the pipeline
    import srsly

    index = srsly.read_gzip_json(spacy_lookups_data.get_file("en_lemma_index.json.gz"))
    return {pos: frozenset(w.lower() for w in words) for pos, words in index.items()}
