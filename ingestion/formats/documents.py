"""Text and Markdown files: one ``document`` entry each, verbatim; ``valid_at`` from front matter
``date:`` or a leading ``Date:`` line, else the file's mtime."""

from __future__ import annotations

import re

from ledger.schema import NewEntry
from memc.ids import digest, text_hash

from ingestion.formats.common import BOM, Source, build_entry, decode_utf8, parse_time

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
    if data.startswith(BOM):
        data = data[3:]
    text = decode_utf8(data, source)
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
