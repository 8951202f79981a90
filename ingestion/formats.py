"""Source formats -> validated ledger entries.

Each parser turns the bytes of one file into a list of :class:`~ledger.schema.NewEntry` and
raises :class:`~ingestion.errors.IngestError` (file, line, field) on the first problem. The
parsers are pure: they never touch the ledger, so a file is either wholly valid and appended
in one call, or rejected with nothing committed.

Formats:

``conversation`` (JSONL)
    One turn per line: ``conversation_id, session_id, turn_id, speaker, text, timestamp``
    (+ optional ``image_caption, session_index, turn_index, date_time_raw``; other keys are kept
    in ``attributes``). Recognised when the first record has ``speaker``, ``text`` and ``turn_id``.
``events`` (JSONL)
    Generic structured events: ``content`` (or ``text``) and ``valid_at`` (or ``timestamp``),
    optional ``kind, actor, session_id, source_ref, confidence, visibility, attributes,
    idempotency_key``. Unknown keys are rejected: a misspelt ``visiblity`` must not silently
    publish an entry that was meant to be private.
``text`` / ``markdown``
    One ``document`` entry per file, verbatim; ``valid_at`` from front matter ``date:`` or a
    leading ``Date:`` line, else the file's mtime.
``email`` (.eml)
    One ``document`` entry: the text/plain body (or the text/html body as text), ``actor`` the
    From address, ``valid_at`` the Date header, ``source_ref`` the Message-ID.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime, timezone
from email import policy
from email.message import EmailMessage
from email.parser import BytesParser
from html.parser import HTMLParser
from typing import Any, BinaryIO, Callable, Iterator, Mapping

from pydantic import ValidationError

from ledger.schema import PRINCIPAL_PATTERN, SCOPE_PATTERN, NewEntry
from memc.ids import digest, text_hash
from ingestion.errors import IngestError

MiB = 1024 * 1024
_BOM = b"\xef\xbb\xbf"


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


# --------------------------------------------------------------------------- shared checks


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
        msg = f"expected a non-empty list of principals, got {_json_type(visibility)}"
        raise (source.error(msg, line=line, field="visibility") if source else IngestError(msg, field="visibility"))
    bad = [p for p in visibility if not isinstance(p, str) or not re.match(PRINCIPAL_PATTERN, p)]
    if bad:
        msg = f"malformed principal(s) {_short(bad)}: use 1-128 letters, digits and _.@:-"
        raise (source.error(msg, line=line, field="visibility") if source else IngestError(msg, field="visibility"))
    return tuple(visibility)


def _json_type(v: Any) -> str:
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


def _short(v: Any, n: int = 60) -> str:
    r = repr(v)
    return r if len(r) <= n else r[: n - 3] + "..."


def parse_time(value: Any, source: Source, *, line: int | None, field: str) -> datetime:
    """ISO 8601 (``2023-05-08T13:56:00``, ``...Z``, ``...+02:00``, ``2024-03-01``); naive = UTC."""
    if not isinstance(value, str):
        raise source.error(f"expected an ISO 8601 time string, got {_json_type(value)}", line=line, field=field)
    text = value.strip()
    try:
        dt = datetime.fromisoformat(text)
    except ValueError:
        raise source.error(f"not an ISO 8601 time ({_short(value)})", line=line, field=field) from None
    try:
        return dt.replace(tzinfo=timezone.utc) if dt.tzinfo is None else dt.astimezone(timezone.utc)
    except OverflowError:  # 0001-01-01T00:00+05:00 is before year 1 in UTC
        raise source.error(f"out of range: {_short(value)} in UTC falls outside the years 1-9999", line=line, field=field) from None


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
        errors = exc.errors(include_url=False)
        first = errors[0]
        loc = first.get("loc") or ()
        model_field = str(loc[0]) if loc else None
        field = field_names.get(model_field, model_field) if model_field else None
        msg = str(first.get("msg", "invalid value"))
        msg = msg.removeprefix("Value error, ")
        if first.get("type") == "string_too_long" and model_field == "content":
            msg = f"text is {len(kw.get('content') or ''):,} characters; the ledger keeps at most 1,000,000 per entry"
        if len(errors) > 1:
            msg += f" (and {len(errors) - 1} more problem(s))"
        raise source.error(msg, line=line, field=field) from None


def _has_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_has_nul(k) or _has_nul(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return any(_has_nul(v) for v in value)
    return False


def _decode_utf8(data: bytes, source: Source, *, base_offset: int = 0, line: int | None = None, text_for_lines: bytes | None = None) -> str:
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


# --------------------------------------------------------------------------- JSONL


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def iter_json_lines(stream: BinaryIO, source: Source) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-blank line, read one line at a time so that an
    oversize line is rejected after reading at most ``max_record_bytes`` of it."""
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
        if lineno == 1 and body.startswith(_BOM):
            body, start = body[3:], start + 3
        text = _decode_utf8(body, source, base_offset=start, line=lineno)
        if not text.strip():
            continue
        try:
            obj = json.loads(text, parse_constant=_reject_constant)
        except json.JSONDecodeError as exc:
            raise source.error(f"not valid JSON: {exc.msg} at column {exc.colno}", line=lineno) from None
        except ValueError as exc:
            raise source.error(f"not valid JSON: {exc}", line=lineno) from None
        except RecursionError:
            raise source.error("not valid JSON: nested too deeply", line=lineno) from None
        if not isinstance(obj, dict):
            raise source.error(f"expected one JSON object per line, got {_json_type(obj)}", line=lineno)
        yield lineno, obj


def is_conversation_record(obj: Mapping[str, Any]) -> bool:
    return all(k in obj for k in ("speaker", "text", "turn_id"))


def _need(obj: Mapping[str, Any], key: str, source: Source, line: int, *, types: tuple[type, ...] = (str,), what: str = "a string") -> Any:
    if key not in obj or obj[key] is None:
        raise source.error("missing required field", line=line, field=key)
    return _typed(obj, key, source, line, types=types, what=what)


def _typed(obj: Mapping[str, Any], key: str, source: Source, line: int, *, types: tuple[type, ...] = (str,), what: str = "a string") -> Any:
    v = obj[key]
    if (isinstance(v, bool) and bool not in types) or not isinstance(v, types):
        raise source.error(f"expected {what}, got {_json_type(v)}", line=line, field=key)
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
            f"{_short(kind)} is not a kind a file may carry; use one of {', '.join(EVENT_KINDS)}",
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
        raise source.error(f"expected an object, got {_json_type(attributes)}", line=line, field="attributes")
    attributes = dict(attributes or {})
    if "idempotency_key" in optional:
        # A file's own key is namespaced by scope (and kept apart from the derived "k_" keys) so
        # that one tenant's file cannot pre-empt another tenant's entries by guessing their key.
        given = optional.pop("idempotency_key")
        optional["idempotency_key"] = "x_" + digest("event-key", source.scope, given)[:32]
        attributes.setdefault("idempotency_key", given)
    visibility = source.visibility
    if obj.get("visibility") is not None:
        visibility = check_visibility(obj["visibility"], source=source, line=line)
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
    """A JSONL file -> (format, entries). ``kind`` forces ``conversation`` or ``events``;
    by default the first record decides, and every later line must be of the same format."""
    entries: list[NewEntry] = []
    make: Callable[[Mapping[str, Any], Source, int], NewEntry] | None = None
    fmt = kind
    for lineno, obj in iter_json_lines(stream, source):
        if make is None:
            if fmt is None:
                fmt = "conversation" if is_conversation_record(obj) else "events"
            make = conversation_entry if fmt == "conversation" else event_entry
        if len(entries) >= source.limits.max_entries:
            raise source.error(
                f"more than {source.limits.max_entries:,} entries in one file (Limits.max_entries); split the file",
                line=lineno,
            )
        entries.append(make(obj, source, lineno))
    if not entries:
        raise source.error("no entries: every line is blank")
    return fmt or "events", entries


# --------------------------------------------------------------------------- text and Markdown

_DATE_LINE = re.compile(r"^\s*date\s*:\s*(.*?)\s*$", re.IGNORECASE)
_FRONT_KEY = re.compile(r"^\s*([A-Za-z_][\w-]*)\s*:\s*(.*?)\s*$")
_ATX_HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$")


def _unquote(v: str) -> str:
    if len(v) >= 2 and v[0] == v[-1] and v[0] in "\"'":
        return v[1:-1]
    return v


def _front_matter(lines: list[str]) -> tuple[dict[str, tuple[str, int]], int]:
    """YAML-style ``---`` front matter: {key: (value, line)} and the index of the first body line."""
    if not lines or lines[0].strip() != "---":
        return {}, 0
    meta: dict[str, tuple[str, int]] = {}
    for i in range(1, min(len(lines), 200)):
        if lines[i].strip() in ("---", "..."):
            return meta, i + 1
        m = _FRONT_KEY.match(lines[i])
        if m:
            meta.setdefault(m.group(1).lower(), (_unquote(m.group(2)), i + 1))
    return {}, 0  # an opening rule with no closing one is a horizontal rule, not front matter


def document_entry(data: bytes, source: Source, *, markdown: bool) -> NewEntry:
    """A whole text/Markdown file -> one verbatim ``document`` entry.

    The idempotency key is (scope, file name, text): the same document dropped again, even
    copied with a new mtime, is a duplicate; an edited one is new evidence.
    """
    if data.startswith(_BOM):
        data = data[3:]
    text = _decode_utf8(data, source)
    nul = text.find("\x00")
    if nul >= 0:
        raise source.error("contains NUL bytes: this looks like a binary file, not text", line=text.count("\n", 0, nul) + 1)
    if not text.strip():
        raise source.error("the document is empty (only whitespace)")
    lines = text.splitlines()
    meta, body_start = _front_matter(lines)
    valid_at, valid_from = source.mtime, "file-mtime"
    if "date" in meta:
        value, line = meta["date"]
        valid_at, valid_from = parse_time(value, source, line=line, field="date"), "front-matter"
    else:
        first = next(((i, ln) for i, ln in enumerate(lines) if ln.strip()), None)
        if first is not None:
            m = _DATE_LINE.match(first[1])
            if m:
                valid_at = parse_time(_unquote(m.group(1)), source, line=first[0] + 1, field="date")
                valid_from = "date-line"
    title = meta["title"][0] if "title" in meta and meta["title"][0] else None
    if title is None and markdown:
        fence = False
        for ln in lines[body_start:]:
            if ln.lstrip().startswith(("```", "~~~")):
                fence = not fence
                continue
            m = None if fence else _ATX_HEADING.match(ln)
            if m:
                title = m.group(1).strip()
                break
    attributes = {"title": title or source.stem, "format": "markdown" if markdown else "text", "valid_at_from": valid_from}
    return build_entry(
        source,
        None,
        {},
        kind="document",
        scope=source.scope,
        content=text,
        valid_at=valid_at,
        source_uri=source.source_uri,
        source_ref=source.name,
        visibility=source.visibility,
        idempotency_key="k_" + digest("document", source.scope, source.name, text_hash(text))[:32],
        attributes=attributes,
    )


# --------------------------------------------------------------------------- e-mail


class _HTMLText(HTMLParser):
    """text/html -> plain text, for mails without a text/plain part (stdlib only, no scripts)."""

    _BLOCK = {"p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "pre", "table", "ul", "ol", "hr"}
    _SKIP = {"script", "style", "head", "title"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        if tag in self._SKIP:
            self._skip += 1
        elif tag in self._BLOCK:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in self._SKIP:
            self._skip = max(0, self._skip - 1)
        elif tag in self._BLOCK:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.parts.append(data)

    def text(self) -> str:
        lines = [" ".join(ln.split()) for ln in "".join(self.parts).splitlines()]
        out: list[str] = []
        for ln in lines:
            if ln or (out and out[-1]):
                out.append(ln)
        return "\n".join(out).strip()


def html_to_text(html: str) -> str:
    p = _HTMLText()
    p.feed(html)
    p.close()
    return p.text()


def _header_line(raw: bytes, name: str) -> int | None:
    m = re.search(rb"(?im)^" + re.escape(name.encode()) + rb"[ \t]*:", raw)
    return raw.count(b"\n", 0, m.start()) + 1 if m else None


def _addresses(msg: EmailMessage, name: str) -> list[str]:
    try:
        hdr = msg[name]
    except Exception:  # a header the policy cannot parse at all
        return []
    if hdr is None:
        return []
    return [str(a) for a in getattr(hdr, "addresses", ())]


def email_entry(data: bytes, source: Source) -> NewEntry:
    """An RFC 5322 message -> one ``document`` entry (the stdlib parser, ``policy.default``)."""
    msg = BytesParser(policy=policy.default).parsebytes(data)
    assert isinstance(msg, EmailMessage)
    if not any(h in msg for h in ("From", "Date", "Subject", "Message-ID")):
        raise source.error("does not look like an e-mail: no From, Date, Subject or Message-ID header")

    def header_error(name: str, message: str) -> IngestError:
        return source.error(message, line=_header_line(data, name), field=name)

    try:
        date_hdr = msg["Date"]
    except Exception:
        raise header_error("Date", "not an RFC 5322 date") from None
    if date_hdr is None:
        raise header_error("Date", "missing Date header (when the mail was sent is its valid time)")
    dt = getattr(date_hdr, "datetime", None)
    if dt is None:
        raise header_error("Date", f"not an RFC 5322 date ({_short(str(date_hdr))})")
    # The stdlib reads any year below 100 as a two-digit one (RFC 5322's obsolete syntax), so a
    # four-digit "0001" would silently become 2001: a year written with four digits must stay it.
    raw_date = next((str(v) for k, v in msg.raw_items() if k.lower() == "date"), "")
    written = re.search(r"\b(\d{4})\s+\d{1,2}:\d{2}", raw_date)
    if written and int(written.group(1)) != dt.year:
        raise header_error("Date", f"year {written.group(1)} is out of range for an e-mail date ({_short(str(date_hdr))})")

    actor = None
    if msg.get("From") is not None:
        try:
            addrs = msg["From"].addresses
        except Exception:
            addrs = ()
        specs = [a.addr_spec for a in addrs if a.addr_spec and a.addr_spec != "<>"]
        if not specs:
            raise header_error("From", f"no e-mail address in {_short(str(msg.get('From')))}")
        actor = specs[0]

    message_id = str(msg.get("Message-ID") or "").strip() or None
    refs = str(msg.get("References") or "").split()
    in_reply_to = str(msg.get("In-Reply-To") or "").strip() or None
    thread = refs[0] if refs else (in_reply_to or message_id)  # the thread's root mail: the session

    body_type = "text/plain"
    try:
        part = msg.get_body(preferencelist=("plain",))
        if part is not None:
            content = part.get_content()
        else:
            part = msg.get_body(preferencelist=("html",))
            if part is None:
                raise source.error("no text/plain or text/html body to ingest", field="body")
            content, body_type = html_to_text(part.get_content()), "text/html"
    except IngestError:
        raise
    except Exception as exc:  # unknown charset, broken transfer encoding
        raise source.error(f"cannot decode the body ({exc})", field="body") from None
    content = content.replace("\r\n", "\n")
    if not content.strip():
        raise source.error("the e-mail body is empty", field="body")
    if len(content.encode("utf-8")) > source.limits.max_record_bytes:
        raise source.error(
            f"body is larger than the {human_size(source.limits.max_record_bytes)} limit for one record",
            field="body",
        )
    attachments = [p.get_filename() for p in msg.iter_attachments() if p.get_filename()]
    attributes: dict[str, Any] = {
        "subject": str(msg.get("Subject") or ""),
        "from": str(msg.get("From") or ""),
        "to": _addresses(msg, "To"),
        "cc": _addresses(msg, "Cc"),
        "body_type": body_type,
    }
    if message_id:
        attributes["message_id"] = message_id
    if in_reply_to:
        attributes["in_reply_to"] = in_reply_to
    if attachments:
        attributes["attachments"] = attachments  # names only: attachment bytes are not evidence text
    return build_entry(
        source,
        None,
        {"valid_at": "Date", "actor": "From", "source_ref": "Message-ID", "session_id": "References"},
        kind="document",
        scope=source.scope,
        content=content,
        valid_at=dt,
        session_id=thread,
        actor=actor,
        source_uri=source.source_uri,
        source_ref=message_id or source.name,
        visibility=source.visibility,
        attributes=attributes,
    )


__all__ = [
    "CONVERSATION_REQUIRED",
    "DEFAULT_LIMITS",
    "EVENT_FIELDS",
    "EVENT_KINDS",
    "Limits",
    "Source",
    "check_scope",
    "check_visibility",
    "conversation_entry",
    "document_entry",
    "email_entry",
    "event_entry",
    "html_to_text",
    "is_conversation_record",
    "iter_json_lines",
    "parse_jsonl",
    "parse_time",
]
