"""Everything under a memory home that is neither the ledger nor a view but may hold erased text:
the inbox's processed/ and rejected/ archives, Dagster's run storage (SQLite) and compute logs,
memc's own build logs, and temporary files left by crashed writers.

The ledger purge and the view rebuild are exact (they work by entry id). What this module
covers are copies no id leads to, so it searches them for the erased text itself: "needles"
cut from the erased entries while the ledger still holds them (this step runs before the ledger
purge, and a resumed erasure past the purge has already done it). The search is byte-level over
uncompressed files (logs, JSON, SQLite pages, inbox files); binary view files are not searched
because every view is dropped and rebuilt whole. Each needle is also searched in the forms JSON
gives it: Dagster stores events and metadata as JSON with non-ASCII characters escaped
(``Müller`` is ``M\\u00fcller`` in its SQLite) and quotes and backslashes escaped, so a byte
search for the plain text alone missed any erased line holding one of those (``encoded_forms``).

A match is handled by what the file is:

* an inbox archive (processed/ or rejected/): the file is removed with its ``.error.json``.
  Files are also removed when their own URI is an erased entry's source (processed files are
  recorded by where they were filed). The ledger keeps every other entry such a file held;
* a SQLite database (Dagster's runs, event logs, schedules): each text cell holding a needle is
  rewritten with the needle replaced by ``[erased]``, then VACUUM rewrites the file so freed
  pages do not keep the old bytes;
* any other file (logs, JSON): rewritten with each needle replaced by ``[erased]``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable
from urllib.parse import unquote, urlparse

from memc.home import MemcHome

REDACTED = "[erased]"
SQLITE_MAGIC = b"SQLite format 3\x00"
# Files larger than this are not searched (a log of that size is not memc's); reported instead.
MAX_SCAN_BYTES = 512 * 1024 * 1024

# Needle lengths. A whole line of 16+ characters, or a token of 12+ characters mixing letters
# and digits or cases, is specific enough that finding it elsewhere means the erased text leaked
# there; plain words ("relationships") are never needles, so an unrelated file is not touched.
MIN_LINE = 16
MIN_TOKEN = 12


def needles(texts: Iterable[str]) -> list[str]:
    out: set[str] = set()
    for text in texts:
        if not text:
            continue
        text = str(text)
        if len(text) >= MIN_LINE:
            out.add(text)
        for line in text.splitlines():
            line = line.strip()
            if len(line) >= MIN_LINE:
                out.add(line)
        for tok in re.split(r"\s+", text):
            tok = tok.strip(".,;:!?\"'()[]{}<>")
            if len(tok) >= MIN_TOKEN and _mixed(tok):
                out.add(tok)
    # Longest first, so a line is replaced whole before its tokens.
    return sorted(out, key=lambda s: (-len(s), s))


def _mixed(tok: str) -> bool:
    """Digits with letters, or capitals past the first letter: an id, a code, a random string."""
    classes = sum(bool(re.search(p, tok)) for p in (r"[a-z]", r"[A-Z]", r"[0-9]"))
    return classes >= 2 and not re.fullmatch(r"[A-Z][a-z'-]+", tok)


def encoded_forms(needle: str) -> list[bytes]:
    """The bytes a needle may be stored as: UTF-8, and the body of a JSON string with
    ``ensure_ascii`` on (Python's and Dagster's default: ``\\u00fc``) and off (quotes and
    backslashes escaped). Plain ASCII without quotes has one form."""
    forms = [needle.encode("utf-8")]
    for ascii_only in (True, False):
        body = json.dumps(needle, ensure_ascii=ascii_only)[1:-1].encode("utf-8")
        if body not in forms:
            forms.append(body)
    return forms


def entry_texts(row: dict[str, Any]) -> list[str]:
    """The text an entry carries: its content and the string values of its attributes (an image
    caption, a subject line, a claim's quote) and its source ref (a badge number, a Message-ID).
    Not its session id: every turn of the session shares it, so it says nothing of this entry."""
    out = [row.get("content") or "", row.get("source_ref") or ""]
    try:
        attrs = json.loads(row.get("attributes") or "{}")
    except (TypeError, ValueError):
        attrs = {}
    out += [v for v in _strings(attrs)]
    return out


def _strings(obj: Any) -> Iterable[str]:
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from _strings(v)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from _strings(v)


@dataclass
class ScrubReport:
    removed: list[str] = field(default_factory=list)  # paths relative to the home
    rewritten: list[str] = field(default_factory=list)
    sqlite: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # too large or unreadable: named, not hidden

    def to_dict(self) -> dict[str, Any]:
        return {"removed": self.removed, "rewritten": self.rewritten, "sqlite": self.sqlite, "skipped": self.skipped}


def _rel(home: MemcHome, p: Path) -> str:
    try:
        return str(p.relative_to(home.root))
    except ValueError:
        return str(p)


def _uri_path(uri: str | None) -> Path | None:
    if not uri or not uri.startswith("file://"):
        return None
    try:
        return Path(unquote(urlparse(uri).path))
    except ValueError:
        return None


def scrub_home(home: MemcHome, needle_list: list[str], source_uris: Iterable[str | None], *, skip: Iterable[Path] = ()) -> ScrubReport:
    """Search every file under the home except the ledger and ``skip`` (the views, dropped
    whole) for the needles, and handle matches as the module docstring says."""
    report = ScrubReport()
    # needle -> its stored forms, longest needle first (as ``needles`` orders them)
    forms = [(n, encoded_forms(n)) for n in needle_list]
    encoded = [b for _, fs in forms for b in fs]
    skip_dirs = [home.ledger, *skip]
    inbox_archives = [home.inbox / "processed", home.inbox / "rejected"]

    # Inbox files that were the source of an erased entry go whatever their bytes say
    # (an e-mail body may be base64 or quoted-printable: a byte search would miss it).
    for uri in set(source_uris):
        p = _uri_path(uri)
        if p is not None and any(_under(p, a) for a in inbox_archives) and p.is_file() and not p.is_symlink():
            _remove_archived(home, p, report)

    if not encoded:
        return report
    for p in _walk(home.root, skip_dirs):
        try:
            size = p.stat().st_size
        except FileNotFoundError:
            continue
        if size > MAX_SCAN_BYTES:
            report.skipped.append(_rel(home, p))
            continue
        try:
            data = p.read_bytes()
        except OSError:
            report.skipped.append(_rel(home, p))
            continue
        if not any(n in data for n in encoded):
            continue
        if any(_under(p, a) for a in inbox_archives):
            _remove_archived(home, p, report)
        elif data.startswith(SQLITE_MAGIC):
            _scrub_sqlite(p, forms)
            report.sqlite.append(_rel(home, p))
        elif p.name.endswith(("-wal", "-journal", "-shm")):
            db = p.with_name(re.sub(r"-(wal|journal|shm)$", "", p.name))
            if db.exists():
                _scrub_sqlite(db, forms)  # checkpoints (and so empties) the WAL
                report.sqlite.append(_rel(home, db))
            if p.exists() and any(n in p.read_bytes() for n in encoded):
                p.unlink(missing_ok=True)
                report.removed.append(_rel(home, p))
        else:
            _rewrite_text(p, data, encoded)
            report.rewritten.append(_rel(home, p))
    return report


def _under(p: Path, root: Path) -> bool:
    try:
        p.resolve().relative_to(root.resolve())
        return True
    except (ValueError, OSError, RuntimeError):
        return False


def _walk(root: Path, skip_dirs: list[Path]) -> Iterable[Path]:
    skip = {os.path.realpath(d) for d in skip_dirs}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = [d for d in dirnames if os.path.realpath(os.path.join(dirpath, d)) not in skip]
        for f in filenames:
            p = Path(dirpath) / f
            if not p.is_symlink() and p.is_file():
                yield p


def _remove_archived(home: MemcHome, p: Path, report: ScrubReport) -> None:
    for q in (p, p.with_name(p.name + ".error.json")):
        if q.exists() and not q.is_symlink():
            q.unlink()
            report.removed.append(_rel(home, q))
    if p.name.endswith(".error.json"):  # the error report of a rejected file: its file goes too
        twin = p.with_name(p.name[: -len(".error.json")])
        if twin.exists() and not twin.is_symlink():
            twin.unlink()
            report.removed.append(_rel(home, twin))


def _rewrite_text(p: Path, data: bytes, encoded: list[bytes]) -> None:
    for n in encoded:
        data = data.replace(n, REDACTED.encode())
    tmp = p.with_name(f".{p.name}.{uuid.uuid4().hex}.tmp")
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        shutil.copymode(p, tmp)
        os.replace(tmp, p)
    finally:
        tmp.unlink(missing_ok=True)


def _scrub_sqlite(path: Path, forms: list[tuple[str, list[bytes]]]) -> None:
    """Replace needles (each in every stored form) in every text cell, then VACUUM (a rewrite of
    the whole file: freed pages would otherwise keep the old bytes) and truncate the WAL.
    Parameters, never SQL text, carry the needles. Blob cells holding a needle are set to NULL.
    ``[erased]`` needs no JSON escaping, so a JSON cell stays valid JSON."""
    con = sqlite3.connect(str(path), timeout=30)
    try:
        con.execute("PRAGMA secure_delete = ON")
        tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")]
        for t in tables:
            cols = [r[1] for r in con.execute(f'PRAGMA table_info("{t}")')]
            for c in cols:
                for n in (f.decode("utf-8") for _, fs in forms for f in fs):
                    con.execute(
                        f'UPDATE "{t}" SET "{c}" = replace("{c}", ?, ?) WHERE typeof("{c}") = \'text\' AND instr("{c}", ?) > 0',
                        (n, REDACTED, n),
                    )
                    con.execute(
                        f'UPDATE "{t}" SET "{c}" = NULL WHERE typeof("{c}") = \'blob\' AND instr("{c}", CAST(? AS BLOB)) > 0',
                        (n,),
                    )
        con.commit()
        con.execute("VACUUM")
        try:
            con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        except sqlite3.DatabaseError:
            pass
    finally:
        con.close()


# Names crashed writers leave behind: atomic-write temps, swap leftovers, staging/retired tables.
_TEMP_PATTERNS = (
    re.compile(r"^\..+\.[0-9a-f]{32}\.tmp$"),  # memc.atomic and this module
    re.compile(r"^\..+\.old\.[0-9a-f]{32}$"),  # memc.atomic.swap_dir
    re.compile(r"^\.(staging|retired)-.+$"),  # views.vectors._swap_in
    re.compile(r"^\.trash-.+$"),  # forgetting: views moved aside before removal
)


def remove_temp_files(home: MemcHome) -> list[str]:
    """Temporary files and folders of crashed writers anywhere under the home (the ledger's own
    ``_tmp`` is emptied by ``Ledger.recover``, which knows which writers are alive)."""
    removed = []
    for dirpath, dirnames, filenames in os.walk(home.root, followlinks=False):
        for name in list(dirnames) + filenames:
            if any(p.match(name) for p in _TEMP_PATTERNS):
                q = Path(dirpath) / name
                if q.is_dir() and not q.is_symlink():
                    shutil.rmtree(q, ignore_errors=True)
                    if name in dirnames:
                        dirnames.remove(name)
                else:
                    q.unlink(missing_ok=True)
                removed.append(_rel(home, q))
    return removed
