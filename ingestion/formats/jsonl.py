"""JSONL: conversation turns (one per line, LoCoMo-style), trajectories (formats/trajectories.py)
and generic events, decided per file by its first record. Lines are read one at a time under the record size limit."""

from __future__ import annotations

import json
from typing import Any, BinaryIO, Callable, Iterator, Mapping

from ledger.schema import NewEntry
from pydantic import BaseModel, ConfigDict, StrictFloat, StrictInt, StrictStr, ValidationError, field_validator

from ingestion.errors import MAX_REPORTED, IngestError

from ingestion.formats.common import BOM, Source, build_entry, decode_utf8, file_key_and_visibility, human_size, json_type, parse_time, record_error, short
from ingestion.formats.trajectories import is_trajectory_record, trajectory_entry


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def iter_json_lines(stream: BinaryIO, source: Source, errors: list[IngestError] | None = None) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-blank line, read one line at a time so that an
    oversize line is rejected after reading at most ``max_record_bytes`` of it. With ``errors``,
    a line that is not a JSON object (or not UTF-8) is added there and the reading goes on, so a
    rejection can name every bad line; an oversize line still ends it (the rest of that line
    would be read as lines of its own)."""
    limit = source.limits.max_record_bytes
    offset = 0
    lineno = 0
    while True:
        raw = stream.readline(limit + 2)
        if not raw:
            return
        lineno += 1
        start = offset
        offset += len(raw)
        body = raw[:-1] if raw.endswith(b"\n") else raw
        if body.endswith(b"\r"):
            body = body[:-1]
        if len(body) > limit:
            raise source.error(
                f"line is longer than the {human_size(limit)} limit for one record (Limits.max_record_bytes)",
                line=lineno,
            )
        if lineno == 1 and body.startswith(BOM):
            body, start = body[3:], start + 3
        try:
            obj = _object(body, source, start, lineno)
        except IngestError as err:
            if errors is None:
                raise
            errors.append(err)
            continue
        if obj is not None:
            yield lineno, obj


def _object(body: bytes, source: Source, start: int, lineno: int) -> dict[str, Any] | None:
    """One line's JSON object, or None for a blank line."""
    text = decode_utf8(body, source, base_offset=start, line=lineno)
    if not text.strip():
        return None
    try:
        obj = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise source.error(f"not valid JSON: {exc.msg} at column {exc.colno}", line=lineno) from None
    except ValueError as exc:
        raise source.error(f"not valid JSON: {exc}", line=lineno) from None
    except RecursionError:
        raise source.error("not valid JSON: nested too deeply", line=lineno) from None
    if not isinstance(obj, dict):
        raise source.error(f"expected one JSON object per line, got {json_type(obj)}", line=lineno)
    return obj


def is_conversation_record(obj: Mapping[str, Any]) -> bool:
    return all(k in obj for k in ("speaker", "text", "turn_id"))


class ConversationTurn(BaseModel):
    """One conversation turn (LoCoMo-style): who said what, when, in which conversation and
    session. Other fields ride along into the entry's attributes; none of them sets who may see
    the entry."""

    model_config = ConfigDict(extra="allow", frozen=True)

    conversation_id: StrictStr
    session_id: StrictStr
    turn_id: StrictStr
    speaker: StrictStr
    text: StrictStr
    timestamp: StrictStr
    image_caption: StrictStr | None = None
    date_time_raw: StrictStr | None = None
    session_index: StrictInt | None = None
    turn_index: StrictInt | None = None


CONVERSATION_REQUIRED = tuple(name for name, f in ConversationTurn.model_fields.items() if f.is_required())

_CONVERSATION_FIELDS = {"actor": "speaker", "content": "text", "valid_at": "timestamp", "source_ref": "turn_id"}


def conversation_entry(obj: Mapping[str, Any], source: Source, line: int) -> NewEntry:
    """One conversation turn -> a ``message`` entry (the LoCoMo-style JSONL the eval set uses)."""
    try:
        turn = ConversationTurn.model_validate(obj)
    except ValidationError as exc:
        raise record_error(exc, source, line) from None
    attributes: dict[str, Any] = {"conversation_id": turn.conversation_id}
    # format-specific extras ride along; they never set who may see what
    attributes.update((k, v) for k, v in obj.items() if k not in CONVERSATION_REQUIRED and v is not None)
    return build_entry(
        source,
        line,
        _CONVERSATION_FIELDS,
        kind="message",
        scope=source.scope,
        content=turn.text,
        valid_at=parse_time(turn.timestamp, source, line=line, field="timestamp"),
        session_id=turn.session_id,
        actor=turn.speaker,
        source_uri=source.source_uri,
        source_ref=turn.turn_id,
        visibility=source.visibility,
        attributes=attributes,
    )


# Kinds a file may carry. Erasures and derived claims have their own writers (with lineage and
# policy checks); accepting them from a dropped file would let anyone forge a tombstone.
EVENT_KINDS = ("event", "observation", "correction", "message", "document")


class Event(BaseModel):
    """One generic event line: its text (``content`` or ``text``), its time (``valid_at`` or
    ``timestamp``, ISO 8601) and what else the ledger keeps of an entry. Any other field is
    refused: a misspelt ``visiblity`` must not publish."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    content: StrictStr | None = None
    text: StrictStr | None = None
    valid_at: Any = None  # parse_time says what a time may be, naming the field as given
    timestamp: Any = None
    kind: Any = None
    actor: StrictStr | None = None
    session_id: StrictStr | None = None
    source_ref: StrictStr | None = None
    confidence: StrictFloat | None = None  # an integer too; the ledger holds it to [0, 1]
    visibility: Any = None  # checked by file_key_and_visibility, as in every structured format
    attributes: dict[str, Any] | None = None
    idempotency_key: StrictStr | None = None

    @field_validator("kind")
    @classmethod
    def _a_kind_a_file_may_carry(cls, kind: Any) -> Any:
        if kind is not None and (not isinstance(kind, str) or kind not in EVENT_KINDS):
            raise ValueError(f"{short(kind)} is not a kind a file may carry; use one of {', '.join(EVENT_KINDS)}")
        return kind


EVENT_FIELDS = tuple(Event.model_fields)


def event_entry(obj: Mapping[str, Any], source: Source, line: int) -> NewEntry:
    """One generic event line -> an entry of the kind it names (default ``event``)."""
    try:
        event = Event.model_validate(obj)
    except ValidationError as exc:
        raise record_error(exc, source, line, allowed=EVENT_FIELDS) from None
    content_key = _one_of(obj, ("content", "text"), source, line)
    time_key = _one_of(obj, ("valid_at", "timestamp"), source, line)
    valid_at = parse_time(obj[time_key], source, line=line, field=time_key)
    optional: dict[str, Any] = {key: obj[key] for key in ("actor", "session_id", "source_ref", "idempotency_key", "confidence") if obj.get(key) is not None}
    attributes = dict(event.attributes or {})
    visibility = file_key_and_visibility(obj, optional, attributes, source, line, namespace="event-key")
    return build_entry(
        source,
        line,
        {"content": content_key, "valid_at": time_key},
        kind=event.kind or "event",
        scope=source.scope,
        content=obj[content_key],
        valid_at=valid_at,
        source_uri=source.source_uri,
        visibility=visibility,
        attributes=attributes,
        **optional,
    )


def _one_of(obj: Mapping[str, Any], keys: tuple[str, str], source: Source, line: int) -> str:
    present = [k for k in keys if obj.get(k) is not None]
    if not present:
        raise source.error(f"missing required field (or '{keys[1]}')", line=line, field=keys[0])
    if len(present) > 1:
        raise source.error(f"give either '{keys[0]}' or '{keys[1]}', not both", line=line, field=keys[1])
    return present[0]


def parse_jsonl(stream: BinaryIO, source: Source, *, kind: str | None = None) -> tuple[str, list[NewEntry]]:
    """A JSONL file -> (format, entries). ``kind`` forces ``conversation``, ``trajectories`` or
    ``events``; by default the first record decides, and every later line must be of the same format.

    A bad line does not end the parse: it goes on to find the file's other bad lines (up to
    MAX_REPORTED), then raises the first error carrying the others (``IngestError.more``), so a
    rejection names them all. Nothing is returned, so nothing of the file is committed."""
    entries: list[NewEntry] = []
    errors: list[IngestError] = []
    make: Callable[[Mapping[str, Any], Source, int], NewEntry] | None = None
    fmt = kind
    truncated = False
    try:
        for lineno, obj in iter_json_lines(stream, source, errors):
            if len(errors) >= MAX_REPORTED:
                truncated = True
                break
            if make is None:
                if fmt is None:
                    fmt = "conversation" if is_conversation_record(obj) else "trajectories" if is_trajectory_record(obj) else "events"
                make = {"conversation": conversation_entry, "trajectories": trajectory_entry}.get(fmt, event_entry)
            if len(entries) >= source.limits.max_entries:
                raise source.error(
                    f"more than {source.limits.max_entries:,} entries in one file (Limits.max_entries); split the file",
                    line=lineno,
                )
            try:
                entries.append(make(obj, source, lineno))
            except IngestError as err:
                if err.retryable:
                    raise
                errors.append(err)
    except IngestError as err:  # one the parse cannot read past (an oversize line, too many entries)
        if err.retryable or not errors:
            raise
        errors.append(err)
        truncated = True
    if errors:
        truncated = truncated or len(errors) > MAX_REPORTED
        errors = errors[:MAX_REPORTED]
        first = errors[0]
        raise IngestError(first.message, path=first.path, line=first.line, field=first.field, more=errors[1:], truncated=truncated)
    if not entries:
        raise source.error("no entries: every line is blank")
    return fmt or "events", entries
