"""The ledger entry: its Arrow schema and the validated shape of an entry before commit."""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from typing import Any, Literal

import pyarrow as pa
from pydantic import BaseModel, ConfigDict, Field, field_validator

from memc.ids import content_id, digest, text_hash
from memc.visibility import PRINCIPAL_PATTERN, PUBLIC, RESERVED_PREFIX, SCOPE_PATTERN

__all__ = ["PRINCIPAL_PATTERN", "PUBLIC", "RESERVED_PREFIX", "SCOPE_PATTERN"]  # re-exported: the entry's rules

EntryKind = Literal[
    "message",  # a turn in a conversation
    "document",  # a text, Markdown or e-mail body
    "event",  # a generic structured event
    "observation",  # something an agent or tool observed
    "correction",  # a user correcting an earlier statement
    "erasure",  # a tombstone: who, when, why, which ids (never the erased content)
    "derived_claim",  # written back by a producer (e.g. dreaming) with lineage
]
ENTRY_KINDS: tuple[str, ...] = EntryKind.__args__  # type: ignore[attr-defined]

TS = pa.timestamp("us", tz="UTC")

LEDGER_SCHEMA = pa.schema(
    [
        pa.field("seq", pa.int64(), nullable=False),
        pa.field("entry_id", pa.string(), nullable=False),
        pa.field("recorded_at", TS, nullable=False),
        pa.field("valid_at", TS, nullable=False),
        pa.field("kind", pa.string(), nullable=False),
        pa.field("scope", pa.string(), nullable=False),
        pa.field("session_id", pa.string()),
        pa.field("actor", pa.string()),
        pa.field("content", pa.string(), nullable=False),
        pa.field("content_hash", pa.string(), nullable=False),
        pa.field("source_uri", pa.string()),
        pa.field("source_ref", pa.string()),
        pa.field("visibility", pa.list_(pa.string()), nullable=False),
        pa.field("confidence", pa.float64(), nullable=False),
        pa.field("idempotency_key", pa.string(), nullable=False),
        pa.field("attributes", pa.string()),  # JSON object: format-specific extras (subject, image caption...)
        pa.field("derived_from", pa.list_(pa.string())),
        pa.field("producer", pa.string()),
        pa.field("producer_version", pa.string()),
        pa.field("watermark", pa.int64()),
        # Who put the entry in the ledger: the principal of the API key or MCP server, or the
        # home's operator (``memc:cli``, ``memc:inbox``) or a producer (``memc:dreaming``).
        # Null in batches written before the column existed. Never set from a file's contents.
        pa.field("ingested_by", pa.string()),
    ]
)
LEDGER_COLUMNS = tuple(LEDGER_SCHEMA.names)


class NewEntry(BaseModel):
    """An entry as a producer hands it to the ledger; seq and recorded_at are assigned at commit."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: EntryKind
    scope: str = Field(default="default", pattern=SCOPE_PATTERN)
    content: str = Field(max_length=1_000_000)
    valid_at: datetime
    session_id: str | None = Field(default=None, max_length=512)
    actor: str | None = Field(default=None, max_length=256)
    source_uri: str | None = Field(default=None, max_length=4096)
    source_ref: str | None = Field(default=None, max_length=512)
    visibility: tuple[str, ...] = Field(default=(PUBLIC,), min_length=1)
    confidence: float = Field(default=1.0, ge=0.0, le=1.0)
    idempotency_key: str | None = Field(default=None, min_length=1, max_length=256)
    attributes: dict[str, Any] = Field(default_factory=dict)
    derived_from: tuple[str, ...] = ()
    producer: str | None = None
    producer_version: str | None = None
    watermark: int | None = Field(default=None, ge=0)
    ingested_by: str | None = Field(default=None, pattern=PRINCIPAL_PATTERN)

    @field_validator("valid_at")
    @classmethod
    def _utc(cls, v: datetime) -> datetime:
        # Naive times are taken as UTC: the ledger stores one time zone so that folds compare.
        try:
            return v.replace(tzinfo=timezone.utc) if v.tzinfo is None else v.astimezone(timezone.utc)
        except OverflowError:  # e.g. 0001-01-01T00:00:00+05:00: before year 1 in UTC
            raise ValueError("out of range: in UTC this time falls outside the years 1-9999") from None

    @field_validator("visibility")
    @classmethod
    def _principals(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        bad = [p for p in v if not re.match(PRINCIPAL_PATTERN, p)]
        if bad:
            raise ValueError(f"malformed principal(s) {bad!r}: use letters, digits and _.@:-")
        return tuple(sorted(set(v)))

    @property
    def content_hash(self) -> str:
        return text_hash(self.content)

    def identity(self) -> list[Any]:
        """What makes two entries the same evidence (the source path is not part of it, so the
        same file ingested from another folder is still a duplicate).

        A principal's writes are its own evidence: who ingested is part of the identity, so a
        principal cannot pre-empt another's entries by writing their twin first (the twin would
        make the other's later append a "duplicate" it may not see). The home's operator and
        memc's producers (``memc:`` names) keep the identity entries had before the column
        existed, so re-ingesting an old file stays a no-op."""
        writer = [self.ingested_by] if self.ingested_by and not self.ingested_by.startswith(RESERVED_PREFIX) else []
        return [
            self.kind,
            self.scope,
            self.session_id,
            self.actor,
            self.valid_at.isoformat(),
            self.source_ref,
            self.content_hash,
            list(self.derived_from),
            self.producer,
            self.producer_version,
            self.watermark,
            *writer,
        ]

    @property
    def key(self) -> str:
        """The idempotency key: given by the caller, or derived from the entry's identity."""
        return self.idempotency_key or "k_" + digest(*self.identity())[:32]

    @property
    def entry_id(self) -> str:
        return content_id("e", self.key, *self.identity())

    def to_row(self, seq: int, recorded_at: datetime) -> dict[str, Any]:
        return {
            "seq": seq,
            "entry_id": self.entry_id,
            "recorded_at": recorded_at,
            "valid_at": self.valid_at,
            "kind": self.kind,
            "scope": self.scope,
            "session_id": self.session_id,
            "actor": self.actor,
            "content": self.content,
            "content_hash": self.content_hash,
            "source_uri": self.source_uri,
            "source_ref": self.source_ref,
            "visibility": list(self.visibility),
            "confidence": float(self.confidence),
            "idempotency_key": self.key,
            "attributes": json.dumps(self.attributes, sort_keys=True, ensure_ascii=False) if self.attributes else None,
            "derived_from": list(self.derived_from),
            "producer": self.producer,
            "producer_version": self.producer_version,
            "watermark": self.watermark,
            "ingested_by": self.ingested_by,
        }
