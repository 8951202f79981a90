"""The clause extractor (rules 0.3.0 on, versioned by claims/lexicon.toml): deterministic, no model,
read clause by clause.

Each turn is split into sentences and clauses (spaCy's tokenizer and sentencizer; claims/nlp.py),
and each clause is read in four steps:

1. Its subject: "I"/"we" is the speaker; a known name (or "my sister Ana") that person; "you"
   the other participant of a two-party session (their whereabouts and doings only); a clause
   that starts with a verb ("Just finished a painting") the speaker, as is each doing of a list
   after one ("We explored the caves, cooked on the fire and went on a night walk"). The
   speaker's own are subjects named per owner ("my son fell off his bike": "Ana's son"), and
   what they do or are is kept ("our turtles eat ...", "my old street was hit by a storm"). "he",
   "she", "it" and "they" stand for the one candidate named before them in the turn ("he" a
   person or pet of the speaker's or a third person named, "it" a thing or pet of the speaker's
   or a title named in that sentence or the one before, "they" the speaker's own people or pets),
   and for no one when there are two or none: no claim rather than a guess. "It's a blend of comedy
   and suspense" after a title describes it (`described_as`). A thing pointed at where a clause
   starts ("The studio looks amazing", "That page has ...") is only described. When nothing in the
   turn can be meant, "it" and "they" stand for the one thing or group the speaker's last turn of
   the session named (``Dialogue``; the claim's ``subject_entry_id`` names that turn). Reported
   speech ("Jonas says Mira works at ...") is read as the reported clause, asserted by the reporter.
2. Its modality and polarity, from the words before the verb and the clause's opener:
   hedges ("might", "maybe", "thinking about", "would love to", a condition, ...) make the
   claim a low-confidence `considers` instead of a fact; a negation ("not", "never", "no
   longer") makes it a retraction. Questions assert nothing and are skipped whole.
3. Its predicate, from the frames of claims/lexicon.toml matched on lemmas at the verb
   (spaCy's Matcher): "moved to", "relocated to" and "home is now" all say `lives_in`. Where
   two frames match the same words, the one written as the turn says it wins ("going to" is a
   plan, "went to" an attendance). Where no frame fits, a first-person statement of something
   done becomes an open `activity` claim, so that the timeline and the index hold it.
4. Its object: a name after a name frame; otherwise the phrase after the frame, cut at the
   clause's end, a time phrase or a subordinate clause, at most six content words.

One room of ~2,100 lines on purpose: the four steps read the same clause's tokens and positions,
and splitting them would pass those between modules; the phrasings are data (claims/lexicon.toml)
and the pipeline is claims/nlp.py. docs/extraction.md says what it gets right and wrong.

Every claim's quote is the clause's span in the entry (stretched over its time phrase), so
the provenance validator's checks hold by construction; the validators still check them.
Relations ("my sister Ana", "my dog Rex"), identifiers and mentions of known people are read
over the whole turn as in rules 0.2.0.
"""

from __future__ import annotations

import bisect
import dataclasses
import functools
import itertools
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterator, Sequence

from claims import timephrase
from claims.extractors import rules
from claims.lexicon import lexicon
from claims.model import Proposal
from claims.nlp import forms, lemma, lemma_table, lemmas, pipeline, surface_variants, word_classes
from ledger.schema import image_caption

if TYPE_CHECKING:
    from claims.resolve import Resolver

NAME = "rules"
VERSION = lexicon().version

# Confidence of what is said with a hedge: kept, never folded as a fact (state reads asserts).
HEDGED_CONFIDENCE = 0.3
MAX_CONTENT_WORDS = 6  # a longer object is a sentence, not a fact
MAX_WORDS = 16  # with the small words between them

# Words a clause may open with before its subject: fillers and connectives.
_OPENERS = {
    "yeah", "yes", "yep", "oh", "well", "so", "and", "but", "also", "actually", "honestly", "anyway", "hey",
    "wow", "lol", "haha", "ok", "okay", "plus", "then", "now", "btw", "um", "uh", "omg", "aw", "aww", "ah",
    "sure", "totally", "definitely", "luckily", "thankfully", "sadly", "recently", "lately", "finally",
    "basically", "besides", "though", "still", "guess", "hmm", "wait", "right", "true", "cool", "nice",
}  # fmt: skip
# Between subject and verb: auxiliaries and adverbs (their lemmas).
_AUX = {"be", "do", "will", "shall", "'ll", "ll", "can", "must"}
_HAVE = {"have", "'ve", "ve", "'d"}
_ADVERBS = {
    "just", "really", "finally", "recently", "also", "already", "still", "now", "actually", "totally", "always",
    "usually", "often", "sometimes", "even", "currently", "definitely", "truly", "seriously", "officially",
    "kinda", "lately", "again", "both", "all", "absolutely", "so", "too", "super", "literally", "honestly",
    "mostly", "recently", "regularly", "constantly", "ever", "only", "once", "more", "first",
    "very", "pretty", "quite", "extra", "incredibly", "extremely", "genuinely", "feeling",
}  # fmt: skip
# Objects end where another clause starts.
_STOPS = {
    "because", "but", "so", "which", "who", "whom", "whose", "when", "while", "since", "if", "unless",
    "although", "though", "whereas", "until", "where", "cause", "'cause", "cuz", "as", "like", "than", "hoping",
}  # fmt: skip
_SPLIT_PUNCT = {",", ";", ":", "-", "–", "—", "(", ")", "...", "…", "!", ".", "?"}
_SUBJECT_WORDS = {"i", "we", "he", "she", "they", "you", "it", "my", "our", "there", "this", "that"}
_STOPWORDS = set(
    "the and for with was were been being has have had its this that she her his their they them you your our "
    "from about after before into over out new recently really very also just some are not".split()
)


def content_words(text: str) -> list[str]:
    """The words of ``text`` that an object's length is counted in (3+ letters, not a stop word)."""
    return [w for w in text.lower().split() if len(w) > 2 and w not in _STOPWORDS]


_VAGUE_OBJECTS = {"it", "that", "this", "them", "one", "some", "any", "either", "neither", "stuff", "things", "thing", "so", "much", "more", "lot", "ton", "tons", "bunch", "through", "lots"}
# Verbs that state an attitude or a speech act, not something done: no open activity from them.
_NOT_ACTIVITIES = {
    "think", "know", "guess", "mean", "bet", "agree", "believe", "say", "tell", "wonder", "hope", "wish", "can",
    "could", "would", "should", "must", "need", "thank", "see", "hear", "understand", "remember", "forget",
    "imagine", "suppose", "feel", "be", "have", "do", "get", "let", "want", "love", "like", "appreciate",
    "promise", "admit", "realize", "realise", "notice", "hate", "miss", "look", "sound", "seem", "bet",
    "totally", "definitely", "am", "gotta", "gonna", "wanna", "keep", "try", "hope", "will", "speak", "talk",
    "chat", "ask", "catch", "check", "assume", "figure", "reckon", "expect", "doubt", "recommend", "reccomend", "suggest",
}  # fmt: skip
_SPEAKING = ("message", "correction", "observation")
_ASKING = frozenset({"ask", "see", "wonder", "know", "check", "decide", "tell"})
# Word lists of the rules below, each with the sentence it was written for at its use. They
# are heuristics of this reader, not phrasings of the ontology (those are claims/lexicon.toml).
# An object that opens with a subject pronoun is a clause: "I heard she joined Helio Labs".
_CLAUSE_SUBJECTS = frozenset({
    "i", "he", "she", "they", "we", "you", "i'm", "he's", "she's", "they're", "we're", "there's", "that's", "it's",
    "i'll", "i'd", "i've", "we'll", "we'd", "we've", "you'll", "you're", "you've", "he'll", "she'll", "they'll",
})  # fmt: skip
# Sayings of "make", "see", "have", "get": nothing made, seen, had or received.
_MADE_IDIOMS = frozenset({"connections", "relationships", "bonds", "friendships", "team", "pair", "difference", "impact", "point", "sense", "progress", "memories", "memory", "time", "effort", "decision", "mistake", "change", "living", "money", "sure", "friends", "choice", "plans", "way", "day", "night", "wish", "wishes"})
# Times the resolver does not date still end an object: "last Tues", "the other day".
_TIME_NOUNS = frozenset({
    "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "mon", "tue", "tues", "wed",
    "thu", "thur", "thurs", "fri", "sat", "sun", "summer", "winter", "spring", "fall", "autumn", "weekend", "week", "month", "year", "night", "morning", "evening", "time", "semester", "season",
})  # fmt: skip
# Where an object cut at the word cap backs off to; what an object does not end with.
_PHRASE_HEADS = frozenset({"by", "with", "for", "to", "in", "on", "at", "from", "about", "that", "who", "which", "and"})
# (after a pronoun is popped, the preposition before it goes too: "a regatta near [me]")
_TRAILING_WORDS = frozenset({"a", "an", "the", "to", "of", "in", "at", "on", "for", "my", "with", "and", "or", "by", "about", "from", "like", "as", "into", "near", "me", "us", "him", "her", "them", "some", "so", "that", "will", "would", "can", "could", "should"})
# What may follow a feeling in its object ("glad about the news"); anything else is a clause.
_FEELING_LINKS = frozenset({"about", "for", "to", "with", "of", "by", "and", "at", "that", "in", "when", "from"})
_PREPOSITIONS = frozenset({"for", "to", "with", "at", "in", "on", "from", "about", "by", "of", "into"})
_DETERMINERS = frozenset({"the", "a", "an", "my", "our", "your", "his", "her", "their", "this", "that", "these", "those"})
_HAD_IDIOMS = frozenset({"back", "backs", "blast", "ball", "fun", "time", "feeling", "idea", "clue", "luck", "point", "faith", "laugh", "laughs", "attitude"})
# What one "had" that happened rather than is owned: an activity ("had a picnic", "had a long
# chat", "had a setback at work", "having trouble with the roof").
_HAD_EVENTS = frozenset({
    "picnic", "party", "barbecue", "bbq", "cookout", "potluck", "meeting", "meetup", "reunion", "sleepover", "gathering",
    "celebration", "chat", "talk", "conversation", "playdate", "photoshoot", "brunch", "setback", "letdown", "trouble",
})  # fmt: skip
_GOT_IDIOMS = frozenset({"attitude", "point", "idea", "feeling", "sense", "hang", "vibe", "gist", "message", "impression", "back", "covered", "chance", "opportunity"})
# "got married", "got sick": a change of state.
_GOT_STATES = frozenset({"allergic", "pregnant", "engaged", "interested", "involved", "sick", "lost", "stuck", "hurt", "back", "home", "ready", "together", "caught", "used", "better", "worse"})
# What a speaker says of the one they talk to ("you're so brave", "you're changing so many lives")
# is mostly their view of them: only where the listener lives, works and studies and what they
# went to, joined, started or finished are kept ("you moved to Berlin"). In a 50-claim sample
# before this list, the listener's `practices` and `created` claims were compliments.
_OF_THE_LISTENER = frozenset({"lives_in", "works_at", "studies_at", "attended", "member_of", "started", "finished"})


# Words that may stand before a subject ("last week I ...") and that end an object.
_TIME_WORDS = {
    "last", "this", "next", "week", "month", "year", "yesterday", "today", "tonight", "morning", "afternoon",
    "evening", "weekend", "night", "ago", "few", "days", "weeks", "months", "years", "couple", "of", "the",
    "other", "day", "earlier", "later", "then", "recently", "lately", "finally", "btw", "also", "just", "ages", "times", "once", "twice", "every", "often",
}  # fmt: skip
# Subordinators that open a clause: "when I showed my sketches ...".
_LEADS = {"when", "while", "because", "since", "after", "before", "as", "once", "cause", "cuz", "whenever", "now", "especially", "where"}
# Words that are not verbs where a verb should stand, and verbs of talk that carry no fact.
_FUNCTION_WORDS = {
    "in", "on", "at", "to", "here", "there", "so", "not", "a", "an", "the", "up", "down", "out", "off", "for",
    "with", "about", "from", "all", "just", "this", "that", "it", "sure", "glad", "sorry", "ok", "okay", "back",
    "last", "only", "also", "too", "really", "very", "such", "more", "no", "yes", "like", "over", "into",
    "around", "through", "near", "after", "part", "off", "before", "ta", "inside", "outside", "behind", "without", "within", "always", "never", "together",
}  # fmt: skip
_TALK = {"appreciate", "remember", "cherish", "tell", "say", "ask", "thank", "let", "see", "know", "check", "hear", "talk", "chat", "speak", "catch", "share", "show", "send"}
_NOT_DOINGS = {"be", "go", "imagine", "root", "end", "think", "look", "hope", "wish", "wonder", "know", "see", "hear", "feel", "keep", "take", "thank",
               "lose", "miss", "fail", "hurt", "break", "lack"}  # "Losing my job made me ...": undergone, not practised
_ABILITY_MODALS = {"can", "ca", "should", "must", "shall"}
# The end of "I feel like I could ...": what follows is what the feeling is of.
_FELT_ABLE = re.compile(r"\bfeel(?:s)?\s+like\s+(?:I|we)\s+(?:could|might|'d|would)\s+$")
# How someone or something of the speaker's is doing ("my son is doing well").
_HOW_ONE_DOES = frozenset({"great", "well", "fine", "good", "better", "amazing", "awesome", "okay", "ok", "alright", "fantastic", "wonderfully", "brilliantly", "badly", "poorly", "worse"})
# The rest of a sentence that is a verdict on the doing before it, after an aside between commas.
_VERDICT_AFTER = re.compile(r"[^.!?;]*?,\s+(?:is|are|was|were)\s+(?:[a-z]+\s+){0,2}?(?:important|key|essential|crucial|vital)\b")
_ABILITY = {"imagine", "bet", "help", "recommend", "think", "do", "try", "say", "guess", "understand", "relate", "see", "hear", "tell", "write", "get"}
# Words after which a hedge word is a noun ("a wish", "made wishes").
_BEFORE_A_NOUN = _DETERMINERS | {"made", "make"}
# Verbs after "let's" that cheer rather than plan: "Let's keep going", "let's spread the love".
_EXHORTATIONS = frozenset({"keep", "continue", "stay", "spread", "hope", "chase", "reach", "join", "work", "be", "see", "give", "never", "not", "hang", "stick"})
_TIME_WORDS_STOP = {"yet", "yesterday", "today", "tonight", "lately", "recently", "ago", "someday", "again", "too", "together"}
# "I find better routes", "I'm getting closer": nothing received.
_PRESENT_RECEIPT = frozenset({"find", "finds", "get", "gets", "getting", "finding", "win", "wins", "buy", "buys", "earn", "earns"})
# A hedge after these belongs to a subordinate clause.
_RELATIVES = frozenset({"what", "who", "whom", "which", "whatever", "how"})
# A gerund followed by these is the subject of a remark: "Knitting looks like a fun hobby".
_GERUND_SUBJECT_VERBS = frozenset({"'s", "’s", "is", "was", "looks", "seems", "sounds", "has", "makes", "can", "helps", "gives", "takes", "means", "keeps", "feels", "must", "should"})
# The main verb after a gerund subject: "Coaching at the pool made me ...".
_GERUND_VERBS = frozenset({"be", "have", "give", "make", "help", "keep", "mean", "bring", "let", "teach", "show", "remind", "take", "get", "allow", "feel"})


def _lemma(t: Any) -> str:
    """A token's lemma, lower-cased ("Thinking" at a sentence start is "think"); claims.nlp.lemma
    for a token, on the hot path (~50,000 calls per 2,000 turns)."""
    low = t.lower_
    return lemma_table().get(low, low)


def _after_adverbs(doc: Any, i: int, last: int) -> list[Any]:
    """The token at ``i`` or, past adverbs ("and even went"), the first after them (as a list)."""
    while i <= last and doc[i].lower_ in _ADVERBS:
        i += 1
    return [doc[i]] if i <= last else []


_YOU = frozenset({"you", "your", "you're", "you'll", "you've"})  # the listener, in a remark


def _remark_on_a_doing(verb: Any, listener: str | None) -> bool:
    """Whether a gerund opening a sentence at ``verb`` is the subject of a remark on someone
    else's doing or on doing it at all, not the speaker's: a verdict follows it ("Opening a
    bakery takes nerve", "opening your own bakery sounds wonderful", "Knitting scarves - that's
    brilliant!") and the remark is about the listener (a "you" or "your" in the sentence, the
    listener's name, a next sentence that opens with "you") or general ("takes", "makes sense").
    The speaker's own stays: "my", "me" or "I" in the sentence ("Knitting scarves is my side
    job", "Opening the shop was hard - I nearly quit")."""
    doc = verb.sent.doc
    end = verb.sent.end
    verdict = next((k for k in range(verb.i + 1, end) if doc[k].lower_ in _GERUND_SUBJECT_VERBS | {"are", "were", "took"}
                    or (doc[k].lower_ in ("-", "–", "—") and k + 1 < end and doc[k + 1].lower_ in ("that", "that's", "it's", "this", "which"))), None)
    if verdict is None or any(doc[k].lower_ in ("i", "we", ",", ";", "but", "so") for k in range(verb.i + 1, verdict)):
        return False  # no verdict on the phrase before a new clause: a doing after all
    sentence = {t.lower_ for t in doc[verb.sent.start : end]}
    names = {listener.split()[0].lower()} if listener else set()
    if sentence & (_YOU | names):
        return True  # "Running a marathon is huge - well done to you", "Moving house is a slog, Lea"
    if {"my", "me", "i", "i'm", "our", "us", "we"} & sentence:
        return False  # "Knitting scarves is my side job", "Opening the shop was hard - I nearly quit"
    if doc[verdict].lower_ in ("takes", "took") or (doc[verdict].lower_ == "makes" and verdict + 1 < end and doc[verdict + 1].lower_ == "sense"):
        return True  # "Opening a bakery takes nerve": said of anyone's doing
    # "Raising three kids is no small feat. You're a hero!": the next sentence is said to the listener
    return end < len(doc) and doc[end].lower_ in _YOU


def _gerund_with_object(doc: Any, i: int) -> bool:
    """Whether an -ing verb at ``i`` has its object or particle after it ("testing out new
    pedals", "fixing the fence"): a doing, not a thing named ("baking bread" is both; the caller
    asks only after a noun phrase with no doing in it: "feeding birds and planting trees" is one list)."""
    t = doc[i]
    if not (t.lower_.endswith("ing") and len(t) > 4 and _lemma(t) != t.lower_ and _lemma(t) in word_classes()["verb"]):
        return False
    # (or "about": "researching tax laws and posting about the results" is two doings)
    return i + 1 < len(doc) and doc[i + 1].lower_ in _DETERMINERS | _PARTICLES | {"some", "new", "more", "all", "them", "it", "about"}


def _second_doing(doc: Any, i: int, last: int) -> bool:
    """Whether a past verb starts at ``i`` (past adverbs) with its own object: "... and supported
    them", "... and got a copy"; not a participle before its noun, "vanilla and mixed nut"."""
    verb = _after_adverbs(doc, i, last)
    if not verb or not _past_verb(verb[0]) or verb[0].lower_ in _FUNCTION_WORDS:
        return False
    k = verb[0].i + 1
    classes = word_classes()
    if k <= last and doc[k].is_alpha and doc[k].is_lower and verb[0].lower_ not in classes["adj"] and verb[0].lower_ not in classes["noun"] and _lemma(doc[k]) in classes["noun"]:
        return True  # "... and bought bread": a past form that describes nothing, then its object
    return k > last or not doc[k].is_alpha or doc[k].lower_ in _DETERMINERS | _PREPOSITIONS | _OBJECT_PRONOUNS


_LIGHT_VERBS = frozenset({"make", "do", "get", "think", "start", "go", "help", "try", "see", "be", "have", "keep"})
_HOW_ONE_IS = frozenset({"great", "well", "good", "ok", "okay", "fine", "better", "alright", "awesome", "amazing", "pretty", "so", "really", "much"})
_PARTICLES = frozenset({"away", "out", "up", "down", "back", "off", "over", "around", "together", "along", "well", "hard"})
_PEOPLE_WORDS = frozenset({"people", "person", "folks", "foster", "refugees", "students", "friends", "guests"})

# Words that name nothing in an object: "doing anything then", "try something".
_NOTHING_NAMED = frozenset({"anything", "something", "everything", "nothing", "then"})
# Amounts before what is counted: "lots of books", "a bunch of friends", "plenty of ideas".
_SORTS_OF = frozenset({"sorts", "kinds", "types"})  # "all sorts of ...": the sort names nothing
_QUANTITIES = frozenset({"lots", "lot", "plenty", "tons", "ton", "bunch", "couple", "loads", "load", "number", "few", "handful", "pile", "stack"})

# Pasts common enough after "and" to end an object whatever follows: "a street fair and met new neighbours".
_COMMON_PASTS = frozenset({"met", "saw", "got", "had", "went", "made", "did", "was", "were", "took", "found", "felt"})

# What may follow a verb that starts a clause of its own: "got a copy", "thanked them", "went out".
_OBJECT_PRONOUNS = frozenset({"it", "them", "him", "her", "me", "us", "some", "up", "out", "off", "back", "down", "away", "over", "together"})


def _past_verb(t: Any) -> bool:
    """An inflected verb by its lemma ("supported", "found"), not a plural noun ("trails")."""
    low, lem = t.lower_, _lemma(t)
    return t.is_alpha and lem != low and low not in (lem + "s", lem + "es", lem[:-1] + "ies") and not low.endswith("ing")  # "berries" is a plural


def _names_a_thing(t: Any) -> bool:
    """A word that can only be a noun ("birthday", "news"): after a feeling word, the feeling
    is the thing's ("Happy birthday", "Sad news"), not the speaker's. Not a day word ("Excited today")."""
    lem, classes = _lemma(t), word_classes()
    return t.is_lower and t.is_alpha and t.lower_ not in _SUBJECT_WORDS and lem in classes["noun"] and not any(lem in classes[c] for c in ("verb", "adj", "adv")) and t.lower_ not in _TIME_WORDS


@functools.lru_cache(maxsize=4096)
def _time_spans(text: str) -> tuple[tuple[int, int], ...]:
    spans, pos = [], 0
    while (m := timephrase.find(text, pos)) is not None:
        spans.append(m.span())
        pos = m.end()
    return tuple(spans)


@dataclass(frozen=True)
class _Frame:
    predicate: str
    kind: str  # "name" or "phrase"
    surface: tuple[str, ...]  # the phrase as written, lower-cased words


@functools.cache
def _matcher() -> tuple[Any, dict[str, _Frame]]:
    """spaCy's PhraseMatcher over every frame, keyed by a frame id: each phrase as the lower-case
    forms of its lemmas ("moved to", "moving to", ...: claims/nlp.py), so a turn is matched on
    its tokens' lower case with hash lookups (~10x faster here than the token-pattern Matcher
    with 300 frames) and no turn is lemmatized whole."""
    from spacy.matcher import PhraseMatcher  # lazy: with the pipeline
    from spacy.tokens import Doc

    nlp = pipeline()
    matcher = PhraseMatcher(nlp.vocab, attr="LOWER")
    frames: dict[str, _Frame] = {}
    for i, frame in enumerate(lexicon().frame):
        for j, phrase in enumerate(frame.phrases):
            key = f"f{i}_{j}"
            frames[key] = _Frame(frame.predicate, frame.object, tuple(phrase.lower().split()))
            matcher.add(key, [Doc(nlp.vocab, words=words) for words in surface_variants(phrase)])
    return matcher, frames


@functools.cache
def _word_lists() -> dict[str, Any]:
    lex = lexicon()
    return {
        "hedge_before": [lemmas(h) for h in lex.hedges.before_verb],
        "hedge_clause": [lemmas(h) for h in lex.hedges.clause],
        # The lemmas a hedge may start with: a clause's other words are not tried against every hedge
        "hedge_firsts": frozenset(lemmas(h)[0] for h in (*lex.hedges.before_verb, *lex.hedges.clause)),
        "negations": [lemmas(n) for n in lex.negations.words],
        "feelings": set(lex.feelings.words),
        "reporting": set(lex.reporting.words),
        "encouraging": re.compile(
            r"(?<!\w)(?:" + "|".join(re.escape(w).replace("'", "['’]") for w in sorted(lex.encouraging.words, key=len, reverse=True)) + r")(?!\w)", re.I
        ),
        "urging": re.compile(
            r"(?<!\w)(?:" + "|".join(re.escape(w).replace("'", "['’]") for w in sorted(lex.encouraging.urging, key=len, reverse=True)) + r")(?!\w)", re.I
        ),
        "relations": {pred: sorted(words, key=len, reverse=True) for pred, words in lex.relations.model_dump().items()},
    }


@functools.cache
def _relation_pattern() -> list[tuple[str, re.Pattern[str]]]:
    out = []
    for pred, words in _word_lists()["relations"].items():
        alt = "|".join(re.escape(w) for w in words)
        named = r"(?:,\s*|\s+(?:named|called)\s+|\s+)"
        out.append((pred, re.compile(rf"\b[Mm]y (?:(?:best|good|old|close|little|big|older|younger|new|sweet) )?(?:{alt}){named}(?P<obj>{rules._CAP}(?:\s+{rules._CAP})?)")))
        if pred in ("has_pet", "has_relative"):
            # "Pip, my hamster.": the name before, set off by a comma, then the relation, closing
            # its phrase (not a friend or partner: "Tom, my friend" speaks to Tom)
            out.append((pred, re.compile(rf"(?<![\w,] )(?<!^)(?P<obj>{rules._CAP}),\s+[Mm]y (?:(?:little|older|younger|new|sweet|baby) )?(?:{alt})(?=\s*[.!;)]|\s*$)")))
    return out


def prepare() -> None:
    """Load spaCy's pipeline, the lemma table and every pattern the extractor compiles, in this
    process (each is cached for the process's life). A pass that forks workers calls this first:
    a worker of a parent that had not loaded them loaded spaCy itself, ~3 s for every ledger day
    of a 1M-entry build (each day's entries go to a new pool of workers) against ~0.2 s of work."""
    pipeline()
    forms("be")  # the lemma table and its inverse
    for load in (_matcher, _word_lists, _relation_pattern, _pet_kind_patterns, _owned_patterns, _praise, _is_my, _made_by_me, _owned_words, _lead_words):
        load()


class Dialogue:
    """What the last turns of each session named, for one pass over entries in ledger order: the
    things of a speaker's own last turn (owned, titled, pointed at, or the object of a thing made,
    got, had, seen, started, finished or gone to) are what a pronoun of their next turn stands for
    when nothing in that turn can be ("I completed my first wooden canoe!" - "What is it made
    of?" - "It's a blend of cedar and walnut!"). Only the speaker's turn just before, with at
    most one turn of someone else's between: a topic further back is a guess. And the question
    the session's last turn asked, which the next speaker's reply may answer (``_answers``)."""

    def __init__(self) -> None:
        # (scope, session) -> its last two turns: (speaker, visibility, what the turn named)
        self._recent: dict[tuple[str, str], list[tuple[str, frozenset[str], tuple[_Thing, ...]]]] = {}
        # (scope, session) -> its last turn: (entry id, speaker, visibility, its last question)
        self._last: dict[tuple[str, str], tuple[str, str | None, frozenset[str], str | None]] = {}

    def asked(self, entry: dict[str, Any], speaker: str) -> tuple[str, str] | None:
        """The question (its entry id and words) that the turn just before ``entry`` in its session
        asked, when someone other than ``speaker`` asked it and the same principals saw it."""
        last = self._last.get((entry["scope"], entry["session_id"])) if entry.get("session_id") else None
        if last is None or last[3] is None or last[1] in (None, speaker) or last[2] != frozenset(entry["visibility"] or ()):
            return None
        return last[0], last[3]

    def earlier(self, entry: dict[str, Any], speaker: str) -> tuple[_Thing, ...]:
        """What ``speaker``'s last turn of ``entry``'s session named, when it was seen by the same
        principals (a claim drawn from both must not reach anyone either would not)."""
        turns = self._recent.get((entry["scope"], entry["session_id"]), []) if entry.get("session_id") else []
        mine = [t for t in turns[-1:] if t[0] == speaker] or [t for t in turns[-2:-1] if t[0] == speaker]  # (two turns kept)
        if not mine or mine[0][1] != frozenset(entry["visibility"] or ()):
            return ()
        return mine[0][2]

    def said(self, entry: dict[str, Any], speaker: str | None, topics: tuple[_Thing, ...], question: str | None = None) -> None:
        if not entry.get("session_id"):
            return
        key = (entry["scope"], entry["session_id"])
        self._last[key] = (entry["entry_id"], speaker, frozenset(entry["visibility"] or ()), question)
        if speaker is None:
            return
        self._recent[key] = [*self._recent.get(key, [])[-1:], (speaker, frozenset(entry["visibility"] or ()), topics)]


# What a claim's object names that a later "it" or "they" may stand for (Dialogue).
_TOPIC_PREDICATES = frozenset({"created", "received", "has", "watched", "started", "finished", "attended", "member_of", "has_pet"})


def _topics(things: tuple[_Thing, ...], said: list[Proposal], entry_id: str) -> tuple[_Thing, ...]:
    """What a turn names for its speaker's next turn (Dialogue): its things and groups (not a
    person named or one of the speaker's people, whom "he"/"she" name), the objects of its claims
    of things, and the earlier turn's things it said something of; failing all of these, what its
    picture shows (its words name what it is about before the picture does)."""
    subjects = {p.subject for p in said}
    out = [
        dataclasses.replace(o, at=-1, end=-1, sent=-1, earlier=True, starts=(), source=o.source or entry_id)
        for o in things
        if (o.subject in subjects and not o.shown if o.earlier else o.at >= 0 and (o.kind != "person" or o.plural))
    ]
    names = [o.subject.lower() for o in out]
    for p in said:
        low = p.object.lower()
        words = low.split()
        if p.predicate not in _TOPIC_PREDICATES or any(n == low or n.endswith(" " + low) for n in names):
            continue  # ("first wooden canoe": the speaker's "first wooden canoe", named with "my")
        if len(words) > 3 or set(words) & (_PHRASE_HEADS | _PREPOSITIONS) or words[0].endswith("ing") or lemma(words[-1]) not in word_classes()["noun"]:
            continue  # a thing, not a phrase: "family for those kids" is no one thing "they" are
        out.append(_Thing(p.object, -1, -1, "animal" if p.predicate == "has_pet" else "thing", None, _plural(words[-1]), False, -1, earlier=True, source=entry_id))
        names.append(low)
    if not out:
        out = [dataclasses.replace(o, source=entry_id) for o in things if o.shown and o.source is None]
    return tuple(out)


@functools.cache
def _caption_words() -> tuple[frozenset[str], frozenset[str]]:
    """(the holders that give way to what they hold; the words of a caption's first thing that
    show no thing: people, and pets with a two-word pet's first word alone, "guinea")."""
    cap, pets = lexicon().captions, lexicon().relations.has_pet
    return frozenset(cap.holders), frozenset({*cap.people, *pets, *(pet.split()[0] for pet in pets)})


def _caption_body(caption: str) -> str:
    """What a caption says the picture shows, without its lead ("a photo of a kayak on a dock" ->
    "a kayak on a dock")."""
    lead = _caption_lead().match(caption)
    return caption[lead.end() if lead else 0 :].strip().rstrip(".")


# Before a caption's first thing: an article or a count ("two mugs of tea" shows mugs, they).
_COUNTS = {"two": True, "three": True, "four": True, "five": True, "several": True, "many": True, "some": True, "a": False, "an": False, "the": False}
# What ends a caption's first thing: its preposition, "and", a clause, a participle after it.
_CAPTION_STOPS = _PREPOSITIONS | {"and", "or", "that", "which", "is", "are", "next", "near", "under", "over", "behind", "filled", "full", "covered", "made", "against", "like", "up", "down"}


def _picture_thing(caption: str) -> _Thing | None:
    """The thing the turn's picture shows first (its caption: "a photo of a bowl of plum sorbet
    on a wooden tray" -> "plum sorbet"), for a pronoun with nothing in the turn to stand for; None for
    a picture of people or a pet, or a caption whose first words are no thing (lexicon
    ``[captions]``). Read as an earlier thing is, and named for the speaker's next turn."""
    words = re.findall(r"[a-z][a-z'\-]*|[^\sa-z]", _caption_body(caption).lower())
    holders, no_things = _caption_words()
    plural = False
    if words and words[0] in _COUNTS:
        plural = _COUNTS[words[0]]
        words = words[1:]
    if len(words) > 2 and words[0] in holders and words[1] == "of":
        words = words[3:] if words[2] in _COUNTS else words[2:]  # "a bowl of plum sorbet": what it holds
    head: list[str] = []
    for k, w in enumerate(words[:5]):
        if w in ("and", "or"):
            return None  # "a lamp and a vase", "a purple and white kite": no one thing
        after = words[k + 1] if k + 1 < len(words) else ""
        if k == 4 or w in _CAPTION_STOPS or not w[0].isalpha() or (
            head and w.endswith(("ing", "ed")) and lemma(w) != w and (not after or after in _CAPTION_STOPS | _DETERMINERS | {"it", "them"})
        ):
            break  # "a kite flying over ...", "a fox painted on a door": the participle starts what it does (not "a hand painted sign")
        head.append(w)
    if not head or head[-1] in no_things or lemma(head[-1]) in no_things or lemma(head[-1]) not in word_classes()["noun"]:
        return None
    return _Thing(" ".join(head), -1, -1, "thing", None, plural or _plural(head[-1]), False, -1, earlier=True, shown=True)


def propose(entry: dict[str, Any], resolver: Resolver | None = None, *, dialogue: Dialogue | None = None) -> Iterator[Proposal]:
    """Proposals for one ledger entry (a dict with the ledger's columns); ``dialogue``: what the
    session's earlier turns named, read and then written for this turn (a pass in ledger order)."""
    base = dict(
        source_entry_id=entry["entry_id"],
        visibility=tuple(entry["visibility"] or ()),
        confidence=min(float(entry["confidence"]), 0.9),
    )
    if entry["kind"] == "derived_claim":
        yield from rules._from_derived(entry, base)
        return
    text, actor = entry["content"], entry["actor"]
    speaker = actor if entry["kind"] in _SPEAKING and rules._is_person(actor) else None
    seen: set[tuple[str, str, str]] = set()
    said: list[Proposal] = []  # what this turn yields, for the next turn's pronouns (Dialogue)

    def once(p: Proposal | None) -> Iterator[Proposal]:
        if p is not None and p.predicate not in ("encourages", "mentions") and " " in p.object:
            head, last = p.object.rsplit(" ", 1)
            if last in (listener, *people) or (listener and last == listener.split()[0]):
                p = p.model_copy(update={"object": head.rstrip(",;: ")})  # "I love the idea, Jonas": Jonas is spoken to, not loved
        if p is not None and (p.subject, p.predicate, p.object) not in seen:
            seen.add((p.subject, p.predicate, p.object))
            said.append(p)
            yield p

    relations = list(_relations(text))
    people = _named_people(entry, text, relations, resolver)
    # "you" in a two-party session is the other participant (entity resolution's participants).
    listener = resolver.other_participant(entry["scope"], entry.get("session_id"), speaker) if resolver is not None and speaker else None
    if resolver is not None and speaker:
        # "he" and "she" are neither the speaker nor the one spoken to ("Thanks, Lea! ... He's been great")
        present = {resolver.entity_id(entry["scope"], n) for n in (speaker, listener) if n}
        third = [n for n in people if resolver.entity_id(entry["scope"], n) not in present]
    else:
        third = [n for n in people if n != speaker]
    for pred, obj_start, obj_end, start in relations:
        if speaker:
            p = rules._proposal_at(entry, base, text, start, obj_end, obj_start, obj_end, speaker, pred, "assert")
            if p is not None and start == obj_start and (after := re.match(r",\s+[Mm]y [\w\- ]+", text[obj_end:])):
                p = p.model_copy(update={"quote": text[start : obj_end + after.end()]})  # "Pip, my hamster": the quote says what Pip is
            yield from once(p)
            if pred == "has_pet":
                yield from once(_pet_kind(entry, base, text, start, obj_start, obj_end))  # "Pip, my guinea pig"
    if speaker:
        for predicate, obj_start, obj_end, start, end in _statements(text):
            p = _claim(entry, base, text, min(start, obj_start), (obj_start, obj_end), speaker, predicate, "assert")
            if p is not None and p.quote in text[start:end]:
                p = p.model_copy(update={"quote": text[start:end]})  # the quote says why: "... is my favourite"
            yield from once(p)
    if speaker:
        for predicate, obj_start, obj_end, start in _names_given(text):
            yield from once(_claim(entry, base, text, start, (obj_start, obj_end), speaker, predicate, "assert"))
            if predicate == "has_pet":
                yield from once(_pet_kind(entry, base, text, start, obj_start, obj_end))  # "we got a puppy named Bella"
    if speaker and listener:
        yield from once(_encouragement(entry, base, text, speaker, listener))
    caption = image_caption(entry.get("attributes")) if speaker else None  # (read once: the claim and the pronouns' thing)
    if caption is not None:
        for p in _shared_picture(entry, base, text, speaker, caption):
            yield from once(p)
    doc = pipeline()(text)
    sents = list(doc.sents)
    # Where each sentence starts, read once (Token.sent walks the sentences again on every call)
    starts = [sent.start for sent in sents]
    if speaker:
        # "We waved farewell to Rex. He was ...": a name said in passing is whom a later "he" or
        # "she" may stand for (only for that: it is not a person the turn's other readings know)
        spoken = {speaker.split()[0], *(listener.split()[:1] if listener else ())}
        third += [n for n in _named_in_passing(doc, text) if n not in third and n.split()[0] not in spoken]
    things = _things(doc, text, speaker, starts, third, relations) if speaker else ()
    if caption is not None and (shown := _picture_thing(caption)) is not None:
        things += (shown,)
    if dialogue is not None and speaker:
        things += dialogue.earlier(entry, speaker)
    matcher, frames = _matcher()
    matches: dict[int, list[tuple[int, _Frame]]] = {}
    for key, start, end in matcher(doc):
        matches.setdefault(start, []).append((end, frames[doc.vocab.strings[key]]))
    if speaker and "made " in text:
        for p in _made_with(entry, base, text, doc, speaker, people, things):
            yield from once(p)
    for sent in sents:
        if sent.text.rstrip().endswith("?"):
            continue  # a question asserts nothing
        # "If I get the job, ..." makes the whole sentence hypothetical; "even if" concedes, it does not.
        # "asked if they had a spare room", "see if it fits": an indirect question, not a condition.
        conditions = [
            t.i for t in sent
            if t.lower_ in ("if", "unless") and not (t.i and (t.nbor(-1).lower_ == "even" or _lemma(t.nbor(-1)) in _ASKING))
        ]  # fmt: skip
        last: list[Any] | None = None  # the clause read before this one in the sentence
        for clause, carried, split_at in _clauses(sent):
            previous, last = last, clause
            # "I'm gonna keep drawing, but if teaching calls I might try it": a condition after "but"
            # reaches forward only; any other makes the whole sentence hypothetical.
            conditional = any(
                not (c > clause[-1].i and c > sent.start and sent.doc[c - 1].lower_ in ("but", "though", "although")) for c in conditions
            )
            report = _report(clause, people)
            if report is not None:
                yield from once(_reported(entry, base, text, report, people, matches, conditional))
                continue
            read = _read_clause(entry, base, text, clause, speaker, people, matches, conditional, listener, things, carried)
            if read is not None and previous is not None and previous[-1].lower_ in ("yesterday", "today") and any(t.lower_ == "like" for t in previous):
                continue  # "It seems like only yesterday we painted this room": how time flew, not a doing of yesterday
            if read is not None and split_at == "I" and sent[0].lower_.endswith("ing") and len(sent[0]) > 4 and previous is not None and len(previous) > 1 and previous[-1].lower_ != "that" and any(t.lower_ in ("is", "was", "are", "were") for t in clause):
                # "Having the work I put into it pay off was ...": a relative clause inside a subject
                # (not "Knowing I'm helping ... is amazing": what is known is the speaker's)
                continue
            if read is not None and read.subject == speaker and split_at in ("-", "–", "—") and clause[0].lower_.endswith("ing") and previous is not None and _opens_with_another(previous, speaker, people, listener, things):
                continue  # "The puppy is thriving - mastering tricks": the doing after the dash is the puppy's
            read = _from_earlier(read, things)
            if read is not None and read.subject != speaker and (
                read.object.split()[0].lower() in _OBJECT_PRONOUNS
                or (read.predicate == "activity" and tuple(w.lower() for w in read.object.split()[:2]) in _DONE_TO_THE_SPEAKER)
            ):
                continue  # "my neighbours make me keep trying", "my cats bring me joy": what they do to the speaker
            if read is not None and not (read.subject == listener and read.predicate not in _OF_THE_LISTENER):
                yield from once(_apposed(read, text))
                yield from once(_title_given(entry, base, text, read, sent))
                if read.predicate in ("considers", "plans") and read.subject == speaker:
                    yield from once(_purpose(entry, base, text, read))
    if speaker and ("xperience" in text or "made it" in text or "makes it" in text):
        yield from once(_event_described(entry, base, text, sents, said))
    if speaker and " with " in text:
        for p in [p for p in said if p.predicate == "described_as"]:
            for part in _dish_parts(entry, base, text, p):
                yield from once(part)
    if speaker and " for " in text and len(sents) > 1:
        yield from once(_for_a_cause(entry, base, text, sents, said, speaker))
    if dialogue is not None:
        asked = dialogue.asked(entry, speaker) if speaker else None
        if asked is not None:
            for p in _answers(entry, base, text, sents, asked, listener):
                yield from once(p)
        questions = [sent.text.strip() for sent in sents if sent.text.rstrip().endswith("?")]
        dialogue.said(entry, speaker, _topics(things, said, entry["entry_id"]), questions[-1] if questions else None)
    yield from rules._identifiers(entry, base, text, actor)
    if resolver is not None:
        yield from rules._mentions(entry, base, text, actor, resolver)


# "It was a really calm and lovely experience": a sentence that says what an experience was,
# after the turn has told of one event (its describing words, then "experience").
_WHAT_IT_WAS = re.compile(
    r"(?:It|it)\s+(?:was|has\s+been|'s\s+been|’s\s+been)\s+(?:such\s+)?(?:a|an)\s+(?:(?:really|so|truly|very|super|pretty|quite|incredibly|absolutely)\s+)*"
    r"(?P<obj>[a-z][a-z\-]*(?:,?\s+(?:and\s+)?[a-z][a-z\-]*){0,3}?\s+experience)(?=\s*(?:[.!,;]|$))"
)


# "All the laughter made it truly memorable": what the one event a turn told of was like, said by
# what gave it that (the sentence ends with the describing word).
_MADE_IT = re.compile(r"[^.!?]*?\b(?:made|makes)\s+it\s+(?:(?:really|so|truly|very|super|extra|even\s+more|all\s+the\s+more)\s+)*(?P<obj>[a-z][a-z\-]*)\s*[.!]")
# After "made it", words that say something other than what the event was like ("made it clear",
# "made it home", "made it big").
_MADE_IT_NOT = frozenset({
    "clear", "possible", "impossible", "easy", "easier", "hard", "harder", "official", "big", "home", "work", "happen",
    "count", "through", "out", "back", "up", "there", "here", "okay", "ok", "alright", "right", "worse", "better",
    "personal", "worth", "last", "known", "public", "quick", "short", "long",
})  # fmt: skip
# Verbs of an event held by the speaker: "hosting a garden party", "we hosted a potluck", "had a
# picnic by the canal" (what an activity names as the event, _event_held).
_HOSTING = frozenset({"throw", "host", "hold", "organize", "organise", "have", "run"})
_EVENTS_HELD = _HAD_EVENTS - {"chat", "talk", "conversation", "setback", "letdown", "trouble"} | {
    "dinner", "lunch", "fundraiser", "sale", "concert", "show", "festival", "tournament", "workshop", "drive", "fair", "night",
}  # fmt: skip


def _event_held(doing: str) -> str | None:
    """The event an activity says the speaker held: "hosting a garden party and inviting ..." ->
    "garden party" (a verb of hosting, an article, up to two more words and an event's noun)."""
    words = doing.split()
    if len(words) < 3 or lemma(words[0].lower()) not in _HOSTING or words[1].lower() not in ("a", "an", "our", "my"):
        return None
    phrase = list(itertools.takewhile(lambda w: w.isalpha() and w.lower() not in _PREPOSITIONS | _STOPS | {"and", "or"}, words[2:5]))
    return " ".join(phrase) if phrase and lemma(phrase[-1].lower()) in _EVENTS_HELD else None


def _said_before(said: list[Proposal], text: str, at: int, speaker: str) -> list[Proposal]:
    """What the turn has yielded so far of the speaker's, quoted before character ``at`` of its text."""
    return [p for p in said if p.subject == speaker and 0 <= text.find(p.quote) < at]


def _event_described(entry: dict[str, Any], base: dict[str, Any], text: str, sents: list[Any], said: list[Proposal]) -> Proposal | None:
    """`described_as` of the one event a turn told of before "It was a <...> experience" or "<...>
    made it <...>": "We went on a canoe trip. We paddled and fished. It was a calm and lovely
    experience." -> "canoe trip" "calm and lovely experience"; "We hosted a garden party and invited
    the neighbours. All the laughter made it truly memorable." -> "garden party" "memorable". Only
    when the turn attended or held exactly one event named by a noun phrase (not a doing) in an
    earlier sentence, and the sentence is that description alone (no "for the whole class", "to see
    ..."): another event, a person or a clause would make it a guess."""
    for sent in sents[1:]:
        m = _WHAT_IT_WAS.match(text, sent.start_char)
        if m is None:
            m = _MADE_IT.match(text, sent.start_char)
            if m is None or m.group("obj") in _MADE_IT_NOT or m.group("obj") not in word_classes()["adj"] or m.group("obj").endswith("er"):
                continue  # "made it clear", "made it home", "made it nicer": not what the event was like
        elif m.end() < len(text.rstrip()) and not text[m.end() :].lstrip().startswith((".", "!")):
            continue  # "It was a rare experience for the whole class": more is said of it than what it was like
        before = _said_before(said, text, sent.start_char, entry["actor"])
        events = [(p, p.object) for p in before if p.predicate == "attended"]
        events += [(p, held) for p in before if p.predicate == "activity" and (held := _event_held(p.object)) is not None]
        if len(events) != 1:
            return None
        told, event = events[0]
        words = event.split()
        if len(words) > 3 or set(w.lower() for w in words) & (_PHRASE_HEADS | _PREPOSITIONS) or lemma(words[-1].lower()) not in word_classes()["noun"] or words[-1].lower().endswith("ing"):
            return None  # "pottery workshop with my sister": no one thing; "hiking": a doing
        event_at = text.find(told.quote)
        at = text.find(event, event_at)
        after = text[at + len(event) : sent.start_char]
        if told.predicate == "activity" and (doing := re.match(r"\s+and\s+[a-z]+ing\b[^.!?]*", after)):
            after = after[doing.end() :]  # "... and inviting the neighbours to bring food": a second doing, not a second event
        if re.search(r"^[^.!?]*?(?:\b(?:and|then|or|to)\b|,)", after):
            return None  # "went to the fair and then to a gala": a second place the "it" may be
        if m.re is _WHAT_IT_WAS:
            describing = m.group("obj").split()[:-1]
            if any(w.strip(",").lower() not in word_classes()["adj"] and w.strip(",") != "and" for w in describing):
                return None  # "a learning experience about ...": not what the event was like
        # the quote runs from the event's words to the description, so that it names both
        quote = text[event_at : m.end("obj")]
        return Proposal(subject=event, predicate="described_as", object=m.group("obj"), valid_at=entry["valid_at"], quote=quote, **base)
    return None


# The list after "with" in what a dish is said to be, to the sentence's end (_dish_parts).
_WITH_LIST = re.compile(r"\bwith\s+(?P<list>[^.!?;:–—()]+?)\s*(?=[.!?;:–—(]|\s-\s|$)")
# Words no part of a dish is named with: the speaker and the others, the things pointed at.
_NOT_A_PART = frozenset({"i", "you", "he", "she", "we", "they", "me", "him", "her", "us", "them", "my", "your", "our", "their", "its", "his", "these", "those"})
_LIST_CUT = re.compile(r",\s*(?:and\s+)?|\s+and\s+|\s+&\s+")


@functools.cache
def _dishes() -> tuple[str, ...]:
    return tuple(d.lower() for d in lexicon().dishes.words)


def _dish_parts(entry: dict[str, Any], base: dict[str, Any], text: str, p: Proposal) -> Iterator[Proposal]:
    """`made_with` each thing a dish is said to come with, after what it is: "It's lemon sponge
    with raspberry jam and almond cream frosting" said of a cake -> "raspberry jam", "almond cream
    frosting" (the description is cut at six content words; each part is a fact of its own). Only
    of a dish (the lexicon's `dishes`), right after or inside the description, and only when every
    item of the list is a thing named in at most three words ("with a crumble top, and I love it"
    runs into a clause: nothing is read)."""
    subject = p.subject.lower()
    if not any(subject == d or subject.endswith(" " + d) for d in _dishes()):
        return
    at = text.find(p.quote)
    obj_at = text.find(p.object, at) if at >= 0 else -1
    m = _WITH_LIST.search(text, obj_at) if obj_at >= 0 else None
    if m is None or m.start() > obj_at + len(p.object) + 1:
        return
    pieces, pos = [], m.start("list")
    for cut in _LIST_CUT.finditer(text, pos, m.end("list")):
        pieces.append((pos, cut.start()))
        pos = cut.end()
    pieces.append((pos, m.end("list")))
    spans = []
    for start, end in pieces:
        words = text[start:end].split()
        if words and words[0].lower() in ("a", "an", "some"):
            start, words = text.index(words[1], start) if len(words) > 1 else end, words[1:]
        if not 1 <= len(words) <= 3 or lemma(words[-1].lower()) not in word_classes()["noun"] or any(
            not re.fullmatch(r"[A-Za-z][a-z]*(?:-[a-z]+)*", w) or w.lower() in _STOPWORDS | _PREPOSITIONS | _FUNCTION_WORDS | _NOT_A_PART for w in words
        ):
            return  # "I love it": a clause; "a dash of pepper": a measure, not a part named
        spans.append((start, end))
    for span in spans:
        part = _claim(entry, base, text, at, span, p.subject, "made_with", "assert")
        if part is not None:
            yield part.model_copy(update={"subject_entry_id": p.subject_entry_id})


# What a thing is made with: "made with", "made from", "made out of" (not "made of": "made of
# money", "made of stern stuff" are sayings as often as not).
_MADE_WITH_LEAD = re.compile(r"made\s+(?:with|from|out\s+of)\s+", re.I)
# "a pie made with apples", "my scarf made from old wool": a thing and a participle after it.
_THING_MADE_WITH = re.compile(
    r"\b(?P<det>[Aa]n?|[Tt]he|[Mm]y|[Oo]ur|[Tt]his|[Tt]hat)\s+(?P<thing>[a-z][\w'\-]*(?:\s+[a-z][\w'\-]*){0,3}?)\s+made\s+(?:with|from|out\s+of)\s+"
)
# "I made it with oat milk", "we made them from scrap wood": the thing is what "it" stands for.
_MADE_IT_WITH = re.compile(r"\b(?:I|[Ww]e)\s+(?:just\s+|also\s+|always\s+)?made\s+(?P<pro>it|them)\s+(?:with|from|out\s+of|using)\s+")


# What a plan or a thought is for, set apart by a dash or a comma: "buy a small boat - for fun
# and to show the twins how to sail", "a visit to Kyoto, to see the maples".
_PURPOSE = re.compile(r"\s*[-–—,]\s*(?:for\s+[a-z]+(?:\s+[a-z]+)?\s+and\s+)?(?:in\s+order\s+|so\s+as\s+)?to\s+(?P<obj>[a-z][^.!?;:–—]*?)\s*(?=[.!?;:–—]|\s-\s|$)")


def _purpose(entry: dict[str, Any], base: dict[str, Any], text: str, p: Proposal) -> Proposal | None:
    """The `goal` a plan or a thing considered is for, when the turn says it after a dash or a
    comma ("We might buy a small boat - to show the twins how to sail" -> "show the twins how to
    sail"): the speaker's aim, whether or not the plan happens. Not "teach the kids to ...", whose
    "to" is the kids' doing, and not longer than an object may be."""
    at = text.find(p.quote)
    return _goal_after(entry, base, text, at, at + len(p.quote), p.subject) if at >= 0 else None


def _goal_after(entry: dict[str, Any], base: dict[str, Any], text: str, start: int, end: int, subject: str) -> Proposal | None:
    """The `goal` a dash or a comma at ``end`` gives ("- to show the twins how to sail"), quoted from ``start``."""
    m = _PURPOSE.match(text, end)
    if m is None or len(content_words(m.group("obj"))) > MAX_CONTENT_WORDS:
        return None
    return _claim(entry, base, text, start, (m.start("obj"), m.end("obj")), subject, "goal", "assert")


# "It was for a worthy cause - to buy books for the reading club": the cause a doing told before
# was for, its purpose after a dash or a comma (_for_a_cause).
_FOR_A_CAUSE = re.compile(r"(?:It|That)(?:\s+(?:was|is)|'s|’s)\s+(?:all\s+)?for\s+(?:a\s+)?(?:(?:good|great|worthy|noble|important)\s+)?(?:cause|charity)\b")
# What the speaker did that "it" may stand for: a doing or an event of theirs.
_DOINGS = frozenset({"activity", "started", "attended", "created", "practices", "finished"})


def _for_a_cause(entry: dict[str, Any], base: dict[str, Any], text: str, sents: list[Any], said: list[Proposal], speaker: str) -> Proposal | None:
    """The speaker's `goal` in what they did, when a later sentence of the turn says what it was for:
    "I organised a bake sale at the library. It was for a worthy cause - to buy books for the
    reading club" -> "buy books for the reading club". Only after a doing or an event of the
    speaker's in an earlier sentence (what "it" stands for); "It would be for charity" is no aim
    had (the pattern wants "was" or "is"), and a cause without a purpose after it names none."""
    for sent in sents[1:]:
        m = _FOR_A_CAUSE.match(text, sent.start_char)
        if m is None:
            continue
        if not any(p.predicate in _DOINGS for p in _said_before(said, text, sent.start_char, speaker)):
            return None
        return _goal_after(entry, base, text, m.start(), m.end(), speaker)
    return None


def _from_earlier(p: Proposal | None, things: tuple[_Thing, ...]) -> Proposal | None:
    """``p`` with the entry its subject is named in, when that is the speaker's earlier turn
    ("It's a blend of ...": a thing the last turn named, or the one its picture showed) and this
    turn does not name it too."""
    earlier = next((o for o in things if o.earlier and o.subject == p.subject), None) if p is not None else None
    if earlier is None or earlier.source is None or any(o.subject == p.subject for o in things if not o.earlier):
        return p
    return p.model_copy(update={"subject_entry_id": earlier.source})


def _made_with(entry: dict[str, Any], base: dict[str, Any], text: str, doc: Any, speaker: str, people: list[str], things: tuple[_Thing, ...]) -> Iterator[Proposal]:
    """`made_with` of a thing the speaker names with what it is made with, or of the thing "it"
    stands for after "I made it with": the list that follows, cut where an object is. Not in a
    question or under a hedge ("I might make it with oat milk" makes nothing yet)."""
    for rx in (_THING_MADE_WITH, _MADE_IT_WITH):
        for m in rx.finditer(text):
            first = doc.char_span(m.end(), m.end() + 1, alignment_mode="expand")
            if first is None:
                continue
            sent = first[0].sent
            if sent.text.rstrip().endswith("?") or any(_lemma(t) in _word_lists()["hedge_firsts"] for t in sent if t.idx < m.start()):
                continue
            tokens = list(itertools.takewhile(lambda t: t.text not in (".", "!", "?", ";", ":"), (t for t in sent if t.i >= first[0].i)))
            if not tokens:
                continue
            span = _object_span(text, tokens, first[0].i, phrase_from_verb=False)
            if span is None:
                continue
            if rx is _MADE_IT_WITH:
                at = doc.char_span(m.start("pro"), m.end("pro"))
                subject = _antecedent(m.group("pro").lower() if m.group("pro") == "it" else "they", at[0], people, things) if at is not None else None
                quote_start = sent.start_char
            else:
                thing = m.group("thing")
                if thing.split()[-1] in _STOPWORDS | {"is", "was", "are", "were", "be", "been", "being", "gets", "got"}:
                    continue  # "My soup is made with ...": read in its clause, the thing its subject
                subject = f"{speaker}'s {thing}" if m.group("det").lower() in ("my", "our") else thing
                quote_start = m.start()
            if subject is not None:
                yield _from_earlier(_claim(entry, base, text, quote_start, span, subject, "made_with", "assert"), things)


# A caption is another's words for what the picture shows (in conversation files, a captioning
# model's): the claim that the speaker shared that picture is held a little below what they say.
CAPTION_CONFIDENCE = 0.8


@functools.cache
def _caption_lead() -> re.Pattern[str]:
    leads = sorted(lexicon().captions.leads, key=len, reverse=True)
    return re.compile(r"\s*(?:" + "|".join(re.escape(lead) for lead in leads) + r")\s+", re.I)


@functools.cache
def _showing() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """(the speaker's words showing a picture and the phrase after them, up to the clause's end;
    a picture's own name opening that phrase: "a pic of", "this shot of")."""
    cap = lexicon().captions
    opener = "|".join(re.escape(s).replace("'", "['’]") for s in sorted(cap.showing, key=len, reverse=True))
    shown = re.compile(rf"(?<![\w'’])(?:{opener})\s+(?P<what>(?:this|these|that|my|our|a|an|the)\s[^.!?,;:()–—]*[^\s.!?,;:()–—])", re.I)
    named = "|".join(re.escape(w) for w in sorted(cap.pictures, key=len, reverse=True))
    picture = re.compile(rf"(?:(?:this|that|a|an|the|my|our)\s+)?(?:\w+\s+)?(?:{named})\b(?P<of>\s+(?:of|at)\s+)?", re.I)
    return shown, picture


def _shared_picture(entry: dict[str, Any], base: dict[str, Any], text: str, speaker: str, caption: str) -> Iterator[Proposal]:
    """`shared_photo` for the picture a turn shares (the entry's ``image_caption`` attribute): its
    caption, "a photo of a kayak tied to a dock" as "a kayak tied to a dock" quoting the caption
    whole, and the speaker's own words for it, "Here's a pic of my kayak" as "my kayak" quoting
    them. Nothing without a picture, nor for a phrase of more than six content words (a sentence,
    not a fact) or one that names only the picture ("Here's a shot from Sunday")."""

    def shared(obj: str, quote: str, confidence: float) -> Proposal | None:
        words = content_words(obj)
        if len(words) > MAX_CONTENT_WORDS or all(w.strip(".,!?'’") in _VAGUE_OBJECTS | _OBJECT_PRONOUNS for w in words):
            return None
        return Proposal(subject=speaker, predicate="shared_photo", object=obj, valid_at=entry["valid_at"], quote=quote, **{**base, "confidence": confidence})

    if (p := shared(_caption_body(caption), caption, min(base["confidence"], CAPTION_CONFIDENCE))) is not None:
        yield p
    shown, picture = _showing()
    for m in shown.finditer(text):
        what = re.split(r"\s+-+\s+|\s+-+$", m.group("what"))[0]  # "my students - they're ...": a dash ends it, a hyphen does not
        named = picture.match(what)
        if named is not None:
            if not named.group("of"):
                continue  # "Here's a shot from Sunday": the picture, not what it shows
            what = what[named.end() :]
        if (at := timephrase.find(what)) is not None:
            what = what[: at.start()].rstrip()  # "our new mural from last spring": the time is no part of the thing
            what = re.sub(r"\s+(?:from|at|on|in|during)$", "", what)
        what = re.sub(r"^(?:this|these|that)\s+", "", what, flags=re.I)  # "this jam" in the picture: the jam
        first = what.split(maxsplit=1)[0].lower() if what.strip() else ""
        if first in ("what", "how", "where", "when", "who", "why", "which") or first in _OBJECT_PRONOUNS | _NOT_POINTED:
            continue  # "a peek at what I sketched": a clause; "a pic of him grinning": whom is a guess; "this moment I caught"
        said = m.group(0)
        quote = said[: said.find(what, m.start("what") - m.start()) + len(what)]  # the words that show it, up to what it shows
        if (p := shared(what, quote, base["confidence"])) is not None:
            yield p


@functools.cache
def _answer_patterns() -> dict[str, re.Pattern[str]]:
    """The questions ``_answers`` reads and what a reply must say, from the lexicon's [answers]
    lists (longest alternative first: "once or twice" before "once")."""
    a = lexicon().answers

    def alt(words: tuple[str, ...]) -> str:
        return "|".join(re.escape(w).replace(r"\ ", r"\s+").replace("'", "['’]") for w in sorted(words, key=len, reverse=True))

    lead = r"^(?:(?:so|and|but|oh|hey|well)[,!]?\s+)?"
    you = r"(?:\s+(?:all|guys|two|both))?"
    number = r"(?:\d+|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|a\s+few|a\s+couple(?:\s+of)?|several|many)"
    return {
        "how_often": re.compile(rf"{lead}(?:{alt(a.how_often)})\s+(?P<doing>[^?]+?)\s*\?$", re.I),
        "often": re.compile(rf"{lead}do\s+you{you}\s+(?P<doing>[^?]+?)\s+(?:{alt(a.often)})\s*\?$", re.I),
        "frequency": re.compile(
            rf"(?<![\w-])(?:(?:{alt(a.qualifiers)})\s+)*(?:(?:{alt(a.counts)})\s+(?:{alt(a.periods)})|(?:{alt(a.every)}))(?![\w-])", re.I
        ),
        "how_long": re.compile(rf"{lead}(?:{alt(a.how_long)})\s+(?P<doing>\w+ing\b[^?]*?)\s*\?$", re.I),
        "duration": re.compile(
            rf"(?<![\w-])(?:(?:for|about|around|almost|nearly|over|more\s+than|like)\s+)*{number}\s+(?:{alt(a.durations)})(?![\w-])", re.I
        ),
        "plans": re.compile(rf"(?<!\w)(?:{alt(a.plans)})(?!\w)", re.I),
        "doings": re.compile(rf"(?<!\w)(?:{alt(a.doings)})(?!\w)", re.I),
        "what": re.compile(
            rf"{lead}(?:{alt(a.what)})\s+(?P<things>[a-z]+)\s+(?:are|have|do|did|were|will)\s+you{you}\s+(?:been\s+)?"
            r"(?P<doing>[a-z]+(?:\s+(?:on|at|in|with|to|into|for|about|up|out))?)"
            r"(?:\s+(?:lately|recently|these\s+days|nowadays|now|so\s+far|right\s+now|at\s+the\s+moment))?\s*\?$",
            re.I,
        ),
    }


# A reply's first sentence may only greet or thank ("Thanks, Lea!", "Yeah!"): the answer is in
# the next one.
_COURTESY = frozenset({
    "thanks", "thank", "you", "yeah", "yes", "yep", "yup", "hey", "hi", "hello", "oh", "wow", "sure", "totally",
    "definitely", "absolutely", "awesome", "aww", "haha", "lol", "great", "so", "much", "a", "lot", "ooh", "hmm",
    "well", "good", "question", "ha", "nice", "cool", "of", "course", "for", "asking",
})  # fmt: skip
# Words that put a reply's answer under a hedge, a negation or another subject: no claim.
_NOT_ANSWERED = frozenset({
    "not", "n't", "never", "no", "nope", "maybe", "might", "may", "perhaps", "possibly", "probably", "could", "would",
    "should", "hopefully", "someday", "if", "unless", "wish", "hope", "he", "she", "they", "his", "her", "their",
})  # fmt: skip
# What a "what ... are you doing?" reply must not hold to be a noun phrase alone: a subject or a
# finite verb makes it a sentence of its own, read clause by clause.
_NOT_A_PHRASE = frozenset({
    "i", "we", "he", "she", "they", "it", "you", "this", "that", "there", "is", "are", "was", "were", "am", "'s",
    "'m", "'re", "have", "has", "had", "do", "did", "does", "'ve", "will", "'ll", "can", "would", "could", "should",
    "not", "n't", "no", "if", "maybe", "probably", "hopefully",
})  # fmt: skip
_VAGUE_DOINGS = frozenset({"it", "that", "this", "them", "those", "these", "there", "something", "anything", "stuff"})
_WHAT_THINGS_NOT = frozenset({"else", "time", "kind", "sort", "type", "about", "exactly", "happened", "is", "was"})


def _answers(
    entry: dict[str, Any], base: dict[str, Any], text: str, sents: list[Any], asked: tuple[str, str], listener: str | None
) -> Iterator[Proposal]:
    """Claims of a reply to the other participant's question in the turn just before
    (``Dialogue.asked``): "How often do you swim?" - "Twice a week." is `practices` "swim twice a
    week"; "Any plans for the winter?" - "Repainting the boathouse." is `plans` "Repainting the
    boathouse"; "What causes have you been backing?" - "Seed libraries and river cleanups." is
    `activity` "backing Seed libraries and river cleanups". Only the reply's first sentence that says
    more than a greeting is read, and only where no hedge, negation or other subject comes before
    its answer. The claim keeps the question's entry and quote beside its own quote."""
    question_id, question = asked
    sent = _reply(sents, listener)
    if sent is None or sent.text.rstrip().endswith("?"):
        return
    pats = _answer_patterns()
    reply = sent.text.strip()
    speaker = entry["actor"]
    asked_fields = dict(question_entry_id=question_id, question_quote=question)

    def claim(predicate: str, obj: str) -> Proposal | None:
        if not content_words(obj) or len(content_words(obj)) > MAX_CONTENT_WORDS:
            return None
        return Proposal(subject=speaker, predicate=predicate, object=obj, valid_at=entry["valid_at"], quote=reply, **base, **asked_fields)

    for kind, unit in (("how_often", "frequency"), ("often", "frequency"), ("how_long", "duration")):
        m = pats[kind].match(question)
        if m is None:
            continue
        doing = m.group("doing").strip(" ,")
        found = pats[unit].search(reply)
        if found is None or set(doing.lower().split()) & _VAGUE_DOINGS - {"that", "those", "these"} or _unanswered(reply[: found.end()]):
            return
        doing = _doing_asked(doing, MAX_CONTENT_WORDS - len(content_words(found.group(0))))
        if doing is None:
            return
        p = claim("practices", f"{doing} {found.group(0)}")
        if p is not None:
            yield p
        return
    for kind, predicate in (("plans", "plans"), ("doings", "activity")):
        if pats[kind].search(question):
            span = _doing_span(sent)
            p = claim(predicate, text[span[0] : span[1]]) if span is not None else None
            if p is not None:
                yield p
            return
    m = pats["what"].match(question)
    if m is not None and m.group("things").lower() not in _WHAT_THINGS_NOT:
        phrase = _phrase_alone(reply)
        if phrase is None:
            return
        predicate = _frame_of(m.group("doing"))
        p = claim(predicate, phrase) if predicate else claim("activity", f"{m.group('doing')} {phrase}")
        if p is not None:
            yield p


_GET_TO = re.compile(r"^(?:get|got|manage|have|need)\s+to\s+", re.I)
_LIKE_THAT = re.compile(r"\s+like\s+(?:that|this|those|these)\b", re.I)


def _doing_asked(doing: str, room: int) -> str | None:
    """The doing a "how often" question asks about, in at most ``room`` content words: "manage to
    catch storms like that from the old pier" -> "catch storms" (what one manages to do is the
    doing, "like that" points at a picture, and a place or time after it goes first when words run out);
    None when it is vague ("do it") or does not fit."""
    doing = _GET_TO.sub("", doing)
    if len(content_words(doing)) > room:
        doing = _LIKE_THAT.split(doing, maxsplit=1)[0]
    words = doing.split()
    while len(content_words(" ".join(words))) > room:
        cut = max((k for k, w in enumerate(words) if k > 1 and w.lower() in _PREPOSITIONS), default=None)
        if cut is None:
            return None
        words = words[:cut]
    doing = " ".join(words)
    if not doing or set(doing.lower().split()) & _VAGUE_DOINGS:
        return None
    return doing


def _reply(sents: list[Any], listener: str | None) -> Any | None:
    """The first of a reply's first three sentences that says more than a greeting or thanks."""
    names = {w.lower() for w in (listener or "").split()}
    for sent in sents[:3]:
        words = [t for t in sent if t.is_alpha]
        if words and all(t.lower_ in _COURTESY or t.lower_ in names or (k and t.is_title) for k, t in enumerate(words)):
            continue
        return sent
    return None


def _unanswered(before: str) -> bool:
    """Whether the words of a reply's clause up to the end of its answer hedge, negate or name
    another subject ("Not often, maybe once a month", "My son goes twice a week")."""
    clause = re.split(r"[,;:–—]|\s-\s", before)[-1]
    return any(t.lower_ in _NOT_ANSWERED or t.lower_ in ("my", "our") for t in pipeline().tokenizer(clause))


def _doing_span(sent: Any) -> tuple[int, int] | None:
    """A reply that starts with a doing, after its openers ("Repainting the old boathouse -
    ..."): the doing's span, cut at the clause's end; None when it starts otherwise, or when the
    doing only leads into a clause of its own ("Taking it slow, I'm ...")."""
    tokens = [t for t in sent if not t.is_space]
    k = 0
    while k < len(tokens) and (tokens[k].lower_ in _OPENERS or tokens[k].is_punct):
        k += 1
    if k == len(tokens):
        return None
    first = tokens[k]
    hedges = _word_lists()["hedge_firsts"]
    if not (first.lower_.endswith("ing") and lemma(first.lower_) != first.lower_) or lemma(first.lower_) in hedges | _NOT_ACTIVITIES:
        return None  # "Thinking about it": a hedge; "Feeling great": no doing
    end = k + 1
    while end < len(tokens) and tokens[end].text not in _SPLIT_PUNCT and tokens[end].lower_ not in _STOPS:
        end += 1
    doing = {t.lower_ for t in tokens[k:end]}
    if end - k < 2 or doing & {"you", "your", "yours"} or (end + 1 < len(tokens) and tokens[end].text == "," and tokens[end + 1].lower_ in _SUBJECT_WORDS):
        return None
    return first.idx, tokens[end - 1].idx + len(tokens[end - 1].text)


def _phrase_alone(reply: str) -> str | None:
    """A reply that is a noun phrase alone ("Lately, seed libraries."): the phrase, after
    its openers; None for a sentence with a subject or a verb of its own."""
    body = re.sub(r"^(?:(?:recently|lately|mostly|mainly|currently|just|well|yeah|yes|so|oh|right now|these days)\b[,!]?\s*)+", "", reply, flags=re.I)
    phrase = re.split(r"\s*(?:[.!?;:(–—]|\s-\s)", body, maxsplit=1)[0].strip(" ,")
    words = [t.lower_ for t in pipeline().tokenizer(phrase)]
    if not words or len(words) > 10 or set(words) & _NOT_A_PHRASE or words[0] in _PREPOSITIONS:
        return None
    return phrase


def _frame_of(doing: str) -> str | None:
    """The predicate of the lexicon's phrase frame that is the whole of ``doing`` ("reading" ->
    `watched`), or None."""
    matcher, frames = _matcher()
    doc = pipeline()(doing)
    for key, start, end in matcher(doc):
        frame = frames[doc.vocab.strings[key]]
        if start == 0 and end == len(doc) and frame.kind == "phrase" and frame.predicate not in ("goal", "plans"):
            return frame.predicate
    return None


# Heads of an object that names a kind and leaves the thing to an apposition after a dash: "I'm
# working on a new project - a ballad about a lighthouse keeper".
_APPOSED_HEADS = frozenset({"project", "thing", "job", "idea", "gig", "surprise", "hobby", "book", "story", "recipe", "adventure", "challenge"})
_APPOSITION = re.compile(r"\s+[-–—]+\s+(?:a|an)\s+(?P<obj>[a-z][\w'\-]*(?:\s+[A-Za-z][\w'\-]*){0,9}?)\s*(?=[.!?;,]|\s+[-–—]|$)")


# Kinds of a work or a venue whose name may follow later in the sentence: "I saw a movie ..., I
# think it was called "Tidewater"", "a game with a medieval map called "Lantern Keep 2"".
_KINDS = frozenset({
    "movie", "film", "game", "book", "novel", "series", "show", "song", "album", "band", "podcast", "play", "musical",
    "app", "restaurant", "cafe", "café", "bar", "shop", "store", "bakery", "course", "class", "documentary", "anime",
    "comic", "poem", "script", "screenplay", "recipe", "dish", "club", "trail", "festival", "exhibit", "exhibition",
})  # fmt: skip
_TITLE_GIVEN = re.compile(
    r"\b(?:called|named|titled)\s+(?P<title>[\"“][^\"”]{2,60}[\"”]|[A-Z][\w'\-]*(?:\s+(?:[A-Z0-9][\w'\-]*|of|the|and)){0,5})"
)


def _title_given(entry: dict[str, Any], base: dict[str, Any], text: str, p: Proposal, sent: Any) -> Proposal | None:
    """The claim ``p`` again with the title given later in its sentence as its object, when its
    object names a kind of work or venue ("watched a movie" ... "it was called "Tidewater"" ->
    watched "Tidewater"); the quote runs from ``p``'s quote to the title. None when the sentence
    gives no title after the quote or the object names one already."""
    if p.predicate not in ("watched", "created", "received", "practices", "likes", "has", "attended", "studies", "started", "finished"):
        return None
    if not _KINDS & {w.strip(".,!?\"“”").lower() for w in p.object.split()}:
        return None
    start = text.find(p.quote, sent.start_char, sent.end_char)
    if start < 0:
        return None
    m = _TITLE_GIVEN.search(text, start + len(p.quote), sent.end_char)
    if m is None or m.group("title").strip("\"“”") in p.object:
        return None
    return rules._proposal_at(entry, base, text, start, m.end("title"), m.start("title"), m.start("title") + len(m.group("title")), p.subject, p.predicate, p.polarity)


def _apposed(p: Proposal, text: str) -> Proposal:
    """``p`` with its object replaced by the apposition that says what it is, when its object is
    a kind (`_APPOSED_HEADS`) followed by " - a <thing>" in the text: "a new project - a
    thriller set in a mountain village" -> "thriller set in a mountain village"."""
    if p.object.rsplit(" ", 1)[-1].lower() not in _APPOSED_HEADS:
        return p
    at = text.find(p.quote)
    pos = text.find(p.object, at) if at >= 0 else -1
    m = _APPOSITION.match(text, pos + len(p.object)) if pos >= 0 else None
    if m is None:
        return p
    obj = m.group("obj")
    words = content_words(obj)
    if not words or len(words) > MAX_CONTENT_WORDS or timephrase.find(obj):
        return p
    return p.model_copy(update={"object": obj, "quote": text[at : max(m.end("obj"), at + len(p.quote))]})  # (a time phrase after it stays quoted)


def _encouragement(entry: dict[str, Any], base: dict[str, Any], text: str, speaker: str, listener: str) -> Proposal | None:
    """"You've got this!", "I'm proud of you": the speaker backs the listener (`encourages`),
    quoted from the sentence's start to the phrase's end. Not in a question ("Are you proud of
    you?"), and one claim a turn: the fact is that they back them, not how often they say so."""
    for m in _word_lists()["encouraging"].finditer(text):
        start, end = rules._sentence_span(text, m.start())
        if text[m.end() : end].lstrip().startswith("?") or text[start:end].rstrip().endswith("?"):
            continue
        if re.search(r"\b(?:hope|hoping|if|wish)\s+$", text[start : m.start()], re.I):
            continue  # "hope you're doing great": a wish, "if you can do it": a condition
        quote = text[start : m.end()].strip(" \t-–—")
        quote = quote[len(quote) - len(quote.lstrip("!.,;: ")) :]
        return Proposal(subject=speaker, predicate="encourages", object=listener, quote=quote, valid_at=entry["valid_at"], **base)
    return _urging(entry, base, text, speaker, listener)


# Before an urging, only what an imperative may open with: "Rui, keep going", "So hang in there".
_URGING_LEAD = re.compile(r"^(?:[\s,!.\-–—]|(?i:and|so|just|now|but|please|oh|yeah|yes|wow|ok|okay|hey|aw|aww)\b|[A-Z][a-z]+\b)*$")


def _urging(entry: dict[str, Any], base: dict[str, Any], text: str, speaker: str, listener: str) -> Proposal | None:
    """"Keep at it and you'll win them over", "Hang in there, Lea!": an imperative of the
    lexicon's `urging` list opening its sentence backs the listener, when the sentence says
    "you" or the entry names them (whom it is said to must be in the source: "Keep it up!"
    alone names no one). Not "I'll keep it up for sure" (the speaker's own), nor in a question."""
    for m in _word_lists()["urging"].finditer(text):
        start, end = rules._sentence_span(text, m.start())
        sentence = text[start:end]
        if sentence.rstrip().endswith("?") or not _URGING_LEAD.match(text[start : m.start()]):
            continue
        you = re.search(r"(?<![\w'’])you(?:['’](?:ll|re|ve|d))?(?!\w)", sentence, re.I)
        if not you and not re.search(rf"(?<!\w){re.escape(listener.split()[0])}(?!\w)", text):
            continue
        # The quote runs to the sentence's end when it is "you" that says whom: "Keep it up, you're close".
        quote = text[m.start() : end].rstrip(" .!,;:-–—") if you and start + you.start() > m.start() else text[m.start() : m.end()]
        return Proposal(subject=speaker, predicate="encourages", object=listener, quote=quote, valid_at=entry["valid_at"], **base)
    return None


# Whose pet or child a name is given to: "my dog", "our one-year-old", "I got a puppy", "we adopted
# another cat"; the owner is the speaker only when "my"/"our" or "I"/"we" says so ("My friend got a
# dog, her name is Bella" names no pet of the speaker's: "got" there is the friend's).
_OWNED = r"(?:\b(?:[Mm]y|[Oo]ur)|\b(?:I|[Ww]e)(?:'ve|\s+have|\s+just|\s+finally|\s+recently)?\s+(?:got|adopted|rescued|have|had|welcomed|brought\s+home)\s+(?:a|an|another|this|two|three))"
_NAME_IS = re.compile(r"\b(?:[Hh]is|[Hh]er|[Ii]ts)\s+name(?:'s|’s|\s+is)\s+(?P<obj>[A-Z][\w'\-]*)")
_NAMED_CALLED = r"\s+(?:named|called)\s+(?P<obj>[A-Z][\w'\-]*)"


@functools.cache
def _owned_patterns() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """(a pet or child of the speaker's, the same followed by "named X"): the nouns are the
    lexicon's pets and family words, and "one-year-old" and the like."""
    rel = _word_lists()["relations"]
    nouns = "|".join(re.escape(w) for w in sorted({*rel["has_pet"], *rel["has_relative"]}, key=len, reverse=True))
    owned = rf"{_OWNED}\s+(?:[\w\-]+\s+){{0,2}}?(?P<noun>{nouns}|[a-z]+-year-old)\b"
    return re.compile(owned), re.compile(owned + _NAMED_CALLED)


def _names_given(text: str) -> Iterator[tuple[str, int, int, int]]:
    """(predicate, name start, name end, statement start) of a pet or child named in the turn:
    "we got another dog named Pepper", "I got a puppy! Her name's Bella", "Our two-year-old is a
    handful, her name is Lena". "his/her name is" names the nearest owned pet or child before it, in
    the same or the sentence before; the quote runs from the owner to the name."""
    if "name" not in (low := text.lower()) and "called" not in low:
        return  # "named", "name is", "name's", "called": none here
    owned, named = _owned_patterns()
    pets = set(_word_lists()["relations"]["has_pet"])

    def predicate(noun: str) -> str:
        return "has_pet" if noun in pets else "has_relative"

    for m in named.finditer(text):
        if m.group("obj") not in rules._NOT_PEOPLE:
            yield predicate(m.group("noun")), m.start("obj"), m.end("obj"), m.start()
    for m in _NAME_IS.finditer(text):
        before = [o for o in owned.finditer(text, max(0, m.start() - 160), m.start())]
        if not before or m.group("obj") in rules._NOT_PEOPLE:
            continue
        o = before[-1]
        if len(re.findall(r"[.!?](?:\s|$)", text[o.end() : m.start()])) > 1:
            continue  # more than a sentence between the pet and its name: whose name it is is a guess
        yield predicate(o.group("noun")), m.start("obj"), m.end("obj"), o.start()


def _pet_kind(entry: dict[str, Any], base: dict[str, Any], text: str, start: int, name_start: int, name_end: int) -> Proposal | None:
    """What kind of animal a pet named in a has_pet statement is, said of the pet by its name
    (`described_as`): "my guinea pig Pip", "my dog named Rex", "Pip, my guinea pig". None
    for "my pet Pip" (no kind) and for plurals ("my dogs Rex and Bo": which is which is not said)."""
    before, after = _pet_kind_patterns()
    if start < name_start:
        m = before.search(text, start, name_start)
        span = (m.start("noun"), m.end("noun"), start, name_end) if m else None
    else:
        m = after.match(text, name_end)
        span = (m.start("noun"), m.end("noun"), name_start, m.end("noun")) if m else None
    if span is None or text[span[0] : span[1]].lower() in _NOT_KINDS:
        return None
    noun_start, noun_end, quote_start, quote_end = span
    p = rules._proposal_at(entry, base, text, quote_start, quote_end, noun_start, noun_end, text[name_start:name_end], "described_as", "assert")
    if p is not None and p.quote in text[quote_start:quote_end]:
        p = p.model_copy(update={"quote": text[quote_start:quote_end]})  # the quote names the pet: "a cat named Juniper"
    return p


# Pet nouns that say no kind ("my pet Pip") or many animals.
_NOT_KINDS = frozenset({"pet", "pets", "dogs", "cats", "puppies", "kittens"})


@functools.cache
def _pet_kind_patterns() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """The pet's noun closing the text before its name ("my guinea pig ", "a cat named "), and
    after it ("Pip, my guinea pig")."""
    alt = "|".join(re.escape(w) for w in _word_lists()["relations"]["has_pet"])
    return (
        re.compile(rf"\b(?P<noun>{alt})(?:,\s*|\s+(?:named|called)\s+|\s+)$"),
        re.compile(rf",\s+[Mm]y (?:(?:little|older|younger|new|sweet|baby) )?(?P<noun>{alt})\b"),
    )


def _relations(text: str) -> Iterator[tuple[str, int, int, int]]:
    for pred, pattern in _relation_pattern():
        for m in pattern.finditer(text):
            if m.group("obj") in rules._NOT_PEOPLE:
                continue
            yield pred, m.start("obj"), m.end("obj"), m.start()


# "Jurassic Park is my top pick", "Mango sorbet is one of my favorites", "my favorite band is X".
_FAVOURITE = r"(?:one of\s+)?[Mm]y\s+(?:all-time\s+|absolute\s+|top\s+|very\s+)?(?:favou?rites?|faves?|top picks?|go-tos?)"
_FAVOURITE_BEFORE = re.compile(rf"(?:^|(?<=[.!?]\s)|(?<=,\s))(?P<obj>(?:[\"“][^\"”]{{2,60}}[\"”]|[A-Za-z][\w'\- ]{{1,60}}?))\s+(?:is|are|was|were|'s|has\s+(?:always\s+)?been|have\s+(?:always\s+)?been)\s+(?:(?:\w+\s+)?{_FAVOURITE}|at the top of my list|(?:a|one)\s+(?:\w+\s+)?(?:favou?rite|fave)s?\s+of\s+mine)\b")
_FAVOURITE_AFTER = re.compile(rf"\b{_FAVOURITE}(?:\s+[a-z][a-z\-]*){{0,3}}\s+(?:is|are|was|were|has to be)\s+(?:this\s+|that\s+|these\s+|the\s+)?(?:amazing\s+|awesome\s+|great\s+|delicious\s+)?(?P<obj>[\"“]?[A-Za-z][\w'\- ]{{1,60}}?[\"”]?)(?=[.!?,;]|\s+[-–—]\s|\s+(?:and|but|because|by)\b|$)")


# "It's really important to teach teens about budgeting", "Family is so important to me".
_IMPORTANT = r"(?:so\s+|super\s+|really\s+|very\s+|extra\s+|truly\s+)?(?:important|crucial|key|essential|vital|precious|special)"
# Only "to <doing>": "it's important for our street" names no value, "to me that ..." is a clause;
# "for younger generations to remember ..." says whose doing is valued.
_VALUES_IT = re.compile(rf"\b(?:[Ii]t's|[Ii]t is|[Ii]ts)\s+{_IMPORTANT}\s+(?:to\s+me\s+|for\s+(?!me\b|us\b)[a-z][\w'\-]*(?:\s+[a-z][\w'\-]*){{0,2}}?\s+)?to\s+(?!me\b)(?P<obj>(?:[^.!?,;:\-–()]|(?<=\w)-(?=\w)){{3,90}})")
_VALUES_X = re.compile(
    rf"(?:^|(?<=[.!?]\s))(?P<obj>[\"“]?[A-Z][\w'\"” ]{{2,50}}?)\s+(?:(?:is|are|'s|means)\s+(?:{_IMPORTANT}|the world)\s+to|(?:really\s+)?matters?(?:\s+so\s+much|\s+a\s+lot)?\s+to"
    r"|(?:really\s+)?(?:means|meant)\s+(?:a\s+lot|so\s+much|everything)\s+to"
    r"|(?:has|had)\s+(?:a\s+lot\s+of\s+|so\s+much\s+|great\s+|special\s+|real\s+)?(?:significance|meaning)\s+(?:for|to))\s+me\b"
)
# "Balance is key.", "Yeah, good sleep's crucial!": a verdict on a thing in general, in the
# present and closing its clause ("X is key to Y" says how, "X was important" what once was);
# not "special" or "precious" without "to me", which praise a thing more than they value it.
_VALUES_BARE = re.compile(
    r"(?:^|(?<=[.!?]\s)|(?<=,\s))(?P<obj>[A-Za-z][\w'\- ]{2,50}?)(?:\s+is|\s+are|'s)\s+(?:so\s+|super\s+|really\s+|very\s+|truly\s+)?"
    r"(?:important|crucial|key|essential|vital)(?=\s*[.!;]|\s*,\s+(?:and|but|so)\b|\s*$)"
)


# "Rowing brings me joy", "Sketching gives me so much peace".
_JOY = re.compile(
    r"(?:^|(?<=[.!?]\s))(?P<obj>[A-Z][\w'\- ]{2,50}?)\s+(?:(?:really|always|just|definitely|truly|sure)\s+)?(?:brings|bring|gives|give|brought|gave)\s+"
    r"(?:(?:me|us)\s+(?:so\s+much\s+|a\s+lot\s+of\s+|such\s+|great\s+|real\s+)?(?:joy|happiness|peace|comfort|calm)"
    r"|(?:so\s+much\s+|a\s+lot\s+of\s+|such\s+|great\s+|real\s+)?(?:joy|happiness|peace|comfort)\s+(?:to|into)\s+my\s+life)\b"
)

# "Restoring old bikes is particularly interesting to me", "Folk music is so raw - it really
# speaks to me": what holds the speaker's interest is something they like.
_SPEAKS_TO_ME = re.compile(
    r"(?:^|(?<=[.!?]\s))(?P<obj>[A-Z][\w'\- ]{2,50}?)\s+(?:(?:is|are|'s)\s+(?:(?:particularly|really|so|very|super|always)\s+)?(?:interesting|fascinating)\s+to\s+me"
    r"|(?:really\s+|truly\s+|always\s+)?(?:speaks|spoke|resonates|resonated)\s+(?:to|with)\s+me"
    r"|(?:is|are|'s)\s+[^.!?]{3,60}?\s[-–—]+\s+it\s+(?:really\s+|truly\s+|just\s+)?(?:speaks|resonates)\s+(?:to|with)\s+me)\b"
)

# Thanks for something named: "Thanks for the tip on the bike shop", "Your help is much
# appreciated", "Your note means a lot". A bare "Thanks!" names nothing and gives no claim; "thanks for
# asking" names only talk (cut in _statements).
_THANKS_FOR = re.compile(r"\b(?:[Tt]hanks|[Tt]hank you|[Tt]hank u)(?:\s+(?:so|very)\s+much|\s+a\s+lot|\s+again)?,?\s+(?:[A-Z]\w+,?\s+)?for\s+(?P<obj>[^.!?,;:\-–()]{3,80})")
_APPRECIATED = re.compile(
    r"(?:^|(?<=[.!?]\s)|(?<=,\s))(?P<obj>[Yy]our\s+[\w'\- ]{3,50}?)\s+(?:is|are|was|were)\s+(?:\w+\s+)?(?:appreciated|priceless)\b"
    r"|(?:^|(?<=[.!?]\s)|(?<=,\s))(?P<obj2>[Yy]our\s+[\w'\- ]{3,50}?)\s+(?:really\s+|truly\s+)?(?:means?|meant)\s+(?:a\s+lot|so\s+much|the\s+world|everything)\b"
)

_COURTESIES = _TALK | {"have", "be", "reach", "listen", "help", "come", "understand", "care", "think"}
_LEAD_OWNER = re.compile(r"(?:all the|all|your|the)\s+", re.I)

# "Climbing makes me so calm", "Her letter touched me": the feeling, caused by what is named.
_CAUSE = r"(?:^|(?<=[.!?;]\s))(?:[^.!?;]{0,80}?\s)?"  # the quote keeps the cause: from the sentence's start
_MAKES_ME = re.compile(_CAUSE + r"(?:makes?|made|making)\s+me\s+(?:feel\s+)?(?:so\s+|really\s+|super\s+|very\s+|extremely\s+|incredibly\s+)?(?P<obj>[a-z]+(?:\s+and\s+[a-z]+)?)\b")
_TOUCHED_ME = re.compile(_CAUSE + r"(?P<obj>touched|moved|inspired|amazed|humbled)\s+me\b")

# "a scarf from my aunt back in my home country, Norway", "my hometown of Porto": where the speaker comes from.
_HOME_COUNTRY = re.compile(
    rf"\b[Mm]y (?:home (?:country|town)|hometown|native (?:country|land)|homeland|country of origin)(?:,\s*|\s+of\s+|\s+(?:is|was)\s+)(?P<obj>{rules._CAP}(?:\s+{rules._CAP}){{0,2}})"
)

# What the whole turn may say of the speaker, beside its clauses.
_STATEMENTS = (
    ("comes_from", (_HOME_COUNTRY,)),
    ("likes", (_FAVOURITE_BEFORE, _FAVOURITE_AFTER, _JOY, _SPEAKS_TO_ME)),
    ("values", (_VALUES_IT, _VALUES_X, _VALUES_BARE)),
    ("appreciates", (_THANKS_FOR, _APPRECIATED)),
    ("feels", (_MAKES_ME, _TOUCHED_ME)),
)
# A word each match of a pattern holds (lower case): a turn without any is not searched. The
# statements are a fifth of the pass, and most turns hold none of them.
_IMPORTANT_WORDS = ("important", "crucial", "key", "essential", "vital", "precious", "special")
_NEEDS: dict[re.Pattern[str], tuple[str, ...]] = {
    _HOME_COUNTRY: ("home", "native", "country of origin"),
    _FAVOURITE_BEFORE: ("fav", "top pick", "go-to", "top of my list", "of mine"),
    _FAVOURITE_AFTER: ("fav", "top pick", "go-to"),
    _JOY: ("joy", "happiness", "peace", "comfort", "calm"),
    _SPEAKS_TO_ME: ("to me", "with me"),
    _VALUES_IT: _IMPORTANT_WORDS,
    _VALUES_X: ("to me", "for me"),
    _VALUES_BARE: _IMPORTANT_WORDS,
    _THANKS_FOR: ("thank",),
    _APPRECIATED: ("your",),
    _MAKES_ME: (" me",),
    _TOUCHED_ME: (" me",),
}
_OBJECT_END = re.compile(r"\s+(?:and (?:what|how|why|who)|because|which|so that|when|while)\b")
_NOT_OBJECTS = ("it", "that", "this", "which", "what", "mine", "he", "she", "they", "you", "i", "i'll", "i'm", "i've", "i'd", "we", "we'll", "we're", "we've")


# Whose praise a generic one is: not of a thing pointed at, owned by someone or counted.
_NOT_GENERIC = frozenset({
    "it", "that", "this", "these", "those", "there", "he", "she", "they", "you", "your", "his", "her", "their", "what",
    "which", "the", "a", "an", "our", "my", "everyone", "everything", "everybody", "all", "most", "some", "life",
    "today", "glad", "and", "plus", "so", "but", "events", "trips", "moments", "things", "times",
})  # fmt: skip


@functools.cache
def _praise() -> re.Pattern[str]:
    """"Knitting's so relaxing", "Being outside can be really enjoyable", "Swimming is a great way to
    relax": a generic statement (a bare noun or a gerund, no article) praised with one of the
    lexicon's `praise` words says what the speaker likes. "The view was amazing" (one thing, once)
    and "Your drive is awesome" (the listener's) are not generic."""
    words = "|".join(re.escape(w) for w in sorted(lexicon().praise.words, key=len, reverse=True))
    return re.compile(
        r"(?:^|(?<=[.!?]\s)|(?<=,\s))(?P<obj>[A-Z][a-z]+(?:\s+(?:and\s+)?[a-z]+){0,2}?)(?:'s|’s|\s+is|\s+are|\s+can\s+be|\s+has\s+always\s+been)\s+"
        rf"(?:so\s+|really\s+|super\s+|very\s+|truly\s+|such\s+a\s+|a\s+|an\s+)?(?:{words})(?=\s*[.!,;]|\s+(?:and|way|outlet|thing|activity|hobby)\b|\s*$)"
    )


# The sentence before a position in a turn, and one that reacts to what the listener said.
_SENTENCE_BEFORE = re.compile(r"(?:^|(?<=[.!?])\s+)[^.!?]*[.!?]?\s*$")
_REACTION = re.compile(r"\s*(?:(?:That|It)\s+)?(?:sounds|looks)\b|\s*(?:Wow|Congrats|Congratulations)\b", re.I)


# "Rowing helps me de-stress", "Blue calms me", "Music and friends keep me at peace": what
# does this for the speaker is something they like (the doer a noun or gerund, as for praise).
_DOES_ME_GOOD = re.compile(
    r"(?:^|(?<=[.!?]\s)|(?<=,\s)|(?<=\bbut\s))(?P<obj>(?:[Mm]y\s+|[Oo]ur\s+)?[A-Za-z][a-z]+(?:\s+(?:and\s+|or\s+)?[a-z]+){0,3}?)\s+(?:(?:really|always|just|definitely|truly|sure)\s+)?"
    r"(?:helps?\s+me\s+(?:to\s+)?(?:relax|de-stress|destress|unwind|cope|recharge|heal|focus|express)|(?:calms|relaxes|soothes|grounds|energizes|recharges|calm|relax|soothe|ground)\s+me"
    r"|keeps?\s+me\s+(?:sane|grounded|at\s+peace|calm)|(?:cheers?|cheered)\s+me\s+up|(?:brightens?|brightened)\s+(?:up\s+)?my\s+days?)\b"
)


@functools.cache
def _is_my() -> re.Pattern[str]:
    """"Rowing is my passion", "Gardening's always been my refuge", "My family is my rock": a thing
    said to be one of the lexicon's [mine] nouns of the speaker's."""
    nouns = [*lexicon().mine.likes, *lexicon().mine.values]
    alt = "|".join(re.escape(w) for w in sorted(nouns, key=len, reverse=True))
    return re.compile(
        r"(?:^|(?<=[.!?]\s)|(?<=,\s))(?P<obj>[A-Z][\w']*(?:,?\s+(?:and\s+)?[a-z][\w']*){0,4}?)(?:'s|’s|\s+is|\s+are|\s+has\s+always\s+been|'s\s+always\s+been|\s+has\s+been|'s\s+been)\s+"
        rf"(?:(?:just|mostly|really|truly|definitely|also|still)\s+)?(?:my|our)\s+(?:(?:true|own|little|biggest|main|favou?rite|go-to)\s+)?(?P<noun>{alt})\b"
    )


def _mine(text: str, low: str) -> Iterator[tuple[str, int, int, int, int]]:
    values = set(lexicon().mine.values)
    for m in _is_my().finditer(text) if "my " in low or "our " in low else ():
        obj = m.group("obj").lower().split()
        words = {w.strip(",") for w in obj}
        if obj[0] in _NOT_GENERIC - {"my", "our"} or obj[0].strip(",") in _OPENERS or {"that", "this", "it", "there", "what", "them", "you", "your", "they", "he", "she", "we", "i"} & words:
            continue  # "It's my passion": what "it" is, the clause does not say
        yield ("values" if m.group("noun") in values else "likes"), m.start("obj"), m.end("obj"), m.start(), m.end()
    for m in _DOES_ME_GOOD.finditer(text) if " me" in low or "my day" in low else ():
        obj = m.group("obj").lower().split()
        lead = re.match(r"(?:(?:but|and|so)\s+)?(?:(?:my|our)\s+)?", m.group("obj"), re.I)
        obj = obj[len(lead.group(0).split()) :]  # "but my parrots always cheer me up": the speaker's own, named
        if obj and obj[0] not in _NOT_GENERIC and not {"that", "this", "it", "there", "what", "them", "you", "your", "knowing"} & set(obj):
            conj = re.match(r"(?:(?:but|and|so)\s+)?", m.group("obj"), re.I).end()
            yield "likes", m.start("obj") + len(lead.group(0)), m.end("obj"), m.start("obj") + conj, m.end()


@functools.cache
def _made_by_me() -> tuple[re.Pattern[str], dict[str, str]]:
    """"my fox drawing I did", "These mugs I bought yesterday", "a cake that I baked": a
    thing named before a relative clause whose subject is the speaker and whose verb is a past
    form of a one-word `created` or `received` frame of the lexicon (and "did", which there makes;
    "met": "these folks I met at the library"). The predicate is that frame's."""
    verbs: dict[str, str] = {"did": "created", "met": "met", "contributed to": "created", "worked on": "created"}
    for frame in lexicon().frame:
        if frame.predicate in ("created", "received"):
            for phrase in frame.phrases:
                if " " not in phrase:
                    for variant in surface_variants(phrase):
                        form = variant[0]
                        if len(variant) == 1 and lemma(form) != form and not form.endswith(("s", "ing")):
                            verbs.setdefault(form, frame.predicate)
    alt = "|".join(sorted(verbs, key=len, reverse=True))
    return re.compile(
        r"\b(?:[Mm]y|[Tt]he|[Tt]his|[Tt]hese|[Tt]hose|[Ss]ome|[Aa]|[Aa]n|[Aa]nother|[Oo]ur)\s+(?P<obj>[a-zA-Z][\w'\-]*(?:\s+(?!(?:at|in|on|for|to|with|from|about|by|into|and|a|an|the|my|our|this|that|these|those|some)\b)[a-zA-Z][\w'\-]*){0,6}?)\s+"
        rf"(?:that\s+)?(?:I|we)\s+(?:just\s+|recently\s+|finally\s+|also\s+)?(?P<verb>{alt})\b"
    ), verbs


# Whose relative clause is no thing made or received: a photo "I got" was taken, "the impact we made" is a saying.
_NOT_MADE = frozenset({"pic", "pics", "photo", "photos", "shot", "picture", "pictures", "and", "lot", "other", "day", "time", "week"})


def _made(text: str) -> Iterator[tuple[str, int, int, int, int]]:
    pattern, verbs = _made_by_me()
    for m in pattern.finditer(text):
        words = m.group("obj").lower().split()
        if not _NOT_MADE & set(words) and words[-1] not in _MADE_IDIOMS and not _TIME_WORDS & set(words[-1:]):
            yield verbs[m.group("verb")], m.start("obj"), m.end("obj"), m.start(), m.end()


@functools.cache
def _of_ones_own_pattern() -> re.Pattern[str]:
    kinds = "|".join(sorted(lexicon().owned.of_ones_own, key=len, reverse=True))
    return re.compile(
        rf"\b(?:on|at|in|with|from|for|through)\s+(?:my|our)\s+(?P<obj>own\s+(?:[a-z][a-z\-]*\s+){{0,2}}?(?:{kinds})s?)\b(?!\s*(?:one\s+day|someday|some\s+day))"
    )


def _sentence_end(text: str, at: int) -> int:
    """Where the sentence holding offset ``at`` ends: its closing mark, or the end of the text."""
    return min((k for k in (text.find(mark, at) for mark in ".!?") if k >= 0), default=len(text.rstrip()))


# Words that leave a sentence's "my own ..." wished for or to come ("I'd love to host my own show")
_NOT_YET_OWN = re.compile(r"\b(?:would|'d|might|may|could|someday|one day|if|want|wanna|wish|hope|dream|dreams|will|'ll|gonna|going to|plan|planning|soon|future)\b", re.I)


def _of_ones_own(text: str) -> Iterator[tuple[str, int, int, int, int]]:
    """`has` of what a doing takes place on, at or with, the speaker's own ("I play records on my
    own radio show" -> "own radio show"), one of the lexicon's kinds (a show, a studio, a shop);
    not in a question, a wish or a plan."""
    if "own" not in text:
        return
    for m in _of_ones_own_pattern().finditer(text):
        start = max(text.rfind(mark, 0, m.start()) for mark in ".!?") + 1
        sentence = text[start : _sentence_end(text, m.end()) + 1]
        if sentence.rstrip().endswith("?") or _NOT_YET_OWN.search(sentence):
            continue
        yield "has", m.start("obj"), m.end("obj"), start + len(sentence) - len(sentence.lstrip()), m.end()


# One to three words that name a role ("baker", "night nurse", "first-time dad"), none a function word.
_ROLE = r"(?P<obj>(?:(?!(?:and|or|to|who|in|at|for|with|of|how|is|was|but|so)\b)[a-z][a-z\-]*\s+){0,2}(?!(?:and|or|to|who|in|at|for|with|of|how|is|was|but|so)\b)[a-z][a-z\-]*)"
_AS_A_ROLE = (
    # "As a baker, I'm up before dawn", "As a nurse, I see ...": the speaker is one
    re.compile(rf"(?:^|(?<=[.!?]\s))As\s+an?\s+{_ROLE},\s+(?:I|my|we|our)\b"),
    # "a song about my years as a night nurse": what the speaker's path is one of
    re.compile(rf"\b(?:[Mm]y|[Oo]ur)\s+(?:own\s+)?(?:journey|path|life|experience|years|story)\s+as\s+an?\s+{_ROLE}(?=\s*(?:[,.!?;]|\band\b|$))"),
    # "It's pretty lonely as a night baker", "It's hard as a night nurse": the role one finds it hard in is one's own
    re.compile(
        r"(?:^|(?<=[.!?]\s)|(?<=,\s))(?:It|it)(?:'s|’s|\s+is|\s+was|'ll\s+be|\s+will\s+be|\s+gets)\s+(?:(?:so|really|pretty|quite|super|very|a\s+bit)\s+)?"
        rf"(?:tough|hard|difficult|challenging|exhausting|lonely|stressful|tiring|rough)\s+as\s+an?\s+{_ROLE}(?=\s*(?:[,.!?;]|\bbut\b|$))"
    ),
)
# What "as a ..." names that is no role the speaker says they are: an age, a group, a saying.
_NOT_ROLES = frozenset({
    "kid", "child", "teen", "teenager", "boy", "girl", "baby", "youngster", "family", "team", "group", "couple",
    "whole", "result", "reminder", "gift", "way", "bonus", "treat", "hobby", "friend", "side", "matter", "joke",
})  # fmt: skip


def _as_a_role(text: str) -> Iterator[tuple[str, int, int, int, int]]:
    """`identity` of a role the speaker says they speak as or have a path as ("As a baker, I'm up
    before dawn", "my years as a night nurse"); not an age ("as a kid"), a group ("as a family")
    or a saying ("as a reminder")."""
    if "as a" not in text.lower():
        return
    for pattern in _AS_A_ROLE:
        for m in pattern.finditer(text):
            head = m.group("obj").split()[-1].lower()
            if lemma(head) in _NOT_ROLES or head in _NOT_ROLES or lemma(head) not in word_classes()["noun"]:
                continue
            yield "identity", m.start("obj"), m.end("obj"), m.start(), _sentence_end(text, m.end())  # the quote: to the sentence's end


def _statements(text: str) -> Iterator[tuple[str, int, int, int, int]]:
    """(predicate, object start, object end, statement start, statement end) of each favourite
    named and each thing said to be important."""
    low = text.lower()
    yield from _mine(text, low)
    yield from _made(text)
    yield from _of_ones_own(text)
    yield from _as_a_role(text)
    for m in _praise().finditer(text) if any(w in low for w in lexicon().praise.words) else ():
        obj = m.group("obj").lower().split()
        if obj[0] in _NOT_GENERIC or {"that", "this", "it", "there", "what", "them", "you", "your"} & set(obj):  # "Rui, that's awesome"
            continue
        if _REACTION.match(_SENTENCE_BEFORE.search(text[: m.start()]).group(0)):
            continue  # "Sounds fun, Rui! Rowing in pairs is the best ...": a remark on the listener's news
        yield "likes", m.start("obj"), m.end("obj"), m.start(), m.end()
    for predicate, patterns in _STATEMENTS:
        for pattern in patterns:
            if not any(w in low for w in _NEEDS[pattern]):
                continue
            for m in pattern.finditer(text):
                group = "obj" if m.group("obj") is not None else "obj2"
                raw = m.group(group)
                start = m.start(group) + len(raw) - len(raw.lstrip())
                obj = _OBJECT_END.split(raw.strip())[0].rstrip()
                # "..., but jazz is my top pick": the favourite follows the conjunction.
                if lead := re.match(r"(?:but|and|so|or|plus|though)\s+", obj, re.I):
                    start, obj = start + lead.end(), obj[lead.end() :]
                if lead := re.match(r"(?:remember|know|think|believe|guess|say|feel|agree|hope)\s+(?:that\s+)?(?!(?:and|or)\b)", obj, re.I):
                    start, obj = start + lead.end(), obj[lead.end() :]  # "Remember that resting well is important": the value follows
                if lead := re.match(r"(?:this|that|these|those)\s+(?=\w)", obj, re.I):
                    start, obj = start + lead.end(), obj[lead.end() :]  # "This scarf means a lot to me"
                if not obj or obj.lower().split()[0] in _NOT_OBJECTS or obj.lower().split()[-1] in ("and", "or", "but", "that", "which", "who"):
                    continue  # "Rex helps me stay calm and [brings me joy]": a clause, not a thing
                if predicate == "feels" and obj.lower().split()[0] not in _word_lists()["feelings"]:
                    continue  # "makes me think", "made me realize": not a feeling
                if predicate == "appreciates":
                    head = obj.split()[0].lower().rstrip("'’")
                    if (lemma(head) in _COURTESIES or (head.endswith("in") and lemma(head + "g") in _COURTESIES)) and len(obj.split()) < 3:
                        continue  # "thanks for asking", "thanks for having me": courtesy, nothing named
                    if lead := _LEAD_OWNER.match(obj):
                        start, obj = start + lead.end(), obj[lead.end() :]  # "your support" -> "support"
                yield predicate, start, start + len(obj), m.start(), m.end()


# What "it's a ..." says of a moment, not of a thing: "it's a great way to unwind", "it was a blast".
_NOT_DESCRIPTIONS = frozenset({
    "way", "time", "lot", "bit", "chance", "blast", "shame", "pity", "relief", "reminder", "sign", "step", "journey",
    "bond", "challenge", "struggle", "process", "good", "great", "big", "huge", "real", "nice", "tough", "hard",
    "little", "whole", "perfect", "part", "matter", "question", "dream", "gift", "pleasure", "deal",
})  # fmt: skip


@dataclass(frozen=True)
class _Thing:
    """Someone or something of the speaker's, or a thing named, that a later clause may be about:
    "my son" (subject "Ana's son"), "our turtles", "my old area", the film "Treasure Island"."""

    subject: str  # as a claim names it: "Ana's son", "Treasure Island"
    at: int  # the token where it is named (after "my")
    end: int  # the token after it
    kind: str  # "person", "animal" or "thing"
    gender: str | None  # "he", "she", or None when either may stand for it
    plural: bool
    owned: bool  # the speaker's ("my"/"our"), rather than a title or a name given
    sent: int  # the token its sentence starts at
    collective: bool = False  # "my family", "our team": neither "he" nor "she"
    starts: tuple[int, ...] = ()  # where the turn's sentences start (for a pronoun's sentence)
    # Pointed at rather than owned or named: "The studio looks amazing", "That page has ...",
    # "Poppies mean remembrance": only what it is or is like is read of it (`described_as`).
    pointed: bool = False
    # Named in the speaker's last turn of the session, not in this one (``Dialogue``): what "it"
    # or "they" stand for when nothing in the turn can ("What is it made of?" "It's a blend of
    # cedar and walnut!").
    earlier: bool = False
    source: str | None = None  # the entry that names it, for an earlier one (a claim's subject_entry_id)
    # What the turn's picture shows (its caption), read as an earlier thing is: what "it" or "they"
    # stand for when nothing in the turn can be (``_picture_thing``).
    shown: bool = False


@functools.cache
def _owned_words() -> dict[str, Any]:
    lex = lexicon()
    rel = lex.relations
    people = {w for w in (*rel.has_relative, *rel.has_friend, *rel.has_partner) if " " not in w}
    return {
        "people": people,
        "pets": {w for w in rel.has_pet if " " not in w},
        "compounds": {(tuple(w.split()), "animal" if w in rel.has_pet else "person") for w in (*rel.has_relative, *rel.has_friend, *rel.has_partner, *rel.has_pet) if " " in w},
        "kin": people | {w for w in rel.has_pet if " " not in w},
        "he": set(lex.owned.he),
        "she": set(lex.owned.she),
        "not_owned": set(lex.owned.not_owned) | {w for w in (*lex.mine.likes, *lex.mine.values) if " " not in w},
        "plural_people": {"kids", "children", "parents", "in-laws", "folks", "grandparents", "siblings", "friends"},
        "collective": {"family", "fam", "team", "group", "crew", "class", "club", "community", "band", "family's"},
    }


def _owned_at(doc: Any, k: int, closers: frozenset[str] = frozenset()) -> tuple[int, str] | None:
    """(end token, kind) of the noun phrase of the speaker's that starts at token ``k`` (after
    "my"/"our"): up to two describing words and a noun ("son", "old area", "younger brother",
    "home country", "guinea pig"), ending before a verb, a preposition or the clause's end. None
    when the words do not close a phrase there ("my kids love it": "love" may go on a noun)."""
    words, classes = _owned_words(), word_classes()
    n = len(doc)
    first_word = doc[k].lower_
    for compound, kind in words["compounds"]:  # "guinea pig", "best friend"
        if compound[0] == first_word and tuple(t.lower_ for t in doc[k : k + len(compound)]) == compound:
            return k + len(compound), kind
    j = k
    while j < n and j - k < 2 and doc[j].is_alpha and doc[j].is_lower and _lemma(doc[j]) in classes["adj"] and doc[j].lower_ not in words["kin"] and j + 1 < n and doc[j + 1].is_alpha and doc[j + 1].is_lower and doc[j + 1].lower_ not in _CLOSING:
        j += 1  # "old", "younger", "new": a word describing the noun after it (not "mural" before "was": a noun that is an adjective too)
    if j >= n or not doc[j].is_alpha or not doc[j].is_lower:
        return None
    head = doc[j]
    low = head.lower_
    if _lemma(head) not in classes["noun"] and low not in words["kin"]:
        return None
    if low in _TIME_WORDS | _TIME_NOUNS:
        return None
    end = j + 1
    if end + 1 < n and low not in words["kin"] and doc[end].is_alpha and doc[end].is_lower and not _closes(doc[end]) and doc[end].lower_ not in _CLOSING_VERBS | closers and (doc[end].lower_ in classes["noun"] or _lemma(doc[end]) in classes["noun"] and not _past_verb(doc[end])) and _closes(doc[end + 1]):
        end += 1  # "home country", "dance crew": a noun on a noun, then a verb (not "necklace stands for")
    if end < n and low not in words["kin"] and not _closes(doc[end]) and doc[end].lower_ not in closers and not (doc[end].is_alpha and doc[end].is_lower and _lemma(doc[end]) in classes["verb"] and _lemma(doc[end]) not in classes["noun"]):
        return None  # the phrase may go on ("my kids love it": "love" may be a noun): where it ends is a guess
    if end < n and (doc[end].text in ("'", "’", "'s", "’s", "-", "–") and not doc[end - 1].whitespace_ or doc[end].is_title and doc[end].text != "I"):
        return None  # "my kids' faces", "my sister Ana" (the name is the one meant)
    if end + 1 < n and doc[end].text == "," and doc[end + 1].is_title and doc[end + 1].text != "I":
        return None  # "my friend, Tom": the name is the one meant
    phrase = {t.lower_ for t in doc[k:end]} | {_lemma(doc[end - 1])}  # "turtles": a turtle
    if phrase & words["not_owned"]:
        return None
    kind = "person" if phrase & words["people"] else "animal" if phrase & words["pets"] else "thing"
    return end, kind


# What someone or something else does to the speaker's mood ("my cats bring me joy", "they keep us
# going"): how the speaker feels, not a doing of theirs (not "invited me to a class").
_DONE_TO_THE_SPEAKER = frozenset(
    (verb, who) for verb in ("bring", "brings", "brought", "make", "makes", "keep", "keeps", "motivate", "motivates", "inspire", "inspires") for who in ("me", "us")
)
# Forms of "be", "have" and "get" that are nouns too in WordNet's lists ("are", "gets"): never a noun here.
_CLOSING_VERBS = frozenset({"are", "gets", "has", "does", "goes", "makes", "keeps", "brings", "helps", "loves", "likes", "needs", "wants"})
_CLOSING = frozenset({
    "is", "was", "are", "were", "'s", "’s", "'re", "’re", "has", "have", "had", "will", "would", "can", "could", "should",
    "might", "must", "do", "does", "did", "'ve", "'ll", "'d", "got", "gets", "get", "and", "or", "but",
})  # fmt: skip


def _closes(t: Any) -> bool:
    """Whether a noun phrase ends before token ``t``: a mark, an auxiliary, an adverb, a
    preposition or conjunction, or a past form ("my son got", "my car broke")."""
    low = t.lower_
    if not t.is_alpha or low in _CLOSING or low in _ADVERBS | _PREPOSITIONS | _STOPS | _TIME_WORDS | _FUNCTION_WORDS:
        return True
    return _past_verb(t) and _lemma(t) in word_classes()["verb"] and not low.endswith("s") and low not in word_classes()["noun"]  # "crew" is no past of "crow" here


# After a thing's name, verbs that say what it is like, as "is" does: "it looks great".
_SENSES = frozenset({"look", "looks", "looked", "seem", "seems", "seemed", "sound", "sounds", "sounded", "taste", "tastes", "tasted", "smell", "smells", "smelled"})
# Verbs that say what a thing stands for ("Poppies mean remembrance", "it reminds me of ..."); a
# plural in general is a thing pointed at only before one of their base forms.
_MEANING_BASES = ("mean", "stand", "symbolize", "symbolise", "represent", "remind")
_MEANING = frozenset({
    *_MEANING_BASES, "means", "meant", "stands", "stood", "symbolizes", "symbolises", "represents", "represented", "reminds", "reminded",
})  # fmt: skip
# Verbs that say what a thing pointed at is like ("The studio looks amazing", "Poppies mean
# remembrance"): where its noun phrase ends, though most are nouns too. Not the senses' base forms,
# which a phrase may start with ("the sound of the river").
_DESCRIBING = _MEANING | (_SENSES - {"look", "seem", "sound", "taste", "smell"})
_THING_OPENERS = re.compile(
    r"\b(?:[Mm]y|[Oo]ur|MY|OUR|[Tt]his)\b|[\"“]|(?:^|(?<=[.!?,;:\-–—]\s))(?:[Tt]he|[Tt]hat|[Tt]hese|[Tt]hose|[A-Z][a-z]+s(?=\s+(?:"
    + "|".join(_MEANING_BASES) + r")\b))\b"
)
# Before a thing, words that make it what something else is ("it's been a ...", "is not just a ...").
_SAYS_WHAT_IT_IS = frozenset({"is", "was", "'s", "’s", "been", "be", "are", "were", "not", "n't", "just", "only", "am", "'m"})
# A thing ending a clause ("the museum there", "a tiny café"), then "it" opening the next.
# A clause opened by "it" after a mark: the cheap test before _IT_AFTER_A_THING's own.
_IT_OPENS = re.compile(r"[,.!;]\s+[Ii]t\b")
# A doing opening a sentence as its subject ("Cooking for friends is ..."), then "It's a/an ..." opening the next.
_DOING_THEN_IT = re.compile(r"(?:^|(?<=[.!?]\s))(?P<thing>[A-Z][a-z]+ing(?:\s+[a-z']+){0,2}?)\s+(?:is|was|has\s+been)\s[^.!?]*[.!?]\s+It(?:'s|’s|\s+is|\s+was)\s+(?:a|an)\s")
_IT_AFTER_A_THING = re.compile(r"\b(?:the|a|an)\s+(?P<thing>[^\W\d_A-Z][\w'\-]*(?:\s+[^\W\d_A-Z][\w'\-]*){0,2}?)(?:\s+(?:there|here))?\s*[,.!;]\s+[Ii]t\b(?!\s+(?:was|is)\s+(?:so|such|really|very|great|fun|nice|good|amazing|awesome)\b)")
# Participles before a preposition that say what a thing is made from or of: "It was inspired by
# an old folk song", "it's based on a true story", "It's made with oat milk".
_MADE_FROM = frozenset({"inspired", "based", "made", "set", "written", "filled", "decorated"})
# After "It's about", words that make "about" no topic: "about time", "about all I could afford",
# "about the same", "about to start", "about twenty".
_ABOUT_NOT_A_TOPIC = frozenset({"time", "all", "the", "to", "as", "it", "that", "this", "how", "what", "half", "twice", "one", "two", "three", "ten", "twenty", "fifty", "hundred"})
_ABOUT_AMOUNTS = frozenset({"hundred", "thousand", "dozen", "mile", "minute", "hour", "day", "week", "month", "year", "third", "quarter", "bit", "foot", "meter", "metre"})
# What a thing pointed at is not: a saying's word ("The thing is ...", "The best part was ...", "That idea ...").
_NOT_POINTED = frozenset({"thing", "things", "stuff", "other", "rest", "same", "whole", "idea", "point", "problem", "issue", "worst", "toughest", "hardest", "more", "most", "only", "first", "last", "next", "one", "ones", "kind", "sort", "fact", "truth", "reason", "answer", "news", "moment", "feeling", "end", "result", "key"})


def _things(
    doc: Any, text: str, speaker: str, starts: list[int], third: Sequence[str] = (), relations: Sequence[tuple[str, int, int, int]] = ()
) -> tuple[_Thing, ...]:
    """What the speaker names of their own in the turn ("my son", "our turtles"), titles ("Little
    Women") and the people named who are neither the speaker nor the one spoken to (``third``, a
    relative named "my colleague Tomas" among them), in order: whom a later "he", "she", "it" or
    "they" may stand for, and the subjects "my son ..." and "our turtles ..." name."""
    out: list[_Thing] = []
    words = _owned_words()
    kin = {text[s:e] for _, s, e, _ in relations}
    for name in dict.fromkeys(third):
        m = re.search(rf"(?<!\w){re.escape(name)}(?!\w)", text)
        span = doc.char_span(m.start(), m.end()) if m else None
        if span is not None:  # a person named, anywhere in the turn (as "he"/"she" were read before)
            out.append(_Thing(name, -1, -1, "person", None, False, name in kin, _sentence_start(starts, span[0].i)))
    # Only the tokens that may open one: "my", "our", a quotation mark (a regex over the text is
    # ~10x cheaper than walking every token of the turn).
    for m in _THING_OPENERS.finditer(text):
        span = doc.char_span(m.start(), m.end())
        if span is None:
            continue
        t = span[0]
        low = t.lower_
        if low in ("my", "our") and t.i + 1 < len(doc) and not (
            t.i >= 2 and doc[t.i - 1].text == "," and doc[t.i - 2].is_title and doc[t.i - 2].lower_ not in _OPENERS | {"thanks", "hi", "hello"}
        ):
            # (not "Pip, my hamster": the name is the one a pronoun after it stands for)
            found = _owned_at(doc, t.i + 1, _DESCRIBING)
            if found is None:
                continue
            end, kind = found
            if end < len(doc) and doc[end].lower_ in ("called", "named", "titled"):
                continue  # "my choir called "Open Doors"": the name given is the one a pronoun stands for
            phrase = doc[t.i + 1 : end]
            head = phrase[-1].lower_
            plural = head in words["plural_people"] or _plural(head)
            gender = "he" if head in words["he"] else "she" if head in words["she"] else None
            collective = head in words["collective"]
            out.append(_Thing(f"{speaker}'s {phrase.text}", t.i + 1, end, kind, gender, plural, True, _sentence_start(starts, t.i), collective))
        elif t.text in ('"', "“") and t.i + 1 < len(doc) and doc[t.i + 1].is_title:
            close = next((k for k in range(t.i + 2, min(t.i + 12, len(doc))) if doc[k].text in ('"', "”")), None)
            if close is not None:
                title = doc[t.i + 1 : close].text.rstrip(".,!?")
                out.append(_Thing(title, t.i + 1, close, "thing", None, False, False, _sentence_start(starts, t.i)))
        elif (pointed := _pointed_at(doc, t)) is not None:
            at, end, kind = pointed
            phrase = doc[at:end]
            out.append(_Thing(phrase.text, at, end, kind, None, _plural(phrase[-1].lower_), False, _sentence_start(starts, t.i), pointed=True))
    it_opens = _IT_OPENS.search(text) is not None  # (read once for the two searches below)
    for m in _IT_AFTER_A_THING.finditer(text) if it_opens else ():
        # "I toured the old mill, it has a water wheel": the thing a clause ends with,
        # right before an "it" that opens the next, is what that "it" may stand for (only described)
        span = doc.char_span(m.start("thing"), m.end("thing"))
        if span is None or _noun_phrase_end(doc, span[0].i) != span[-1].i + 1 or {w.lower_ for w in span} & (_NOT_POINTED | _TIME_NOUNS):
            continue
        if _lemma(span[-1]) in _owned_words()["people"] | _PEOPLE_WORDS or _plural(span[-1].lower_):
            continue
        if any(doc[k].lower_ in _SAYS_WHAT_IT_IS for k in range(max(0, span[0].i - 3), span[0].i - 1)):
            continue  # "the class was a lifesaver. It ...", "isn't just a shop, it's ...": a description of another, no thing of its own
        out.append(_Thing(span.text, span[0].i, span[-1].i + 1, "thing", None, False, False, _sentence_start(starts, span[0].i), pointed=True))
    for m in _DOING_THEN_IT.finditer(text) if it_opens and "ing " in text else ():
        # "Cooking for friends is a real joy. It's a slow ritual of ...": a doing that is the subject
        # of one sentence is what an "It" opening the next, saying what something is, stands for
        span = doc.char_span(m.start("thing"), m.end("thing"))
        if span is None or lemma(span[0].lower_) not in word_classes()["verb"] or lemma(span[0].lower_) == span[0].lower_:
            continue  # "Morning is ...", "Spring was ...": no doing
        out.append(_Thing(span.text, span[0].i, span[-1].i + 1, "thing", None, False, False, _sentence_start(starts, span[0].i), pointed=True))
    for m in _NAME_IS.finditer(text) if "name" in text else ():
        # "Her name is Pepper! She's full of mischief": the one named is whom "she" stands for, in place
        # of the pet or child of the speaker's named before, which is most often the same one
        span = doc.char_span(m.start("obj"), m.end("obj"))
        if span is None or m.group("obj") in rules._NOT_PEOPLE:
            continue
        gender = {"his": "he", "her": "she"}.get(m.group(0).split()[0].lower())
        out = [o for o in out if not (o.owned and o.kind in ("person", "animal") and o.at < span[0].i)]
        out.append(_Thing(m.group("obj"), span[0].i, span[-1].i + 1, "animal", gender, False, False, _sentence_start(starts, span[0].i)))
    return tuple(dataclasses.replace(o, starts=tuple(starts)) for o in out)


def _plural(low: str) -> bool:
    """Whether a lower-case noun is a plural: an -s form whose lemma differs ("turtles", not "glass")."""
    return low.endswith("s") and lemma(low) != low


def _only_adverb(t: Any) -> bool:
    """Whether a word ending in -ly can only be an adverb ("specifically", not "lovely")."""
    if not t.lower_.endswith("ly"):
        return False
    classes = word_classes()
    low = t.lower_
    return low in classes["adv"] and low not in classes["adj"] and low not in classes["noun"]


def _noun_phrase_end(doc: Any, k: int) -> int | None:
    """The token after a noun phrase of one to three lower-case words from token ``k`` ("studio",
    "surrounding beauty") that ends before a verb, a mark or a preposition; None when its end is a
    guess (the words go on) or its last word is no noun."""
    j, n = k, len(doc)
    while j < n and j - k < 3 and doc[j].is_alpha and doc[j].is_lower and not _closes(doc[j]) and doc[j].lower_ not in _DESCRIBING and not _only_adverb(doc[j]):
        j += 1
    if j == k or (j < n and not (_closes(doc[j]) or doc[j].lower_ in _DESCRIBING or _only_adverb(doc[j]))):
        return None
    return j if _lemma(doc[j - 1]) in word_classes()["noun"] else None


def _pointed_at(doc: Any, t: Any) -> tuple[int, int, str] | None:
    """(first token, end token, kind) of a thing pointed at where a clause starts: "The workshop
    [looks tidy]", "That chapter [has ...]", "The harbour and the old lighthouse [were ...]",
    or a plural in general before a verb of meaning ("Poppies [mean remembrance]"). None for a
    person ("The kids ..."), a saying ("The thing is ...") or a phrase whose end is a guess."""
    low = t.lower_
    if low in ("the", "this", "that", "these", "those"):
        if t.i + 1 >= len(doc):
            return None
        at, end = t.i + 1, _noun_phrase_end(doc, t.i + 1)
        if end is None:
            return None
        if end + 2 < len(doc) and doc[end].lower_ == "and" and doc[end + 1].lower_ in ("the", "its", "their"):
            end = _noun_phrase_end(doc, end + 2) or end  # "The harbour and the old lighthouse were ..."
        words = _owned_words()
        kind = "person" if {w.lower_ for w in doc[at:end]} & (words["people"] | _PEOPLE_WORDS) else "thing"
    elif t.is_title and t.i + 1 < len(doc) and doc[t.i + 1].lower_ in _MEANING:
        if _lemma(t) == low or _lemma(t) not in word_classes()["noun"]:
            return None  # a plural noun, said of its kind: "Roses stand for love"
        at, end, kind = t.i, t.i + 1, "thing"
    else:
        return None
    words = {w.lower_ for w in doc[at:end]}
    if kind == "person" or words & _NOT_POINTED or words & _TIME_NOUNS:
        return None
    return at, end, kind


def _sentence_start(starts: Sequence[int], i: int) -> int:
    """The token the sentence holding token ``i`` starts at (``starts``: the turn's, in order)."""
    return starts[bisect.bisect_right(starts, i) - 1] if starts else 0


def _antecedent(pronoun: str, token: Any, people: list[str], things: tuple[_Thing, ...], speaking: bool = True) -> str | None:
    """Whom or what a pronoun at token ``at`` stands for: the one candidate named before it in
    the turn, or None when there is none or more than one (no claim rather than a guess). "he"
    and "she": a person named in the turn or one of the speaker's people or pets it may stand for
    ("my son"; not "my sister" for "he"); "it": one thing or pet of the speaker's, or one title,
    named before it; "they": one plural of the speaker's ("my turtles", "our kids")."""
    at = token.i
    before = [o for o in things if o.at < at and not o.earlier]
    if pronoun in ("he", "she"):
        if not speaking:
            return _the_one(people)  # no speaker: a report's "he" is the one person named
        owned = {o.subject for o in before if o.kind in ("person", "animal") and not o.plural and o.gender in (None, pronoun) and not o.collective}
        return _the_one(list(owned))
    here = [o for o in before if (o.plural if pronoun == "they" else o.kind in ("thing", "animal") and not o.plural)]
    if not here and (earlier := [o for o in things if o.earlier]) and not _introduced(token.doc[:at], people):
        # Nothing in the turn it could stand for (no thing of the speaker's, and nothing else
        # introduced before it: "My favourite is the sundae. It's ..."): what the speaker's last
        # turn named (Dialogue), when that is one thing ("it") or one group ("they"); failing
        # that, what the turn's picture shows, when no word before it names a thing at all
        # ("Irises cheer me up. They ..." beside a picture of benches: not the benches)
        fits = [o for o in earlier if (o.plural if pronoun == "they" else o.kind in ("thing", "animal") and not o.plural)]
        found = {o.subject for o in fits if not o.shown}
        if not found and not any(_names_a_thing(t) or (t.is_alpha and _plural(t.lower_) and lemma(t.lower_) in word_classes()["noun"]) for t in token.doc[:at]):
            # this turn's picture (its source None), else the last turn's
            found = {o.subject for o in fits if o.shown and o.source is None} or {o.subject for o in fits if o.shown}
        return next(iter(found)) if len(found) == 1 else None
    if pronoun == "it":
        # the same sentence or the one before: "I handed in my thesis. I'm relieved. It's a mix of
        # pride and panic" (the feeling, not the thesis)
        starts = things[0].starts if things else ()
        here = _sentence_start(starts, at)
        previous = _sentence_start(starts, here - 1) if here else here
        found = {o.subject for o in before if o.kind in ("thing", "animal") and not o.plural and o.sent in (here, previous)}
    else:
        found = {o.subject for o in before if o.plural and o.kind in ("person", "animal")}  # "they" for things is most often someone else
    return next(iter(found)) if len(found) == 1 else None


def _points(t: Any) -> bool:
    """Whether "this" or "that" at ``t`` stands alone, pointing, rather than before a noun: "have
    a taste of this!", "I keep coming back to this because ...", "that's it" (not "this cake")."""
    nxt = t.doc[t.i + 1] if t.i + 1 < len(t.doc) else None
    return nxt is None or not nxt.is_alpha or nxt.lower_ in _STOPS | _PREPOSITIONS | {"is", "was", "'s", "and", "or"} or not (
        _lemma(nxt) in word_classes()["noun"] or nxt.lower_ in word_classes()["adj"]
    )


def _introduced(tokens: Any, people: list[str]) -> bool:
    """Whether ``tokens`` (a turn up to a pronoun) introduce something the pronoun might stand
    for: a noun after a determiner, a name that is no one's talking here, a doing opening a
    sentence ("Dancing helps me ... It's ...")."""
    return any(
        (t.lower_ in _DETERMINERS and not (t.lower_ in ("this", "that") and _points(t)))
        or (t.is_title and not t.is_sent_start and t.text != "I" and t.text not in people)
        or (t.is_sent_start and t.lower_.endswith("ing") and len(t) > 4)
        for t in tokens
    )


def _named_people(entry: dict[str, Any], text: str, relations: list[tuple[str, int, int, int]], resolver: Resolver | None) -> list[str]:
    """People named in the turn, in order: relations' names, the subjects of rules-0.2.0's
    third-person statements ("Dana works at Helio Labs since March", "Elena moved to Berlin": a
    name that lives or works somewhere is a person, met or not), and names the scope knows."""
    names = [text[s:e] for _, s, e, _ in relations]
    names += [
        m.group("subj") for _, _, rx in rules._THIRD_PERSON for m in rx.finditer(text)
        if m.group("subj") not in rules._NOT_PEOPLE and m.group("subj").lower() not in _SUBJECT_WORDS  # "She moved to Oslo": a pronoun
    ]  # fmt: skip
    if resolver is not None:
        for w in rules._CAP_WORD.finditer(text):
            if w.group(0) not in rules._NOT_PEOPLE and resolver.known(entry["scope"], w.group(0)):
                names.append(w.group(0))
    return names


# A pronoun a name said in passing may be the antecedent of, and what may not come right before
# such a name: a place's preposition or motion ("went to Lyon. She ..." is no person), an article
# ("the Blue Ridge"), a greeting ("Thanks, Lea!": the one spoken to).
_NOT_BEFORE_A_NAME = frozenset({
    "in", "at", "from", "near", "around", "across", "through", "into", "toward", "towards", "visit", "visited", "visiting",
    "the", "a", "an", "my", "our", "this", "that", "thanks", "thank", "hey", "hi", "hello", "congrats", "dear", "oh", "wow", "yeah", "yes",
})  # fmt: skip
_MOTION = frozenset({"go", "went", "gone", "going", "move", "moved", "travel", "travelled", "traveled", "fly", "flew", "drive", "drove", "head", "headed", "trip", "back", "way", "road"})


_HE_OR_SHE = re.compile(r"\b(?:[Hh]e|[Ss]he|HE|SHE)\b")


def _named_in_passing(doc: Any, text: str) -> list[str]:
    """Names said inside a sentence before a "he" or "she" ("It was Jonas Berg, he is so
    funny!", "we waved farewell to Rex. He was ..."): one or two capitalised words, not opening
    a sentence, nor after a place's preposition, an article or a greeting."""
    if _HE_OR_SHE.search(text) is None:
        return []  # (most turns: a regex over the text is ~10x cheaper than walking every token)
    pronoun = max((t.i for t in doc if t.lower_ in ("he", "she")), default=None)
    if pronoun is None:
        return []
    out: list[str] = []
    k = 0
    while k < pronoun:
        w = doc[k].text
        prev = doc[k - 1].text if k else "."
        title = w[:1].isupper() and w[1:].islower() and len(w) > 1 and w not in rules._NOT_PEOPLE
        if not title or prev in (".", "!", "?", '"', "“", "-") or prev.lower() in _NOT_BEFORE_A_NAME or w.lower() in _TIME_NOUNS or (
            prev.lower() == "to" and k > 1 and doc[k - 2].lower_ in _MOTION
        ) or (prev == "," and k > 1 and doc[k - 2].lower_ in _NOT_BEFORE_A_NAME):
            k += 1
            while title and k < pronoun and doc[k].text[:1].isupper():
                k += 1  # the rest of a name not taken ("the Blue Ridge")
            continue
        name = w
        if k + 1 < pronoun and doc[k].whitespace_ == " " and doc[k + 1].text[:1].isupper() and doc[k + 1].text[1:].islower():
            name, k = f"{w} {doc[k + 1].text}", k + 1  # "Jonas Berg"
        out.append(name)
        k += 1
    return list(dict.fromkeys(out))


def _the_one(people: list[str]) -> str | None:
    """Whom "he"/"she" means: the one person named in the turn, or no one when two are."""
    distinct = set(people)
    return next(iter(distinct)) if len(distinct) == 1 else None


@dataclass(frozen=True)
class _Report:
    reporter: str  # who is reported to have said it, as written
    start: int  # where the report starts in the entry ("Jonas says ...")
    said: list[Any]  # the tokens of what was said


def _report(tokens: list[Any], people: list[str]) -> _Report | None:
    """Reported speech: "Jonas says Mira teaches at the art school", "Ana told me (that) she moved
    to Porto", "He mentioned he's moving" (for the one person named). The reporter is a name as
    written (one or two capitalised words), the verb one of the lexicon's `reporting` words."""
    i = 0
    while i < len(tokens) and (tokens[i].lower_ in _OPENERS or tokens[i].lower_ in _TIME_WORDS):
        i += 1
    if i + 2 >= len(tokens):
        return None
    t, j = tokens[i], i + 1
    if t.lower_ in ("he", "she"):
        reporter = _the_one(people)
        if reporter is None:
            return None
    elif t.lower_ == "my" and tokens[i + 2].text in people:
        reporter, j = tokens[i + 2].text, i + 3  # "my sister Ana said ..."
    elif t.is_title and t.is_alpha and t.text not in rules._NOT_PEOPLE and t.lower_ not in _SUBJECT_WORDS and t.lower_ not in _OPENERS:
        reporter = t.text
        if tokens[j].is_title and tokens[j].is_alpha and tokens[j].text not in rules._NOT_PEOPLE:
            reporter, j = f"{reporter} {tokens[j].text}", j + 1  # "Mira Jovanovic says ..."
    else:
        return None
    while j < len(tokens) and tokens[j].lower_ in _ADVERBS:
        j += 1
    if j >= len(tokens) or _lemma(tokens[j]) not in _word_lists()["reporting"]:
        return None
    j += 1
    if j < len(tokens) and tokens[j].lower_ in ("me", "us", "him", "her", "them", "everyone", "everybody"):
        j += 1
    if j < len(tokens) and tokens[j].lower_ == "that":
        j += 1
    return _Report(reporter, tokens[i].idx, tokens[j:]) if j < len(tokens) else None


def _reported(
    entry: dict[str, Any], base: dict[str, Any], text: str, report: _Report, people: list[str],
    matches: dict[int, list[tuple[int, _Frame]]], conditional: bool,
) -> Proposal | None:
    """The claim of what was reported, asserted by the reporter: read as a clause with no speaker
    (so "I" inside it is nobody, and no open activity is guessed), its subject a name that opens
    it or "he"/"she" for the one person named; its quote starts at the reporter."""
    said = report.said
    first = said[0]
    named = [first.text] if first.is_title and first.is_alpha and first.text not in rules._NOT_PEOPLE and first.text != "I" else []
    p = _read_clause(entry, base, text, said, None, [*people, report.reporter, *named], matches, conditional)
    if p is None or p.predicate == "identity" and p.subject not in people:
        return None  # "Jonas says Berlin is a city": a name never met as a person is not given an identity
    pos = text.find(p.quote, report.start)
    quote = text[report.start : pos + len(p.quote)] if pos >= 0 else p.quote
    return p.model_copy(update={"asserted_by": report.reporter, "quote": quote})


_POSSESSIVES = frozenset({"my", "our", "your", "his", "her", "their"})


def _owned_item(doc: Any, k: int, stop: int) -> bool:
    """Whether "and"/"or" at token ``k`` adds a thing of someone's to the phrase before it and
    closes the clause ("to feel closer to my cousins and my roots."): a possessive, one or two
    words, then a mark or ``stop`` (the clause's or sentence's end). "and my son fell off his
    bike" goes on with a verb: a new clause."""
    if k + 2 >= stop + 1 or doc[k + 1].lower_ not in _POSSESSIVES:
        return False
    j = k + 2
    while j < stop and j - k - 2 < 2 and doc[j].is_alpha and doc[j].is_lower and not _closes(doc[j]) and not doc[j].lower_.endswith("ed"):
        j += 1
    return j > k + 2 and (j >= stop or (not doc[j].is_alpha and doc[j].text != "'"))


def _opens_with_another(tokens: list[Any], speaker: str | None, people: list[str], listener: str | None, things: tuple[_Thing, ...]) -> bool:
    """Whether a clause's subject is someone or something other than the speaker ("The puppy is
    ...", "My son is ...", "She's ...")."""
    subject = _subject(tokens, speaker, people, listener, frozenset(), things)[0]
    if subject is not None:
        return subject != speaker
    first = next((t for t in tokens if t.lower_ not in _OPENERS), None)
    return first is not None and first.lower_ in ("the", "this", "that", "these", "those", "he", "she", "they", "his", "her", "their")


def _clauses(sent: Any) -> Iterator[tuple[list[Any], bool, str]]:
    """The clauses of a sentence: split at punctuation, at subordinators, and at a coordinator
    followed by a new subject ("... and I moved ..."); each with whether the speaker's subject
    carries over to it (a clause after one opened by "I"/"we", split from it at a comma or "and"
    with no subject of its own: "We explored the caves, cooked on the fire and even took a
    night walk": every doing of the list is the speaker's), and the mark or word it was split
    from the one before at."""
    own = False  # the last clause yielded was the speaker's ("I"/"we", or carried over)
    base = True  # a base form may carry on from it: not after an infinitive ("I use it to stay organised, track chores")
    sure = True  # it asserts: a participle after a hedge ("I'm thinking of X, helping Y") is considered as well, not done
    words = _word_lists()
    for tokens, split_at in _split(sent, lambda cur: _speakers_own(cur) or (own and _carried_item(cur, base)), lambda cur: own and _carried_item(cur, base)):
        carried = own and (
            (split_at in (",", "and", "then", ";") and _carried_item(tokens, base)) or (split_at == "," and sure and _participle_item(tokens))
        )
        yield tokens, carried, split_at
        own = _speakers_own(tokens) or carried
        base = not any(t.lower_ == "to" for t in tokens)
        sure = not any(t.lower_ in ("if", "not", "n't", "never") or _opens_hedge(tokens, k, words) for k, t in enumerate(tokens))


def _split(sent: Any, owns: Any, listing: Any) -> Iterator[tuple[list[Any], str]]:
    """The token lists of ``_clauses``, each with the word or mark it was split from the one
    before at ("" for the first). ``owns``: whether a clause so far is the speaker's;
    ``listing``: whether it is an item of the speaker's list of doings."""
    cur: list[Any] = []
    at = ""
    tokens = list(sent)
    # Each token's text and lower case read once (a token's attributes cost a call each: this
    # loop runs over every token of the pass)
    texts = [t.text for t in tokens]
    lows = [t.lower_ for t in tokens]
    n = len(tokens)
    feelings = _word_lists()["feelings"]
    for i, t in enumerate(tokens):
        low, txt = lows[i], texts[i]
        nxt = lows[i + 1] if i + 1 < n else ""
        if len(txt) > 1 and txt.endswith("-"):
            cur.append(t)
            yield cur, at
            cur, at = [], "-"
            continue
        if txt in ("-", "–") and i and not tokens[i - 1].whitespace_:
            cur.append(t)  # a hyphen inside a word ("dairy-free") joins, it does not split
            continue
        if txt == "," and cur and (_things_listed(tokens, i) or _adjectives_listed(tokens, i)):
            cur.append(t)  # "a mix of seeds, greens, and mealworms", "a safe, inviting place": one object, not three clauses
            continue
        if txt in _SPLIT_PUNCT or t.is_space:
            if cur:
                yield cur, at
                at = txt
            elif txt != ",":
                at = txt
            cur = []
            continue
        if low in ("and", "but", "so", "then", "or") and (nxt in _SUBJECT_WORDS or nxt in ("then", "now", "also", "just")) and not (
            low in ("and", "or") and cur and _owned_item(sent.doc, t.i, sent.end)
        ):
            if cur:
                yield cur, at
            cur, at = [], low
            continue
        if low in ("and", "then") and cur and nxt not in feelings and (
            (owns(cur) and _second_doing(sent.doc, t.i + 1, tokens[-1].i)) or (listing(cur) and _carried_item(tokens[i + 1 :], False))
        ):  # (the last doing of a list: "We grilled by the river, sang songs and ate warm bread")
            # "I went out and got a copy": the second doing is the speaker's too, a clause of its own
            # (not "... and thanked them": a clause that opens with a feeling reads as one felt).
            yield cur, at
            cur, at = [], low
            continue
        if txt == "I" and cur and not all(c.lower_ in _lead_words() for c in cur) and (
            cur[-1].lower_ not in ("and", "that", "so", "but", "because", "if", "when", "as", "since", "what", "how", "where", "who", "wish", "which", "whom")
            or (len(cur) > 1 and lows[i - 2] == "now" and lows[i - 1] == "that")  # "... paid off now that I'm a head baker": a fact, a clause of its own
        ) and not (len(cur) > 1 and cur[-1].lower_ == "like" and _lemma(cur[-2]) == "feel"):  # "I felt like I was in a storybook": one feeling
            yield cur, at  # "since I'm colour blind I'm trying ...": a new subject, a new clause
            cur, at = [t], "I"
            continue
        if low in _STOPS and cur and low not in ("like", "as", "than", "hoping", "so"):
            yield cur, at
            cur, at = [t], low
            continue
        cur.append(t)
    if cur:
        yield cur, at


def _adjectives_listed(tokens: list[Any], i: int) -> bool:
    """Whether the comma at ``tokens[i]`` parts two words describing one noun after an article
    ("a safe, inviting place", "a long, quiet walk")."""
    if not (2 <= i and i + 2 < len(tokens)) or tokens[i - 2].lower_ not in ("a", "an", "the", "my", "our", "this", "such"):
        return False
    adj = word_classes()["adj"]
    before, after, noun = tokens[i - 1], tokens[i + 1], tokens[i + 2]
    return (
        before.is_lower and after.is_lower and noun.is_lower and _lemma(before) in adj and (after.lower_ in adj or _lemma(after) in adj or after.lower_.endswith("ing"))
        and _lemma(noun) in word_classes()["noun"] and not _closes(noun)
    )


def _things_listed(tokens: list[Any], i: int) -> bool:
    """Whether the comma at ``tokens[i]`` goes on a list of things ("seeds, greens, and
    mealworms", "oat milk, honey, and a dash of cinnamon"): a lower-case word before it, and
    after it items of one to four words that are no doing (no past form, no word that is only a
    verb) and no new subject, closed by "and"/"or" before the sentence's next mark."""
    prev = tokens[i - 1]
    classes = word_classes()
    if not (prev.is_alpha and prev.is_lower) or _past_verb(prev) and not prev.lower_.endswith("s") or _lemma(prev) not in classes["noun"] and not prev.lower_.endswith("ing"):
        return False
    k, item = i + 1, 0
    last = k < len(tokens) and tokens[k].lower_ in ("and", "or")  # ", and insects": the list's last item
    # A word that may be a verb ("love", "hike") is a thing of the list only after a preposition:
    # "a film about friendship, trust, and ...", not "We watch movies, hike, and ..."
    after_preposition = any(t.lower_ in _PREPOSITIONS or t.lower_ == "like" for t in tokens[max(0, i - 4) : i])  # ("things like rice, ...")
    k += last
    while k < len(tokens) and k - i <= 12:
        t = tokens[k]
        low = t.lower_
        if low in ("and", "or") and item:
            return k + 1 < len(tokens) and tokens[k + 1].is_alpha and tokens[k + 1].lower_ not in _SUBJECT_WORDS
        if low == "," and item:
            if k + 1 < len(tokens) and tokens[k + 1].lower_ in ("and", "or"):
                k += 1
                continue
            item = 0
            k += 1
            continue
        if not t.is_alpha or item >= 4:
            return last and item > 0 and not t.is_alpha and t.text != "-"
        if low in _CLOSING - {"and", "or"} or low in _SUBJECT_WORDS:
            return False  # "..., and hiking was fun": a clause, not an item
        lem = _lemma(t)
        if not item and low not in ("a", "an", "the", "some") and (
            low in _SUBJECT_WORDS | _OPENERS | _STOPS | _LEADS | _FUNCTION_WORDS | _ADVERBS
            or (low in classes["adv"] and not (lem in classes["adj"] and _goes_on(tokens, k)))  # (", and fresh pies": "fresh" describes)
            or (low.endswith("ing") and not prev.lower_.endswith("ing") and not last)  # (", and keeping your promises")
            or (not low.endswith("ing") and (
                (lem not in classes["noun"] and not (lem in classes["adj"] and _goes_on(tokens, k)))  # (", and homemade pies": a thing described)
                or (lem in classes["verb"] and lem == low and (_goes_on(tokens, k) or not after_preposition))
            ))
            or (_past_verb(t) and not low.endswith("s") and (low not in classes["noun"] or (k + 1 < len(tokens) and tokens[k + 1].lower_ in _DETERMINERS)))  # ("berries" is no past; "saw the parade" is)
        ):
            return False  # "..., roasted marshmallows", "..., plan events": a doing; "..., and I ...": a clause
        item += 1
        k += 1
    return last and item > 0 and k >= len(tokens)


def _goes_on(tokens: list[Any], k: int) -> bool:
    """Whether the word at ``k`` has another after it in its item ("plan events", a doing and its
    object), rather than closing it ("love, and ...": one word, a thing)."""
    return k + 1 < len(tokens) and tokens[k + 1].is_alpha and tokens[k + 1].lower_ not in ("and", "or")


def _carried_item(tokens: list[Any], base: bool = True) -> bool:
    """Whether a clause with no subject of its own opens (past adverbs) with a doing: a past form
    ("grilled peppers", "went on a walk") or a base form that is only ever a verb ("explore
    the caves"; not "corn and beans", "tell" is a noun too). A list of things after a doing
    ("I painted a lake, trees and a sunset") opens with none."""
    first = next((t for t in tokens if t.lower_ not in _ADVERBS and t.lower_ not in ("and", "then")), None)
    if first is None or not first.is_alpha or first.is_title or first.lower_ in _FUNCTION_WORDS | _SUBJECT_WORDS:
        return False
    low, classes = first.lower_, word_classes()
    if _lemma(first) in _NOT_ACTIVITIES:
        return False  # "..., thought it would be fun": a thought, not a doing of the list
    if _lemma(first) in _TALK:
        # "..., tell me more": said to the listener; "..., told stories by the fire": a doing of the list
        after = next((t for t in tokens if t.i > first.i), None)
        if after is None or not after.is_alpha or after.is_title or after.lower_ in _OBJECT_PRONOUNS | _SUBJECT_WORDS | _YOU | _RELATIVES | _PREPOSITIONS | {"how", "why", "if", "so"}:
            return False
    if _past_verb(first) and _lemma(first) in classes["verb"]:
        return True
    return base and _lemma(first) == low and low in classes["verb"] and low not in classes["noun"] and low not in classes["adj"]


def _participle_item(tokens: list[Any]) -> bool:
    """Whether a clause after a comma opens (past adverbs) with a present participle of a doing and
    its object: "I had a quiet week, baking bread for the fair", "I was home all day, spending the
    afternoon fixing bikes": the doing of the clause before's subject. Not a feeling, a thought or
    talk ("..., hoping you're well", "..., thinking of you"), and not a participle alone."""
    rest = [t for t in tokens if t.lower_ not in _ADVERBS]
    if len(rest) < 2 or not rest[0].is_alpha or rest[0].is_title or not rest[0].lower_.endswith("ing"):
        return False
    verb = _lemma(rest[0])
    if verb == rest[0].lower_ or verb not in word_classes()["verb"] or verb in _NOT_ACTIVITIES | _TALK | _NOT_DOINGS or rest[0].lower_ in _word_lists()["feelings"]:
        return False
    return rest[1].is_alpha and rest[1].lower_ not in ("to", "that", "like", "as", "if", "you", "your", "and", "or")


def _speakers_own(cur: list[Any]) -> bool:
    """Whether a clause so far opens with "I" or "we" (past its openers): the subject a verb
    after its "and" shares."""
    first = next((c for c in cur if c.lower_ not in _OPENERS and c.lower_ not in _TIME_WORDS), None)
    return first is not None and (first.text in ("I", "I'm", "I've") or first.lower_ == "we") and len(cur) > 2


@functools.cache
def _lead_words() -> frozenset[str]:
    """Words that may stand before "I" in one clause: openers, time words and every hedge word
    ("Maybe I'll ...", "I'm not sure I'll ..."), so that the hedge stays with its clause."""
    words = _word_lists()
    hedges = {w for seq in words["hedge_before"] + words["hedge_clause"] for w in seq}
    return frozenset(_OPENERS | _TIME_WORDS | hedges | {"not", "sure", "i", "'m", "am", "be", "'ll"})


def _opens_hedge(tokens: list[Any], k: int, words: dict[str, Any]) -> bool:
    """Whether token ``k`` opens one of the lexicon's hedges ("might", "thinking about", "one day")."""
    return _lemma(tokens[k]) in words["hedge_firsts"] and (_starts_with(tokens, k, words["hedge_clause"]) or _starts_with(tokens, k, words["hedge_before"]))


def _starts_with(tokens: list[Any], i: int, seqs: list[tuple[str, ...]]) -> int:
    """The length of the longest of ``seqs`` (lemma tuples) starting at ``tokens[i]``, or 0."""
    best = 0
    first = _lemma(tokens[i])
    for seq in seqs:
        if seq[0] != first:
            continue
        n = len(seq)
        if n > best and i + n <= len(tokens) and tuple(_lemma(t) for t in tokens[i : i + n]) == seq:
            best = n
    return best


# What "Let's make our trip ..." wishes it to be: a cheer, no plan.
_MADE_SO = frozenset({"awesome", "great", "amazing", "special", "better", "count", "happen", "wonderful", "unforgettable", "memorable", "epic", "fun", "magical"})


def _subject(
    tokens: list[Any], speaker: str | None, people: list[str], listener: str | None = None, frame_starts: frozenset[int] = frozenset(),
    things: tuple[_Thing, ...] = (), carried: bool = False,
) -> tuple[str | None, int, bool]:
    """(subject, index of the first token after it, whether the clause opens with a gerund);
    (None, 0, False) when the clause names no subject it can trust. "you" is ``listener``, the
    other participant of a two-party session, when there is one."""
    i = 0
    while i < len(tokens) and (tokens[i].lower_ in _OPENERS or tokens[i].lower_ in _TIME_WORDS or tokens[i].like_num or tokens[i].lower_ in _LEADS):
        if tokens[i].lower_ in ("the", "this") and not (i + 1 < len(tokens) and tokens[i + 1].lower_ in _TIME_NOUNS | {"other", "day", "past"}):
            if (own := next((o for o in things if o.pointed and o.at == tokens[i].i + 1), None)) is not None:
                return own.subject, i + 1 + own.end - own.at, False  # "The studio looks amazing"
            return None, 0, False  # "The playing ...", "This is a huge step": "the"/"this" open someone else's subject, not a time
        i += 1
    if i < len(tokens) and tokens[i].lower_ in ("in", "on", "at", "during", "over", "for", "after", "before"):
        # "In May I went ...", "For my birthday we ...": a phrase of time or place before the subject
        j = next((k for k in range(i + 1, min(i + 6, len(tokens))) if tokens[k].text == "I" or tokens[k].lower_ == "we"), None)
        if j is None:  # "On the way home my brother got ...": the speaker's own after the phrase
            j = next((k for k in range(i + 1, min(i + 6, len(tokens))) if tokens[k].lower_ in ("my", "our") and any(o.at == tokens[k].i + 1 and o.owned for o in things)), None)
            if j is not None and any(tokens[k].lower_ in ("to", "and", "or") or _lemma(tokens[k]) in word_classes()["verb"] - word_classes()["noun"] for k in range(i + 1, j)):
                j = None  # "for fun and to show our kids ...": "our kids" is an object there
        if j is not None and all(tokens[k].is_alpha and tokens[k].lower_ not in _SUBJECT_WORDS - {"my", "our", "this", "that"} for k in range(i + 1, j)):
            i = j
    if i >= len(tokens):
        return None, 0, False
    t = tokens[i]
    low = t.lower_
    if low in ("i", "we") or t.text in ("I'm", "I've", "Im"):
        return speaker, i + 1, False
    if low == "let" and i + 2 < len(tokens) and tokens[i + 1].lower_ in ("'s", "’s") and speaker is not None:
        if _lemma(tokens[i + 2]) in _EXHORTATIONS or (_lemma(tokens[i + 2]) == "make" and i + 3 < len(tokens) and (
            tokens[i + 3].lower_ in ("sure", "a", "it", "some", "the") or any(t.lower_ in _MADE_IDIOMS | _MADE_SO for t in tokens[i + 3 : i + 6])
        )):  # ("Let's make some sweet memories", "Let's make this weekend epic": a cheer, as "make a difference")
            return None, 0, False  # "Let's keep chasing our dreams", "Let's make a difference": a cheer, no plan
        return speaker, i + 2, False  # "Let's go to a dance class": a plan of the speaker's (with the listener)
    if low == "you" and listener is not None and not (i and tokens[i - 1].lower_ in _LEADS | {"if", "unless"}):
        return listener, i + 1, False  # not "when you start doubting": that "you" is anyone
    if low in ("he", "she", "it", "they"):
        one = _antecedent(low, t, people, things, speaker is not None)
        return (one, i + 1, False) if one is not None else (None, 0, False)
    if low == "my" and i + 1 < len(tokens) and tokens[i + 1].lower_ == "home" and tokens[i + 1].i in frame_starts:
        return speaker, i + 1, False  # "My home is now Lisbon": the frame starts at "home" (not "My home means a lot")
    if low == "my" and i + 2 < len(tokens) and tokens[i + 2].text in people:
        return tokens[i + 2].text, i + 3, False  # "my sister Ana moved ..."
    if low in ("my", "our") and (own := next((o for o in things if o.at == t.i + 1 and o.owned), None)) is not None and not (
        own.end < len(t.doc) and t.doc[own.end].lower_ in ("and", "or", ",", "&")
    ):  # not "Our friends and neighbours make it worth it": of two subjects, the claim would name one
        return own.subject, i + 1 + (own.end - own.at), False  # "My son fell off his bike": the speaker's son
    if (own := next((o for o in things if o.pointed and o.at in (t.i, t.i + 1)), None)) is not None and (own.at == t.i or low in ("that", "these", "those")):
        return own.subject, i + (own.at - t.i) + own.end - own.at, False  # "That page has ...", "Poppies mean ..."
    if i + 1 < len(tokens) and f"{t.text} {tokens[i + 1].text}" in people:
        return f"{t.text} {tokens[i + 1].text}", i + 2, False  # "Mira Jovanovic works at ..."
    if t.text in people:
        return t.text, i + 1, False
    if speaker is None or low in _SUBJECT_WORDS:
        return None, 0, False
    if not carried and tokens[0].lower_ in ("but", "and", "or", "yet", "then") and tokens[0].i > tokens[0].sent.start:
        # "a shy goat who hated rain but crossed the river": the subject is the clause before's,
        # the last one named before it in the sentence ("I was tired but finished it" is the speaker's)
        doc = tokens[0].doc
        sent_start = tokens[0].sent.start
        # where "my sister", "the studio" ... begin as a subject (not "showed my book to my group")
        starts = {
            o.at for o in things
            if o.at >= 1 and (o.at - 1 == sent_start or doc[o.at - 2].is_punct or doc[o.at - 2].lower_ in _LEADS | {"and", "but", "so", "then"})
        }
        before = next((
            k for k in range(tokens[0].i - 1, sent_start - 1, -1)
            if doc[k].lower_ in ("i", "we", "he", "she", "they", "it", "who", "which") or doc[k].text in people or k in starts
        ), None)
        if before is not None and doc[before].lower_ not in ("i", "we"):
            return None, 0, False  # (no subject before at all: "Shame about the rain, but happy we stayed dry" is the speaker's)
    if carried and (_carried_item(tokens[i:]) or _participle_item(tokens[i:])):
        # "We explored the caves, cooked on the fire and took a night walk": the list's subject
        j = i
        while j < len(tokens) and tokens[j].lower_ in _ADVERBS | {"and", "then"}:
            j += 1
        return speaker, j, False
    # No subject: a verb first ("Just finished a painting", "been tinkering with a recipe") is the
    # speaker's; a gerund first ("Coaching at the pool made me ...") the speaker's doing.
    if tokens[i].lower_ in _word_lists()["feelings"] and i + 1 < len(tokens) and tokens[i + 1].lower_ in ("you", "u") and (
        i + 2 >= len(tokens) or not tokens[i + 2].is_alpha or tokens[i + 2].lower_ == "to"
    ):
        return None, 0, False  # "Lucky you!", "Lucky you to have ...": said of the listener (not "Glad you enjoyed the trip")
    if tokens[i].lower_ in ("was", "am", "been") and i + 1 < len(tokens):
        return speaker, i, False  # "Was super nervous when ..."
    j = i
    while j < len(tokens) and (tokens[j].lower_ in _ADVERBS or tokens[j].lower_ in ("been", "was", "am")):
        j += 1
    if j < len(tokens) and tokens[j].lower_ in _word_lists()["feelings"]:
        if j + 1 < len(tokens) and _names_a_thing(tokens[j + 1]) and (j + 2 >= len(tokens) or tokens[j + 2].lower_ in _PREPOSITIONS or not tokens[j + 2].is_alpha):
            return None, 0, False  # "Happy birthday to your son!", "Sad news about the bakery": a greeting, a verdict
        if j == i or tokens[0].is_sent_start:
            # "Glad to be on the team", "Always happy to fix bikes" (not "She's my neighbour, always
            # happy and kind": after a comma, the feeling is the clause before's subject's)
            return speaker, j, False
    if j + 1 < len(tokens) and tokens[j + 1].lower_ in ("and", "or") and tokens[j].lower_.endswith("ed"):
        return None, 0, False  # "Focused and resilient": a description, not a doing
    if j < len(tokens) and tokens[j].lower_.endswith(("ing", "ed")) and len(tokens[j]) > 4 and _lemma(tokens[j]) != tokens[j].lower_:
        return speaker, j, j == i and tokens[j].lower_.endswith("ing")
    if j < len(tokens) and (tokens[j].i in frame_starts or (j + 1 < len(tokens) and tokens[j + 1].lower_ in ("a", "an"))) and (
        (_past_verb(tokens[j]) and _lemma(tokens[j]) not in ("be", "have", "do") and not (j + 1 < len(tokens) and tokens[j + 1].lower_ in ("me", "us", "him", "her", "them")))
        or (tokens[j].lower_ == "had" and j + 1 < len(tokens) and tokens[j + 1].lower_ in ("a", "an"))  # "Had an audition yesterday": had, no auxiliary
        or tokens[j].lower_ in ("gon", "gonna", "wanna")
    ):
        # An irregular past that opens a frame ("Went to the market", "Got a new bike") or has a
        # thing after it ("Took a quick ride to Bruges"), or
        # "Gonna continue my studies" (tokenized "Gon na"): the speaker's, as a regular past is
        # above. A base form is not: "Check out the museum" asks the listener to; nor "This is a
        # ...", "made me remember" (a cause, before its object "me").
        return speaker, j, False
    return None, 0, False


def _read_clause(
    entry: dict[str, Any],
    base: dict[str, Any],
    text: str,
    tokens: list[Any],
    speaker: str | None,
    people: list[str],
    matches: dict[int, list[tuple[int, _Frame]]],
    conditional: bool,
    listener: str | None = None,
    things: tuple[_Thing, ...] = (),
    carried: bool = False,
) -> Proposal | None:
    subject, i, gerund = _subject(tokens, speaker, people, listener, frozenset(matches), things, carried)
    if subject is None:
        return None
    # Someone or something of the speaker's ("my son", "our turtles", "they" for them) or a title
    # ("it" for "Treasure Island"): what it does or is, not what the speaker does.
    thing = next((o for o in things if o.subject == subject), None) if subject != speaker else None
    it_subject = thing is not None and i > 0 and tokens[i - 1].lower_ == "it"
    words = _word_lists()
    if gerund and not _starts_with(tokens, i, words["hedge_before"]) and tokens[i].i not in matches:
        span = _object_span(text, tokens, tokens[i].i, phrase_from_verb=True, stop_lemmas=_GERUND_VERBS)
        if span is None or len(text[span[0] : span[1]].split()) < 2 or _lemma(tokens[i]) in _NOT_DOINGS:
            return None  # "Rewarding!": an adjective, not a doing; "Imagining ...": not done
        after = [t for t in tokens if t.idx >= span[1]]
        if not (after and _lemma(after[0]) in _GERUND_VERBS and len(after) > 1 and after[1].lower_ in ("me", "us")):
            # "Balancing two jobs can be hard": a general remark; "Baking bread and sharing
            # it with neighbours - that's lovely!": said of the listener as often as of oneself.
            return None
        return _claim(entry, base, text, span[0], span, subject, "practices", "assert")
    # "We all have our own pace", "we each have our reasons": said of everyone, in the present
    we_all = subject == speaker and i < len(tokens) and tokens[i - 1].lower_ == "we" and tokens[i].lower_ in ("all", "each")
    # A hedge anywhere in the clause ("I will probably visit ...", "Eventually I hope to ...")
    # makes it hypothetical: precision over recall for facts.
    main = next((k for k in range(i + 1, len(tokens)) if tokens[k].lower_ in _RELATIVES), len(tokens))
    hedged = conditional or any(
        _opens_hedge(tokens, k, words)
        and not (tokens[k].lower_ == "wishes" or (k and tokens[k - 1].lower_ in _BEFORE_A_NOUN))  # "We all made wishes": a thing, no hedge
        for k in range(main)  # "I used to be nervous about what my boss might say": the hedge is theirs
        if tokens[k].lower_ not in _ABILITY_MODALS  # "can" shares its lemma with "could"; it is read below
        and not (_lemma(tokens[k]) == "can" and tokens[k].lower_ != "could")  # "canned food" hedges nothing
        and not (tokens[k].text == "May" and k and tokens[k - 1].lower_ in _PREPOSITIONS | {"last", "next", "this", "early", "late", "mid"})  # "in May"
    )
    negated = ability = copula = False
    future = i >= 2 and tokens[i - 2].lower_ == "let" and tokens[i - 1].lower_ in ("'s", "’s")  # "Let's ...": to come
    frames_from = {k for k, t in enumerate(tokens) if t.i in matches}
    # Between the subject and the verb: auxiliaries, adverbs, hedges, negations.
    while i < len(tokens):
        t = tokens[i]
        lem = _lemma(t)
        if t.lower_ in ("ca", "can", "can't", "cannot") and i in frames_from:
            break  # "can't wait to", "can't stand": the frame starts at the modal
        if t.lower_ in _ABILITY_MODALS:
            ability, i = True, i + 1  # "we can change things", "we should cherish it": not a fact
            continue
        if t.lower_ in ("will", "'ll", "ll", "wo", "shall"):
            future, i = True, i + 1  # "I'll get the tickets": a plan, not a thing done
            continue
        if n := _starts_with(tokens, i, words["hedge_before"]):
            hedged, i = True, i + n
            continue
        if n := _starts_with(tokens, i, words["negations"]):
            negated, i = True, i + n
            continue
        if thing is not None and (t.lower_ in ("'s", "’s") or (thing.pointed and t.lower_ in ("is", "was", "are", "were"))):
            # "It's a mix of ...", "He's been great": "is" (the lookup lemma of "'s" is "have");
            # "This cake is a recipe ...": what a thing pointed at is, not a frame ("is a" as "am a")
            copula, i = True, i + 1
            continue
        if thing is not None and t.lower_ in _SENSES and i + 1 < len(tokens) and tokens[i + 1].is_alpha and tokens[i + 1].lower_ not in ("like", "to", "that", "as", "the", "a", "an"):
            copula, i = True, i + 1  # "The studio looks amazing": what it is like, as after "is"
            continue
        if t.lower_ == "needed" and i + 2 < len(tokens) and tokens[i + 1].lower_ == "to" and tokens[i + 2].is_alpha and tokens[i + 2].lower_ not in _DETERMINERS:
            i += 2  # "I needed to sell the van": a need of the past, the doing is the verb after it (as "had to"), no goal
            continue
        if lem in _HAVE or t.lower_ in ("have", "has", "had"):
            nxt = tokens[i + 1] if i + 1 < len(tokens) else None
            if nxt is not None and nxt.lower_ == "to":
                i += 2  # "I'll have to try it": an obligation, the verb follows
                continue
            if nxt is not None and nxt.lower_ not in _DETERMINERS and (nxt.lower_.endswith(("ed", "en")) or _past_verb(nxt) or nxt.lower_ in _ADVERBS | {"n't", "not", "never"}) and not (
                nxt.lower_ in ("all", "both") and i + 2 < len(tokens) and tokens[i + 2].lower_ in _SORTS_OF | {"of", "the", "my", "our", "these", "those"}
            ):  # (not "has all sorts of plants": "all" opens what is had)
                # An auxiliary: "have moved", "'ve been", "had just"; not "had an interview" (the
                # lookup lemma of "an" is "a") nor "have two kids" (a plural is no participle).
                i += 1
                continue
            break  # "have" is the verb: "I have a dog"
        if lem == "get" and i + 2 < len(tokens) and tokens[i + 1].lower_ == "to" and tokens[i + 2].is_lower and tokens[i + 2].is_alpha and tokens[i + 2].lower_ not in _DETERMINERS:
            i += 2  # "I got to coach the junior team": the chance taken, the doing is the verb after it
            continue
        if t.lower_ in _ADVERBS and i in frames_from and max(e for e, _ in matches[t.i]) - t.i > 1:
            break  # "I'm all about these pastries": the frame starts at the adverb
        if (lem == "be" or t.lower_ in ("'re", "'s", "'m", "re", "m")) and i in frames_from and i + 1 not in frames_from:
            break  # a frame starts at the auxiliary itself: "been to Paris", "am a nurse"
        if lem == "do" and t.lower_ in ("did", "do", "does") and i + 1 < len(tokens) and (
            tokens[i + 1].lower_ in _DETERMINERS | {"some"} or (tokens[i + 1].lower_ == "all" and i + 2 < len(tokens) and tokens[i + 2].lower_ in _SORTS_OF | {"of", "the"})
        ):  # ("We did all sorts of crafts": "did" is the verb, "all" opens its object)
            break  # "We just did a jazz number": "did" is the verb, no auxiliary
        if (lem in _AUX and t.lower_ not in ("will", "doing", "done")) or t.lower_ in _ADVERBS or t.lower_ in ("'re", "'s", "'m", "re", "m", "wo", "ca", "gotta") or (thing is not None and thing.pointed and _only_adverb(t)):
            copula = copula or lem == "be" or t.lower_ in ("'re", "'s", "'m", "re", "m")
            i += 1
            continue
        break
    if i >= len(tokens):
        return None
    start_tok = tokens[0]
    lead_when = next((t.lower_ for t in tokens if t.lower_ not in _OPENERS), "") in ("when", "whenever", "once", "until")
    verb = tokens[i]
    if gerund and verb.i + 1 <= tokens[-1].i and verb.doc[verb.i + 1].lower_ in _GERUND_SUBJECT_VERBS:
        return None  # "Knitting looks like a fun hobby": the gerund is the subject, not a doing
    if gerund and _remark_on_a_doing(verb, listener):
        return None  # "Opening a bakery takes nerve", "Knitting scarves - that's brilliant!": a remark, not a doing
    frame, end = _frame_at(verb.i, matches, tokens)
    if frame is not None and frame.surface == ("joined",):
        frame = _joined_frame(text, tokens, end)
    if copula and not (future or negated or hedged) and verb.lower_.endswith("ing") and _to_come(text, verb, tokens, entry["valid_at"]):
        future = True  # "I'm visiting my aunt next week": a plan, not a visit made
    if _lemma(verb) in ("get", "feel", "become") and not negated:
        k = next((k for k in range(i + 1, len(tokens)) if tokens[k].lower_ not in _ADVERBS), None)
        if k is not None and _lemma(verb) == "get" and tokens[k].lower_ in _HARMED and _past_verb(verb) and not (hedged or future or ability):
            # "I got injured and had to stop riding": harm that happened, and what it led to, not
            # a feeling ("feels" "injured" before)
            return _harmed(entry, base, text, tokens, verb, tokens[k], start_tok.idx, subject)
        if k is not None and tokens[k].lower_ in words["feelings"]:
            # "I've been getting so tired", "I feel so lucky": the feeling is the object
            verb, i, frame = tokens[k], k, None
    moving = verb.lower_ == "moved" and verb.i < tokens[-1].i and verb.doc[verb.i + 1].lower_ in _PREPOSITIONS | {"back", "away", "here", "there", "abroad"}
    admitted = verb.lower_ == "accepted" and verb.i < tokens[-1].i and verb.doc[verb.i + 1].lower_ in ("for", "to", "into", "at", "by")
    if frame is None and verb.lower_ in words["feelings"] and not moving and not admitted:  # "got accepted for an internship": admitted  # "moved from Porto" is not a feeling
        frame, end = _Frame("feels", "phrase", ()), verb.i  # "I'm thrilled to ...": the feeling is the object
    if thing is not None:
        if frame is not None and frame.kind == "name" and _name_span(text, tokens, end) is None:
            frame = None  # "My son fell off his bike": no name after the frame, a doing of his
        if frame is not None and thing.kind == "thing" and frame.predicate != "described_as":
            frame = None  # "our picnic got off to a rainy start": a thing receives, likes or attends nothing
        if copula and verb.lower_ == "like":
            return None  # "my phone is like half of my brain": a likeness, not a liking
        after = verb.doc[verb.i + 1] if verb.i < len(verb.doc) - 1 else None
        # "My choir has been super welcoming and uplifting": after "is", an -ing word that ends its
        # phrase describes; "my son is doing great" is a doing.
        if copula and verb.lower_ == "doing" and after is not None and after.lower_ in _HOW_ONE_DOES and not (negated or hedged or future or ability):
            # "The bakery's doing great", "my son is doing well": how it is going (was nothing: "do"
            # is no doing of its own)
            return _claim(entry, base, text, start_tok.idx, (verb.idx, after.idx + len(after.text)), subject, "described_as", "assert")
        ing_says_how = after is None or not after.is_alpha or after.lower_ in ("and", "or")
        described = copula and (not verb.lower_.endswith("ing") or ing_says_how) and (frame is None or frame.predicate in ("identity", "feels", "described_as"))
        having = verb.lower_ in ("has", "have", "had") and after is not None and after.is_alpha and after.lower_ not in ("to", "been", "got", "had", "n't", "not", "nothing", "no", "just", "already", "never")
        if having and not (negated or hedged or future or ability) and thing.kind == "thing":
            # "That chapter has some letters exploring exile", "It has pirates, storms and a
            # talking parrot": what a thing holds says what it is
            span = _object_span(text, tokens, verb.i, phrase_from_verb=True)
            if span is None or {w.strip(".,!?").lower() for w in text[span[0] : span[1]].split()} & _HAD_IDIOMS:
                return None  # "my team had a blast": a saying, nothing held
            return _claim(entry, base, text, start_tok.idx, span, subject, "described_as", "assert")
        if described or (frame is not None and frame.predicate == "described_as"):
            if negated or hedged or future or ability:
                return None  # "It wasn't great", "it might be a mix": not what it is
            # "It was a long week", "it's so nice to ...": "it" that names nothing; "It's a blend of
            # ...", "It's lemon sponge with ..." say what the thing is (a noun with more after it)
            bare_noun = it_subject and verb.is_alpha and verb.lower_ not in _ADVERBS | _DETERMINERS and verb.lower_ not in _NOT_DESCRIPTIONS
            if it_subject and not (frame is not None and frame.predicate == "described_as") and verb.lower_ not in ("a", "an", "about") and not bare_noun:
                return None
            first = verb.i if described else end
            while described and first < tokens[-1].i and verb.doc[first].lower_ in ("been", "being", "be"):
                first += 1  # "She's been a lovely neighbour": what she is follows "been"
            span = _object_span(text, tokens, first, phrase_from_verb=True)
            if span is None or verb.doc[first].lower_ in ("to", "that", "because", "when", "so", "like", "the", "this", "my", "our", "your", "all", "there", "here") or (
                thing.pointed and text[span[0] : span[1]].lower() in _IMPORTANT_WORDS
            ):  # ("The garden was important": what is valued is read as a value, in the present only)
                return None  # "my plan was to ...", "it's like ...": a clause; "My garden is my motivation": said of the speaker (_mine)
            cut = re.search(r",?\s+and\s+(?=(?:" + "|".join(sorted(_ADVERBS)) + r")\b)|,?\s+and\s+(?:the|my|our|his|her|their|its|those|these)\s+(?=\w+(?:\s+\w+)?\s*$)", text[span[0] : span[1]], re.I)
            if cut is not None:  # "full of mischief and always steals my socks": a second doing
                span = (span[0], span[0] + cut.start())
            said = text[span[0] : span[1]].lower().split()
            head = next((said[k - 1] for k, w in enumerate(said) if k and w in _PREPOSITIONS | {"set", "called"}), None)
            if it_subject and said[:1] == ["about"] and len(said) > 1 and not (
                said[1][:1].isdigit() or said[1] in _ABOUT_NOT_A_TOPIC or (said[1] in ("a", "an") and said[2:3] and said[2].strip(".,!?") in _ABOUT_AMOUNTS)
            ):
                head = "about"  # "It's about a dragon and her friends": what a work is about (not "about 2 feet wide")
            # "It stands for hope and courage": what it means is the object, of a thing named in
            # this turn only (an earlier turn's thing is a guess: the picture shared since, a third thing)
            meaning = not described and verb.lower_ in _MEANING and not thing.earlier
            if meaning and said[:2] in (["the", "world"], ["so", "much"], ["a", "great"], ["everything"], ["nothing"]):
                return None  # "it means the world to me", "it meant so much": how much, not what it stands for
            if it_subject and not meaning and (head is None or head in _NOT_DESCRIPTIONS):
                return None  # "it's been quite a struggle", "It's a small step": a saying; "a blend of comedy and suspense" says what it is
            compound = verb.i < tokens[-1].i and verb.doc[verb.i + 1].text in ("-", "–") and not verb.whitespace_  # "part-time", "dairy-free"
            if bare_noun and not meaning and verb.lower_ not in ("a", "an", "about") and (head not in _MADE_FROM or thing.earlier) and not (
                lemma(head) in word_classes()["noun"] and not head.endswith("ing") and (compound or head not in word_classes()["adj"])
            ):
                return None  # "It's awesome for the kids", "it's normal to be nervous": said of a moment, not what the thing is
            if (made := _MADE_WITH_LEAD.match(text, span[0], span[1])) is not None:
                return _claim(entry, base, text, start_tok.idx, (made.end(), span[1]), subject, "made_with", "assert")  # "My soup is made with lentils"
            return _claim(entry, base, text, start_tok.idx, span, subject, "described_as", "assert")
        if it_subject or thing.pointed or (thing.earlier and thing.kind == "thing"):
            # what "it" does: "it" is most often no thing ("it feels like ..."); a thing pointed at
            # or named in an earlier turn is only described
            return None
    elif frame is not None and frame.predicate == "described_as":
        return None  # "I represent ...": a description of a thing, not of the speaker
    if we_all and verb.lower_ == _lemma(verb):
        return None  # a general remark: "We all have our own pace"
    if copula and verb.lower_ == "like":
        return None  # "We're like a family": a likeness, not a liking
    if ability and not hedged:
        return None  # ability, advice and obligation say what could be, not what is
    if gerund and hedged:
        return None  # "Changing jobs could bring fresh chances": a general remark
    if hedged:
        if negated or any(t.lower_ in ("n't", "not", "never") and t.i and t.doc[t.i - 1].lower_ in ("would", "wo", "could", "might", "'d", "should") for t in tokens):
            return None  # "I might never finish it", "pleased and wouldn't trade it for anything": nothing considered
        if verb.i and verb.doc[verb.i - 1].lower_ in ("about", "of") and not verb.lower_.endswith("ing"):
            return None  # "I think about the places I've lived": a thought, not a plan considered
        if any(t.lower_ in ("'d", "’d", "would") for t in tokens[: i]) and "used to" in text[: start_tok.idx]:
            return None  # "I used to go fishing with my uncle, we'd row out at dawn": a past habit, not a plan
        # What is considered is the verb phrase itself: "might move to Berlin" -> "move to Berlin";
        # "I feel like I could run up a mountain": what follows the modal, the feeling is no plan.
        first = verb.i
        if _lemma(verb) == "feel" and verb.i + 3 <= tokens[-1].i and verb.doc[verb.i + 1].lower_ == "like" and verb.doc[verb.i + 2].text in ("I", "we") and verb.doc[verb.i + 3].lower_ in ("could", "might", "'d", "would"):
            first = verb.i + 4
            if first > tokens[-1].i or not verb.doc[first].is_alpha or verb.doc[first].lower_ in ("not", "n't", "never", "be", "have"):
                return None
        span = _object_span(text, tokens, first, phrase_from_verb=True)
        if span is None or len(text[span[0] : span[1]].split()) < 2:
            return None  # "I'd love that!": what is considered, the clause does not say
        return _with_confidence(
            _claim(entry, base, text, start_tok.idx, span, subject, "considers", "assert"),
            HEDGED_CONFIDENCE,
        )
    polarity = "retract" if negated else "assert"
    if future and not negated and (frame is None or frame.predicate not in ("plans", "goal")):
        span = _object_span(text, tokens, verb.i, phrase_from_verb=True)  # "I'll visit my aunt" -> plans "visit my aunt"
        if frame is not None and frame.kind == "phrase" and end <= tokens[-1].i and (span is None or span[1] <= verb.doc[end].idx):
            # "I'm putting together a quiz night next month": the frame's words, then its object
            thing_span = _object_span(text, tokens, end, phrase_from_verb=False)
            span = (verb.idx, thing_span[1]) if thing_span is not None else span
        return None if span is None else _claim(entry, base, text, start_tok.idx, span, subject, "plans", "assert")
    if frame is not None and gerund and (frame.predicate in ("watched", "received") or (frame.predicate == "plans" and verb.lower_ == "going")):
        # "Seeing my students grow ...", "Finding my Zen ...": an experience remarked on; "Going to
        # community meetings has given me ...": a doing remarked on, no plan
        return None
    if gerund and verb.i == tokens[0].i and (
        any(t.lower_ in ("can", "could", "should", "must", "important", "key", "essential", "crucial", "favorite", "favourite", "fave") for t in tokens[i + 1 :])
        or any(a.lower_ == "is" and b.lower_ in ("n't", "not") for a, b in zip(tokens[i + 1 :], tokens[i + 2 :]))
        or _VERDICT_AFTER.match(text, tokens[-1].idx + len(tokens[-1]))
    ):
        # "Spending time with old friends is important", "Joining a choir can be uplifting",
        # "Opening this bakery isn't about money", "Knitting hats is my favourite": a remark
        # on a doing in general, not one done (the favourite is read as `likes` on its own)
        # (also when the verdict comes after an aside: "Planting trees in the square, especially
        # with neighbours, is vital")
        return None
    if frame is not None and frame.predicate in ("likes", "dislikes") and verb.lower_.endswith("ed") and (
        copula or verb.i == tokens[0].i or (verb.i and _lemma(verb.doc[verb.i - 1]) in ("feel", "get", "be"))
    ):
        return None  # "I feel valued in our community", "I'm loved": said of the speaker, no liking of theirs
    if lead_when and frame is None and not negated and verb.lower_ == _lemma(verb) and not copula:
        return None  # "when I retire", "once we get there": a time to come or any time, not a fact
    gift = frame is not None and frame.predicate in ("received", "created") and frame.kind == "phrase" and _for_someone(text, verb.doc, end, tokens[-1].i)
    if gift:
        # "I bought my mom some tulips", "I'm getting everyone matching hats": a thing got or made
        # for someone, whom the typed predicate would lose ("received" "mom some tulips" before)
        frame = None
    elif frame is not None and frame.predicate == "received" and verb.lower_ in _PRESENT_RECEIPT:
        return None  # "I find new routes to the office", "I get to see them": nothing received
    if frame is not None and frame.predicate == "attended" and verb.lower_.endswith("ing") and (
        _lemma(verb) in ("host", "organize", "organise") or (copula and _future_in_turn(text, entry["valid_at"]))
    ):
        # "I'm organizing a quiz night", "I'm sailing this weekend. We're visiting a new cove":
        # not yet attended
        frame = _Frame("plans", frame.kind, frame.surface)
    if frame is not None and frame.predicate == "finished" and verb.lower_.endswith("ing") and not (gerund and any(t.lower_ in _GERUND_SUBJECT_VERBS for t in tokens if t.i > verb.i)):
        # "I'm finishing my thesis", "Finishing up the mural this week": under way, not finished
        # (an activity); "Finishing my thesis was a relief" is done
        frame = None
    if frame is not None and frame.predicate == "received" and verb.lower_ == "got" and verb.i and verb.doc[verb.i - 1].lower_ in ("'ve", "ve", "have", "has", "'s"):
        frame = _Frame("has", frame.kind, frame.surface)  # "We've got two spare tickets": had, not received
    if frame is not None:
        if frame.kind == "name":
            span = _name_span(text, tokens, end)
        else:
            if frame.predicate not in ("plans", "goal", "practices") and end <= tokens[-1].i and verb.doc[end].lower_ == "to" and not frame.surface[-1:] == ("to",):
                return None  # "painting to stay calm": the purpose, not what was made
            led = verb.i == tokens[0].i and verb.lower_.endswith("ing")  # "Cycling to the coast ... was awesome"
            if frame.predicate == "feels" and end < tokens[-1].i and verb.doc[end].lower_ == "like" and verb.doc[end + 1].text in ("I", "we"):
                # "I felt like I was in a storybook": what it felt like is the whole clause after "like"
                span = (verb.doc[end].idx, tokens[-1].idx + len(tokens[-1].text))
                if len(content_words(text[span[0] : span[1]])) > MAX_CONTENT_WORDS or any(
                    t.lower_ in _ABILITY_MODALS | {"could", "would", "might", "may", "will", "'ll", "'d", "wo"} for t in tokens if t.i > end
                ):
                    return None  # "I feel like we should go home": a thought of what to do, not a feeling
                return _claim(entry, base, text, start_tok.idx, span, subject, "feels", polarity)
            # What one practises is the doing itself: "went fishing with my dad", "play guitar".
            first = verb.i if frame.predicate == "practices" else end
            doing = frame.predicate in ("likes", "dislikes") and first <= tokens[-1].i and verb.doc[first].lower_.endswith("ing") and _lemma(verb.doc[first]) in word_classes()["verb"]
            span = _object_span(  # (a doing liked keeps what it is for: "building a welcoming space for kids to play")
                text, tokens, first, phrase_from_verb=frame.predicate in ("plans", "goal", "practices") or doing,
                stop_lemmas=_GERUND_VERBS if led else frozenset(), naming=frame.predicate not in ("plans", "goal"),
            )
        if span is None:
            return None
        return _claim(entry, base, text, start_tok.idx, span, subject, frame.predicate, polarity)
    predicate = "activity"
    if verb.lower_ == "used" and verb.i < tokens[-1].i and verb.doc[verb.i + 1].lower_ == "to":
        # "I used to go fishing with my uncle": a thing done, often, before now; "when I used
        # to live by the sea", "I used to be shy", "I used to love it": what once was, not a doing.
        done = verb.doc[verb.i + 2] if verb.i + 2 <= tokens[-1].i else None
        if done is not None and done.lower_ == "have" and done.i < tokens[-1].i and done.doc[done.i + 1].lower_ in ("a", "an", "two", "three", "some") and not (negated or lead_when or subject != speaker):
            # "I used to have a goat back in Ohio": had, once (`has` says "has or had")
            span = _object_span(text, tokens, done.i + 1, phrase_from_verb=False)
            return None if span is None else _claim(entry, base, text, start_tok.idx, span, subject, "has", "assert")
        if done is None or lead_when or negated or subject != speaker or not done.is_alpha or _lemma(done) in _ONCE_STATES or done.lower_ in _ADVERBS:
            return None
        span = _object_span(text, tokens, done.i, phrase_from_verb=True)
        if span is None or span[1] <= done.idx + len(done.text):
            return None
        return _claim(entry, base, text, start_tok.idx, span, subject, "activity", "assert")
    if not verb.is_alpha or verb.lower_ in _FUNCTION_WORDS:
        return None  # "I'm in to help", "I'm here": no verb where one should be
    if copula and not verb.lower_.endswith(("ing", "ed", "en")):
        return None  # "I'm colour blind", "I'm game for ...": a state after "am", not a doing
    if _lemma(verb) == "have" and not negated:
        predicate = "has"  # "I had a tutor", "we have two kids"
        if (doing := _doing_enjoyed(verb, tokens[-1].i)) is not None and not (hedged or future or ability or lead_when or subject != speaker):
            # "We had a blast building a treehouse": the doing is what was had, not the blast
            span = _object_span(text, tokens, doing, phrase_from_verb=True)
            return None if span is None else _claim(entry, base, text, start_tok.idx, span, subject, "activity", "assert")
        after_had = [t for t in verb.doc[verb.i + 1 : min(verb.i + 8, tokens[-1].i + 1)] if t.lower_ not in ("bit", "kind", "sort", "of", "a", "an")]  # ("kind of a setback")
        phrase = list(itertools.takewhile(lambda t: t.is_alpha and t.lower_ not in _PREPOSITIONS | _TIME_WORDS | _STOPS | {"and"}, after_had))
        if phrase and _lemma(phrase[-1]) in _HAD_EVENTS:
            predicate = "activity"  # "We had a picnic by the canal": a thing done, not a thing owned (was `has` "picnic")
    elif negated or (_lemma(verb) in _NOT_ACTIVITIES and not gift and not (thing is not None and _lemma(verb) == "get")) or verb.lower_ in _NOT_ACTIVITIES or (verb.is_title and not (verb.i == tokens[0].i and _past_verb(verb) and verb.i < tokens[-1].i and verb.doc[verb.i + 1].lower_ in ("a", "an", "the", "my", "our", "some"))):
        # (what the speaker's own "got" is a doing of theirs: "my son got into trouble at school")
        return None
    if speaker is None or (subject != speaker and thing is None):
        return None  # open activities only from what the speaker says of themself or of their own
    if verb.i + 2 <= tokens[-1].i and verb.doc[verb.i + 1].lower_ in ("and", "or", "but") and verb.doc[verb.i + 2].lower_ in _DETERMINERS:
        return None  # "the places I've lived and the friends I've made": the verb has no object here
    span = _object_span(text, tokens, verb.i + 1 if predicate == "has" else verb.i, phrase_from_verb=True)
    if span is None or span[1] <= verb.idx + len(verb.text):
        return None  # a bare verb ("I cried") says too little to be an activity
    return _claim(entry, base, text, start_tok.idx, span, subject, predicate, "assert")


# Whom a thing got or made may be for, right after the verb: "got them a cake" (not "her",
# which is as often whose: "got her keys").
_FOR_WHOM = frozenset({"him", "them", "me", "us", "everyone", "everybody", "someone", "somebody"})
_GIFT_OPENERS = frozenset({"a", "an", "some", "the", "this", "these", "those", "two", "three", "four", "five", "matching", "new"})


def _for_someone(text: str, doc: Any, k: int, last: int) -> bool:
    """Whether the words from token ``k`` (after a `received` or `created` frame) name someone and
    then the thing: "my mom some tulips", "everyone custom mugs", "Lena a card", "my kids a kite"."""
    if k >= last:
        return False
    who = doc[k]
    if who.lower_ in ("my", "our") and k + 2 <= last:
        kin = _owned_words()
        noun = doc[k + 1].lower_
        if noun not in kin["kin"] and noun not in kin["plural_people"] and lemma(noun) not in kin["kin"]:
            return False
        k += 1
    elif not (who.lower_ in _FOR_WHOM or (who.is_title and who.is_alpha and who.lower_ not in _STOPWORDS)):
        return False
    thing = doc[k + 1]
    if any(a <= thing.idx < b for a, b in _time_spans(text)) or thing.lower_ in _TIME_WORDS_STOP | _PREPOSITIONS | _PARTICLES:
        return False  # "got them yesterday", "got them from the fair", "got him back"
    if thing.lower_ in _GIFT_OPENERS or thing.like_num:
        return True
    # after an unambiguous "them"/"everyone" or "my mom", a describing word or a noun starts the
    # thing ("everyone custom mugs", "my kids breakfast")
    return (who.lower_ in _FOR_WHOM or who.lower_ in ("my", "our")) and thing.is_alpha and thing.is_lower and (
        lemma(thing.lower_) in word_classes()["noun"] or thing.lower_ in word_classes()["adj"]
    )


# What "got" says happened to the body ("got hurt", "got sick"): an event, not a feeling.
_HARMED = frozenset({"hurt", "injured", "sick", "ill", "wounded", "burned", "burnt", "bitten", "stung"})


def _harmed(entry: dict[str, Any], base: dict[str, Any], text: str, tokens: list[Any], got: Any, harm: Any, start: int, subject: str) -> Proposal | None:
    """`activity` "got hurt" of the clause's subject (the speaker, or someone of theirs: "my son
    got hurt"), with what it led to when the sentence goes on "and had to ..." ("got injured and
    had to stop riding"), as long as the whole stays within six content words."""
    # the clause ends at "and had": what it led to is read from the sentence, up to its next mark
    sent = list(itertools.takewhile(lambda t: t.i <= harm.i or t.text not in _SPLIT_PUNCT, harm.sent))
    doc, last = got.doc, sent[-1].i
    end = harm.idx + len(harm.text)
    k = harm.i + 1
    if k + 2 <= last and doc[k].lower_ == "and" and doc[k + 1].lower_ == "had" and doc[k + 2].lower_ == "to":
        rest = _object_span(text, sent, k + 3, phrase_from_verb=True)
        if rest is not None and len(content_words(text[got.idx : rest[1]])) <= MAX_CONTENT_WORDS:
            end = rest[1]
    return _claim(entry, base, text, start, (got.idx, end), subject, "activity", "assert")


def _joined_frame(text: str, tokens: list[Any], end: int) -> _Frame:
    """What "joined" says: an employer when a name follows that ends with one of the lexicon's
    employer words ("joined Acme Robotics": `works_at`), else a group joined ("joined a chess
    club", "joined Riverside Runners": `member_of`). The lexicon lists "joined" under both; the
    frame chosen by position would be whichever the matcher yields first."""
    span = _name_span(text, tokens, end)
    if span is not None and text[span[0] : span[1]].split()[-1].lower().strip(".,!?") in lexicon().joined.employers:
        return _Frame("works_at", "name", ("joined",))
    return _Frame("member_of", "phrase", ("joined",))


_ENJOYED = frozenset({"fun", "blast", "ball", "time"})


def _doing_enjoyed(verb: Any, last: int) -> int | None:
    """The token of the doing after "had fun", "had a blast", "had a great time", "had so much
    fun" ("We had a blast building a treehouse"), or None: the time had is a saying, the doing
    after it is what was done."""
    doc, k = verb.doc, verb.i + 1
    while k <= last and k - verb.i <= 4 and doc[k].lower_ not in _ENJOYED and (
        doc[k].lower_ in ("a", "an", "such", "so", "much", "lot", "of", "really", "the") or (doc[k].is_lower and doc[k].lower_ in word_classes()["adj"])
    ):
        k += 1
    if k >= last or doc[k].lower_ not in _ENJOYED or (doc[k].lower_ == "time" and k == verb.i + 1):
        return None  # ("had time to ...": time free, not time enjoyed)
    ing = doc[k + 1]
    if not (ing.is_lower and ing.lower_.endswith("ing") and _lemma(ing) != ing.lower_ and _lemma(ing) in word_classes()["verb"]) or _lemma(ing) in _NOT_DOINGS | _TALK:
        return None  # "had a blast at the fair", "had fun talking": no doing named
    return ing.i


def _future_in_turn(text: str, said_at: Any) -> bool:
    """Whether a time phrase of the turn dates something after it was said ("this weekend",
    "tomorrow"): a present progressive of going somewhere then says a plan, in whichever sentence."""
    return any(_phrase_to_come(text[a:b], said_at) for a, b in _time_spans(text))


def _phrase_to_come(phrase: str, said_at: Any) -> bool:
    if phrase.lower() == "tonight":
        return True
    when = timephrase.resolve(phrase, said_at)
    return when is not None and when.date() > said_at.date()


def _to_come(text: str, verb: Any, tokens: list[Any], said_at: Any) -> bool:
    """Whether a time phrase after ``verb`` in the clause dates it after the entry was said
    ("next week", "tomorrow", "this weekend", "tonight"): a present progressive then says a plan."""
    end = tokens[-1].idx + len(tokens[-1].text)
    # the turn's time phrases, found once for every clause and object of the turn
    span = next(((a, b) for a, b in _time_spans(text) if a >= verb.idx and b <= end), None)
    return span is not None and _phrase_to_come(text[span[0] : span[1]], said_at)


def _claim(entry, base, text: str, start: int, span: tuple[int, int], subject: str, predicate: str, polarity: str) -> Proposal | None:
    first = text[span[0] : span[1]].split(maxsplit=1)[0].lower() if text[span[0] : span[1]].strip() else ""
    talk = first in _TALK and (first not in ("see", "show") or len(text[span[0] : span[1]].split()) == 1)  # "see the Grand Canyon" is a plan
    if predicate in ("goal", "plans", "considers", "activity") and (talk or first in _FUNCTION_WORDS):
        return None  # "I meant to ask you ...", "I'll see", "I'm here": talk, not a fact
    rest = [w.strip("\"'.,!?").lower() for w in text[span[0] : span[1]].split()[1 if predicate in ("activity", "practices") else 0 :]]
    named = [w for w in rest if len(w) > 2 and w not in _STOPWORDS and w not in _VAGUE_OBJECTS and w not in _TIME_WORDS and w not in _NOTHING_NAMED]
    if first == "no" or not named:
        return None  # "watched it", "hooked on those", "no doubt", "the other day", "doing anything then": nothing named
    if rest and rest[0] in ("another", "one", "ones") and (len(rest) == 1 or rest[1] in _PREPOSITIONS):
        return None  # "I found another at the fair": one of something named before, not named here
    if predicate in ("activity", "practices", "created", "received", "attended", "watched", "started") and any(w in ("don't", "didn't", "doesn't", "never", "not", "won't", "can't") for w in rest):
        return None  # "I usually don't get too serious about it": a negation inside the object is no doing
    if any(w in ("you", "your", "you're", "you've", "yours") for w in rest) and predicate not in ("likes", "met", "received", "described_as"):
        return None  # "Glad you agree", "Watching your garden bloom": about the listener, not the speaker
    if first in _CLAUSE_SUBJECTS and predicate != "feels":
        return None  # "I heard she joined Helio Labs": a clause, not a thing heard (who said it is unknown)
    titled = text[span[1] - 1] in '"”'  # a quoted title's words are a name, not a saying ("The Long Way")
    if predicate in ("created", "watched") and not titled and (named[-1] in _MADE_IDIOMS or any(w in _MADE_IDIOMS for w in named[:2])):
        return None  # "we make a good pair", "making a difference", "I saw the change": nothing made or seen
    words = text[span[0] : span[1]].split()
    if predicate in ("activity", "practices", "plans", "goal", "considers") and (
        words[-1].lower().strip(".,!?") in ("something", "anything", "everything", "ones", "stuff", "somewhere")  # "puzzled about something", "a few of the ones"
        or (predicate == "activity" and len(rest) == 2 and rest[0] == "to")  # "I chose to read [about that]": a verb alone
        or (predicate == "considers" and first in ("have", "has", "be", "am", "is", "are"))  # "I probably also have piles of maps": a state guessed, not considered
        or (predicate == "activity" and rest and all(w in _HOW_ONE_IS | _PARTICLES for w in rest) and lemma(first) in _LIGHT_VERBS | {"stay", "come", "hang", "stick", "work", "sit", "stand"})  # "work well", "stayed away" (not "broke down")
        or (predicate == "practices" and [w.lower() for w in words[:2]] in (["run", "out"], ["ran", "out"], ["running", "out"]))  # "I run out of ideas"
        or (predicate in ("plans", "goal", "considers") and named and all(w in _PEOPLE_WORDS for w in named))  # "we show people"
        or (predicate == "practices" and len(words) <= 5 and any(w.lower().strip(".,!?") in ("it", "them") for w in words[1:]))  # "played it and recommended it"
        or (predicate in ("plans", "goal") and re.match(r"(?:add|put|keep) (?:it|them|that) (?:to|on|in) (?:my|the|our) (?:\w+ )?list\b", " ".join(rest)))  # "I'll add it to my list": interest, not a plan
        or (predicate == "considers" and lemma(first) in ("know", "think", "guess", "bet", "believe", "suppose", "imagine", "say"))  # "I knew you'd be up for it": a belief
        or (predicate == "activity" and first in ("find", "finds") and rest[:1] in (["it"], ["that"], ["this"]))  # "I find it calms my nerves": an opinion, not a doing
    ):
        return None
    if predicate in ("created", "has", "received") and named and named[-1] in ("experience", "experiences") and len(named) <= 2:
        return None  # "I had a comparable experience", "we crafted an experience": what it was is not said
    if predicate == "studies" and "hard way" in " ".join(rest):
        return None  # "I learned this the hard way": a lesson, nothing studied
    if predicate in ("likes", "dislikes", "values") and rest[:2] in (["making", "sure"], ["make", "sure"]):
        return None  # "passionate about making sure farmers [are heard]": a clause, cut before its verb
    if predicate in ("values", "likes") and re.search(r"\b(?:your|you)\s*$", text[: span[0]], re.I):
        return None  # "I believe in your talent", "Loving your new hobby": said of the listener
    if predicate == "likes" and first in ("your", "yours", "his", "her", "their"):
        return None  # "I appreciate your patience", "love his car": politeness, or someone else's thing
    past = first.endswith("ed") or (lemma(first) != first and first.isalpha() and not first.endswith(("s", "ing")) and first not in _DETERMINERS)
    if predicate == "received" and ((past and not _names_after(text[span[0] : span[1]].split()[1:])) or first in _GOT_STATES):
        return None  # "got married", "got sick": a change of state, not a thing received ("got a signed copy" is one)
    words = text[span[0] : span[1]].split()
    if predicate in ("considers", "goal", "plans", "activity") and (
        (words[-1].lower().strip(".,!?") in _VAGUE_OBJECTS | {"there", "here", "better", "out"} and len(words) <= 3)
        or (len(words) <= 5 and any(w.lower() in ("it", "them", "that", "this") and not _said_for(words[k + 1 :]) and not _determines(predicate, words, k) for k, w in enumerate(words)))
        or (
            predicate == "activity" and len(words) > 2 and words[1].lower() in _PREPOSITIONS and words[2].lower().strip(".,!?") in ("it", "them", "that", "this")
            and all(w.lower().strip(".,!?") in _PREPOSITIONS | _TIME_WORDS | {"a", "an", "long", "while", "time"} for w in words[3:])
        )  # "longing for this for a long while" (not "lean on them for courage")
    ):
        return None  # "give it a try", "recommend it", "try them out", "make it work": what "it" is, the clause does not say
    if predicate == "met" and first in ("at", "in", "on", "during", "through", "with", "up"):
        return None  # "the people I met at the library": whom, the clause does not say
    if predicate == "feels" and (
        (len(words) > 1 and words[0].lower() in _word_lists()["feelings"] and words[1].lower() not in _FEELING_LINKS)
        or (len(words) == 3 and words[1].lower() == "to")  # "excited to see [...]", "blessed to know [them]"
    ):
        return _claim(entry, base, text, start, (span[0], span[0] + len(words[0])), subject, predicate, polarity)  # "Glad it [helped]"
    if predicate == "feels" and named and all(w in ("same", "way") for w in named):
        return None  # "I feel the same way": agreement with the listener, not a feeling named
    if predicate == "feels" and ("me" in rest or "us" in rest):
        return None  # "so keen to show me their drawings": someone else's feeling
    if predicate == "identity" and (words[-1].lower().strip(".,!?") in _VAGUE_OBJECTS or first in ("mix", "bit", "little")):
        return None  # "I'm a big fan of it": of what, the clause does not say
    if words[-1].lower().strip(".,!?") in ("look", "feel", "seem", "sound"):
        return None  # "make the room feel [like ...]": cut before what it looks like
    if first in ("being", "been") and predicate in ("created", "received", "started", "finished", "watched"):
        return None  # "a song I wrote being sung": what follows the thing, not the thing
    if predicate == "created" and first.endswith("ing") and lemma(first) != first and (
        (before := text[: span[0]].split()[-1:]) and before[0].lower() not in _DETERMINERS | {"a", "an"} and rest[1:2] != ["of"]
    ):
        if text[: span[0]].lower().split()[-2:] == ["working", "on"]:
            # "Still working on opening a pottery shop", "We've been working on building up
            # stamina": nothing made yet, an aim worked towards
            return _claim(entry, base, text, start, span, subject, "goal", polarity)
        return None  # "I was painting ...": a doing, nothing made (not "a painting of the lake")
    if first in ("something", "anything", "everything", "nothing", "ta", "tta") or (predicate in ("created", "received", "started", "finished", "has") and first in _PREPOSITIONS | {"as"}):
        return None  # "I've got something to show", "I baked for my friends": what, the clause does not say
    if predicate == "has_pet" and set(named) & (_PEOPLE_WORDS | set(_word_lists()["relations"]["has_relative"])):
        return None  # "Taking in refugees for the winter": people taken in are no pets
    if predicate in ("plans", "goal", "considers") and len(words) <= 2 and lemma(words[-1].lower().strip(".,!?")) in _LIGHT_VERBS:
        return None  # "I'll keep thinking", "I want to go see": what, the clause does not say
    if predicate == "practices" and first == "doing" and rest[:1] and (rest[0] in _HOW_ONE_IS or rest[:2] == ["my", "best"]):
        return None  # "I've been doing fine": how one is, not what one does
    if predicate == "practices" and rest[:1] == ["through"]:
        return None  # "going through a move": something undergone, not practised
    if predicate == "plans" and any(w in ("posted", "updated", "informed") for w in rest):
        return None  # "I'll keep you updated": a courtesy, not a plan
    if predicate in ("plans", "goal", "considers") and first == "make" and (named[-1] in _MADE_IDIOMS or rest[1:2] == ["sure"]):
        return None  # "I'll make sure", "I'll make sure to recall this": nothing planned is named
    if predicate in ("plans", "goal", "considers") and first == "do" and rest[1:3] == ["my", "best"]:
        return None  # "I'll do my best to ...": a promise of effort, not a plan
    if predicate in ("plans", "goal", "considers") and len(named) + (first not in named) < 2:
        return None  # "I'll get 'em", "I'll have to ask": a verb alone plans nothing named
    if predicate == "has" and (
        any(w in _HAD_IDIOMS and not (w == "back" and rest[k + 1 : k + 2] in (["in"], ["at"], ["home"])) for k, w in enumerate(rest))  # ("a cat back in Porto")
        or bool({*[w for w in rest if w not in _DETERMINERS][:2]} & (_TIME_NOUNS | {"day"}))  # "Had a wild week": how it went, not a thing had
        or any(w in ("power", "chance", "opportunity", "right") and rest[k + 1 : k + 2] == ["to"] for k, w in enumerate(rest[:3]))  # "the chance to ..."
    ):
        return None  # "we have each other's back", "we had a ball": a saying, not a thing had
    if predicate == "received" and named[-1] in _GOT_IDIOMS:
        return None  # "we've got the right idea", "got the point": nothing received
    if predicate == "considers" and first in _ABILITY and not (len(named) > 1 and _FELT_ABLE.search(text, 0, span[0])):
        # "I can imagine", "I bet", "I can help": ability or politeness, not a plan (but "I feel like
        # I could write a symphony": what the feeling is of, with the thing it would make)
        return None
    if predicate == "considers" and first in ("thought", "think", "guess", "guessed", "figured", "reckon"):
        return None  # "I thought it'd help my stall grow": a belief held, not a thing considered
    if predicate in ("likes", "practices", "activity") and len(words) == 1 and first.endswith("ing") and lemma(first) in _NEEDS_AN_OBJECT:
        return None  # "I've been really into making", "I also like holding": of what, the clause does not say
    if predicate == "activity" and " ".join(w.lower().strip(".,!?") for w in words) in _SAYINGS:
        return None  # "I'm crossing my fingers": a hope, not a thing done
    # Objects are cut by content words here (at most six), so the word cap of 0.2.0 does not apply.
    p = rules._proposal_at(entry, base, text, start, span[1], span[0], span[1], subject, predicate, polarity, max_words=MAX_WORDS, cut_clauses=False, splice_time=True)
    if p is not None and p.object.count('"') % 2 and text[span[1] - 1] == '"' and p.quote.endswith(p.object):
        # "a puzzle game called "Lantern Keep"": the title's closing mark, stripped from the
        # object's end with the marks around a whole quoted object, stays with its opening one
        p = p.model_copy(update={"object": p.object + '"', "quote": p.quote + '"'})
    elif p is not None and p.object.count('"') % 2 and text[span[0]] == '"' and '"' + p.object in p.quote:
        p = p.model_copy(update={"object": '"' + p.object})  # (and its opening mark: '"Tidewater" by Ana Ruiz')
    return p


def _named_thing(doc: Any, out: list[Any], i: int, last: int) -> list[Any] | None:
    """The tokens of "<noun> called <name>" when the token at ``i`` ("called", "named", "titled")
    follows the object's noun and is followed by a quoted title or capitalised words: the noun
    with up to two words qualifying it before it, the verb and the name. Kept whole, it is what
    a question about the thing asks for; the words before the noun are dropped to keep it short."""
    if any(o.lower_ in _PREPOSITIONS and o.lower_ != "of" for o in out):
        return None  # "read some letters from a painter named Odile": the name is the painter's, not the letters'
    head: list[Any] = []
    words = 0
    for o in reversed(out):  # up to three words back, a hyphenated one ("sci-fi") counting as one
        joined = head and (o.text in ("-", "–") or head[0].text in ("-", "–")) and not o.whitespace_
        if not joined:
            words += 1
        if words > 3:
            break
        head.insert(0, o)
    while head and (not head[0].is_alpha or head[0].lower_ in _STOPWORDS | _PREPOSITIONS | _DETERMINERS | _PHRASE_HEADS or head[0].lower_ in _ADVERBS):
        head = head[1:]
    if not head or not head[-1].is_alpha or head[-1].lower_ in _STOPWORDS | _PREPOSITIONS | _DETERMINERS:
        return None
    k = i + 1
    if k <= last and doc[k].text in ('"', "“"):
        end = next((j for j in range(k + 1, min(k + 12, last + 1)) if doc[j].text in ('"', "”")), None)
        return None if end is None or end == k + 1 else [*head, doc[i], *doc[k : end + 1]]
    name = []
    while k <= last and len(name) < 5 and (doc[k].is_title or (name and (doc[k].like_num or doc[k].lower_ == "of"))) and doc[k].text != "I":
        name.append(doc[k])
        k += 1
    while name and name[-1].lower_ == "of":
        name.pop()
    return [*head, doc[i], *name] if name else None


# Nouns of a place whose name may follow after a comma: "my old town, Greenfield".
_PLACE_NOUNS = frozenset({"area", "country", "hometown", "town", "city", "neighborhood", "neighbourhood", "state", "village", "region", "island", "county"})


def _apposed_name(doc: Any, last: int) -> list[Any]:
    """The name set after a place by a comma, closing its phrase: "my old town, Greenfield,
    too", "my home country, Norway." (one to three capitalised words, then a comma or a full
    stop). Only after a place noun: after another ("I went to the market, Lisa.") the name is
    most often the one spoken to."""
    if last + 2 >= len(doc) or doc[last + 1].text != ",":
        return []
    k, name = last + 2, []
    while k < len(doc) and len(name) < 3 and doc[k].is_title and doc[k].is_alpha and doc[k].text != "I":
        name.append(doc[k])
        k += 1
    if not name or (k < len(doc) and doc[k].text not in (",", ".")) or (k < len(doc) and doc[k].text == "," and k + 1 < len(doc) and doc[k + 1].is_title):
        return []
    return name


def _said_for(after: list[str]) -> bool:
    """Whether the words after an "it" name what the doing is for or where: "bake it for my
    neighbours", "bring them to the library" plan something named, though "it" is not."""
    return len(after) >= 2 and after[0].lower() in _PREPOSITIONS and any(
        len(w) > 2 and w.lower().strip(".,!?") not in _STOPWORDS | _VAGUE_OBJECTS for w in after[1:]
    )


def _names_after(words: list[str]) -> bool:
    """Whether a participle is followed by the noun it qualifies: "signed copy", not "married to"."""
    nxt = words[0].lower().strip(".,!?") if words else ""
    return len(nxt) > 2 and nxt.isalpha() and nxt not in _STOPWORDS | _PREPOSITIONS | _VAGUE_OBJECTS | {"off", "out", "down"}


def _determines(predicate: str, words: list[str], k: int) -> bool:
    """Whether "this"/"that" at ``k`` of an open activity's object is a determiner: "took this
    photo" names what was done; a plan's "make this work" does not."""
    nxt = words[k + 1].lower().strip(".,!?") if k + 1 < len(words) else ""
    return predicate == "activity" and words[k].lower() in ("this", "that") and len(nxt) > 2 and nxt not in _STOPWORDS | _VAGUE_OBJECTS


def _with_confidence(p: Proposal | None, confidence: float) -> Proposal | None:
    return None if p is None else p.model_copy(update={"confidence": min(p.confidence, confidence)})


# Doings that name nothing without their object ("into making", "like holding").
_NEEDS_AN_OBJECT = frozenset({"make", "hold", "do", "get", "take", "have", "bring", "give", "put", "find", "keep", "use", "try", "see"})
# Sayings shaped like doings.
_SAYINGS = frozenset({"crossing my fingers", "crossed my fingers", "keeping my fingers crossed", "holding my breath", "counting my blessings", "counting down the days"})

# Verbs after "used to" that say what once was rather than what was done.
_ONCE_STATES = frozenset({
    "be", "have", "live", "love", "like", "hate", "enjoy", "work", "think", "feel", "know", "want", "need", "get",
    "believe", "wish", "hope", "worry", "seem", "look", "mean", "call", "say",
})  # fmt: skip

# Words after a time phrase inside an object that say more of the thing ("a ride last week to
# Bruges", "a tryout yesterday for a choir role", "a fine day last weekend sailing with ...").
_GOES_ON_AFTER_TIME = frozenset({"for", "to", "with", "at", "near", "about", "of", "hiking", "camping", "fishing", "skiing"})


def _after_time(doc: Any, i: int, end: int, last: int) -> Any | None:
    """The first token from token ``i`` at or after character ``end`` (a time phrase's end) within the clause."""
    for t in doc[i : last + 1]:
        if t.idx >= end:
            return t
    return None


def _frame_at(i: int, matches: dict[int, list[tuple[int, _Frame]]], tokens: list[Any]) -> tuple[_Frame | None, int]:
    """The frame starting at token ``i``: the longest, then the one written as the turn says it."""
    last = tokens[-1].i + 1
    doc = tokens[0].doc
    found = [
        (end, f) for end, f in matches.get(i, [])
        if end <= last and not (f.predicate == "identity" and doc[i].lower_ in ("was", "were", "been"))  # "when I was a kid"
    ]
    if not found:
        return None, i
    longest = max(end for end, _ in found)
    best = [f for end, f in found if end == longest]
    said = tuple(t.lower_ for t in doc[i:longest])
    exact = [f for f in best if f.surface == said]
    return (exact or best)[0], longest


def _name_span(text: str, tokens: list[Any], start: int) -> tuple[int, int] | None:
    """The capitalised name right after token ``start`` (character offsets)."""
    doc = tokens[0].doc
    if start >= len(doc):
        return None
    first = doc[start]
    if first.lower_ == "the" and start + 1 < len(doc) and doc[start + 1].is_title:
        first = doc[start + 1]  # "work at the Art School": the name is what follows the article
    m = re.match(rules._PROPER, text[first.idx :])
    if not m or first.i > tokens[-1].i:
        return None
    return first.idx + m.start("obj"), first.idx + m.end("obj")


def _object_span(
    text: str, tokens: list[Any], start: int, *, phrase_from_verb: bool, stop_lemmas: frozenset[str] = frozenset(), naming: bool = False
) -> tuple[int, int] | None:
    """Character offsets of the phrase from token ``start`` to the clause's end, cut at a
    subordinate clause, an infinitive of purpose or a time phrase; at most six content words.
    With ``naming``, a thing followed by "called/named <name>" is the thing and its name."""
    doc = tokens[0].doc
    last = tokens[-1].i
    out: list[Any] = []
    content = 0
    times = _time_spans(text)  # the entry text (doc.text would rebuild it token by token)
    quoted = False
    skip_to = -1  # the end of a time phrase the object goes on after
    examples = 0  # where the examples after "things like" start in ``out``: the object is them
    for t in doc[start : last + 1]:
        low = t.lower_
        if t.idx < skip_to:
            continue
        if naming and out and not quoted and low in ("called", "named", "titled") and (named := _named_thing(doc, out, t.i, last)) is not None:
            out = named  # "this great puzzle game called "Lantern Keep"": the thing and its name
            content = 1
            break
        if t.text in ('"', "“", "”"):
            quoted = not quoted
        if quoted:  # a title in quotes is one name, never cut: "The Wind in the Willows"
            content += len(low) > 2 and low not in _STOPWORDS and t.is_alpha
            out.append(t)
            continue
        if (inside := next(((a, b) for a, b in times if a <= t.idx < b), None)) or low in _TIME_WORDS_STOP:
            if inside and content and (nxt := _after_time(doc, t.i, inside[1], last)) is not None and nxt.lower_ in _GOES_ON_AFTER_TIME:
                skip_to = inside[1]  # "a tryout yesterday for a choir role": the phrase is cut out, the thing goes on
                continue
            break  # the time phrase sets the valid time; it is not part of the object
        if (out or t.i > start) and _lemma(t) in stop_lemmas:
            break
        if out and low == "like" and t.i < last and doc[t.i + 1].text != "I" and not examples and (
            out[-1].lower_ in ("stuff", "things") or (len(out) > 2 and out[-3].lower_ in _SORTS_OF and out[-2].lower_ == "of")
        ):
            # "The stall sold plenty of tasty things like figs, olives and cheese": the examples name what was
            # had, the words before them nothing (so they do not count toward the cap either)
            out.append(t)
            examples, content = len(out), 0
            continue
        if out and low == "like" and t.i < last and doc[t.i + 1].text != "I" and doc[t.i + 1].is_title:
            out.append(t)  # "jazz like Ellington and Monk": the examples belong to the object
            continue
        if out and (low in _STOPS or (low == "that" and t.i < last and doc[t.i + 1].lower_ in _SUBJECT_WORDS | {"you", "he", "she"})):
            break
        if out and low == "to" and not phrase_from_verb and len(out) > 1 and not (
            t.i < last and (doc[t.i + 1].is_title or doc[t.i + 1].lower_ in ("the", "my", "our", "a", "an") or _names_a_thing(doc[t.i + 1]))
        ):
            # "made this poster to remind myself": the purpose is another clause (not "a trip to
            # England", a place, nor "a deep bond to music", a thing: no verb can follow "to a")
            break
        if out and low in ("and",) and t.i + 1 <= last and doc[t.i + 1].lower_ in _SUBJECT_WORDS and not _owned_item(doc, t.i, last + 1):
            break
        if out and low in ("and", "but") and not (t.i < last and doc[t.i + 1].lower_ in _word_lists()["feelings"]) and (_second_doing(doc, t.i + 1, last) or (t.i < last and doc[t.i + 1].lower_ in _COMMON_PASTS)):
            break  # "met some kind old folks and thanked them": a second doing, another clause
        if out and low == "and" and t.i + 2 <= last and not any(o.lower_.endswith("ing") for o in out) and _lemma(out[-1]) in word_classes()["noun"] and _gerund_with_object(doc, t.i + 1):
            break  # "working on some songs and testing out new pedals": a second doing, not a thing made
        if out and low in ("what", "how", "whatever", "that") and content and (low != "that" or out[-1].lower_ not in ("so", "such", *_PREPOSITIONS)):
            break  # "curious to see what the path brings", "a few of the ones that fit": another clause
        if out and low in ("is", "was", "are", "were", "sounds", "looks", "seems", "does", "did") and content:
            # "Knowing I'm helping build a cleaner park is great": what follows is a verdict; "following
            # my study plan and the teachers are great": the "and" opened the verdict's subject
            k = max((k for k, o in enumerate(out) if o.lower_ == "and"), default=None)
            if k is not None and k + 1 < len(out) and out[k + 1].lower_ in _DETERMINERS and not any(_past_verb(o) or o.lower_.endswith("ing") for o in out[k + 1 :]):
                out = out[:k]
            break
        if out and low == "the" and t.i + 2 <= last and doc[t.i + 1].lower_ == "other" and doc[t.i + 2].lower_ in _TIME_NOUNS | {"day"}:
            break  # "an old western the other day"
        if out and low in ("last", "next", "this", "every") and t.i + 1 <= last and doc[t.i + 1].lower_ in _TIME_NOUNS:
            if content and t.i + 2 <= last and doc[t.i + 2].lower_ in _GOES_ON_AFTER_TIME:
                skip_to = doc[t.i + 2].idx  # "taking a few days off this month to rest with my cats"
                continue
            break  # "on a boat trip last summer": a time the resolver does not date still ends the object
        if out and low == "a" and t.i + 1 <= last and doc[t.i + 1].lower_ in ("little", "bit") and (t.i + 2 > last or not doc[t.i + 2].is_alpha):
            break  # "to rest my eyes a little": how much, not what
        if len(low) > 2 and low not in _STOPWORDS and t.is_alpha:
            if content == MAX_CONTENT_WORDS:
                # Cut inside a phrase ("by running a neighbourhood | book swap"): back off to the last
                # preposition, so the object ends where a phrase does.
                cut = max((k for k, o in enumerate(out) if k and o.lower_ in _PHRASE_HEADS), default=None)
                if cut is not None and out[-1].lower_ not in _PHRASE_HEADS:
                    out = out[:cut]
                    if len(out) > 1 and _past_verb(out[-1]) and out[-1].lower_.endswith("ed"):
                        out = out[:-1]  # "a garden filled | with roses, herbs and ...": the participle goes with what was cut
                if len(out) > 1 and out[-1].lower_ in _PARTICLES and out[-1] is not t and t.i == out[-1].i + 1 and t.is_alpha and _lemma(t) in word_classes()["noun"]:
                    out.pop()  # "renovate a rundown town hall back | home": the word before the cut goes with what was cut
                break
            content += 1
        out.append(t)
    if out and out[-1].i == last and out[-1].lower_ in _PLACE_NOUNS and content < MAX_CONTENT_WORDS:
        out += _apposed_name(doc, last)  # "cleaning up my old town, Greenfield, too"
    # "put my coat on", "picked the kids up": a particle that ends the clause belongs to its verb
    particle = out[-1] if phrase_from_verb and len(out) > 2 and out[-1].i == last and out[-1].lower_ in ("on", "off", "up", "out", "down", "away", "back") else None
    while out and (out[-1].lower_ in _STOPWORDS or out[-1].lower_ in _TRAILING_WORDS or out[-1].text in (",", ";")):
        out.pop()  # (a comma of a list cut at the word cap: "faith, doubt,")
    if particle is not None and out and out[-1].i == particle.i - 1 and out[-1].is_alpha and out[-1].lower_ not in _STOPWORDS:
        out.append(particle)
    if len(out) > 2 and out[-2].lower_ == "and" and out[-1].lower_.endswith("ing") and out[-1].i < last and doc[out[-1].i + 1].lower_ in _VAGUE_OBJECTS:
        out = out[:-2]  # "Hiking up the ridge and spotting this": the second doing's object is a pointer, it names nothing
    if len(out) > 2 and out[-1].lower_ in ("things", "stuff", "everything") and out[-2].lower_ in ("and", "or"):
        out = out[:-2]  # "the new studio and things": the rest names nothing
        while out and out[-1].text in (",", ";"):
            out.pop()
    if not out or content == 0:
        return None
    first = 0
    while first < len(out) and (
        out[first].lower_ in ("a", "an", "the", "my", "our", "some", "to", "his", "her", "their", "and", "or", "but", "your", "its", "this", "these", "those")
        # "I painted that old barn": a determiner; not "I love that you came" (a clause)
        or (out[first].lower_ == "that" and first + 1 < len(out) and out[first + 1].is_alpha and out[first + 1].lower_ not in _SUBJECT_WORDS | _CLAUSE_SUBJECTS)
    ):
        if out[first].lower_ == "to" and first and out[first - 1].lower_ in ("this", "these", "those", "her", "his", "its", "their"):
            return None  # "I painted this to celebrate spring": "this" is what was painted, the rest its purpose
        first += 1
    if first + 1 < len(out) and out[first].lower_ in ("few", "several", "many") and out[first + 1].is_alpha and out[first + 1].lower_ not in _STOPWORDS | _PREPOSITIONS:
        first += 1  # "wrote a few verses for a song": the bits are what was written
    if examples and examples < len(out):
        first = examples  # "We got stuff like warm blankets": the examples name what was got
    if first + 1 < len(out) and out[first].lower_ == "of" and first and out[first - 1].lower_ in ("some", "any", "all", "each", "one", "two", "both", "many", "most"):
        first += 1  # "I talked to some of the players": the guys, not "of the guys"
        while first < len(out) and out[first].lower_ in _DETERMINERS:
            first += 1
    if first + 3 < len(out) and out[first].lower_ in ("all", "many", "different") and out[first + 1].lower_ in _SORTS_OF and out[first + 2].lower_ == "of":
        first += 3  # "I have all kinds of board games": the games are what is had
    if first + 2 < len(out) and out[first].lower_ in _QUANTITIES and out[first + 1].lower_ == "of":
        first += 2  # "I've got lots of cookbooks": the books are what is had, "lots" names nothing
        while first < len(out) and out[first].lower_ in _DETERMINERS:
            first += 1
    if first >= len(out) or out[first].lower_ in _VAGUE_OBJECTS:
        return None
    return out[first].idx, out[-1].idx + len(out[-1].text)
