"""What every format parser shares: the limits, the Source a parser reads, the checks of scope,
visibility and times, and the entry builder that turns validation errors into errors naming the
file, line and field as the source spells it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Mapping

from ledger.schema import PRINCIPAL_PATTERN, SCOPE_PATTERN, NewEntry
from memc.ids import digest
from pydantic import ValidationError

from ingestion.errors import IngestError

MiB = 1024 * 1024

BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True)
class Limits:
    """Size limits, checked before a file or line is read into memory.

    ``max_file_bytes`` bounds one source file (default 64 MiB); ``max_record_bytes`` bounds one
    JSONL line and one document's text (default 1 MiB; the ledger itself keeps at most
    1,000,000 characters per entry); ``max_entries`` bounds the entries of one file, because a
    file is appended as one batch held in memory.
    """

    max_file_bytes: int = 64 * MiB
    max_record_bytes: int = 1 * MiB
    max_entries: int = 250_000


DEFAULT_LIMITS = Limits()


def human_size(n: int) -> str:
    if n >= MiB:
        return f"{n / MiB:.1f} MiB".replace(".0 MiB", " MiB")
    if n >= 1024:
        return f"{n / 1024:.1f} KiB".replace(".0 KiB", " KiB")
    return f"{n} bytes"


@dataclass(frozen=True)
class Source:
    """What a parser knows about the file it reads (everything except its bytes)."""

    display: str  # the path as the user gave it: used in every error message
    name: str  # the file name: source_ref of documents
    stem: str
    source_uri: str
    scope: str
    visibility: tuple[str, ...]
    mtime: datetime
    limits: Limits = DEFAULT_LIMITS
    ingested_by: str | None = None  # the ledger's ingested_by for every entry read from it

    def error(self, message: str, *, line: int | None = None, field: str | None = None, retryable: bool = False) -> IngestError:
        return IngestError(message, path=self.display, line=line, field=field, retryable=retryable)


def check_scope(scope: str) -> str:
    """The scope comes from the caller, not the file: a bad one is reported before any file is read."""
    if not isinstance(scope, str) or not re.match(SCOPE_PATTERN, scope):
        raise IngestError(f"{scope!r} is not a valid scope: use 1-128 letters, digits and _.:-", field="scope")
    return scope


def check_visibility(visibility: Any, *, source: Source | None = None, line: int | None = None) -> tuple[str, ...]:
    """A visibility is a non-empty list of principals (``public`` lets every asker see the entry)."""
    if isinstance(visibility, str):
        visibility = (visibility,)
    if not isinstance(visibility, (list, tuple)) or not visibility:
        msg = f"expected a non-empty list of principals, got {json_type(visibility)}"
        raise (source.error(msg, line=line, field="visibility") if source else IngestError(msg, field="visibility"))
    bad = [p for p in visibility if not isinstance(p, str) or not re.match(PRINCIPAL_PATTERN, p)]
    if bad:
        msg = f"malformed principal(s) {short(bad)}: use 1-128 letters, digits and _.@:-"
        raise (source.error(msg, line=line, field="visibility") if source else IngestError(msg, field="visibility"))
    return tuple(visibility)


def file_key_and_visibility(
    obj: Mapping[str, Any], optional: dict[str, Any], attributes: dict[str, Any], source: Source, line: int, *, namespace: str
) -> tuple[str, ...]:
    """What the structured formats (events, trajectories) share: a record's own idempotency key
    is namespaced by scope (and kept apart from the derived "k_" keys), so that one tenant's
    file cannot pre-empt another tenant's entries by guessing their key; the key as given stays
    in ``attributes``. Returns the record's visibility: its own, checked, or the source's."""
    if "idempotency_key" in optional:
        given = optional.pop("idempotency_key")
        optional["idempotency_key"] = "x_" + digest(namespace, source.scope, given)[:32]
        attributes.setdefault("idempotency_key", given)
    if obj.get("visibility") is not None:
        return check_visibility(obj["visibility"], source=source, line=line)
    return source.visibility


def json_type(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, (int, float)):
        return "a number"
    if isinstance(v, str):
        return "a string"
    if isinstance(v, (list, tuple)):
        return "an array"
    if isinstance(v, dict):
        return "an object"
    return type(v).__name__


def short(v: Any, n: int = 60) -> str:
    r = repr(v)
    return r if len(r) <= n else r[: n - 3] + "..."


def parse_time(value: Any, source: Source, *, line: int | None, field: str) -> datetime:
    """ISO 8601 (``2023-05-08T13:56:00``, ``...Z``, ``...+02:00``, ``2024-03-01``); naive = UTC."""
    if not isinstance(value, str):
        raise source.error(f"expected an ISO 8601 time string, got {json_type(value)}", line=line, field=field)
    text = value.strip()
    try:
        dt = datetime.fromisoformat(text)
    except ValueError:
        raise source.error(f"not an ISO 8601 time ({short(value)})", line=line, field=field) from None
    try:
        return dt.replace(tzinfo=timezone.utc) if dt.tzinfo is None else dt.astimezone(timezone.utc)
    except OverflowError:  # 0001-01-01T00:00+05:00 is before year 1 in UTC
        raise source.error(f"out of range: {short(value)} in UTC falls outside the years 1-9999", line=line, field=field) from None


def build_entry(source: Source, line: int | None, field_names: Mapping[str, str], **kw: Any) -> NewEntry:
    """NewEntry(**kw), with pydantic's ValidationError turned into an IngestError that names the
    field as the *source* spells it (``timestamp``, not ``valid_at``)."""
    kw.setdefault("ingested_by", source.ingested_by)
    for name, value in kw.items():
        if _has_nul(value):
            # Stored, a NUL cuts C strings short and prints raw to terminals: text has none.
            raise source.error("contains a NUL character (\\u0000); text must not", line=line, field=field_names.get(name, name))
    try:
        return NewEntry(**kw)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        if first.get("type") == "string_too_long" and tuple(first.get("loc") or ())[:1] == ("content",):
            msg = f"text is {len(kw.get('content') or ''):,} characters; the ledger keeps at most 1,000,000 per entry"
            raise source.error(msg, line=line, field=field_names.get("content", "content")) from None
        raise record_error(exc, source, line, field_names=field_names) from None


# pydantic's type errors in the words of the other checks here ("expected a string, got a number").
_EXPECTED = {
    "string_type": "a string", "int_type": "an integer", "float_type": "a number", "bool_type": "a boolean",
    "dict_type": "an object", "list_type": "an array",
}  # fmt: skip


def field_path(loc: tuple[Any, ...]) -> str:
    """pydantic's location as the source spells it: ``steps[2].action`` (1-based item numbers,
    as a reader counts them). Union branch names (``int``, ``literal[...]``) are pydantic's, not
    the file's, and are dropped."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part + 1}]"
        elif str(part) in {"str", "int", "float", "bool"} or str(part).startswith(("literal[", "function-")):
            continue
        else:
            out += ("." if out else "") + str(part)
    return out


def record_error(
    exc: ValidationError, source: Source, line: int | None, *, field_names: Mapping[str, str] | None = None, allowed: tuple[str, ...] = ()
) -> IngestError:
    """A record's validation errors as one IngestError naming the file, the line and the first
    bad field as the source spells it (``field_names``: the model's name -> the file's), the
    others counted. A misspelt field comes first, as the likeliest cause of the rest; ``allowed``
    lists the fields such a record may have."""
    errors = sorted(exc.errors(include_url=False), key=lambda e: e.get("type") != "extra_forbidden")
    first = errors[0]
    path = field_path(tuple(first.get("loc") or ()))
    head = path.split(".")[0].split("[")[0]
    field = (field_names or {}).get(head, head) + path[len(head) :] if path else None
    kind, value = str(first.get("type")), first.get("input")
    if kind == "missing" or (value is None and kind in _EXPECTED):
        msg = "missing required field"
    elif kind == "extra_forbidden":
        msg = f"unknown field (allowed: {', '.join(allowed)})" if allowed else "unknown field"
    elif kind in _EXPECTED:
        msg = f"expected {_EXPECTED[kind]}, got {json_type(value)}"
    else:
        msg = str(first.get("msg", "invalid value")).removeprefix("Value error, ")
    others = {field_path(tuple(e.get("loc") or ())) for e in errors} - {path}
    if others:
        msg += f" (and {len(others)} more problem(s))"
    return source.error(msg, line=line, field=field)


def _has_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_has_nul(k) or _has_nul(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return any(_has_nul(v) for v in value)
    return False


def decode_utf8(data: bytes, source: Source, *, base_offset: int = 0, line: int | None = None, text_for_lines: bytes | None = None) -> str:
    """Strict UTF-8: a wrongly encoded file is rejected (naming the byte) rather than guessed at."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        offset = base_offset + exc.start
        if line is None:
            line = data.count(b"\n", 0, exc.start) + 1
        raise source.error(
            f"not valid UTF-8: byte 0x{data[exc.start]:02x} at byte offset {offset} cannot be decoded; "
            "save the file as UTF-8",
            line=line,
        ) from None
