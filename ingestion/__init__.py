"""Ingestion: source files -> validated ledger entries, one atomic append per file.

Plain Python (no Dagster): the CLI calls :func:`ingest_paths`, the inbox sensor polls
:func:`pending_inbox_files` and its job calls :func:`process_inbox`. Bad input raises
:class:`IngestError` naming file, line and field, and commits nothing of that file.
"""

from ingestion.errors import IngestError
from ingestion.formats import DEFAULT_LIMITS, EVENT_KINDS, Limits
from ingestion.inbox import (
    DeferredFile,
    InboxReport,
    ProcessedFile,
    RejectedFile,
    check_inbox_name,
    check_inbox_path,
    pending_inbox_files,
    process_inbox,
)
from ingestion.ingest import (
    EXTENSIONS,
    FORMAT_CHOICES,
    FileReport,
    IngestReport,
    ParsedFile,
    collect_files,
    format_for,
    ingest_file,
    ingest_paths,
    parse_file,
)
from ingestion.settings import IngestSettings, ResolvedVisibility, load_ingest_settings, public_default_warning, resolve_visibility

__all__ = [
    "DEFAULT_LIMITS",
    "EVENT_KINDS",
    "EXTENSIONS",
    "FORMAT_CHOICES",
    "DeferredFile",
    "FileReport",
    "InboxReport",
    "IngestError",
    "IngestReport",
    "Limits",
    "ParsedFile",
    "ProcessedFile",
    "RejectedFile",
    "IngestSettings",
    "ResolvedVisibility",
    "check_inbox_name",
    "check_inbox_path",
    "collect_files",
    "format_for",
    "ingest_file",
    "ingest_paths",
    "load_ingest_settings",
    "parse_file",
    "pending_inbox_files",
    "process_inbox",
    "public_default_warning",
    "resolve_visibility",
]
