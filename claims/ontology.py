"""What a claim may say: known predicates, their cardinality and their argument types.

Functional predicates hold one value at a time (a newer claim supersedes an older one in the
state fold); multi-valued predicates accumulate. A claim's polarity is "assert" or "retract":
a retraction closes the matching claim (same subject, predicate and object) from its valid time.

Argument types are checked deterministically on the object string (``object_type_error``):
a name must look like a name, an identifier like an identifier, a number parse as one. They are
deliberately shallow: the type checks what a string *can* be, the provenance validator checks
that the source supports it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

Cardinality = Literal["functional", "multi"]
POLARITIES = ("assert", "retract")


@dataclass(frozen=True)
class Predicate:
    name: str
    cardinality: Cardinality
    subject_type: str  # "person" or "any"
    object_type: str  # "place", "organization", "person", "text", "identifier", "number"
    description: str
    # Plans and scheduled events may lie after the entry that states them; facts may not.
    future_allowed: bool = False
    # Computed from other claims (dreaming's graph analytics), not said by anyone: the context
    # shows it only when a question asks about importance or groups (query/intent.py).
    derived: bool = False
    # The context compiler's graph route walks a relation to reach what the other one said
    # ("where does Elena's cousin work?"). Not one that holds between any two people who talk
    # (a name mentioned, encouragement said to the listener): in a conversation everyone is one
    # such hop from everyone, and walking them floods every question with the other speaker's turns.
    walked: bool = True


ONTOLOGY: dict[str, Predicate] = {
    p.name: p
    for p in [
        Predicate("lives_in", "functional", "person", "place", "where the subject lives"),
        Predicate("works_at", "functional", "person", "organization", "the subject's employer"),
        Predicate("studies_at", "functional", "person", "organization", "the school or university the subject attends"),
        Predicate("likes", "multi", "person", "text", "something the subject likes"),
        Predicate("dislikes", "multi", "person", "text", "something the subject dislikes"),
        Predicate("plans", "multi", "person", "text", "a plan or intended event", future_allowed=True),
        Predicate("attended", "multi", "person", "text", "an event or place the subject went to"),
        # What one joined and so belongs to (rules 0.6.2 on: "joined a chess club", "joined the
        # local choir"; it was `attended`, which says a visit, not a membership that holds on).
        Predicate("member_of", "multi", "person", "text", "a group, club, team or community the subject joined or belongs to"),
        Predicate("has_relative", "multi", "person", "person", "a family member (relation in the quote)"),
        Predicate("has_friend", "multi", "person", "person", "a friend of the subject"),
        # Multi: "from Sweden" and "grew up in Malmo" are both true; a move changes lives_in, not this.
        Predicate("comes_from", "multi", "person", "place", "where the subject comes from (home country or town)"),
        # From the clause extractor (rules 0.3.0) on: what people say they do, make and feel.
        Predicate("studies", "multi", "person", "text", "a subject or skill the subject studies or learns"),
        Predicate("has_partner", "multi", "person", "person", "the subject's partner or spouse"),
        Predicate("has_pet", "multi", "person", "text", "a pet of the subject (its name when given)"),
        Predicate("started", "multi", "person", "text", "something the subject started or took up"),
        Predicate("finished", "multi", "person", "text", "something the subject finished or stopped"),
        Predicate("created", "multi", "person", "text", "something the subject made, wrote, painted or built"),
        Predicate("received", "multi", "person", "text", "something the subject got, won or bought"),
        Predicate("practices", "multi", "person", "text", "an activity the subject does (plays, volunteers, teaches)"),
        Predicate("watched", "multi", "person", "text", "something the subject watched, read or listened to"),
        Predicate("met", "multi", "person", "text", "someone the subject met or spent time with"),
        Predicate("feels", "multi", "person", "text", "how the subject feels, and about what"),
        Predicate("encourages", "multi", "person", "person", "someone the subject encourages or backs (said to them)", walked=False),
        Predicate("appreciates", "multi", "person", "text", "something the subject is grateful for (help, kind words, a gift)"),
        Predicate("values", "multi", "person", "text", "something the subject holds important"),
        Predicate("has", "multi", "person", "text", "something or someone the subject has or had (a thing, a mentor, an experience)"),
        Predicate("identity", "multi", "person", "text", "what the subject says they are (a role, a trait)"),
        Predicate("goal", "multi", "person", "text", "something the subject wants or aims to do", future_allowed=True),
        # Said with a hedge or under a condition ("I might move to Berlin"): that the subject
        # considers it is a fact, the thing itself is not; extracted with low confidence.
        Predicate("considers", "multi", "person", "text", "something the subject considers (hedged or hypothetical)", future_allowed=True),
        # What a thing, pet or person other than the speaker is said to be or be like, its subject
        # named in the turn ("Brief Encounter" for "It's a great film about friendship") or owned by
        # the speaker ("Ana's hamster" for "my hamster ... he's a handful").
        Predicate("described_as", "multi", "any", "text", "what a thing, pet or person the speaker names is said to be or be like"),
        # What a thing is made with or from (rules 0.6.1 on): "a pie made with apples and oat
        # milk", "My soup is made from lentils", "I made it with oat milk" after the thing "it" is.
        Predicate("made_with", "multi", "any", "text", "what a thing is made with or from (ingredients, materials)"),
        # A picture the subject shared with a turn, as its caption or the subject's own words
        # describe it (rules 0.6.0 on): what was shown is part of what was said ("a painting of a
        # lighthouse at dusk").
        Predicate("shared_photo", "multi", "person", "text", "a picture the subject shared, as its caption or their own words describe it"),
        # Open: a first-person statement of something done that no typed predicate fits.
        Predicate("activity", "multi", "person", "text", "something the subject did (no typed predicate fits)"),
        Predicate("mentions", "multi", "any", "person", "a known person named in the entry", walked=False),
        Predicate("mentions_identifier", "multi", "any", "identifier", "an order, booking or ticket id"),
        Predicate("centrality", "functional", "person", "number", "PageRank in the interaction graph (derived)", derived=True),
        Predicate("community", "functional", "person", "text", "the interaction community the subject belongs to (derived)", derived=True),
    ]
}

# A name: one to five words, the first capitalised ("Berlin", "Helio Labs", "University of Porto").
_NAME = re.compile(r"^[A-Z\u00C0-\u024F][\w'&.\-]*(?:\s+[\w'&.\-]+){0,5}$")
_PERSON = re.compile(r"^[A-Z\u00C0-\u024F][\w'\-]*(?:\s+[A-Z\u00C0-\u024F][\w'\-]*){0,3}$")
_IDENTIFIER = re.compile(r"^(?=.*\d)[A-Za-z0-9][A-Za-z0-9_\-/#.]{2,63}$")
_PRONOUNS = {"i", "me", "my", "you", "he", "she", "it", "we", "they", "him", "her", "them", "someone", "somebody"}


def object_type_error(predicate: Predicate, obj: str) -> str | None:
    """Why ``obj`` cannot be an object of ``predicate``, or None."""
    t = predicate.object_type
    if t in ("place", "organization") and not _NAME.match(obj):
        return f"{predicate.name} needs a {t} name (capitalised, at most six words), got {obj!r}"
    if t == "person" and (not _PERSON.match(obj) or obj.casefold() in _PRONOUNS):
        return f"{predicate.name} needs a person's name (capitalised words), got {obj!r}"
    if t == "identifier" and not _IDENTIFIER.match(obj):
        return f"{predicate.name} needs an identifier (3-64 letters/digits with at least one digit), got {obj!r}"
    if t == "number":
        try:
            float(obj)
        except ValueError:
            return f"{predicate.name} needs a number, got {obj!r}"
    if t == "text" and (len(obj) > 200 or obj.casefold() in _PRONOUNS):
        return f"{predicate.name} needs a short phrase (at most 200 characters, not a bare pronoun), got {obj[:60]!r}"
    return None


def subject_type_error(predicate: Predicate, subject: str) -> str | None:
    if predicate.subject_type == "person" and subject.casefold() in _PRONOUNS:
        return f"subject {subject!r} is a pronoun: name the person (the speaker's name for 'I')"
    return None
