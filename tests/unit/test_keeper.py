"""The keeper (api/keeper.py) when another process holds the home's build lock: it tries again
after ``busy_retry`` seconds, not after the minute of its interval, because the build that held
the lock may have started before the entries that poked it (another worker of `memc serve
--workers N`, a `memc build`)."""

from __future__ import annotations

import threading
import time

from api.keeper import ViewKeeper
from memc.locks import HomeBusy


def test_a_busy_home_is_tried_again_soon_and_then_built():
    calls: list[str] = []
    done = threading.Event()
    head = {"seq": 5}

    def build():
        if not calls:
            calls.append("busy")
            raise HomeBusy("memc build (pid 1) holds the home")
        calls.append("built")
        head["built"] = head["seq"]
        done.set()
        return type("Report", (), {"success": True})()

    def watermarks():
        return {"ledger_head": head["seq"], "views": {"claims": head.get("built")}}

    keeper = ViewKeeper(build, watermarks, debounce=0.0, interval=600.0, busy_retry=0.2).start()
    try:
        assert done.wait(30), calls  # the interval alone would have waited ten minutes
    finally:
        keeper.stop()
    assert calls == ["busy", "built"]
    assert keeper.builds == 1 and keeper.last_error is None  # a busy home is neither a build nor a failure
    assert keeper.behind() == []


def test_nothing_behind_means_no_build():
    built = []
    keeper = ViewKeeper(lambda: built.append(1), lambda: {"ledger_head": 3, "views": {"claims": 3}}, debounce=0.0, busy_retry=0.1)
    keeper.start()
    time.sleep(0.5)
    keeper.stop()
    assert built == []
