"""What the MCP tests share: reading a tool call's result, and the SDK's HTTP client transport.
Used by tests/platform/test_mcp.py and tests/platform/test_security.py."""

from __future__ import annotations

import json


def tool_data(result) -> dict:
    """A successful tool call's result as a dict (structured content, or the JSON text)."""
    assert not result.is_error, result.content
    if result.structured_content is not None:
        data = result.structured_content
        return data.get("result", data) if set(data) == {"result"} else data
    return json.loads(result.content[0].text)


def http_transport(port: int, key: str | None):
    """The SDK's streamable-HTTP client transport, sending ``key`` as a bearer token."""
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=httpx2.AsyncClient(headers=headers, timeout=120))


def tool_error_text(result) -> str:
    """A failed tool call's message."""
    assert result.is_error, result
    return " ".join(getattr(c, "text", "") for c in result.content)
