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
``trajectories`` (JSONL)
    One agent episode per line: ``task``, ``steps`` (ordered; each ``action`` or ``tool``, optional
    ``args`` object and ``observation`` text) and ``outcome`` (``"success"``, ``"failure"`` or a
    score in [0, 1]), with ``valid_at`` (or ``timestamp``); optional ``trajectory_id`` (the
    source ref), ``agent`` (the actor), ``session_id, visibility, attributes, idempotency_key``.
    One ``event`` entry per line whose content is the trajectory as text and whose
    ``attributes.trajectory`` keeps the steps for skill mining (views/skills.py). Recognised when
    the first record has ``task``, ``steps`` and ``outcome``; unknown keys are rejected, and an
    error names the step and key (``steps[2].action``).
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
from ingestion.formats.trajectories import (
    TRAJECTORY_FIELDS,
    Trajectory,
    is_trajectory_record,
    stored_trajectory,
    trajectory_entry,
)  # fmt: skip

__all__ = [
    "CONVERSATION_REQUIRED", "DEFAULT_LIMITS", "EVENT_FIELDS", "EVENT_KINDS", "Limits", "Source", "build_entry",
    "check_scope", "check_visibility", "conversation_entry", "document_entry", "email_entry", "event_entry",
    "html_to_text", "human_size", "is_conversation_record", "iter_json_lines", "parse_jsonl", "parse_time",
    "TRAJECTORY_FIELDS", "Trajectory", "is_trajectory_record", "stored_trajectory", "trajectory_entry",
]  # fmt: skip
