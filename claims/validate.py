"""Deterministic validators: nothing reaches the claims table without passing all of them.

- schema: types and required fields (pydantic, when the proposal is built: ``claims.model.Proposal``);
- ontology: the predicate is known, and subject and object have its argument types;
- provenance: the proposal names its source entry, its quote occurs there verbatim (in the
  content, or in the caption of a picture the entry shares), and the quote
  supports the fact: the object (and any time phrase) occurs in the quote (the object may skip
  that time phrase), the subject is the
  speaker, named in the source, the "you" of a two-party session or the speaker's own ("Ana's
  son" where Ana says "my son") or, for an "it" or "they" in the quote, named in the speaker's
  earlier turn of the session that ``subject_entry_id`` points to or in the caption of the
  picture that turn, or the source, shares (what the picture shows); and whoever a report says
  said it (``asserted_by``) is named. An answer to the other participant's question in the turn
  just before (``question_entry_id``) keeps the question's verbatim words (``question_quote``),
  and its object may be the question's words followed by the answer's ("swim" + "twice a week").
  A hallucinated quote, an over-inferred object or an unnamed reporter fails here;
- policy: the claim's visibility is never broader than its source's (nor than its subject entry's
  or question's);
- temporal: the valid time is plausible (1900..2200), matches its time phrase as resolved against
  the source's valid time, and is not later than the source unless the predicate is a plan.

Each returns None when the proposal passes, or a reason. The first failing validator is the one
recorded.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Callable

from claims import timephrase
from claims.model import Proposal
from claims.ontology import ONTOLOGY, object_type_error, subject_type_error
from ledger.schema import PUBLIC, image_caption, said_in

if TYPE_CHECKING:
    from claims.resolve import Resolver

# (proposal, its source entry, entity resolution, the earlier entry naming its subject if it names
# one, the turn just before the source if the proposal answers its question)
Validator = Callable[[Proposal, "dict[str, Any] | None", "Resolver | None", "dict[str, Any] | None", "dict[str, Any] | None"], "str | None"]

_EARLIEST = datetime(1900, 1, 1, tzinfo=timezone.utc)
_LATEST = datetime(2200, 1, 1, tzinfo=timezone.utc)


def _fold(s: str) -> str:
    return " ".join(s.split()).casefold()


def ontology(
    p: Proposal, source: dict[str, Any] | None, resolver: Resolver | None = None, antecedent: dict[str, Any] | None = None, question: dict[str, Any] | None = None
) -> str | None:
    pred = ONTOLOGY.get(p.predicate)
    if pred is None:
        return f"unknown predicate {p.predicate!r} (known: {', '.join(sorted(ONTOLOGY))})"
    return subject_type_error(pred, p.subject) or object_type_error(pred, p.object)


def provenance(
    p: Proposal, source: dict[str, Any] | None, resolver: Resolver | None = None, antecedent: dict[str, Any] | None = None, question: dict[str, Any] | None = None
) -> str | None:
    if source is None:
        return f"source entry {p.source_entry_id} is not in the ledger"
    if not said_in(p.quote, source["content"], source.get("attributes")):
        return f"quote {p.quote[:60]!r} does not occur verbatim in entry {p.source_entry_id} (its content or its picture's caption)"
    quote = _fold(p.quote)
    person_object = ONTOLOGY[p.predicate].object_type == "person" if p.predicate in ONTOLOGY else False
    # The object may skip the claim's own time phrase ("played a match on Sunday against the
    # league leaders" -> "match against the league leaders"): the phrase sets the valid time, it is no part of the thing.
    obj = _fold(p.object)
    in_quote = obj in quote or (p.time_phrase is not None and obj in _fold(p.quote.replace(p.time_phrase, " ", 1)))
    if p.question_entry_id is not None or p.question_quote is not None:
        if reason := _question_failure(p, source, question):
            return reason
        in_quote = in_quote or _asked_then_answered(obj, _fold(p.question_quote or ""), quote)
    if not in_quote and not (person_object and _person_supported(p.object, source, resolver, p.quote)):
        # A person object may be the "you" of a two-party session, as a subject may.
        return f"object {p.object[:60]!r} is not supported: it does not occur in the quote {p.quote[:60]!r}"
    if p.time_phrase and _fold(p.time_phrase) not in quote:
        return f"time phrase {p.time_phrase!r} does not occur in the quote {p.quote[:60]!r}"
    if p.subject_entry_id is not None:
        if reason := _antecedent_failure(p, source, resolver, antecedent):
            return reason
    elif not _person_supported(p.subject, source, resolver, p.quote) and not _owned_supported(p.subject, source, resolver) and not (
        _shown(p.subject, source) and _STANDS_FOR.search(quote)
    ):
        return f"subject {p.subject!r} is neither the source's speaker ({source.get('actor')!r}) nor named in it"
    if p.asserted_by and not _named(p.asserted_by, source):
        return f"asserted_by {p.asserted_by!r} is not named in entry {p.source_entry_id}: a report names who said it"
    return None


_STANDS_FOR = re.compile(r"(?<!\w)(?:it|they|them|this|these|those)(?!\w)")


def _antecedent_failure(p: Proposal, source: dict[str, Any], resolver: Resolver | None, antecedent: dict[str, Any] | None) -> str | None:
    """Why the earlier entry a claim takes its subject from does not support it: it must be an
    earlier turn of the same speaker in the same session that names the subject (or says "my
    <thing>" for "<speaker>'s <thing>"), and the quote must say the pronoun that stands for it."""
    if antecedent is None or antecedent.get("entry_id") != p.subject_entry_id:
        return f"subject entry {p.subject_entry_id} is not an entry read before the source"
    same = all(antecedent.get(k) == source.get(k) for k in ("scope", "session_id", "actor"))
    if not same or not source.get("session_id") or antecedent.get("seq", 0) >= source.get("seq", 0):
        return f"subject entry {p.subject_entry_id} is not an earlier turn of the same speaker and session"
    if not _STANDS_FOR.search(_fold(p.quote)):
        return f"subject {p.subject!r} is taken from entry {p.subject_entry_id}, but the quote says no pronoun for it"
    if not _named(p.subject, antecedent) and not _owned_supported(p.subject, antecedent, resolver) and not _shown(p.subject, antecedent):
        return f"subject {p.subject!r} is not named in entry {p.subject_entry_id}"
    return None


def _question_failure(p: Proposal, source: dict[str, Any], question: dict[str, Any] | None) -> str | None:
    """Why the question a claim answers does not support it: it must be the turn just before the
    source in its session (the pass hands over only that one), by someone else, and hold the
    quoted question verbatim."""
    if p.question_entry_id is None or p.question_quote is None:
        return "a question's entry and its quote come together"
    if question is None or question.get("entry_id") != p.question_entry_id:
        return f"question entry {p.question_entry_id} is not the turn just before the source in its session"
    same = all(question.get(k) == source.get(k) for k in ("scope", "session_id"))
    if not same or not source.get("session_id") or question.get("seq", 0) >= source.get("seq", 0) or question.get("actor") == source.get("actor"):
        return f"question entry {p.question_entry_id} is not another participant's earlier turn of the same session"
    if p.question_quote not in question["content"] or not p.question_quote.rstrip().endswith("?"):
        return f"question quote {p.question_quote[:60]!r} is not a question said verbatim in entry {p.question_entry_id}"
    return None


def _asked_then_answered(obj: str, asked: str, answered: str) -> bool:
    """Whether the object is words of the question followed by words of the answer, each whole
    words of its own quote ("swim" + "twice a week" for "How often do you swim?" - "Twice a week.")."""
    words = obj.split(" ")
    return any(_has_words(asked, " ".join(words[:k])) and _has_words(answered, " ".join(words[k:])) for k in range(1, len(words)))


def _has_words(text: str, part: str) -> bool:
    # ``part`` as whole words of ``text`` ("Ana" in "my sister Ana", not "an" in "plans").
    return re.search(rf"(?<!\w){re.escape(part)}(?!\w)", text) is not None


def _named(name: str, source: dict[str, Any]) -> bool:
    return _has_words(_fold(source["content"]), _fold(name))


def _shown(name: str, source: dict[str, Any]) -> bool:
    """Whether the caption of the picture ``source`` shares names ``name``: what the picture shows
    is what a pronoun of its turn (and of its speaker's next) may stand for."""
    caption = image_caption(source.get("attributes"))
    return caption is not None and _has_words(_fold(caption), _fold(name))


# A subject the speaker owns: "Ana's son" for "my son", "Ana's old area" for "our old area".
_OWNED = re.compile(r"^(?P<owner>[^'’]+)['’]s (?P<thing>[^'’]+)$")


def _owned_supported(name: str, source: dict[str, Any], resolver: Resolver | None) -> bool:
    """Whether ``name`` is "<speaker>'s <thing>" and the source says "my <thing>" or "our <thing>":
    the speaker's son is named by the speaker's "my son", and by no one else's."""
    m = _OWNED.match(name)
    actor = source.get("actor")
    if m is None or not actor:
        return False
    owner = m.group("owner")
    if _fold(owner) != _fold(actor) and not (resolver is not None and resolver.entity_id(source["scope"], owner) == resolver.entity_id(source["scope"], actor)):
        return False
    return re.search(rf"(?<!\w)(?:my|our)\s+{re.escape(_fold(m.group('thing')))}(?!\w)", _fold(source["content"])) is not None


def _person_supported(name: str, source: dict[str, Any], resolver: Resolver | None, quote: str) -> bool:
    if _named(name, source):
        return True
    own = [v for v in (source.get("actor"), source.get("source_ref"), source.get("entry_id")) if v]
    if any(_fold(name) == _fold(v) for v in own):
        return True
    if resolver is not None and source.get("actor"):
        scope, actor = source["scope"], source["actor"]
        if resolver.entity_id(scope, name) == resolver.entity_id(scope, actor):
            return True  # "Tom" for a speaker written "Tomasz"
        listener = resolver.other_participant(scope, source.get("session_id"), actor)
        if listener is not None and re.search(r"(?<!\w)you(?:r|rs|rself)?(?!\w)", _fold(quote)):
            # "you" (or "your": "Your drive is awesome") in the quote, two people talking
            return resolver.entity_id(scope, name) == resolver.entity_id(scope, listener)
    return False


def policy(
    p: Proposal, source: dict[str, Any] | None, resolver: Resolver | None = None, antecedent: dict[str, Any] | None = None, question: dict[str, Any] | None = None
) -> str | None:
    src = set(source["visibility"] or ()) if source else set()
    if not src:
        return "source entry has no visibility: nothing may be derived from it"
    # An "it" whose subject an earlier entry names, or an answer, derives from both: neither may be narrower.
    earlier = (("subject entry's", antecedent), ("question's", question))
    for whose, vis in (("source's", src), *((w, set(e["visibility"] or ())) for w, e in earlier if e is not None)):
        if PUBLIC in vis:
            continue
        if set(p.visibility) - vis:
            return f"visibility {sorted(p.visibility)} is broader than the {whose} {sorted(vis)}"
    return None


def temporal(
    p: Proposal, source: dict[str, Any] | None, resolver: Resolver | None = None, antecedent: dict[str, Any] | None = None, question: dict[str, Any] | None = None
) -> str | None:
    if not (_EARLIEST <= p.valid_at < _LATEST):
        return f"valid time {p.valid_at.isoformat()} is outside 1900..2200"
    if source is None:
        return None
    said_at: datetime = source["valid_at"]
    pred = ONTOLOGY.get(p.predicate)
    future = bool(pred and pred.future_allowed)
    if p.time_phrase:
        resolved = timephrase.resolve(p.time_phrase, said_at, past=not future)
        if resolved is not None and resolved.date() != p.valid_at.date():
            return (
                f"valid time {p.valid_at.date()} does not match {p.time_phrase!r} said on {said_at.date()} "
                f"(resolves to {resolved.date()})"
            )
    if not future and p.valid_at > said_at:
        return (
            f"valid time {p.valid_at.isoformat()} is later than its source's ({said_at.isoformat()}); "
            f"only plans may lie in the future, not {p.predicate!r}"
        )
    return None


VALIDATORS: list[tuple[str, Validator]] = [
    ("ontology", ontology),
    ("provenance", provenance),
    ("policy", policy),
    ("temporal", temporal),
]
VALIDATOR_NAMES = ("schema", *(name for name, _ in VALIDATORS))


def first_failure(
    p: Proposal,
    source: dict[str, Any] | None,
    resolver: Resolver | None = None,
    antecedent: dict[str, Any] | None = None,
    question: dict[str, Any] | None = None,
) -> tuple[str, str] | None:
    """The first validator ``p`` fails, as (name, reason); ``antecedent``: the entry named by
    ``p.subject_entry_id``, when the pass has read it; ``question``: the turn just before the
    source in its session, when ``p.question_entry_id`` names it."""
    for name, check in VALIDATORS:
        reason = check(p, source, resolver, antecedent, question)
        if reason:
            return name, reason
    return None
