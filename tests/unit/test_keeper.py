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


def test_a_build_is_followed_by_a_warm_up_and_a_failed_warm_up_is_only_logged(caplog):
    """After a build (and whenever the views are found current) the keeper reads what the next
    compile would read (``warm``: query.compile.prepare); a failure there is no build failure."""
    head = {"seq": 2}
    warmed = threading.Event()
    order: list[str] = []

    def build():
        order.append("build")
        head["built"] = head["seq"]
        return type("Report", (), {"success": True})()

    def warm():
        order.append("warm")
        warmed.set()
        raise OSError("a mart file went away while it was read")

    def watermarks():
        return {"ledger_head": head["seq"], "views": {"claims": head.get("built")}}

    keeper = ViewKeeper(build, watermarks, warm=warm, debounce=0.0, interval=600.0).start()
    try:
        assert warmed.wait(30), order
    finally:
        keeper.stop()
    assert order[:2] == ["build", "warm"]
    assert keeper.builds == 1 and keeper.last_error is None and keeper.warmed == 0  # failed: not counted
    assert "reading the built views ahead of the next ask failed" in caplog.text

    # views already current (another worker built them): a warm-up, no build
    current = ViewKeeper(lambda: order.append("build"), lambda: {"ledger_head": 3, "views": {"claims": 3}}, warm=lambda: order.append("warm"), debounce=0.0)
    order.clear()
    current.start()
    try:
        for _ in range(600):  # up to 30 s on a loaded machine; at once otherwise
            if current.warmed:
                break
            time.sleep(0.05)
    finally:
        current.stop()
    assert order == ["warm"] and current.warmed == 1


def test_a_server_settles_its_heap_once_per_version_of_the_views(tmp_path, monkeypatch):
    """After reading the views (query's prepare) the service moves the long-lived objects out of
    the cyclic collector's reach, once per version of the views: the keeper's look every
    interval finds the same watermarks and leaves the heap as it is."""
    import gc

    import api.service as service_module
    from api.service import Service
    from memc.home import MemcHome

    marks = {"evidence_index": 3}
    read, settled = [], []
    monkeypatch.setattr(service_module, "prepare", lambda home: read.append(home))
    monkeypatch.setattr(service_module, "view_watermarks", lambda home: dict(marks))
    real = service_module.settle_heap
    monkeypatch.setattr(service_module, "settle_heap", lambda: settled.append(dict(marks)) or real())
    service = Service(MemcHome.resolve(tmp_path / "home"))
    try:
        service.read_views()
        assert gc.get_freeze_count() > 0  # the objects alive then are frozen
        service.read_views()
        marks["evidence_index"] = 4  # a build brought the views up
        service.read_views()
        assert len(read) == 3 and settled == [{"evidence_index": 3}, {"evidence_index": 4}]
    finally:
        gc.unfreeze()  # the rest of the test process collects as usual
