"""Talk to a running Dagster webserver (`memc ui`, `memc up`) as its UI does: GraphQL over HTTP
on 127.0.0.1. Shared by the tests that start one."""

from __future__ import annotations

import json
import urllib.request
from typing import Any


def graphql(port: int, query: str, *, raw: bool = False, timeout: float = 20) -> dict[str, Any]:
    """The response's ``data`` (asserting the server reported no errors), or with ``raw`` the
    whole response: a caller polling a code location that is still loading reads errors too."""
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}/graphql", data=json.dumps({"query": query}).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=timeout) as r:
        out = json.loads(r.read())
    if raw:
        return out
    assert "errors" not in out, out["errors"]
    return out["data"]
