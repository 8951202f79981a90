"""E-mail (.eml): one ``document`` entry per message, by the standard library's parser: the
text/plain body (or the text/html body as text), the From address as actor, the Date header as
valid time, the Message-ID as source ref."""

from __future__ import annotations

import re
from email import policy
from email.message import EmailMessage
from email.parser import BytesParser
from html.parser import HTMLParser
from typing import Any

from ledger.schema import NewEntry

from ingestion.errors import IngestError
from ingestion.formats.common import Source, build_entry, human_size, short


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
        raise header_error("Date", f"not an RFC 5322 date ({short(str(date_hdr))})")
    # The stdlib reads any year below 100 as a two-digit one (RFC 5322's obsolete syntax), so a
    # four-digit "0001" would silently become 2001: a year written with four digits must stay it.
    raw_date = next((str(v) for k, v in msg.raw_items() if k.lower() == "date"), "")
    written = re.search(r"\b(\d{4})\s+\d{1,2}:\d{2}", raw_date)
    if written and int(written.group(1)) != dt.year:
        raise header_error("Date", f"year {written.group(1)} is out of range for an e-mail date ({short(str(date_hdr))})")

    actor = None
    if msg.get("From") is not None:
        try:
            addrs = msg["From"].addresses
        except Exception:
            addrs = ()
        specs = [a.addr_spec for a in addrs if a.addr_spec and a.addr_spec != "<>"]
        if not specs:
            raise header_error("From", f"no e-mail address in {short(str(msg.get('From')))}")
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
