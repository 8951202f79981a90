"""The inbox: drop a file into ``<home>/inbox``, memc ingests it and files it away.

One pass of :func:`process_inbox` looks at every regular, non-hidden file directly in the inbox:

* still being written (modified less than ``settle_seconds`` ago, or changed while it was
  read) -> left for the next pass;
* ingested (one atomic append per file) -> moved to ``inbox/processed/``;
* bad input -> moved to ``inbox/rejected/`` with ``<name>.error.json`` beside it (path, line,
  field, message of the first error, and ``errors``: every bad line found, up to 50, each with
  its file, line and field), so the sender can fix them all and drop it again.

Moves never overwrite (a taken name gets ``-1``, ``-2``... before its extension) and never
leave the memory home: names are plain file names, symlinks are rejected rather than followed,
and ``processed/`` / ``rejected/`` must be real folders inside the home. If the move after a
successful append fails, the file stays in the inbox and the next pass re-ingests it as a
no-op, so a crash at any point neither loses nor doubles evidence.
"""

from __future__ import annotations

import json
import os
import stat
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Sequence

from ledger.schema import PUBLIC
from ledger.store import Ledger
from memc.atomic import fsync_dir
from memc.home import MemcHome
from ingestion.errors import IngestError
from ingestion.formats import DEFAULT_LIMITS, Limits, check_scope, check_visibility
from ingestion.ingest import FileReport, format_for, ingest_file

PROCESSED = "processed"
REJECTED = "rejected"
ERROR_SUFFIX = ".error.json"
SETTLE_SECONDS = 1.0


# --------------------------------------------------------------------------- reports


@dataclass(frozen=True)
class ProcessedFile:
    name: str  # the name it had in the inbox
    moved_to: Path
    report: FileReport


@dataclass(frozen=True)
class RejectedFile:
    name: str
    error: IngestError
    moved_to: Path | None = None  # None when the name itself was the problem (nothing to move)
    error_file: Path | None = None


@dataclass(frozen=True)
class DeferredFile:
    name: str
    reason: str


@dataclass
class InboxReport:
    """One inbox pass: what was ingested, rejected, and left for the next pass."""

    processed: list[ProcessedFile] = field(default_factory=list)
    rejected: list[RejectedFile] = field(default_factory=list)
    deferred: list[DeferredFile] = field(default_factory=list)

    @property
    def appended(self) -> int:
        return sum(p.report.appended for p in self.processed)

    def summary(self) -> str:
        if not (self.processed or self.rejected or self.deferred):
            return "inbox: nothing to do"
        lines = [f"processed {p.name} -> {p.moved_to.parent.name}/{p.moved_to.name}: {p.report.status}" for p in self.processed]
        lines += [
            f"rejected {r.name!r}: {r.error}" + (f" (and {len(r.error.more)}{'+' if r.error.truncated else ''} more)" if r.error.more else "")
            for r in self.rejected
        ]
        lines += [f"left {d.name!r} for the next pass: {d.reason}" for d in self.deferred]
        lines.append(
            f"inbox: {len(self.processed)} processed ({self.appended} new entries), "
            f"{len(self.rejected)} rejected, {len(self.deferred)} left for later"
        )
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "processed": [{"name": p.name, "moved_to": str(p.moved_to), **p.report.to_dict()} for p in self.processed],
            "rejected": [
                {
                    "name": r.name,
                    "moved_to": str(r.moved_to) if r.moved_to else None,
                    "error_file": str(r.error_file) if r.error_file else None,
                    **r.error.to_dict(),
                }
                for r in self.rejected
            ],
            "deferred": [{"name": d.name, "reason": d.reason} for d in self.deferred],
        }


# --------------------------------------------------------------------------- names and folders


def check_inbox_name(name: Any) -> str:
    """An inbox name must be a plain file name: no NUL, no separator, no '..', not absolute.

    Names reach the inbox from outside (a sensor's run tag, an upload handler), so anything
    that could address a path other than ``inbox/<name>`` is refused before it is joined.
    """
    if not isinstance(name, str) or not name:
        raise IngestError("an inbox name must be a non-empty file name", path=repr(name))
    shown = name.replace("\x00", "\\x00")
    if "\x00" in name:
        raise IngestError("the name contains a NUL byte", path=shown)
    if name in (".", ".."):
        raise IngestError("'.' and '..' are not file names", path=shown)
    if "/" in name or (os.sep in name) or (os.altsep and os.altsep in name) or os.path.isabs(name):
        raise IngestError("the name contains a path separator or is absolute; inbox names are plain file names", path=shown)
    if any(ord(c) < 32 or ord(c) == 127 for c in name):
        raise IngestError("the name contains control characters", path=repr(name))
    if len(os.fsencode(name)) > 255:
        raise IngestError("the name is longer than 255 bytes", path=shown[:60] + "...")
    return name


def _inside(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root.resolve())
        return True
    except (ValueError, RuntimeError, OSError):  # outside, a symlink loop, unreadable
        return False


def _real_dir(path: Path, home: MemcHome, *, create: bool) -> Path:
    """A folder we may write into: a real directory (not a symlink) inside the memory home."""
    if create:
        try:
            path.mkdir(exist_ok=True)
        except FileExistsError:
            pass
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return path
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode) or not _inside(path, home.root):
        raise IngestError(f"must be a real folder inside the memory home {home.root}", path=str(path))
    return path


def _suffixed(name: str, n: int) -> str:
    if n == 0:
        return name
    p = Path(name)
    stem, suffix = (p.stem, p.suffix) if p.stem else (name, "")
    return f"{stem}-{n}{suffix}"


def _free_name(folder: Path, name: str, *, with_error_file: bool = False) -> Path:
    for n in range(100_000):
        cand = folder / _suffixed(name, n)
        if os.path.lexists(cand) or (with_error_file and os.path.lexists(f"{cand}{ERROR_SUFFIX}")):
            continue
        return cand
    raise IngestError("no free name left", path=str(folder / name))


def _move(src: Path, folder: Path, name: str, *, with_error_file: bool = False, planned: Path | None = None) -> Path:
    """Move ``src`` into ``folder`` without ever replacing a file there.

    ``os.link`` fails if the target exists, so two passes racing for a name cannot clobber each
    other; the link is taken of the entry itself (a symlink stays a symlink, its target is
    never touched). Filesystems without hard links fall back to a checked rename.
    """
    cand = planned or _free_name(folder, name, with_error_file=with_error_file)
    for _ in range(1000):
        try:
            os.link(src, cand, follow_symlinks=False)
        except FileExistsError:
            cand = _free_name(folder, name, with_error_file=with_error_file)
            continue
        except FileNotFoundError:
            raise
        except (NotImplementedError, OSError):  # no hard links here (some network/FUSE filesystems)
            if os.path.lexists(cand):
                cand = _free_name(folder, name, with_error_file=with_error_file)
                continue
            os.rename(src, cand)
            break
        os.unlink(src)
        break
    else:
        raise IngestError("could not find a free name to move the file to", path=str(src))
    fsync_dir(folder, strict=False)
    fsync_dir(src.parent, strict=False)
    return cand


def _write_error(path: Path, payload: dict[str, Any]) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(payload, f, indent=2, ensure_ascii=False)
        f.write("\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def pending_inbox_files(home: MemcHome, *, settle_seconds: float = 0.0) -> list[Path]:
    """The entries :func:`process_inbox` would look at, sorted: cheap enough for a sensor to poll.

    One ``scandir`` of the inbox, no file is opened. Includes entries that will be rejected
    (symlinks, unsupported types) so that a pass runs and moves them out of the way; with
    ``settle_seconds`` > 0, leaves out files modified more recently than that.
    """
    inbox = home.inbox
    out: list[Path] = []
    now = time.time()
    try:
        with os.scandir(inbox) as it:
            for d in it:
                if d.name.startswith("."):
                    continue
                try:
                    if d.is_dir(follow_symlinks=False):
                        continue
                    if settle_seconds > 0 and abs(now - d.stat(follow_symlinks=False).st_mtime) < settle_seconds:
                        continue
                except FileNotFoundError:
                    continue
                out.append(Path(d.path))
    except (FileNotFoundError, NotADirectoryError):
        return []
    return sorted(out)


# --------------------------------------------------------------------------- one pass


def process_inbox(
    home: MemcHome,
    ledger: Ledger,
    *,
    scope: str = "default",
    visibility: Sequence[str] = (PUBLIC,),
    names: Iterable[str] | None = None,
    limits: Limits = DEFAULT_LIMITS,
    settle_seconds: float = SETTLE_SECONDS,
) -> InboxReport:
    """Ingest every settled file directly in ``home.inbox`` (or only ``names``), one append each.

    ``names`` lets a job process exactly the file a sensor saw; each name is checked with
    :func:`check_inbox_name` and a bad one is reported as rejected without touching the disk.
    Errors that are not about the input (a damaged ledger, a full disk) propagate and leave the
    file in the inbox.
    """
    check_scope(scope)
    visibility = check_visibility(tuple(visibility))
    report = InboxReport()
    inbox = _real_dir(home.inbox, home, create=False)
    if not inbox.is_dir():
        return report
    processed_dir = _real_dir(inbox / PROCESSED, home, create=True)
    rejected_dir = _real_dir(inbox / REJECTED, home, create=True)

    if names is None:
        candidates = [p.name for p in pending_inbox_files(home)]
    else:
        candidates = []
        for name in [names] if isinstance(names, str) else names:
            try:
                candidates.append(check_inbox_name(name))
            except IngestError as err:  # nothing to move: the name itself was the attack
                report.rejected.append(RejectedFile(name=name if isinstance(name, str) else repr(name), error=err))

    for name in candidates:
        path = inbox / name
        if name.startswith("."):
            report.rejected.append(RejectedFile(name=name, error=IngestError("hidden files are not ingested", path=str(path))))
            continue
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            report.deferred.append(DeferredFile(name, "not in the inbox (already processed by another pass?)"))
            continue
        if stat.S_ISDIR(st.st_mode):
            continue  # processed/, rejected/ and any folder someone made: not inbox items
        if stat.S_ISLNK(st.st_mode):
            where = "outside the inbox" if not _inside(path, inbox) else "elsewhere in the inbox"
            _reject(report, path, rejected_dir, IngestError(
                f"is a symbolic link pointing {where}; links are not followed, copy the file itself into the inbox",
                path=str(path),
            ))
            continue
        try:
            check_inbox_name(name)
        except IngestError as err:
            _reject(report, path, rejected_dir, err)
            continue
        if not stat.S_ISREG(st.st_mode):
            _reject(report, path, rejected_dir, IngestError("is not a regular file (a FIFO, socket or device cannot be ingested)", path=str(path)))
            continue
        age = abs(time.time() - st.st_mtime)  # abs: an mtime far in the future (clock skew) must not stall it forever
        if age < settle_seconds:
            report.deferred.append(DeferredFile(name, f"still being written (modified {age:.1f} s ago)"))
            continue
        if format_for(name) is None:
            _reject(report, path, rejected_dir, IngestError(
                f"unsupported file type {Path(name).suffix or '(no extension)'!r}: "
                "memc ingests .jsonl/.ndjson, .txt, .md and .eml",
                path=str(path),
            ))
            continue
        planned = _free_name(processed_dir, name)
        try:
            fr = ingest_file(
                ledger,
                path,
                scope=scope,
                visibility=visibility,
                limits=limits,
                source_uri=planned.resolve().as_uri(),  # where the file will be kept
                follow_symlinks=False,
                ingested_by="memc:inbox",
            )
        except IngestError as err:
            if err.retryable:
                report.deferred.append(DeferredFile(name, err.message))
            else:
                _reject(report, path, rejected_dir, err)
            continue
        try:
            moved = _move(path, processed_dir, name, planned=planned)
        except FileNotFoundError:
            report.deferred.append(DeferredFile(name, "moved away by another pass after ingesting"))
            continue
        report.processed.append(ProcessedFile(name=name, moved_to=moved, report=fr))
    return report


def _reject(report: InboxReport, path: Path, rejected_dir: Path, err: IngestError) -> None:
    name = path.name
    try:
        moved = _move(path, rejected_dir, name, with_error_file=True)
    except FileNotFoundError:
        report.deferred.append(DeferredFile(name, "disappeared before it could be rejected"))
        return
    error_file = moved.with_name(moved.name + ERROR_SUFFIX)
    facts = err.to_dict()
    # Each error names its file by the name it was dropped as (its path is the inbox's copy).
    facts["errors"] = [{"file": name, **e} for e in facts["errors"]]
    payload = {
        "file": name,
        "rejected_as": moved.name,
        **facts,
        "rejected_at": datetime.now(timezone.utc).isoformat(),
    }
    _write_error(error_file, payload)
    report.rejected.append(RejectedFile(name=name, error=err, moved_to=moved, error_file=error_file))
