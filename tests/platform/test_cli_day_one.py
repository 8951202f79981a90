"""`memc ask --scope nosuch` (issue 20): an error naming the scopes the asker may see, not an
empty context. The real CLI in a subprocess over a real ledger."""

from __future__ import annotations

import os
import subprocess
import sys

from conftest import SAMPLES

MEMC = [sys.executable, "-m", "cli.main"]
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "DAGSTER_DISABLE_TELEMETRY": "1"}


def test_ask_in_an_unknown_scope_is_an_error_naming_the_visible_scopes(tmp_path):
    home = str(tmp_path / "home")
    ingest = subprocess.run([*MEMC, "--home", home, "ingest", str(SAMPLES / "team"), "--scope", "team"], capture_output=True, text=True, env=ENV, timeout=300)
    assert ingest.returncode == 0, ingest.stderr
    r = subprocess.run([*MEMC, "--home", home, "ask", "Where does Elena live?", "--as", "elena", "--scope", "nosuch", "--no-server"],
                       capture_output=True, text=True, env=ENV, timeout=300)  # fmt: skip
    assert r.returncode == 1, (r.returncode, r.stdout, r.stderr)
    assert r.stdout == ""
    assert "Error: unknown scope 'nosuch'" in r.stderr and "the scopes you may see: 'team'" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
