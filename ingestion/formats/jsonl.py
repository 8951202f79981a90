"""JSONL: conversation turns (one per line, LoCoMo-style), trajectories (formats/trajectories.py)
and generic events, decided per file by its first record. Lines are read one at a time under the record size limit."""

from __future__ import annotations

import json
from typing import Any, BinaryIO, Callable, Iterator, Mapping

from ledger.schema import NewEntry

from ingestion.errors import MAX_REPORTED, IngestError

from ingestion.formats.common import BOM, Source, build_entry, decode_utf8, file_key_and_visibility, human_size, json_type, parse_time, short
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


def _need(obj: Mapping[str, Any], key: str, source: Source, line: int, *, types: tuple[type, ...] = (str,), what: str = "a string") -> Any:
    if key not in obj or obj[key] is None:
        raise source.error("missing required field", line=line, field=key)
    return _typed(obj, key, source, line, types=types, what=what)


def _typed(obj: Mapping[str, Any], key: str, source: Source, line: int, *, types: tuple[type, ...] = (str,), what: str = "a string") -> Any:
    v = obj[key]
    if (isinstance(v, bool) and bool not in types) or not isinstance(v, types):
        raise source.error(f"expected {what}, got {json_type(v)}", line=line, field=key)
    return v


CONVERSATION_REQUIRED = ("conversation_id", "session_id", "turn_id", "speaker", "text", "timestamp")

_CONVERSATION_OPTIONAL: dict[str, tuple[tuple[type, ...], str]] = {
    "image_caption": ((str,), "a string"),
    "date_time_raw": ((str,), "a string"),
    "session_index": ((int,), "an integer"),
    "turn_index": ((int,), "an integer"),
}

_CONVERSATION_FIELDS = {"actor": "speaker", "content": "text", "valid_at": "timestamp", "source_ref": "turn_id"}


def conversation_entry(obj: Mapping[str, Any], source: Source, line: int) -> NewEntry:
    """One conversation turn -> a ``message`` entry (the LoCoMo-style JSONL the eval set uses)."""
    vals = {k: _need(obj, k, source, line) for k in CONVERSATION_REQUIRED}
    attributes: dict[str, Any] = {"conversation_id": vals["conversation_id"]}
    for key, value in obj.items():
        if key in CONVERSATION_REQUIRED or value is None:
            continue
        if key in _CONVERSATION_OPTIONAL:
            types, what = _CONVERSATION_OPTIONAL[key]
            _typed(obj, key, source, line, types=types, what=what)
        attributes[key] = value  # format-specific extras ride along; they never set who may see what
    return build_entry(
        source,
        line,
        _CONVERSATION_FIELDS,
        kind="message",
        scope=source.scope,
        content=vals["text"],
        valid_at=parse_time(vals["timestamp"], source, line=line, field="timestamp"),
        session_id=vals["session_id"],
        actor=vals["speaker"],
        source_uri=source.source_uri,
        source_ref=vals["turn_id"],
        visibility=source.visibility,
        attributes=attributes,
    )


# Kinds a file may carry. Erasures and derived claims have their own writers (with lineage and
# policy checks); accepting them from a dropped file would let anyone forge a tombstone.
EVENT_KINDS = ("event", "observation", "correction", "message", "document")

EVENT_FIELDS = (
    "content", "text", "valid_at", "timestamp", "kind", "actor", "session_id", "source_ref",
    "confidence", "visibility", "attributes", "idempotency_key",
)  # fmt: skip


def event_entry(obj: Mapping[str, Any], source: Source, line: int) -> NewEntry:
    """One generic event line -> an entry of the kind it names (default ``event``)."""
    unknown = sorted(k for k in obj if k not in EVENT_FIELDS)
    if unknown:
        raise source.error(
            f"unknown field (allowed: {', '.join(EVENT_FIELDS)})", line=line, field=unknown[0]
        )
    content_key = _one_of(obj, ("content", "text"), source, line)
    time_key = _one_of(obj, ("valid_at", "timestamp"), source, line)
    content = _typed(obj, content_key, source, line)
    valid_at = parse_time(obj[time_key], source, line=line, field=time_key)
    kind = obj.get("kind") if obj.get("kind") is not None else "event"
    if not isinstance(kind, str) or kind not in EVENT_KINDS:
        raise source.error(
            f"{short(kind)} is not a kind a file may carry; use one of {', '.join(EVENT_KINDS)}",
            line=line,
            field="kind",
        )
    optional: dict[str, Any] = {}
    for key in ("actor", "session_id", "source_ref", "idempotency_key"):
        if obj.get(key) is not None:
            optional[key] = _typed(obj, key, source, line)
    if obj.get("confidence") is not None:
        optional["confidence"] = _typed(obj, "confidence", source, line, types=(int, float), what="a number between 0 and 1")
    attributes = obj.get("attributes")
    if attributes is not None and not isinstance(attributes, dict):
        raise source.error(f"expected an object, got {json_type(attributes)}", line=line, field="attributes")
    attributes = dict(attributes or {})
    visibility = file_key_and_visibility(obj, optional, attributes, source, line, namespace="event-key")
    return build_entry(
        source,
        line,
        {"content": content_key, "valid_at": time_key},
        kind=kind,
        scope=source.scope,
        content=content,
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
