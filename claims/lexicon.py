"""The clause extractor's lexicon (claims/lexicon.toml), read and checked once: every frame
names a predicate of the ontology, every list is a list of words. A mistake in the file is an
error naming the file and the field, at load time, never a silently missing pattern."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from claims.ontology import ONTOLOGY
from memc.toml import TomlError, read_toml

LEXICON_FILE = Path(__file__).with_name("lexicon.toml")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Frame(_Strict):
    predicate: str
    object: Literal["name", "phrase"]
    phrases: tuple[str, ...] = Field(min_length=1)

    @field_validator("predicate")
    @classmethod
    def _known(cls, v: str) -> str:
        if v not in ONTOLOGY:
            raise ValueError(f"unknown predicate {v!r}: declare it in claims/ontology.py first")
        return v


class Hedges(_Strict):
    before_verb: tuple[str, ...]
    clause: tuple[str, ...]


class Words(_Strict):
    words: tuple[str, ...] = Field(min_length=1)


class Encouraging(Words):
    # Imperatives that back whoever they are said to ("keep it up", "hang in there"): they need
    # not say "you"; the extractor keeps one only where the sentence says "you" or the entry
    # names the listener (claims/extractors/clauses.py, _urging).
    urging: tuple[str, ...] = Field(min_length=1)

    @field_validator("words")
    @classmethod
    def _said_to_someone(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        # The claim's object is the listener, supported by "you" in the quote (claims/validate.py).
        if bad := [w for w in v if not ({"you", "your", "you're", "you'll", "you've"} & set(w.lower().split()))]:
            raise ValueError(f"{bad[0]!r} does not say 'you': whom it backs would not be in the quote")
        return v


class Relations(_Strict):
    has_relative: tuple[str, ...]
    has_friend: tuple[str, ...]
    has_partner: tuple[str, ...]
    has_pet: tuple[str, ...]


class Mine(_Strict):
    likes: tuple[str, ...] = Field(min_length=1)
    values: tuple[str, ...] = Field(min_length=1)


class Owned(_Strict):
    # Who "he"/"she" may be among the speaker's relatives, and nouns after "my" that own nothing
    # (claims/extractors/clauses.py, _owned_things).
    he: tuple[str, ...] = Field(min_length=1)
    she: tuple[str, ...] = Field(min_length=1)
    not_owned: tuple[str, ...] = Field(min_length=1)
    # What "on/at/with my own ..." says the speaker has ("on my own radio show"): kinds of thing
    # that are had when a doing takes place in them (_of_ones_own)
    of_ones_own: tuple[str, ...] = Field(min_length=1)


class Answers(_Strict):
    # Replies to the other participant's question (claims/extractors/clauses.py, _answers): the
    # openers of each kind of question, and the words a reply's frequency or duration is made of.
    how_often: tuple[str, ...] = Field(min_length=1)
    often: tuple[str, ...] = Field(min_length=1)
    qualifiers: tuple[str, ...] = Field(min_length=1)
    counts: tuple[str, ...] = Field(min_length=1)
    periods: tuple[str, ...] = Field(min_length=1)
    every: tuple[str, ...] = Field(min_length=1)
    how_long: tuple[str, ...] = Field(min_length=1)
    durations: tuple[str, ...] = Field(min_length=1)
    plans: tuple[str, ...] = Field(min_length=1)
    doings: tuple[str, ...] = Field(min_length=1)
    what: tuple[str, ...] = Field(min_length=1)


class Joined(_Strict):
    # "joined <Name>": an employer (works_at) when the name ends with one of these words ("Acme
    # Robotics", "Helio Labs"), else a group joined (member_of) (clauses._joined_frame).
    employers: tuple[str, ...] = Field(min_length=1)


class Captions(_Strict):
    # A picture shared with a turn (clauses._shared_picture): the leads its caption's object drops.
    leads: tuple[str, ...] = Field(min_length=1)
    # The speaker's words that show it, and the names of a picture before what it shows.
    showing: tuple[str, ...] = Field(min_length=1)
    pictures: tuple[str, ...] = Field(min_length=1)
    # What the picture shows first, for a pronoun (clauses._picture_thing): a holder before "of"
    # gives way to what it holds; a picture of people or of a pet shows no thing.
    holders: tuple[str, ...] = Field(min_length=1)
    people: tuple[str, ...] = Field(min_length=1)


class Dishes(_Strict):
    # What a dish is said to come with is what it is made with (clauses._dish_parts): the words
    # (or the last words) of a subject that name a dish.
    words: tuple[str, ...] = Field(min_length=1)


class Lexicon(_Strict):
    version: str = Field(pattern=r"^\d+\.\d+\.\d+$")
    frame: tuple[Frame, ...] = Field(min_length=1)
    hedges: Hedges
    negations: Words
    reporting: Words
    feelings: Words
    praise: Words
    mine: Mine
    encouraging: Encouraging
    owned: Owned
    relations: Relations
    answers: Answers
    captions: Captions
    joined: Joined
    dishes: Dishes


class LexiconError(ValueError):
    """The lexicon file is malformed; the message names the file and the field."""


def read_lexicon(path: Path = LEXICON_FILE) -> Lexicon:
    try:
        data = read_toml(path)
    except TomlError as exc:
        raise LexiconError(str(exc)) from None
    try:
        return Lexicon.model_validate(data)
    except ValidationError as exc:
        where = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise LexiconError(f"{path}: {where}") from None


@functools.cache
def lexicon() -> Lexicon:
    return read_lexicon()
