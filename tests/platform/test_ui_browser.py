"""The Dagster UI in a real browser: `memc up` on a free port, Debian's headless Chromium driven
over the DevTools protocol (the `websockets` package Dagster's webserver already installs; no
browser download), the asset graph, the ledger's downstream lineage and each view's checks.
Screenshots are kept in test-artifacts/ui/.

About 45 s: the UI answers after ~15-30 s, each page renders in 2-5 s.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "test-artifacts" / "ui"
CHROMIUM = next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)
FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--remote-debugging-port=0",
]  # fmt: skip

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="no chromium binary on PATH (Debian: apt-get install chromium)")


class Browser:
    """Just enough of the Chrome DevTools protocol: one tab, navigate, evaluate, screenshot."""

    def __init__(self, profile: Path, width: int = 1600, height: int = 1000) -> None:
        from websockets.sync.client import connect

        profile.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen(
            [CHROMIUM, *FLAGS, f"--user-data-dir={profile}", f"--window-size={width},{height}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
        port_file = profile / "DevToolsActivePort"  # Chromium writes its port and path here
        deadline = time.monotonic() + 30
        while not (port_file.exists() and len(port_file.read_text().split()) == 2):
            assert time.monotonic() < deadline and self.proc.poll() is None, "chromium did not start"
            time.sleep(0.1)
        port, path = port_file.read_text().split()
        self.ws = connect(f"ws://127.0.0.1:{port}{path}", max_size=None, open_timeout=10)
        self._id = 0
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        self.call("Page.enable", session=True)
        self.call("Emulation.setDeviceMetricsOverride", session=True, width=width, height=height, deviceScaleFactor=1, mobile=False)

    def call(self, method: str, session: bool = False, **params):
        self._id += 1
        msg = {"id": self._id, "method": method, "params": params}
        if session:
            msg["sessionId"] = self.session
        self.ws.send(json.dumps(msg))
        while True:
            reply = json.loads(self.ws.recv(timeout=30))
            if reply.get("id") == self._id:
                assert "error" not in reply, reply["error"]
                return reply["result"]

    def eval(self, expression: str):
        return self.call("Runtime.evaluate", session=True, expression=expression, returnByValue=True)["result"].get("value")

    def open(self, url: str, ready: str | tuple[str, ...], timeout: float = 45) -> str:
        """Navigate and wait until the page's text holds ``ready`` (each of them, if several);
        return the text."""
        readies = (ready,) if isinstance(ready, str) else ready
        self.call("Page.navigate", session=True, url=url)
        deadline = time.monotonic() + timeout
        text = ""
        while time.monotonic() < deadline:
            text = self.eval("document.body ? document.body.innerText : ''") or ""
            if all(r in text for r in readies):
                time.sleep(1.0)  # let the graph finish its layout before the screenshot
                return self.eval("document.body.innerText") or ""
            time.sleep(0.3)
        raise AssertionError(f"{url}: {ready!r} not on the page after {timeout} s; text: {text[:1500]}")

    def screenshot(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(self.call("Page.captureScreenshot", session=True, format="png")["data"]))

    def close(self) -> None:
        try:
            self.ws.close()
        finally:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def _graphql(port: int, query: str) -> dict:
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}/graphql", data=json.dumps({"query": query}).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=20) as r:
        return json.loads(r.read())["data"]


def _shown(key: str, labels: list[str]) -> bool:
    """The graph shortens long names in the middle ('int_cl…_to_entries')."""
    for label in labels:
        if label == key:
            return True
        if "…" in label:
            head, tail = label.split("…", 1)
            if key.startswith(head) and key.endswith(tail) and len(head) + len(tail) < len(key):
                return True
    return False


def test_asset_graph_lineage_and_checks_in_a_real_browser(tmp_path):
    home = tmp_path / "home"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "DAGSTER_DISABLE_TELEMETRY": "1"}
    env.pop("DAGSTER_HOME", None)
    env.pop("MEMC_HOME", None)
    memc = [sys.executable, "-m", "cli.main", "--home", str(home)]
    browser = None
    try:
        up = subprocess.run([*memc, "up", "--port", str(port)], env=env, capture_output=True, text=True, timeout=240)
        assert up.returncode == 0, up.stdout + up.stderr
        nodes = _graphql(
            port,
            "{ assetNodes { assetKey { path } isMaterializable groupName "
            "assetChecksOrError { ... on AssetChecks { checks { name } } } } }",
        )["assetNodes"]
        keys = {"/".join(n["assetKey"]["path"]): n for n in nodes}
        views = sorted(k for k, n in keys.items() if n["isMaterializable"])
        assert "ledger" in keys and {"claims", "state_current", "evidence_index", "entity_graph", "centrality"} <= set(views)
        base = f"http://127.0.0.1:{port}"
        # Dagster's community/newsletter prompt covers every page on 127.0.0.1 until marked seen.
        assert _graphql(port, "mutation { setNuxSeen }")["setNuxSeen"]
        browser = Browser(tmp_path / "chromium-profile")

        # 1. The global asset graph: every group, in data-flow order.
        groups = ("evidence", "claims", "state", "retrieval", "graph")
        # The page's title shows before the graph is laid out: wait for the groups too (CI's
        # run read the page under load with the title and the navigation only).
        text = browser.open(f"{base}/asset-groups", ready=("Global asset lineage", *groups))
        for group in groups:
            assert group in text.split(), group
        browser.screenshot(ARTIFACTS / "asset-graph.png")

        # 2. Lineage: everything downstream of the ledger is every view (the graph holds the edges).
        text = browser.open(f"{base}/assets/ledger?view=lineage&lineageScope=downstream&lineageDepth=20", ready="Materialize all (")
        labels = text.split()
        missing = [k for k in views if not _shown(k, labels)]
        assert not missing, f"views not drawn downstream of the ledger: {missing}"
        assert f"Materialize all ({len(views)})" in text, "the ledger's downstream lineage is not every view"
        browser.screenshot(ARTIFACTS / "ledger-downstream-lineage.png")
        text = browser.open(f"{base}/assets/centrality?view=lineage&lineageScope=upstream&lineageDepth=20", ready="Materialize all (")
        for key in ("ledger", "claims", "entities", "entity_graph"):
            assert _shown(key, text.split()), f"{key} not upstream of centrality"
        browser.screenshot(ARTIFACTS / "centrality-upstream-lineage.png")

        # 3. Each asset's checks page lists its checks: the ledger's, GX, provenance, audits, lag, dbt tests.
        for key in ("ledger", "claims", "state_current", "evidence_index", "entity_graph", "centrality"):
            names = [c["name"] for c in (keys[key]["assetChecksOrError"] or {}).get("checks", [])]
            assert names, f"{key} has no checks"
            text = browser.open(f"{base}/assets/{key}?view=checks", ready=f"Checks ({len(names)})")
            absent = [n for n in names if n not in text]
            assert not absent, (key, absent)
            browser.screenshot(ARTIFACTS / f"checks-{key}.png")
        assert {"ledger_integrity", "ledger_expectations"} <= {c["name"] for c in keys["ledger"]["assetChecksOrError"]["checks"]}
        assert len(list(ARTIFACTS.glob("*.png"))) >= 9
    finally:
        if browser is not None:
            browser.close()
        down = subprocess.run([*memc, "down"], env=env, capture_output=True, text=True, timeout=90)
        assert down.returncode == 0, down.stdout + down.stderr
