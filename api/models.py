"""Request and response bodies of the HTTP API: the OpenAPI document is generated from these.

Response models allow extra fields, so a field the context compiler adds later passes through
(and the document still names every field it has today)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ledger.schema import SCOPE_PATTERN
from query.config import PresetName

MAX_ENTRIES = 1000


class _In(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Out(BaseModel):
    model_config = ConfigDict(extra="allow")


# ---------------------------------------------------------------------------------- errors


class ErrorDetail(BaseModel):
    code: str = Field(description="Stable, machine-readable: e.g. unauthenticated, forbidden, invalid_entry, stale_view.")
    message: str = Field(description="For a person; never a stack trace.")
    details: Any = Field(default=None, description="Structured facts about the error (the field, the entry index, the lagging views).")


class ErrorBody(BaseModel):
    error: ErrorDetail


# ---------------------------------------------------------------------------------- ingest


class EntryIn(_In):
    """One piece of evidence: the fields of ingestion's ``events`` format."""

    content: str = Field(min_length=1, max_length=1_000_000, description="Verbatim text.")
    valid_at: datetime = Field(description="When it happened or was said (ISO 8601; naive = UTC).")
    kind: Literal["event", "observation", "correction", "message", "document"] = "event"
    actor: str | None = Field(default=None, max_length=256, description="Who said or did it.")
    session_id: str | None = Field(default=None, max_length=512)
    source_ref: str | None = Field(default=None, max_length=512, description="The id in the source system.")
    confidence: float | None = Field(default=None, ge=0, le=1)
    visibility: list[str] | None = Field(
        default=None, min_length=1, description="Principals who may see it; default: the request's visibility."
    )
    attributes: dict[str, Any] | None = None
    idempotency_key: str | None = Field(default=None, min_length=1, max_length=200)


class IngestRequest(_In):
    entries: list[EntryIn] = Field(min_length=1, max_length=MAX_ENTRIES)
    scope: str | None = Field(
        default=None, pattern=SCOPE_PATTERN, description="Default: the key's only scope, else 'default'."
    )
    visibility: list[str] | None = Field(
        default=None,
        min_length=1,
        description="Default for every entry without its own. When neither is given: the home's default "
        "visibility, 'public' (every asker of the scope) unless the home's memc.toml sets [ingest] "
        "default_visibility = \"writer\" (only the caller's principal); `warnings` in the response says so.",
    )
    source_uri: str | None = Field(default=None, max_length=4096, description="Where the evidence came from.")
    refresh: bool = Field(default=False, description="Refresh the evidence index after the append (so the next ask sees it).")


class IngestedEntry(_Out):
    entry_id: str
    kind: str
    scope: str
    visibility: list[str]
    ingested_by: str | None = Field(default=None, description="Who the ledger records as having written it.")
    new: bool = Field(description="False when the ledger already held this entry (an idempotent retry).")


class Watermarks(_Out):
    ledger_head: int = Field(description="Highest committed seq.")
    views: dict[str, int | None] = Field(description="The ledger seq each view was compiled against (null: never built).")
    behind: dict[str, int | None] = Field(description="Entries each view lags the ledger by.")


class IngestResponse(_Out):
    principal: str
    received: int
    appended: int
    duplicates: int
    first_seq: int | None
    last_seq: int | None
    ledger_head: int
    entries: list[IngestedEntry]
    watermarks: Watermarks | None = None
    format: str | None = None
    file: str | None = None
    warnings: list[str] = Field(
        default_factory=list,
        description="For a person or a log: e.g. that new entries were made public because no visibility was "
        "given (the home's default), and how to restrict them. Empty when there is nothing to say.",
    )


# ---------------------------------------------------------------------------------- ask


class AgentState(_In):
    """What the agent is doing: the compile boosts these entities and predicates and says which goal shaped it."""

    goal: str | None = Field(default=None, min_length=1, max_length=2000)
    entities: list[str] = Field(default_factory=list, max_length=50, description="Names of people or things the task is about.")
    predicates: list[str] = Field(default_factory=list, max_length=50, description="Ontology predicates the task needs (e.g. works_at).")


class AskRequest(_In):
    question: str = Field(min_length=1, max_length=4000)
    scope: str | None = Field(default=None, pattern=SCOPE_PATTERN)
    as_of: datetime | None = Field(default=None, description="Valid time: the evidence valid by then (default now).")
    known_at: datetime | None = Field(default=None, description="Transaction time (as as_of).")
    budget_tokens: int | None = Field(default=None, ge=50, le=32000)
    k: int | None = Field(default=None, ge=1, le=200)
    preset: PresetName | None = None
    max_lag: int | None = Field(
        default=None, ge=0, description="Refuse (503 stale_view) when a view the compiler reads lags the ledger by more entries."
    )
    goal: str | None = Field(default=None, min_length=1, max_length=2000, description="The agent's current task: it shapes which facts and evidence rank first.")
    agent_state: AgentState | None = Field(default=None, description="The agent's task as structure (instead of, or beside, `goal`).")
    uncolored: bool = Field(default=False, description="Leave out every fact about the asker (their profile and dossier facts).")


class LocalAskRequest(AskRequest):
    """The local channel's ask (api/local.py): the operator's `memc ask --as ASKER`, handed to
    the running server. Not an API-key route: the token of <home>/run/serve.json, from loopback."""

    asker: str = Field(min_length=1, max_length=128)


class LocalBuildRequest(_In):
    """The local channel's build (api/local.py): the operator's `memc build`, run by the server."""

    force: bool = Field(default=False, description="Build every view even when none is out of date.")


class ContextItemOut(_Out):
    entry_id: str
    source_ref: str | None
    scope: str
    kind: str
    actor: str | None
    text: str
    valid_at: str
    recorded_at: str
    routes: list[str]
    score: float
    source_refs: list[str | None] = []
    entry_ids: list[str] = []
    duplicates: list[str] = []
    ingested_by: list[str | None] = Field(default_factory=list, description="Who wrote each entry shown (aligned with entry_ids): a principal, or memc:cli / memc:inbox / a producer.")
    relevance: float = Field(default=1.0, description="The best share of a route's top score this item reached (the packer's relevance floor reads it).")
    superseded: list[dict[str, Any]] = Field(
        default_factory=list,
        description="Values this evidence states that no longer hold: subject, predicate, object, now (the current value), by_object / by_entry_id / by_source_ref (the value and entry that superseded it), since, reason.",
    )
    unit_id: str | None = Field(default=None, description="A memory unit's id when the item shows turns of one speaker's topic from other sessions (route `unit`).")
    turn_times: list[str] = Field(default_factory=list, description="For a memory unit: each turn's valid time (aligned with entry_ids).")


class FactSourceOut(_Out):
    """One claim behind a fact: a value said more than once has one per saying, newest first."""

    claim_id: str | None = None
    source_entry_id: str
    source_ref: str | None = None
    source_kind: str | None = None
    quote: str | None = None
    valid_from: str | None = Field(default=None, description="When this saying put the value in force (the fact's own valid_from is the earliest).")
    recorded_at: str | None = None
    source_ingested_by: str | None = None


class StateFactOut(_Out):
    subject: str
    predicate: str
    object: str
    valid_from: str
    source_entry_id: str
    source_ref: str | None
    quote: str
    scope: str
    valid_to: str | None = None
    source_ingested_by: str | None = Field(default=None, description="Who wrote the source entry.")
    subject_id: str | None = None
    claim_id: str | None = None
    sources: list[FactSourceOut] = Field(default_factory=list, description="Every claim of this value the asker may see, newest first: a restated value is one fact with several sources.")


class ContextOut(_Out):
    question: str
    asker: str = Field(description="Always the key's principal.")
    scope: str | None
    ledger_head: int
    watermarks: dict[str, int | None]
    items: list[ContextItemOut]
    state: list[StateFactOut]
    tokens: int
    as_of: str | None = None
    known_at: str | None = None
    staleness: dict[str, dict[str, Any]] = Field(default_factory=dict, description="Per view: watermark, lag and the decision (fresh, patched, tolerated).")
    conflicts: list[dict[str, Any]] = Field(default_factory=list, description="Sources that disagree, both sides kept.")
    skills: list[dict[str, Any]] = Field(
        default_factory=list,
        description="How this was done before: skills whose trigger the question or goal matches, with their steps, "
        "success rates and the entry ids of the trajectories they came from (docs/skills.md).",
    )
    latency_ms: float | None = None
    acl_dropped: int | None = None
    time_window: dict[str, str | None] | None = Field(default=None, description="The window the question named (phrase, start, end), searched as the time route.")
    goal: dict[str, Any] | None = Field(default=None, description="The goal that shaped the compile: text, entities, predicates.")
    uncolored: bool = Field(default=False, description="True when facts about the asker were left out.")
    query_id: str | None = Field(default=None, description="The compile's id in the query log: `memc replay QUERY_ID QUESTION` compiles it again and compares the plans.")
    rendered: str = Field(description="The context as text, with provenance lines.")


# ---------------------------------------------------------------------------------- state


class SubjectOut(_Out):
    subject_id: str
    scope: str


class StateOut(_Out):
    entity: str
    subjects: list[SubjectOut]
    asker: str
    as_of: datetime
    known_at: datetime
    facts: list[dict[str, Any]] = Field(description="Claims holding at as_of, as known at known_at, each with its source entry and quote.")
    conflicts: list[dict[str, Any]]


# ---------------------------------------------------------------------------------- forget


class ForgetRequest(_In):
    entry_ids: list[str] = Field(default_factory=list, max_length=10_000)
    source_uri: str | None = Field(default=None, max_length=4096)
    scope: str | None = Field(default=None, pattern=SCOPE_PATTERN)
    subject: str | None = Field(default=None, max_length=512)
    reason: str = Field(min_length=1, max_length=2000)
    rebuild: bool = True


class ForgetOut(_Out):
    """forgetting.ForgetReport.to_dict()."""


# ---------------------------------------------------------------------------------- misc


class Health(_Out):
    status: Literal["ok"]
    version: str


class WhoAmI(_Out):
    principal: str
    admin: bool
    scopes: list[str] | None
    key_id: str | None
    write_for: list[str] = Field(default_factory=list, description="Principals this key may write evidence for besides its own.")
