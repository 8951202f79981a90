"""Exclusive locks on a memory home, across processes: one build at a time, one erasure at a time.

A lock is an ``flock`` on a file under the home, so a killed holder releases it with its last
descriptor (no stale lock to clean up after ``kill -9``). The holder writes who it is into the
file (pid, what it runs, since when), so a refused caller can say which build holds the home
instead of failing deep inside DuckDB or Kùzu with "Could not set lock".

Re-entrant within a process: an erasure holding the build lock calls the rebuild, which takes it
again; the keeper's build thread and a forget in the same server are already serialized by the
service's own lock. The lock counts its holders and releases on the last exit.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator

from memc.processes import pid_alive


class HomeBusy(RuntimeError):
    """Another process holds the lock; the message names it in one line."""


_held: dict[str, list] = {}  # resolved path -> [fd, depth]
_guard = threading.Lock()


def holder(path: Path) -> dict | None:
    """Who holds (or last held) the lock at ``path``, as it wrote itself in: pid, what, since."""
    try:
        info = json.loads(Path(path).read_text() or "null")
    except (OSError, ValueError):
        return None
    return info if isinstance(info, dict) else None


@contextlib.contextmanager
def exclusive(path: Path, what: str, *, wait: bool) -> Iterator[None]:
    """Hold the lock at ``path`` for ``what`` (e.g. "memc build"). ``wait=False`` raises HomeBusy
    at once when another process holds it; ``wait=True`` blocks until it is free."""
    key = str(Path(path).resolve())
    with _guard:
        mine = _held.get(key)
        if mine is not None:
            mine[1] += 1
    if mine is not None:
        try:
            yield
        finally:
            with _guard:
                mine[1] -= 1
        return
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            raise HomeBusy(_busy_message(path, what)) from None
        me = {"pid": os.getpid(), "what": what, "since": datetime.now(timezone.utc).isoformat(timespec="seconds")}
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(me).encode(), 0)
        with _guard:
            _held[key] = [fd, 1]
        try:
            yield
        finally:
            with _guard:
                _held.pop(key, None)
            os.ftruncate(fd, 0)  # nobody holds it now: a later reader finds no stale name
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _busy_message(path: Path, what: str) -> str:
    info = holder(path)
    if not info or not pid_alive(int(info.get("pid", 0) or 0)):
        # Held by a process that has not written its name yet (it took the lock a moment ago).
        return f"cannot start {what}: another build holds this home ({path}); try again when it is done"
    return (
        f"cannot start {what}: {info.get('what', 'a build')} (pid {info['pid']}, since {info.get('since', '?')}) "
        f"is running on this home; wait for it to finish or stop it"
    )
