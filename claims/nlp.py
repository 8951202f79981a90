"""The language pipeline of the clause extractor: spaCy's English tokenizer, its rule-based
sentencizer and its lookup lemmatizer, whose tables come from the spacy-lookups-data package
(installed with memc: nothing is downloaded at run time, no model hub is asked).

No trained pipeline: the small English model is not published on PyPI by its authors, and a
tagger and parser would cost most of the extraction pass's budget (2,000 entries/s on two
cores). The extractor reads lemmas and its lexicon (claims/lexicon.toml) instead of parts of
speech: a frame names the words that carry a predicate, so it also says where the verb is.
"""

from __future__ import annotations

import functools
from typing import Any


@functools.cache
def pipeline() -> Any:
    """The one pipeline of this process (about 1.7 s to build: the lookup tables load)."""
    import spacy  # lazy: 1.7 s with the lookup tables; only the extraction pass needs it

    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    nlp.add_pipe("lemmatizer", config={"mode": "lookup"})
    nlp.initialize()
    return nlp


def lemmas(phrase: str) -> tuple[str, ...]:
    """The lemmas of a phrase, lower-cased, as the pipeline reads them in a turn."""
    return tuple(t.lemma_.lower() for t in pipeline()(phrase))
