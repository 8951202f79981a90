"""A served home keeps its own views fresh: an application that only ingests and asks through
the API (or MCP) on a fresh home gets contexts compiled from built views, without anyone
running `memc build` or the daemon.

After every ingest (and every ``interval`` seconds) the keeper looks at the watermarks: when a
view the compiler reads was never built or is behind the ledger head, it runs the same in-process
Dagster build `memc build` runs (``orchestration.runner.build``: observe the ledger, materialize
what is stale, incremental), one at a time under the service's build lock. Bursts of ingests are
coalesced: the build starts once no ingest arrived for ``debounce`` seconds, so a client writing a
hundred entries one request at a time costs one build, not a hundred.

Until the first build is done, an ask is answered from what exists (the evidence index patched
from the ledger tail) and ``staleness`` names the views ``never_built``. A failed build is logged
and retried with a growing pause; it never takes the server down. When a `memc up` daemon keeps
the home fresh, serve with ``--no-keep-fresh`` so that two builders do not queue for one warehouse.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable

from memc.locks import HomeBusy

log = logging.getLogger("memc.api")


class ViewKeeper:
    def __init__(
        self,
        build: Callable[[], Any],
        watermarks: Callable[[], dict[str, Any]],
        *,
        debounce: float = 1.0,
        interval: float = 60.0,
        max_backoff: float = 600.0,
        busy_retry: float = 5.0,
    ):
        self._build, self._watermarks = build, watermarks
        self.debounce, self.interval, self.max_backoff, self.busy_retry = debounce, interval, max_backoff, busy_retry
        self._poked = threading.Event()
        self._stopped = threading.Event()
        self._last_poke = 0.0
        self._thread: threading.Thread | None = None
        self.builds = 0  # finished builds, successful or not (for tests and /v1/health)
        self.last_error: str | None = None

    def start(self) -> "ViewKeeper":
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="memc-keeper", daemon=True)
            self._thread.start()
            self.poke()  # a home served with views behind its ledger is brought up to date at once
        return self

    def poke(self) -> None:
        """The ledger grew (or may have): build once the writes settle."""
        self._last_poke = time.monotonic()
        self._poked.set()

    def stop(self, timeout: float = 5.0) -> None:
        self._stopped.set()
        self._poked.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def behind(self) -> list[str]:
        marks = self._watermarks()
        head = marks["ledger_head"]
        # Every view a compile reads (query/compile.py view_watermarks) that is behind the head.
        return [v for v, mark in marks["views"].items() if mark is None or mark < head] if head else []

    def _loop(self) -> None:
        pause = self.interval
        while not self._stopped.is_set():
            self._poked.wait(timeout=pause)
            if self._stopped.is_set():
                return
            self._poked.clear()
            while (quiet := time.monotonic() - self._last_poke) < self.debounce and not self._stopped.is_set():
                time.sleep(self.debounce - quiet)  # more writes may follow: one build for the burst
            try:
                late = self.behind()
                if not late:
                    pause = self.interval
                    continue
                log.info("keeping views fresh: %s behind the ledger, building", ", ".join(late))
                report = self._build()
                self.builds += 1
                if getattr(report, "success", True):
                    self.last_error, pause = None, self.interval
                else:
                    raise RuntimeError(f"build failed: {getattr(report, 'failed_steps', '?')}")
            except HomeBusy as exc:  # another process builds this home (memc build, another worker): its turn,
                # and soon ours: that build may have started before the entries that poked us.
                pause = min(self.interval, self.busy_retry)
                log.info("keeping views fresh: %s; retrying in %.0f s", exc, pause)
            except Exception as exc:  # a broken build must not take the server down: log, retry later
                self.builds += 1
                self.last_error = str(exc)[:500]
                pause = min(self.max_backoff, max(self.interval, pause) * 2)
                log.error("keeping views fresh failed (retrying in %.0f s): %s", pause, exc, exc_info=True)
