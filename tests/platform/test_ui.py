"""`memc ui` serves the Dagster UI on 127.0.0.1 for a memory home, with telemetry off."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request

from api.process import free_port
from ui_graphql import graphql


def test_memc_ui_serves_the_asset_graph(tmp_path):
    home = tmp_path / "home"
    port = free_port()
    env = {**os.environ, "DAGSTER_DISABLE_TELEMETRY": "1"}
    log = open(tmp_path / "ui.log", "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "cli.main", "--home", str(home), "ui", "--port", str(port)],
        stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True,
    )
    try:
        deadline = time.time() + 120
        info = None
        while time.time() < deadline and proc.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/server_info", timeout=2) as r:
                    info = json.loads(r.read())
                    break
            except OSError:
                time.sleep(1)
        assert info, f"UI did not come up: {(tmp_path / 'ui.log').read_text()[-3000:]}"
        assert info["dagster_webserver_version"] == "1.13.27"
        # the code location loads, with the ledger and the views in it
        data = {}
        while time.time() < deadline:
            data = graphql(port, "{ assetNodes { assetKey { path } } }", raw=True)
            if data.get("data", {}).get("assetNodes"):
                break
            time.sleep(1)
        keys = {"/".join(n["assetKey"]["path"]) for n in data["data"]["assetNodes"]}
        assert {"ledger", "claims", "state_current", "evidence_index", "entity_graph", "centrality"} <= keys
        # Written once (telemetry and the community form off), not appended to on every start.
        instance_yaml = (home / "dagster" / "dagster.yaml").read_text()
        assert instance_yaml.count("telemetry:\n  enabled: false") == 1 and instance_yaml.count("nux:\n  enabled: false") == 1, instance_yaml
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()
