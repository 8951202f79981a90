"""One value per version of a set of files, in a warm process: the compiler reads the marts'
indexes, the entities and the dossiers on every compile, and rebuilding them per compile cost
more than the rest of the compile at 100k entries (docs/benchmarks.md). And the last value of a
computation per version of its inputs, for what one build asks for twice (:func:`latest`)."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Hashable, Sequence
from pathlib import Path
from typing import Any

_lock = threading.Lock()
_cache: dict[tuple[str, tuple[str, ...]], tuple[Any, Any]] = {}  # (kind, paths) -> (signature, value)
_latest: dict[str, tuple[Hashable, Any]] = {}  # kind -> (version, value)


def signature(path: Path) -> tuple[int, int, int] | None:
    """(inode, size, mtime) of ``path``, or None when it is absent: a writer's ``os.replace``
    changes the inode, so a swapped file never passes for the old one."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns)


def cached(kind: str, paths: Sequence[Path], load: Callable[[], Any]) -> Any:
    """``load()`` once per version of ``paths`` (None if one is absent). The signature of each
    file is taken before the read, so a file swapped in between is read again on the next call:
    a newer file may be cached under an older signature, never the reverse."""
    sig = []
    for p in paths:
        s = signature(p)
        if s is None:
            return None
        sig.append(s)
    key = (kind, tuple(str(p) for p in paths))
    hit = _cache.get(key)
    if hit is not None and hit[0] == sig:
        return hit[1]
    value = load()
    with _lock:
        _cache[key] = (sig, value)
    return value


def latest(kind: str, version: Hashable, load: Callable[[], Any], *, keep: Callable[[Any], bool] = lambda _: True) -> Any:
    """``load()``, unless the last value of ``kind`` was loaded at this ``version`` of its
    inputs (the caller's key: file signatures, a watermark...). One value per kind, replaced by
    the next version's; a value ``keep`` refuses (too large to hold) is returned, not kept."""
    with _lock:
        hit = _latest.get(kind)
    if hit is not None and hit[0] == version:
        return hit[1]
    value = load()
    with _lock:
        if keep(value):
            _latest[kind] = (version, value)
        else:
            _latest.pop(kind, None)
    return value


def clear() -> None:
    """Forget every cached value (tests that count reads)."""
    with _lock:
        _cache.clear()
        _latest.clear()
