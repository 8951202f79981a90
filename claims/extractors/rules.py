"""The rule-based extractor: deterministic patterns over what people state, no model.

First-person statements in messages and corrections ("I moved to Berlin last month", "my
sister Ana", "I don't work at Northwind anymore") take the speaker as subject; a few
third-person forms ("Tomasz moved to Warsaw") take the named person, in any kind of entry.
Each proposal's quote is the matched span of the entry (stretched over the time phrase when
the sentence has one), so provenance holds by construction; the validators still check it
like any other extractor's output.

Precision over recall: a pattern fires only on a shape that says the fact (a capitalised name
after "live in", a phrase after "I love"); vague objects (pronouns, "it", "that") are dropped
here rather than left for the validators. Tuned on the shapes of the LoCoMo dev
conversations (2,080 turns): about 60 typed facts (likes, events, plans, work) plus ~1,075
mentions of known people, none rejected, at ~5,000 turns/s on one core (benchmarks/bench_extract.py).
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any, Iterator

from claims import timephrase
from claims.model import Proposal
from claims.ontology import ONTOLOGY

if TYPE_CHECKING:
    from claims.resolve import Resolver

NAME = "rules"
VERSION = "0.2.0"

# A capitalised name of one to four words ("Berlin", "Helio Labs", "University of Porto"); a
# following "I" is the next clause's subject, not part of the name.
_CAP = r"[A-Z\u00C0-\u00DE][\w'&\-]*"
_PROPER = rf"(?P<obj>{_CAP}(?:\s+(?:of\s+|de\s+|the\s+)?(?!I\b){_CAP}){{0,3}})"
_PHRASE = r"(?P<obj>[^.,!?;:()\"]{2,80})"
_PERSON = r"(?P<obj>[A-Z][a-z\u00E0-\u00FF'\-]+(?:\s+[A-Z][a-z\u00E0-\u00FF'\-]+)?)"
_I = r"\bI(?:'ve| have)?"
_RELATIVES = (
    "sister|brother|mother|mom|mum|father|dad|wife|husband|partner|son|daughter|cousin|aunt|uncle|"
    "grandmother|grandma|grandfather|grandpa|niece|nephew|fianc[eé]e?|stepmother|stepfather"
)

# (predicate, polarity, pattern). Retractions come first: a span a retraction claims is not
# read again as an assertion ("I lost my job at X" is not "my job at X").
_FIRST_PERSON: list[tuple[str, str, re.Pattern[str]]] = [
    ("lives_in", "retract", re.compile(rf"\bI (?:no longer|don't|do not|didn't|did not) (?:live|stay) in {_PROPER}")),
    ("lives_in", "retract", re.compile(rf"{_I} (?:just |recently |finally )?moved (?:away |out )?(?:from|out of|away from) {_PROPER}")),
    ("works_at", "retract", re.compile(rf"\bI (?:no longer|don't|do not) work (?:at|for) {_PROPER}")),
    ("works_at", "retract", re.compile(rf"{_I} (?:just |recently |finally )?(?:quit|left|lost) my (?:job|position|role) (?:at|with) {_PROPER}")),
    ("works_at", "retract", re.compile(rf"{_I} (?:just |recently |finally )?(?:quit|left|resigned from) (?!my\b){_PROPER}")),
    ("works_at", "retract", re.compile(rf"\bI (?:was|got) (?:laid off|fired|let go) (?:from|by) {_PROPER}")),
    ("likes", "retract", re.compile(rf"\bI (?:no longer|don't|do not) (?:really )?(?:like|love|enjoy) {_PHRASE} any ?more")),
    ("likes", "retract", re.compile(rf"\bI no longer (?:really )?(?:like|love|enjoy) {_PHRASE}")),
    ("lives_in", "assert", re.compile(rf"\bI(?: now| still)? (?:live|am living|'m living|am based|'m based|reside) in {_PROPER}")),
    ("lives_in", "assert", re.compile(rf"{_I} (?:just |recently |finally )?(?:moved|relocated) (?:back )?to {_PROPER}")),
    ("lives_in", "assert", re.compile(rf"{_I} (?:just |recently |finally )?moved from {_CAP}(?:\s+{_CAP}){{0,3}} to {_PROPER}")),
    ("works_at", "assert", re.compile(rf"\bI(?: now| still)? (?:work|am working|'m working) (?:at|for) {_PROPER}")),
    ("works_at", "assert", re.compile(rf"{_I} (?:just |recently )?(?:started working at|started at|joined|got a job at|was hired by|got hired at|got hired by) {_PROPER}")),
    ("works_at", "assert", re.compile(rf"\bmy (?:new )?job at {_PROPER}")),
    ("studies_at", "assert", re.compile(rf"\bI(?:'m| am)? (?:now )?(?:studying|a student|study|enrolled) (?:\w+ )?(?:at|in) {_PROPER}")),
    ("dislikes", "assert", re.compile(rf"\bI (?:really )?(?:hate|dislike|can't stand|cannot stand|don't like|do not like) {_PHRASE}")),
    ("likes", "assert", re.compile(rf"\bI (?:really |absolutely |just )?(?:like|love|enjoy|adore) {_PHRASE}")),
    ("plans", "assert", re.compile(rf"\bI(?: am|'m) (?:planning|hoping|going|about) to {_PHRASE}")),
    ("plans", "assert", re.compile(rf"\bI(?: am|'m) planning {_PHRASE}")),
    ("plans", "assert", re.compile(rf"\bI plan to {_PHRASE}")),
    ("attended", "assert", re.compile(rf"{_I} (?:went to|attended|visited|took part in|participated in) {_PHRASE}")),
    ("has_relative", "assert", re.compile(rf"\b[Mm]y (?:{_RELATIVES}) {_PERSON}")),
    ("has_friend", "assert", re.compile(rf"\b[Mm]y (?:best |good |old |close )?friend {_PERSON}")),
]
# "I live in Potsdam, not Berlin": a correction in one sentence (assert the first, retract the second).
_NOT = [
    ("lives_in", re.compile(rf"\blive in (?:{_CAP}(?:\s+{_CAP}){{0,3}}),? (?:and )?not (?:in )?{_PROPER}")),
    ("works_at", re.compile(rf"\bwork (?:at|for) (?:{_CAP}(?:\s+{_CAP}){{0,3}}),? (?:and )?not (?:at |for )?{_PROPER}")),
]
# Third person, any entry kind: "Tomasz moved to Warsaw", "Ana no longer works at Fjord".
_STARTERS = r"(?:Then|And|But|So|Now|Also|Yesterday|Today|Tomorrow|Last|Next|When|After|Before|Since|The|My|Our|Your|His|Her|Their|This|That|Oh|Well|Yes|No|Actually|Big|News)"
_SUBJ = rf"(?!{_STARTERS}\b)(?P<subj>[A-Z][a-z\u00E0-\u00FF'\-]+(?:\s+[A-Z][a-z\u00E0-\u00FF'\-]+)?)"
_THIRD_PERSON: list[tuple[str, str, re.Pattern[str]]] = [
    ("lives_in", "retract", re.compile(rf"\b{_SUBJ} (?:no longer|doesn't|does not) live[s]? in {_PROPER}")),
    ("works_at", "retract", re.compile(rf"\b{_SUBJ} (?:no longer|doesn't|does not) work[s]? (?:at|for) {_PROPER}")),
    ("lives_in", "assert", re.compile(rf"\b{_SUBJ} (?:now )?(?:lives|moved|relocated) (?:in|to) {_PROPER}")),
    ("works_at", "assert", re.compile(rf"\b{_SUBJ} (?:now )?(?:works (?:at|for)|joined) {_PROPER}")),
]
_IDENTIFIER = re.compile(r"\b[A-Z]{2,5}-\d{3,}\b")
_LABELLED_ID = re.compile(
    r"\b(?:order|booking|ticket|confirmation|tracking|invoice|reservation|case|reference)"
    r"(?: number| no\.?| id| ref(?:erence)?)?\s*(?:is\s+)?[:#]?\s*(?P<id>(?=[A-Z0-9\-]*\d)[A-Z0-9][A-Z0-9\-]{3,})\b",
    re.I,
)
_CAP_WORD = re.compile(r"\b[A-Z][a-z\u00E0-\u00FF'\-]+")
_LEADING = re.compile(r"^(?:a|an|the|to|my|our|some)\s+", re.I)
_TRAILING = re.compile(r"(?:\s+(?:too|now|again|anymore|any more|so much|a lot|lately|already|as well|though|tho|right now))+$", re.I)
# Objects that name nothing: "I love it", "I love that you...", "I like how..."
_VAGUE = re.compile(
    r"^(?:it|that|this|these|those|them|him|her|you|your|yours|how|what|when|where|why|which|who|"
    r"way|the way|seeing|hearing|being able|spending time|doing that|having you|it when|so|too|very|much|"
    r"is|are|was|were|be|few|some|one|ones|lot|lots)\b",
    re.I,
)
# A phrase object ends where the next clause starts ("a market to show off my pottery, ..." is cut
# by the comma already; "a workshop and met people" is cut here).
_CLAUSE = re.compile(
    r"\s+(?:-|–|—|and (?:it|I|we|they|he|she|met|was|had|got|saw|then)|because|but|so that|so|which|when|where|"
    r"who|while|since|if|to simply|with my|lately|this (?:morning|afternoon|evening))\b.*$",
    re.I,
)
_MAX_OBJECT_WORDS = 8  # longer phrases are clauses, not things; precision over recall
# Relations and mentions hold regardless of a time phrase in the same sentence.
_UNTIMED = {"has_relative", "has_friend", "mentions", "mentions_identifier"}
_NOT_PEOPLE = {"I", "The", "My", "And", "But", "So", "Oh", "Hey", "Hi", "Yes", "No", "Thanks", "Wow"}
_SENTENCE = re.compile(r"[^.!?]+[.!?]*")
_SPEAKING = ("message", "correction", "observation")


def propose(entry: dict[str, Any], resolver: Resolver | None = None) -> Iterator[Proposal]:
    """Proposals for one ledger entry (a dict with the ledger's columns)."""
    base = dict(
        source_entry_id=entry["entry_id"],
        visibility=tuple(entry["visibility"] or ()),
        confidence=min(float(entry["confidence"]), 0.9),  # a regex is never surer than its source
    )
    if entry["kind"] == "derived_claim":
        yield from _from_derived(entry, base)
        return
    text, actor = entry["content"], entry["actor"]
    seen: set[tuple[str, str, str]] = set()
    taken: list[tuple[int, int]] = []
    speaker = actor if entry["kind"] in _SPEAKING and _is_person(actor) else None
    patterns: list[tuple[str, str, re.Pattern[str], str | None]] = []
    if speaker:
        patterns += [(p, pol, rx, speaker) for p, pol, rx in _FIRST_PERSON]
    patterns += [(p, pol, rx, None) for p, pol, rx in _THIRD_PERSON]
    for predicate, polarity, pattern, subject in patterns:
        for m in pattern.finditer(text):
            o_start, o_end = m.span("obj")
            if any(o_start < e and s < o_end for s, e in taken):
                continue  # this object was already read by an earlier (retracting) pattern
            who = subject or m.group("subj")
            if subject is None and (who in _NOT_PEOPLE or (speaker and who == speaker)):
                continue
            p = _proposal(entry, base, text, m, who, predicate, polarity)
            if p and (p.subject, p.predicate, p.object) not in seen:
                seen.add((p.subject, p.predicate, p.object))
                taken.append((o_start, o_end))
                yield p
    if speaker:
        for predicate, pattern in _NOT:
            for m in pattern.finditer(text):
                p = _proposal(entry, base, text, m, speaker, predicate, "retract")
                if p and (p.subject, p.predicate, p.object) not in seen:
                    seen.add((p.subject, p.predicate, p.object))
                    yield p
    yield from _identifiers(entry, base, text, actor)
    if resolver is not None:
        yield from _mentions(entry, base, text, actor, resolver)


def _is_person(actor: str | None) -> bool:
    return bool(actor) and "@" not in actor and not actor.endswith("-bot")


def _proposal(entry, base, text: str, m: re.Match[str], subject: str, predicate: str, polarity: str) -> Proposal | None:
    obj_start, obj_end = m.span("obj")
    return _proposal_at(entry, base, text, m.start(), m.end(), obj_start, obj_end, subject, predicate, polarity)


def _proposal_at(
    entry, base, text: str, start: int, end: int, obj_start: int, obj_end: int, subject: str, predicate: str, polarity: str,
    *, max_words: int = _MAX_OBJECT_WORDS, cut_clauses: bool = True, splice_time: bool = False,
) -> Proposal | None:
    """The proposal for a statement at ``text[start:end]`` whose object is ``text[obj_start:obj_end]``
    (cleaned here; None when nothing is left of it): the quote runs from the statement's start to
    the object's end, stretched over the sentence's time phrase, which sets the valid time.
    Shared with the clause extractor (clauses.py), so that both quote and time alike; it cuts its
    objects at clause ends itself (``cut_clauses=False``: "found old letters with my early
    poems" keeps what the letters hold). With ``splice_time``, an object that goes on after the time
    phrase inside it keeps both sides ("a match on Sunday against the league leaders" -> "match
    against the league leaders"; the provenance validator finds it in the quote with that phrase taken out)."""
    obj = text[obj_start:obj_end]
    future = ONTOLOGY[predicate].future_allowed
    # The time phrase of the sentence the match is in, if any ("... Berlin last month!").
    sent_start, sent_end = _sentence_span(text, start)
    tp = None if predicate in _UNTIMED else timephrase.find(text, sent_start, sent_end)
    dated: tuple[Any, ...] = ()  # (the phrase's valid time or None), once resolved: it is resolved once, and only when needed
    if tp and obj_start <= tp.start() < obj_end:  # a phrase object swallowed it: "a trip to Kyoto next March"
        after = text[tp.end() : obj_end].strip()
        obj = text[obj_start : tp.start()]
        if splice_time and after:
            dated = (_dating(tp, entry, future),)
            if dated[0] is not None:
                obj = f"{obj.rstrip()} {after}"
    if cut_clauses:  # the clause extractor has cut its object at the clause's end already
        obj = _CLAUSE.sub("", obj)
    obj = _TRAILING.sub("", _LEADING.sub("", obj.strip(" \t-–—'\""))).strip()
    if obj.endswith("'s"):
        obj = obj[:-2]
    if len(obj) < 2 or _VAGUE.match(obj) or len(obj.split()) > max_words or timephrase.find(obj):
        return None
    # The quote ends where the fact does: at the object (or the time phrase, if later).
    pos = text.find(obj, start, end)
    core_end = pos + len(obj) if pos >= 0 else end
    quote_start, quote_end = start, core_end
    valid_at, phrase = entry["valid_at"], None
    resolved = dated[0] if dated else _dating(tp, entry, future)
    if resolved is not None:
        valid_at, phrase = resolved, tp.group(0)
        quote_start, quote_end = min(quote_start, tp.start()), max(quote_end, tp.end())
    return Proposal(
        subject=subject,
        predicate=predicate,
        object=obj,
        polarity=polarity,
        quote=text[quote_start:quote_end],
        valid_at=valid_at,
        time_phrase=phrase,
        **base,
    )


def _dating(tp: re.Match[str] | None, entry, future: bool) -> Any:
    """The valid time the time phrase ``tp`` gives a fact of ``entry``: None when there is none, it
    does not resolve, or it is later than the entry for a fact that may not be in the future."""
    if tp is None:
        return None
    resolved = timephrase.resolve(tp.group(0), entry["valid_at"], past=not future)
    return resolved if resolved is not None and (future or resolved <= entry["valid_at"]) else None


def _sentence_span(text: str, pos: int) -> tuple[int, int]:
    for s in _SENTENCE.finditer(text):
        if s.start() <= pos < s.end():
            return s.start(), s.end()
    return 0, len(text)


def _identifiers(entry, base, text: str, actor: str | None) -> Iterator[Proposal]:
    subject = actor or entry["source_ref"] or entry["entry_id"]
    found: dict[str, str] = {}
    for m in _IDENTIFIER.finditer(text):
        found.setdefault(m.group(0), m.group(0))
    for m in _LABELLED_ID.finditer(text):
        found.setdefault(m.group("id"), m.group(0))
    for ident, quote in found.items():
        yield Proposal(subject=subject, predicate="mentions_identifier", object=ident, quote=quote, valid_at=entry["valid_at"], **base)


def _mentions(entry, base, text: str, actor: str | None, resolver: Resolver) -> Iterator[Proposal]:
    """Known people (speakers of this scope and their aliases) named in the entry."""
    scope = entry["scope"]
    own = resolver.entity_id(scope, actor) if actor else None
    subject = actor or entry["source_ref"] or entry["entry_id"]
    seen: set[str] = set()
    words = list(_CAP_WORD.finditer(text))
    for i, w in enumerate(words):
        # A two-word name ("Ana Lima") when the next word follows directly, else the word alone.
        nxt = words[i + 1] if i + 1 < len(words) and text[w.end() : words[i + 1].start()] == " " else None
        for name in ([f"{w.group(0)} {nxt.group(0)}"] if nxt else []) + [w.group(0)]:
            if name in _NOT_PEOPLE or not resolver.known(scope, name):
                continue
            eid = resolver.entity_id(scope, name)
            if eid != own and eid not in seen:
                seen.add(eid)
                yield Proposal(subject=subject, predicate="mentions", object=name, quote=name, valid_at=entry["valid_at"], **base)
            break


def _from_derived(entry: dict[str, Any], base: dict[str, Any]) -> Iterator[Proposal]:
    # A derived entry states its claim in its attributes; the whole content is the quote.
    attrs = json.loads(entry["attributes"] or "{}")
    if {"subject", "predicate", "object"} <= attrs.keys():
        yield Proposal(
            subject=str(attrs["subject"]),
            predicate=str(attrs["predicate"]),
            object=str(attrs["object"]),
            quote=entry["content"],
            valid_at=entry["valid_at"],
            **{**base, "confidence": float(entry["confidence"])},
        )
