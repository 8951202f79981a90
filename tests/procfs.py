"""What the process tests read of /proc, and their polling: a process's children, the CPU it
has spent, and waiting for a condition with a bound that fails the test naming what it waited for."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable

import pytest


def _stat_fields(pid: int) -> list[str]:
    """The fields of ``/proc/<pid>/stat`` after the command name (which may hold spaces)."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def state(pid: int) -> str | None:
    """The process's state letter (proc(5): R, S, D, Z for a zombie...), or None once it is gone."""
    try:
        return _stat_fields(pid)[0]
    except OSError:
        return None


def cmdline(pid: int) -> list[bytes]:
    """The process's arguments, or none once it is gone (ended since it was listed)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return []


def children(pid: int) -> list[int]:
    """The processes whose parent is ``pid``."""
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent = int(_stat_fields(int(stat.parent.name))[1])
        except OSError:  # ended since the listing
            continue
        if parent == pid:
            out.append(int(stat.parent.name))
    return sorted(out)


def open_files(pid: int, under: Path) -> list[str]:
    """The files under ``under`` that the process holds open (``/proc/<pid>/fd``)."""
    out = []
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = str(Path(fd).readlink())
        except OSError:  # closed since the listing
            continue
        if target.startswith(str(under)):
            out.append(target)
    return sorted(out)


def cpu_ticks(pid: int) -> int:
    """User plus system CPU time the process has spent, in clock ticks (proc(5), fields 14 and 15)."""
    fields = _stat_fields(pid)
    return int(fields[11]) + int(fields[12])


def until(condition: Callable[[], Any], seconds: float, what: str, pause: float = 0.2) -> Any:
    """Poll ``condition`` until it returns something truthy, and return that; fail naming
    ``what`` after ``seconds``."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        got = condition()
        if got:
            return got
        time.sleep(pause)
    pytest.fail(f"gave up waiting for {what} after {seconds:.0f} s")
