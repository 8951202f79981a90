"""A claim: one typed statement traced to the verbatim quote in one ledger entry (and, for an "it"
or "they", to the earlier entry of the same speaker that names what it stands for; for an answer,
to the question the other participant asked in the turn just before)."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Literal

import pyarrow as pa
from pydantic import BaseModel, ConfigDict, Field, field_validator

from memc.ids import content_id

TS = pa.timestamp("us", tz="UTC")

CLAIM_SCHEMA = pa.schema(
    [
        pa.field("claim_id", pa.string(), nullable=False),
        pa.field("extractor", pa.string(), nullable=False),
        pa.field("extractor_version", pa.string(), nullable=False),
        pa.field("scope", pa.string(), nullable=False),
        pa.field("subject", pa.string(), nullable=False),
        pa.field("subject_id", pa.string(), nullable=False),
        pa.field("predicate", pa.string(), nullable=False),
        pa.field("object", pa.string(), nullable=False),
        pa.field("cardinality", pa.string(), nullable=False),
        pa.field("valid_at", TS, nullable=False),
        pa.field("recorded_at", TS, nullable=False),
        pa.field("source_entry_id", pa.string(), nullable=False),
        pa.field("source_seq", pa.int64(), nullable=False),
        pa.field("source_ref", pa.string()),
        pa.field("quote", pa.string(), nullable=False),
        pa.field("visibility", pa.list_(pa.string()), nullable=False),
        pa.field("confidence", pa.float64(), nullable=False),
        # "assert", or "retract": closes the matching (subject_id, predicate, object) claim
        # from this claim's valid time ("I no longer live in X", a correction entry).
        pa.field("polarity", pa.string(), nullable=False),
        # The relative phrase the valid time was resolved from ("last month"), if any.
        pa.field("time_phrase", pa.string()),
        # The object's resolved entity id when the object is a person (has_relative, mentions...).
        pa.field("object_id", pa.string()),
        # Reported speech ("Jonas says Mira teaches at the art school"): who is reported to have
        # said it. Null when the source's author states it.
        pa.field("asserted_by", pa.string()),
        # The entity who asserted the claim: asserted_by's, or the source author's when the author
        # states it. The fold ranks a subject's own word (asserted_by_id = subject_id) above a report.
        pa.field("asserted_by_id", pa.string()),
        # The entry that names the subject when the source only says "it" or "they": the speaker's
        # earlier turn in the same session ("I completed my first wooden canoe!" ... "It's a blend
        # of cedar and walnut"). Null when the source names its subject itself.
        pa.field("subject_entry_id", pa.string()),
        # The other participant's turn just before the source, when the source answers its question
        # ("How often do you swim?" ... "Twice a week."): the question's words say what the answer
        # is about, so the claim keeps the question's quote beside its own. Null otherwise.
        pa.field("question_entry_id", pa.string()),
        pa.field("question_quote", pa.string()),  # the question's verbatim words in question_entry_id's entry
    ]
)

REJECTION_SCHEMA = pa.schema(
    [
        pa.field("proposal_id", pa.string(), nullable=False),
        pa.field("extractor", pa.string(), nullable=False),
        pa.field("extractor_version", pa.string(), nullable=False),
        pa.field("source_entry_id", pa.string()),
        pa.field("source_seq", pa.int64()),
        pa.field("validator", pa.string(), nullable=False),
        pa.field("reason", pa.string(), nullable=False),
        pa.field("proposal", pa.string(), nullable=False),  # the proposal as JSON, for inspection
        pa.field("scope", pa.string()),
        pa.field("source_ref", pa.string()),
    ]
)


class Proposal(BaseModel):
    """What an extractor proposes. Untrusted until every validator passes it."""

    model_config = ConfigDict(extra="forbid")

    subject: str = Field(min_length=1, max_length=256)
    predicate: str = Field(min_length=1, max_length=64)
    object: str = Field(min_length=1, max_length=1024)
    valid_at: datetime
    source_entry_id: str = Field(min_length=1)
    quote: str = Field(min_length=1, max_length=4096)
    visibility: tuple[str, ...] = Field(min_length=1)
    confidence: float = Field(ge=0.0, le=1.0)
    polarity: Literal["assert", "retract"] = "assert"
    time_phrase: str | None = Field(default=None, min_length=1, max_length=64)
    # Who the source reports as saying it (reported speech); None: the source's author says it.
    asserted_by: str | None = Field(default=None, min_length=1, max_length=256)
    # The earlier entry of the same speaker and session that names the subject, when the source
    # says only "it" or "they" (claims.validate.provenance checks the subject there).
    subject_entry_id: str | None = Field(default=None, min_length=1)
    # The other participant's turn just before the source whose question the source answers, and
    # the question's verbatim words there (claims.validate.provenance checks both, and that the
    # object is the question's words followed by the answer's, or the answer's alone).
    question_entry_id: str | None = Field(default=None, min_length=1)
    question_quote: str | None = Field(default=None, min_length=1, max_length=1024)

    @field_validator("valid_at")
    @classmethod
    def _utc(cls, v: datetime) -> datetime:
        # As in the ledger: a naive time is taken as UTC, so that folds compare.
        return v.replace(tzinfo=timezone.utc) if v.tzinfo is None else v.astimezone(timezone.utc)

    def claim_id(self, extractor: str, version: str, scope: str) -> str:
        return content_id(
            "c",
            extractor,
            version,
            scope,
            self.subject,
            self.predicate,
            self.object,
            self.valid_at.isoformat(),
            self.source_entry_id,
            self.quote,
            self.polarity,
            # Only when set, so that the ids of what authors state themselves stay as they were.
            *((self.asserted_by,) if self.asserted_by else ()),
            *(("subject_entry", self.subject_entry_id) if self.subject_entry_id else ()),
            *(("question", self.question_entry_id, self.question_quote or "") if self.question_entry_id else ()),
        )

    def as_json_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")
