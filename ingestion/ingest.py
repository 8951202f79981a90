"""Files -> ledger: one file, one atomic append.

A file is opened once, checked (regular file, size limits) before anything is read, parsed and
validated completely, and only then appended with a single :meth:`Ledger.append` call. So a bad
file commits nothing, and a good one commits all of its new entries at once. The ledger skips
entries whose idempotency key it already holds, which makes re-ingesting a file a no-op and
re-ingesting a grown conversation file append only the new turns.

Every entry records who ingested it (``ingested_by``): the home's operator (``memc:cli``), the
inbox (``memc:inbox``), or the principal a caller acts as (``memc ingest --as bob``), in which
case the write rule applies (:func:`memc.visibility.may_write`: bob may only write evidence he
is among those who see). A file is read under its real path: the same file reached through a
symlink or a ``..`` path is the same evidence, so ingesting it again is a no-op, and a symlink
found in a folder that leads out of that folder is refused unless ``follow_symlinks`` allows it
(a link to /etc/passwd in a shared drop folder must not be read without a word).
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, BinaryIO, Iterable, Sequence

from ledger.schema import PUBLIC, NewEntry
from ledger.store import Ledger
from memc.visibility import may_write
from ingestion.errors import IngestError
from ingestion.formats import (
    DEFAULT_LIMITS,
    Limits,
    Source,
    check_scope,
    check_visibility,
    document_entry,
    email_entry,
    human_size,
    parse_jsonl,
)

# Extension -> format family. "jsonl" is decided per file: conversation, trajectories or events.
EXTENSIONS: dict[str, str] = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".txt": "text",
    ".text": "text",
    ".md": "markdown",
    ".markdown": "markdown",
    ".eml": "email",
}
# What a caller may force with ``format=``; the report names one of the last six.
FORMAT_CHOICES = ("jsonl", "conversation", "events", "trajectories", "text", "markdown", "email")
_SUPPORTED = ".jsonl/.ndjson (conversation turns, trajectories or events), .txt, .md and .eml"


def format_for(path: str | os.PathLike[str]) -> str | None:
    """The format family a file name implies, or None for an extension memc does not ingest."""
    return EXTENSIONS.get(Path(path).suffix.lower())


# --------------------------------------------------------------------------- reports


@dataclass(frozen=True)
class FileReport:
    """What one file contributed: the numbers a CLI prints and an asset records as metadata."""

    path: Path
    format: str
    parsed: int  # entries read from the file
    appended: int  # new entries committed now
    duplicates: int  # entries the ledger already held (or repeated inside the file)
    first_seq: int | None = None
    last_seq: int | None = None
    source_uri: str | None = None

    @property
    def noop(self) -> bool:
        return self.appended == 0

    @property
    def status(self) -> str:
        if self.noop:
            return "already ingested (no-op)"
        if self.duplicates:
            return f"appended {self.appended} new, {self.duplicates} already present"
        return f"appended {self.appended}"

    def summary(self) -> str:
        seqs = f", seq {self.first_seq}..{self.last_seq}" if self.first_seq is not None else ""
        return f"{self.path}: {self.format}, {self.parsed} parsed, {self.status}{seqs}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "format": self.format,
            "parsed": self.parsed,
            "appended": self.appended,
            "duplicates": self.duplicates,
            "first_seq": self.first_seq,
            "last_seq": self.last_seq,
            "status": self.status,
        }


@dataclass
class IngestReport:
    """Per-file results of one :func:`ingest_paths` call, in the order the files were ingested."""

    files: list[FileReport] = field(default_factory=list)
    head: int = 0  # the ledger head after the last append (the watermark views build against)

    @property
    def parsed(self) -> int:
        return sum(f.parsed for f in self.files)

    @property
    def appended(self) -> int:
        return sum(f.appended for f in self.files)

    @property
    def duplicates(self) -> int:
        return sum(f.duplicates for f in self.files)

    def summary(self) -> str:
        if not self.files:
            return f"no files to ingest (memc ingests {_SUPPORTED})"
        lines = [f.summary() for f in self.files]
        lines.append(
            f"{len(self.files)} file(s): {self.parsed} parsed, {self.appended} appended, "
            f"{self.duplicates} duplicate(s); ledger head {self.head}"
        )
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "files": [f.to_dict() for f in self.files],
            "parsed": self.parsed,
            "appended": self.appended,
            "duplicates": self.duplicates,
            "head": self.head,
        }


@dataclass(frozen=True)
class ParsedFile:
    """A file read and validated, not yet appended (what ``--dry-run`` shows)."""

    path: Path
    format: str
    entries: tuple[NewEntry, ...]
    source_uri: str


# --------------------------------------------------------------------------- reading one file


def _display(path: str | os.PathLike[str]) -> str:
    return os.fspath(path) if isinstance(path, (str, os.PathLike)) else repr(path)


def _check_path_text(path: str | os.PathLike[str]) -> str:
    text = _display(path)
    if "\x00" in text:
        raise IngestError("the path contains a NUL byte", path=text.replace("\x00", "\\x00"))
    return text


def _open(path: Path, display: str, *, follow_symlinks: bool) -> int:
    """Open without blocking (a FIFO must not hang the ingester) and, for the inbox, without
    following a symlink swapped in after the directory was listed."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    if not follow_symlinks:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        return os.open(path, flags)
    except FileNotFoundError:
        # collect_files checked existence first, so a vanished file was moved by someone else.
        raise IngestError("no such file", path=display, retryable=True) from None
    except PermissionError:
        raise IngestError("permission denied: the file cannot be read", path=display) from None
    except IsADirectoryError:
        raise IngestError("is a directory, not a file", path=display) from None
    except OSError as exc:
        if exc.errno == errno.ELOOP and not follow_symlinks:
            raise IngestError("is a symbolic link; copy the file itself instead", path=display) from None
        raise IngestError(f"cannot open the file: {exc.strerror or exc}", path=display) from None


class _Bounded:
    """Reads at most the size the file had when it was checked, so a file growing while it is
    read cannot push past the size limit (the change is detected afterwards and reported)."""

    def __init__(self, f: BinaryIO, size: int):
        self._f = f
        self._left = size

    def readline(self, limit: int = -1) -> bytes:
        if self._left <= 0:
            return b""
        n = self._left if limit < 0 else min(limit, self._left)
        data = self._f.readline(n)
        self._left -= len(data)
        return data

    def read(self, n: int = -1) -> bytes:
        n = self._left if n < 0 else min(n, self._left)
        data = self._f.read(n) if n > 0 else b""
        self._left -= len(data)
        return data


def parse_file(
    path: str | os.PathLike[str],
    *,
    scope: str = "default",
    visibility: Sequence[str] = (PUBLIC,),
    format: str | None = None,
    limits: Limits = DEFAULT_LIMITS,
    source_uri: str | None = None,
    follow_symlinks: bool = True,
    ingested_by: str | None = None,
) -> ParsedFile:
    """Read and validate one file into entries without touching the ledger.

    ``source_uri`` defaults to the resolved file URI (the inbox passes where the file will be
    kept after processing). ``follow_symlinks=False`` refuses a symlink at the final component.
    """
    display = _check_path_text(path)
    scope = check_scope(scope)
    visibility = check_visibility(tuple(visibility))
    p = Path(path)
    if format is not None and format not in FORMAT_CHOICES:
        raise IngestError(f"unknown format {format!r}; use one of {', '.join(FORMAT_CHOICES)}", path=display, field="format")
    family = format or format_for(p)
    if family is None:
        raise IngestError(
            f"unsupported file type {p.suffix or '(no extension)'!r}: memc ingests {_SUPPORTED}", path=display
        )
    fd = _open(p, display, follow_symlinks=follow_symlinks)
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise IngestError("is a directory, not a file", path=display)
        if not stat.S_ISREG(st.st_mode):
            raise IngestError("is not a regular file (a FIFO, socket or device cannot be ingested)", path=display)
        f = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    with f:
        if st.st_size == 0:
            raise IngestError("empty file (0 bytes)", path=display)
        if st.st_size > limits.max_file_bytes:
            raise IngestError(
                f"file is {human_size(st.st_size)}; the limit is {human_size(limits.max_file_bytes)} per file "
                "(Limits.max_file_bytes)",
                path=display,
            )
        if family in ("text", "markdown") and st.st_size > limits.max_record_bytes:
            raise IngestError(
                f"document is {human_size(st.st_size)}; one document may be at most "
                f"{human_size(limits.max_record_bytes)} (Limits.max_record_bytes)",
                path=display,
            )
        # Named by what it is, not by the path that reached it: through a symlink or "..", the
        # same file yields the same entries (a document's source ref is its file name).
        real = p.resolve()
        if source_uri is None:
            source_uri = real.as_uri()
        source = Source(
            display=display,
            name=real.name,
            stem=real.stem,
            source_uri=source_uri,
            scope=scope,
            visibility=visibility,
            mtime=datetime.fromtimestamp(st.st_mtime, tz=timezone.utc),
            limits=limits,
            ingested_by=ingested_by,
        )
        stream = _Bounded(f, st.st_size)
        try:
            if family in ("jsonl", "conversation", "events", "trajectories"):
                fmt, entries = parse_jsonl(stream, source, kind=None if family == "jsonl" else family)
            else:
                data = stream.read()
                if family == "email":
                    entries = [email_entry(data, source)]
                else:
                    entries = [document_entry(data, source, markdown=family == "markdown")]
                fmt = family
        except OSError as exc:  # e.g. EIO, or EISDIR on platforms where a directory opens
            raise IngestError(f"cannot read the file: {exc.strerror or exc}", path=display) from None
        after = os.fstat(f.fileno())
        if (after.st_size, after.st_mtime_ns) != (st.st_size, st.st_mtime_ns):
            raise IngestError(
                "the file changed while it was being read; ingest it again once it is complete",
                path=display,
                retryable=True,
            )
    return ParsedFile(path=p, format=fmt, entries=tuple(entries), source_uri=source_uri)


def ingest_file(
    ledger: Ledger,
    path: str | os.PathLike[str],
    *,
    scope: str = "default",
    visibility: Sequence[str] = (PUBLIC,),
    format: str | None = None,
    limits: Limits = DEFAULT_LIMITS,
    source_uri: str | None = None,
    follow_symlinks: bool = True,
    ingested_by: str | None = None,
    write_check: bool = False,
) -> FileReport:
    """Parse one file and append all of its entries in one atomic ledger append.

    With ``write_check`` the write rule holds for ``ingested_by`` (a principal acting as
    itself): one entry it may not write refuses the whole file, before anything is appended."""
    parsed = parse_file(
        path,
        scope=scope,
        visibility=visibility,
        format=format,
        limits=limits,
        source_uri=source_uri,
        follow_symlinks=follow_symlinks,
        ingested_by=ingested_by,
    )
    if write_check:
        check_write(parsed, ingested_by)
    result = ledger.append(parsed.entries)
    return FileReport(
        path=parsed.path,
        format=parsed.format,
        parsed=len(parsed.entries),
        appended=result.appended,
        duplicates=result.duplicates,
        first_seq=result.first_seq,
        last_seq=result.last_seq,
        source_uri=parsed.source_uri,
    )


def check_write(parsed: ParsedFile, writer: str | None) -> None:
    """Refuse a file holding an entry ``writer`` may not write (see :func:`may_write`)."""
    for i, e in enumerate(parsed.entries):
        if writer is None or not may_write(writer, e.visibility):
            raise IngestError(
                f"entry {i + 1}: {writer!r} may not write evidence visible to {list(e.visibility)} "
                f"(a visibility must include {writer!r} or {PUBLIC!r}; an operator ingests without --as)",
                path=str(parsed.path),
                field="visibility",
            )


# --------------------------------------------------------------------------- many files


def collect_files(
    paths: Iterable[str | os.PathLike[str]] | str | os.PathLike[str],
    *,
    format: str | None = None,
    follow_symlinks: bool = False,
) -> list[Path]:
    """Expand the paths a user named into the files to ingest, checking all of them first so a
    typo in the last argument fails before the first file is committed.

    Directories are walked in sorted order, skipping hidden files and folders and files with an
    extension memc does not ingest; symlinked folders are not followed (no loops). A symlinked
    file inside a folder whose target lies outside that folder is refused unless
    ``follow_symlinks``; a file named explicitly is the caller's own choice and is read. A file
    named explicitly must have a known extension unless ``format`` says how to read it. The same
    file reached by two paths is listed once.
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    out: list[Path] = []
    seen: set[Path] = set()

    def add(p: Path) -> None:
        key = p.resolve()
        if key not in seen:
            seen.add(key)
            out.append(p)

    for raw in paths:
        display = _check_path_text(raw)
        p = Path(raw)
        try:
            st = p.stat()
        except FileNotFoundError:
            raise IngestError("no such file or directory", path=display) from None
        except PermissionError:
            raise IngestError("permission denied", path=display) from None
        except OSError as exc:
            raise IngestError(f"cannot access: {exc.strerror or exc}", path=display) from None
        if stat.S_ISDIR(st.st_mode):
            top = p.resolve()
            for root, dirs, files in os.walk(p, followlinks=False, onerror=_raise_walk_error):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                for name in sorted(files):
                    if not name.startswith(".") and format_for(name) is not None:
                        f = Path(root) / name
                        if f.is_symlink() and not follow_symlinks and not f.resolve().is_relative_to(top):
                            raise IngestError(
                                f"is a symbolic link to {f.resolve()}, outside the folder {display}; "
                                "copy the file in, or pass --follow-symlinks to read it",
                                path=_display(f),
                            )
                        add(f)
            continue
        if format is None and format_for(p) is None:
            raise IngestError(
                f"unsupported file type {p.suffix or '(no extension)'!r}: memc ingests {_SUPPORTED}",
                path=display,
            )
        add(p)
    return out


def _raise_walk_error(exc: OSError) -> None:
    raise IngestError(f"cannot list the folder: {exc.strerror or exc}", path=getattr(exc, "filename", None))


def ingest_paths(
    ledger: Ledger,
    paths: Iterable[str | os.PathLike[str]] | str | os.PathLike[str],
    *,
    scope: str = "default",
    visibility: Sequence[str] = (PUBLIC,),
    format: str | None = None,
    limits: Limits = DEFAULT_LIMITS,
    ingested_by: str = "memc:cli",
    write_check: bool = False,
    follow_symlinks: bool = False,
) -> IngestReport:
    """Ingest files and folders, each file as its own atomic append.

    On a bad file this raises :class:`IngestError`; that file committed nothing, the files
    before it stay committed, and re-running after the fix is safe because they are no-ops.
    ``ingested_by`` is recorded on every entry; ``write_check`` applies the write rule to it.
    """
    check_scope(scope)
    visibility = check_visibility(tuple(visibility))
    if write_check and not may_write(ingested_by, visibility):
        # Before any file is read: the visibility the caller gave applies to all of them.
        raise IngestError(
            f"{ingested_by!r} may not write evidence visible to {list(visibility)} "
            f"(a visibility must include {ingested_by!r} or {PUBLIC!r})",
            field="visibility",
        )
    files = collect_files(paths, format=format, follow_symlinks=follow_symlinks)
    report = IngestReport()
    for path in files:
        report.files.append(
            ingest_file(
                ledger, path, scope=scope, visibility=visibility, format=format, limits=limits,
                ingested_by=ingested_by, write_check=write_check,
            )
        )
    report.head = ledger.head()
    return report
