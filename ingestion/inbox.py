"""The inbox: drop a file into ``<home>/inbox``, memc ingests it and files it away.

One pass of :func:`process_inbox` looks at every regular, non-hidden file in the inbox and its
folders (not ``processed/`` and ``rejected/``):

* still being written (modified less than ``settle_seconds`` ago, or changed while it was
  read) -> left for the next pass;
* ingested (one atomic append per file) -> moved to ``inbox/processed/``, under the same folder
  it was dropped in (``inbox/team/a.jsonl`` -> ``inbox/processed/team/a.jsonl``);
* bad input -> moved to ``inbox/rejected/`` (same folder) with ``<name>.error.json`` beside it
  (path, line, field, message of the first error, and ``errors``: every bad line found, up to
  50, each with its file, line and field), so the sender can fix them all and drop it again.

Scope and visibility come from sidecar files, read on every pass (write them before the files
they are for): a folder's ``memc-inbox.toml`` applies to every file in that folder and in its
subfolders (a subfolder's own sidecar overrides the keys it sets), and ``<file>.memc.toml``
beside one file overrides both for that file and moves with it::

    # inbox/team/memc-inbox.toml
    scope = "team"
    visibility = ["elena", "priya"]   # or "public"

Without a sidecar a file lands in scope ``default`` with the home's default visibility
(``[ingest] default_visibility`` in memc.toml, ``public`` unless set; ingestion/settings.py),
and the report warns when that made entries public. A sidecar that cannot be read or holds a
bad value rejects every file under it, its error.json naming the sidecar, line and field.

Moves never overwrite (a taken name gets ``-1``, ``-2``... before its extension) and never
leave the memory home: names are plain file names in real folders, symlinks are rejected rather
than followed, and ``processed/`` / ``rejected/`` must be real folders inside the home. If the
move after a successful append fails, the file stays in the inbox and the next pass re-ingests
it as a no-op, so a crash at any point neither loses nor doubles evidence.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Sequence

from ledger.store import Ledger
from memc.atomic import fsync_dir
from memc.home import MemcHome
from ingestion.errors import IngestError
from ingestion.formats import DEFAULT_LIMITS, Limits, check_scope, check_visibility
from ingestion.ingest import FileReport, format_for, ingest_file
from ingestion.settings import IngestSettings, load_ingest_settings, public_default_warning, read_toml, resolve_visibility

PROCESSED = "processed"
REJECTED = "rejected"
ERROR_SUFFIX = ".error.json"
SETTLE_SECONDS = 1.0
FOLDER_SIDECAR = "memc-inbox.toml"
FILE_SIDECAR_SUFFIX = ".memc.toml"
SIDECAR_KEYS = ("scope", "visibility")
DEFAULT_SCOPE = "default"
# How a sender gives the inbox a visibility: named in errors and warnings.
HOW = f"visibility = [...] in a {FOLDER_SIDECAR} (its folder) or <file>{FILE_SIDECAR_SUFFIX} (one file)"


# --------------------------------------------------------------------------- reports


@dataclass(frozen=True)
class ProcessedFile:
    name: str  # the path it had in the inbox, relative to it ("chat.jsonl", "team/chat.jsonl")
    moved_to: Path
    report: FileReport
    scope: str = DEFAULT_SCOPE
    visibility: tuple[str, ...] = ()
    settings_from: tuple[str, ...] = ()  # the sidecars that set its scope or visibility, outermost first
    warning: str | None = None  # its entries were made public because nothing gave a visibility


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

    @property
    def warnings(self) -> list[str]:
        return [p.warning for p in self.processed if p.warning]

    def summary(self) -> str:
        if not (self.processed or self.rejected or self.deferred):
            return "inbox: nothing to do"
        lines = [
            f"processed {p.name} -> {p.moved_to.relative_to(p.moved_to.parents[p.name.count('/') + 1]).as_posix()}: {p.report.status} "
            f"(scope {p.scope}, visible to {', '.join(p.visibility)})"
            for p in self.processed
        ]
        lines += [
            f"rejected {r.name!r}: {r.error}" + (f" (and {len(r.error.more)}{'+' if r.error.truncated else ''} more)" if r.error.more else "")
            for r in self.rejected
        ]
        lines += [f"left {d.name!r} for the next pass: {d.reason}" for d in self.deferred]
        lines += [f"warning: {w}" for w in self.warnings]
        lines.append(
            f"inbox: {len(self.processed)} processed ({self.appended} new entries), "
            f"{len(self.rejected)} rejected, {len(self.deferred)} left for later"
        )
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "processed": [
                {
                    "name": p.name,
                    "moved_to": str(p.moved_to),
                    "scope": p.scope,
                    "visibility": list(p.visibility),
                    "settings_from": list(p.settings_from),
                    **p.report.to_dict(),
                }
                for p in self.processed
            ],
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
            "warnings": self.warnings,
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


def _is_sidecar(name: str) -> bool:
    return name == FOLDER_SIDECAR or name.endswith(FILE_SIDECAR_SUFFIX)


def check_inbox_path(name: Any) -> str:
    """An inbox item's path relative to the inbox: plain names (:func:`check_inbox_name`) joined
    by ``/``, not inside ``processed/`` or ``rejected/``. Anything that could leave the inbox is
    refused before it is joined."""
    if not isinstance(name, str) or not name:
        raise IngestError("an inbox name must be a non-empty file name", path=repr(name))
    parts = name.split("/")
    try:
        for part in parts:
            check_inbox_name(part)
    except IngestError as err:
        shown = repr(name) if any(ord(c) < 32 or ord(c) == 127 for c in name) else name
        raise IngestError(err.message, path=shown) from None
    if len(parts) > 1 and parts[0] in (PROCESSED, REJECTED):
        raise IngestError(f"is inside {parts[0]}/, which holds what the inbox already handled", path=name)
    return name


def pending_inbox_files(home: MemcHome, *, settle_seconds: float = 0.0) -> list[Path]:
    """The entries :func:`process_inbox` would look at, sorted: cheap enough for a sensor to poll.

    One ``scandir`` per folder of the inbox (not ``processed/``, ``rejected/``, hidden folders or
    symlinked ones), no file is opened; sidecars are settings, not items. Includes entries that
    will be rejected (symlinks, unsupported types) so that a pass runs and moves them out of the
    way; with ``settle_seconds`` > 0, leaves out files modified more recently than that.
    """
    out: list[Path] = []
    now = time.time()

    def walk(folder: str, top: bool) -> None:
        try:
            with os.scandir(folder) as it:
                entries = list(it)
        except (FileNotFoundError, NotADirectoryError):
            return
        for d in entries:
            if d.name.startswith(".") or _is_sidecar(d.name):
                continue
            try:
                if d.is_dir(follow_symlinks=False):
                    if not (top and d.name in (PROCESSED, REJECTED)):
                        walk(d.path, False)
                    continue
                if settle_seconds > 0 and abs(now - d.stat(follow_symlinks=False).st_mtime) < settle_seconds:
                    continue
            except FileNotFoundError:
                continue
            out.append(Path(d.path))

    walk(str(home.inbox), True)
    return sorted(out)


@dataclass(frozen=True)
class _Placement:
    """Where a file's evidence goes: its scope and visibility, and which sidecars said so."""

    scope: str
    visibility: tuple[str, ...] | None  # None: no one said; the home's default decides
    settings_from: tuple[str, ...]


def _read_sidecar(path: Path, inbox: Path) -> dict[str, Any]:
    """A sidecar's keys, checked: an :class:`IngestError` names the sidecar (relative to the
    inbox), its line when TOML says it, and the field."""
    shown = path.relative_to(inbox).as_posix()
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return {}
    except OSError as exc:
        # A file named near the 255-byte limit has no room for ".memc.toml": no sidecar can exist.
        if exc.errno == errno.ENAMETOOLONG:
            return {}
        raise
    if not stat.S_ISREG(st.st_mode):
        raise IngestError("a sidecar must be a regular file (symlinks are not followed)", path=shown)
    try:
        data = read_toml(path)
    except IngestError as err:
        raise IngestError(err.message.replace(str(path), shown), path=shown, line=err.line) from None
    out: dict[str, Any] = {}
    for key in data:
        if key not in SIDECAR_KEYS:
            raise IngestError(f"unknown setting; a sidecar sets {' and '.join(SIDECAR_KEYS)}", path=shown, field=key)
    if "scope" in data:
        try:
            out["scope"] = check_scope(data["scope"])
        except IngestError as err:
            raise IngestError(err.message, path=shown, field="scope") from None
    if "visibility" in data:
        try:
            out["visibility"] = check_visibility(data["visibility"])
        except IngestError as err:
            raise IngestError(err.message + ' (e.g. visibility = ["elena", "priya"], or "public")', path=shown, field="visibility") from None
    return out


def _placement(inbox: Path, rel: str, base: _Placement, cache: dict[Path, dict[str, Any]]) -> _Placement:
    """The sidecars from the inbox down to the file's folder, then the file's own, applied over
    ``base`` key by key (the nearest wins)."""
    parts = rel.split("/")
    folders = [inbox.joinpath(*parts[:i]) for i in range(len(parts))]
    sidecars = [f / FOLDER_SIDECAR for f in folders] + [inbox.joinpath(*parts[:-1], parts[-1] + FILE_SIDECAR_SUFFIX)]
    scope, visibility, used = base.scope, base.visibility, list(base.settings_from)
    for sc in sidecars:
        if sc not in cache:
            cache[sc] = _read_sidecar(sc, inbox)
        keys = cache[sc]
        if keys:
            scope = keys.get("scope", scope)
            visibility = keys.get("visibility", visibility)
            used.append(sc.relative_to(inbox).as_posix())
    return _Placement(scope, visibility, tuple(used))


def _parents_real(inbox: Path, rel: str) -> bool:
    """Every folder between the inbox and the item is a real folder (a symlinked folder named in
    ``names`` must not lead the pass elsewhere)."""
    parts = rel.split("/")[:-1]
    for i in range(1, len(parts) + 1):
        try:
            if not stat.S_ISDIR(os.lstat(inbox.joinpath(*parts[:i])).st_mode):
                return False
        except OSError:
            return False
    return True


# --------------------------------------------------------------------------- one pass


def process_inbox(
    home: MemcHome,
    ledger: Ledger,
    *,
    scope: str | None = None,
    visibility: Sequence[str] | None = None,
    names: Iterable[str] | None = None,
    limits: Limits = DEFAULT_LIMITS,
    settle_seconds: float = SETTLE_SECONDS,
    settings: IngestSettings | None = None,
) -> InboxReport:
    """Ingest every settled file in ``home.inbox`` and its folders (or only ``names``, paths
    relative to the inbox), one append each, in the scope and visibility its sidecars set.

    ``scope`` and ``visibility`` are what applies where no sidecar says otherwise (default: scope
    ``default`` and the home's default visibility, ``settings`` or its memc.toml). ``names`` lets
    a job process exactly the files a sensor saw; each is checked with :func:`check_inbox_path`
    and a bad one is reported as rejected without touching the disk. Errors that are not about
    the input (a damaged ledger, a full disk, a bad memc.toml) propagate and leave the file in
    the inbox.
    """
    base = _Placement(
        check_scope(scope) if scope is not None else DEFAULT_SCOPE,
        check_visibility(tuple(visibility)) if visibility is not None else None,
        (),
    )
    report = InboxReport()
    inbox = _real_dir(home.inbox, home, create=False)
    if not inbox.is_dir():
        return report
    if settings is None:
        settings = load_ingest_settings(home.root)
    processed_dir = _real_dir(inbox / PROCESSED, home, create=True)
    rejected_dir = _real_dir(inbox / REJECTED, home, create=True)
    sidecars: dict[Path, dict[str, Any]] = {}

    if names is None:
        candidates = [p.relative_to(inbox).as_posix() for p in pending_inbox_files(home)]
    else:
        candidates = []
        for name in [names] if isinstance(names, str) else names:
            try:
                candidates.append(check_inbox_path(name))
            except IngestError as err:  # nothing to move: the name itself was the attack
                report.rejected.append(RejectedFile(name=name if isinstance(name, str) else repr(name), error=err))

    for name in candidates:
        path = inbox / name
        leaf = name.rsplit("/", 1)[-1]
        if not _parents_real(inbox, name):
            report.rejected.append(RejectedFile(name=name, error=IngestError(
                "is not in a real folder of the inbox (a symlinked folder is not followed)", path=str(path))))
            continue
        if leaf.startswith("."):
            report.rejected.append(RejectedFile(name=name, error=IngestError("hidden files are not ingested", path=str(path))))
            continue
        if _is_sidecar(leaf):
            continue  # settings, read with the files they are for
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            report.deferred.append(DeferredFile(name, "not in the inbox (already processed by another pass?)"))
            continue
        if stat.S_ISDIR(st.st_mode):
            continue  # processed/, rejected/ and folders: not items themselves
        if stat.S_ISLNK(st.st_mode):
            where = "outside the inbox" if not _inside(path, inbox) else "elsewhere in the inbox"
            _reject(report, home, name, rejected_dir, IngestError(
                f"is a symbolic link pointing {where}; links are not followed, copy the file itself into the inbox",
                path=str(path),
            ))
            continue
        try:
            check_inbox_name(leaf)
        except IngestError as err:
            _reject(report, home, name, rejected_dir, err)
            continue
        if not stat.S_ISREG(st.st_mode):
            _reject(report, home, name, rejected_dir, IngestError("is not a regular file (a FIFO, socket or device cannot be ingested)", path=str(path)))
            continue
        age = abs(time.time() - st.st_mtime)  # abs: an mtime far in the future (clock skew) must not stall it forever
        if age < settle_seconds:
            report.deferred.append(DeferredFile(name, f"still being written (modified {age:.1f} s ago)"))
            continue
        if format_for(leaf) is None:
            _reject(report, home, name, rejected_dir, IngestError(
                f"unsupported file type {Path(leaf).suffix or '(no extension)'!r}: "
                "memc ingests .jsonl/.ndjson, .txt, .md and .eml",
                path=str(path),
            ))
            continue
        try:
            place = _placement(inbox, name, base, sidecars)
            vis = resolve_visibility(place.visibility, writer="memc:inbox", settings=settings, how=HOW)
        except IngestError as err:
            # A bad sidecar (or a default that needs a visibility) rejects the files under it;
            # error.json names the sidecar, line and field.
            _reject(report, home, name, rejected_dir, err)
            continue
        target = _real_subdir(processed_dir, name, home)
        planned = _free_name(target, leaf)
        try:
            fr = ingest_file(
                ledger,
                path,
                scope=place.scope,
                visibility=vis.principals,
                limits=limits,
                source_uri=planned.resolve().as_uri(),  # where the file will be kept
                follow_symlinks=False,
                ingested_by="memc:inbox",
            )
        except IngestError as err:
            if err.retryable:
                report.deferred.append(DeferredFile(name, err.message))
            else:
                _reject(report, home, name, rejected_dir, err)
            continue
        try:
            moved = _move(path, target, leaf, planned=planned)
        except FileNotFoundError:
            report.deferred.append(DeferredFile(name, "moved away by another pass after ingesting"))
            continue
        _move_file_sidecar(path, moved)
        warning = None
        if vis.public_by_default and fr.appended:  # a re-drop appends nothing: nothing new made public
            warning = public_default_warning(fr.appended, place.scope, what=f"inbox/{name}", how=HOW)
        report.processed.append(ProcessedFile(
            name=name, moved_to=moved, report=fr, scope=place.scope, visibility=vis.principals,
            settings_from=place.settings_from, warning=warning,
        ))  # fmt: skip
    return report


def _real_subdir(base: Path, rel: str, home: MemcHome) -> Path:
    """``base``/<the item's folders>, made as needed, each a real folder inside the home."""
    folder = base
    for part in rel.split("/")[:-1]:
        folder = _real_dir(folder / part, home, create=True)
    return folder


def _move_file_sidecar(path: Path, moved: Path) -> None:
    """A file's own sidecar follows it (renamed with it), so it does not apply to the next file
    dropped under the same name."""
    sidecar = path.with_name(path.name + FILE_SIDECAR_SUFFIX)
    if not os.path.lexists(sidecar):
        return
    try:
        _move(sidecar, moved.parent, moved.name + FILE_SIDECAR_SUFFIX)
    except (FileNotFoundError, IngestError):
        pass  # gone already, or no free name: the file itself is filed; the sidecar stays visible


def _reject(report: InboxReport, home: MemcHome, name: str, rejected_dir: Path, err: IngestError) -> None:
    path = home.inbox / name
    leaf = path.name
    try:
        target = _real_subdir(rejected_dir, name, home)
        moved = _move(path, target, leaf, with_error_file=True)
    except FileNotFoundError:
        report.deferred.append(DeferredFile(name, "disappeared before it could be rejected"))
        return
    _move_file_sidecar(path, moved)
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
