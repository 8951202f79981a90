"""A served home keeps its own views fresh: an application that only ingests and asks through
the API (or MCP) on a fresh home gets contexts compiled from built views, without anyone
running `memc build` or the daemon.

After every ingest (and every ``interval`` seconds) the keeper looks at the watermarks: when a
view the compiler reads was never built or is behind the ledger head, it runs the same in-process
Dagster build `memc build` runs (``orchestration.runner.build``: observe the ledger, materialize
what is stale, incremental), one at a time under the service's build lock. Bursts of ingests are
coalesced: the build starts once no ingest arrived for ``debounce`` seconds, so a client writing a
hundred entries one request at a time costs one build, not a hundred.

After each build, and whenever the views are found current, it reads what a compile reads once
per version of them (``warm``: query.compile.prepare: the state index, the closings, the evidence
rows a process holds), so the first ask after a build is as fast as the next (at 100k entries it
paid ~1.5 s). A worker that did not build warms up at its next look (an ingest, or the interval).

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
        warm: Callable[[], Any] | None = None,
        debounce: float = 1.0,
        interval: float = 60.0,
        max_backoff: float = 600.0,
        busy_retry: float = 5.0,
    ):
        self._build, self._watermarks, self._warm = build, watermarks, warm
        self.debounce, self.interval, self.max_backoff, self.busy_retry = debounce, interval, max_backoff, busy_retry
        self._poked = threading.Event()
        self._stopped = threading.Event()
        self._last_poke = 0.0
        self._thread: threading.Thread | None = None
        self.builds = 0  # finished builds, successful or not (for tests and /v1/health)
        self.warmed = 0  # warm-ups done (for tests)
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

    def warm_up(self) -> None:
        """Read what the next compile would read of the views just built (``warm``: query's
        ``prepare``), here rather than in the first ask after the build. Cheap when nothing
        changed (a few file signatures); a failure is logged, never raised: the ask reads them then."""
        if self._warm is None:
            return
        try:
            self._warm()
            self.warmed += 1
        except Exception as exc:
            log.warning("reading the built views ahead of the next ask failed: %s", exc)

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
                    self.warm_up()  # views another worker or `memc build` brought up to date
                    continue
                log.info("keeping views fresh: %s behind the ledger, building", ", ".join(late))
                report = self._build()
                self.builds += 1
                if getattr(report, "success", True):
                    self.last_error, pause = None, self.interval
                    self.warm_up()
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
