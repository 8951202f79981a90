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

from ingestion.formats.common import (
    DEFAULT_LIMITS,
    Limits,
    Source,
    build_entry,
    check_scope,
    check_visibility,
    human_size,
    parse_time,
)  # fmt: skip
from ingestion.formats.documents import document_entry
from ingestion.formats.jsonl import (
    CONVERSATION_REQUIRED,
    EVENT_FIELDS,
    EVENT_KINDS,
    conversation_entry,
    event_entry,
    is_conversation_record,
    iter_json_lines,
    parse_jsonl,
)  # fmt: skip
from ingestion.formats.mail import email_entry, html_to_text

__all__ = [
    "CONVERSATION_REQUIRED", "DEFAULT_LIMITS", "EVENT_FIELDS", "EVENT_KINDS", "Limits", "Source", "build_entry",
    "check_scope", "check_visibility", "conversation_entry", "document_entry", "email_entry", "event_entry",
    "html_to_text", "human_size", "is_conversation_record", "iter_json_lines", "parse_jsonl", "parse_time",
]  # fmt: skip
