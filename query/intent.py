"""Which facts a question asks for: the predicates its words name, through the same phrasings
the clause extractor reads (claims/lexicon.toml) and the same lemmas (claims/nlp.py), so "Where
does Elena work?" asks for `works_at` ("work" is a lemma of "work at", "works for", ...) and
"Who is her sister?" for `has_relative`.

Two kinds of claims are not facts to show unasked: `mentions` (that a name occurs in a turn)
never is one, and derived analytics (centrality, community: computed by dreaming, said by no
one) only when the question asks about importance or groups.
"""

from __future__ import annotations

import functools

from claims.lexicon import lexicon
from claims.nlp import lemma, split_words
from claims.ontology import ONTOLOGY

# Never a line of "What holds now": a name occurring in a turn is not a fact about anyone.
NOT_FACTS = frozenset({"mentions"})
# What a question about importance or groups says ("Who is most central in Elena's circle?").
ANALYTICS_WORDS = frozenset(
    "important importance central centre center influential influence popular connected hub "
    "community communities circle circles cluster clusters".split()
)
# Words that name no predicate (lemmas): question words, pronouns, auxiliaries, articles.
_STOP = frozenset(
    "a an the i me my you your he she her his it its we our they their be do have will would can could "
    "to of in on at for with and or what when where who whom which why how now then this that there "
    "subject subject's".split()
)


def _content_lemmas(text: str) -> set[str]:
    return {lemma(w) for w in split_words(text) if len(w) > 1} - _STOP


@functools.cache
def predicate_lemmas() -> dict[str, tuple[frozenset[str], frozenset[str]]]:
    """Per predicate: (the lemmas of its name and description, those of its lexicon phrasings
    and relation nouns). A word of the name says more: "work" names works_at, and also occurs
    in phrasings of created ("worked on") and practices."""
    own = {name: _content_lemmas(f"{name.replace('_', ' ')} {p.description}") for name, p in ONTOLOGY.items()}
    phrased: dict[str, set[str]] = {name: set() for name in ONTOLOGY}
    lex = lexicon()
    for frame in lex.frame:
        for phrase in frame.phrases:
            phrased[frame.predicate] |= _content_lemmas(phrase)
    for predicate, nouns in lex.relations.model_dump().items():
        phrased[predicate] |= {lemma(n) for n in nouns}
    return {name: (frozenset(own[name]), frozenset(phrased[name])) for name in ONTOLOGY}


def asked(question: str) -> dict[str, int]:
    """predicate -> how strongly the question names it: two per lemma of its name or description,
    one per lemma of a phrasing (only predicates it names)."""
    said = _content_lemmas(question)
    scores = {name: 2 * len(said & own) + len(said & phrased) for name, (own, phrased) in predicate_lemmas().items()}
    return {name: n for name, n in scores.items() if n}


def wants_analytics(question: str) -> bool:
    return bool(set(split_words(question)) & ANALYTICS_WORDS)


def shown(predicate: str, question: str) -> bool:
    """Whether a claim of ``predicate`` may be a fact line for this question."""
    if predicate in NOT_FACTS:
        return False
    p = ONTOLOGY.get(predicate)
    return not (p is not None and p.derived and not wants_analytics(question))
