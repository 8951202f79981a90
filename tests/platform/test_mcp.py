"""The MCP server as an agent meets it: the official SDK's client, talking to `memc mcp`
subprocesses over stdio (and once over streamable HTTP), on a scratch copy of the built corpus."""

from __future__ import annotations

import json
import os
import shutil
import sys
import time

import anyio
import pytest
from mcp_client import http_transport, tool_data, tool_error_text

MEMC = [sys.executable, "-m", "cli.main"]
TOOLS = {"remember", "recall", "state", "forget"}


@pytest.fixture(scope="module")
def scratch(built_home, tmp_path_factory):
    from memc.home import MemcHome

    home, _ = built_home
    copy = MemcHome.resolve(tmp_path_factory.mktemp("mcp") / "home")
    shutil.copytree(home.root, copy.root, ignore=shutil.ignore_patterns("config"))
    return copy


def _params(home, *args: str):
    from mcp import StdioServerParameters

    env = {k: v for k, v in os.environ.items() if k.startswith(("PATH", "PYTHON", "HOME", "VIRTUAL_ENV", "LANG", "LC_"))}
    env.update({"HF_HUB_OFFLINE": "1", "DAGSTER_DISABLE_TELEMETRY": "1", "DO_NOT_TRACK": "1"})
    # The tests decide when views are built (a server building by itself would race them).
    return StdioServerParameters(command=MEMC[0], args=[*MEMC[1:], "--home", str(home.root), "mcp", "--no-keep-fresh", *args], env=env)


def test_remember_then_recall_over_stdio_with_provenance(scratch):
    from mcp import Client

    fact = "Marta keeps her bike in the blue shed behind the bakery."

    async def main():
        async with Client(_params(scratch, "--as", "marta"), read_timeout_seconds=180) as client:
            tools = (await client.list_tools()).tools
            assert {t.name for t in tools} == TOOLS
            for t in tools:  # no tool lets the caller say who is asking
                assert not {"asker", "principal", "as", "as_admin"} & set(t.input_schema.get("properties", {})), t.name

            remembered = tool_data(await client.call_tool("remember", {"content": fact, "valid_at": "2025-03-01T09:00:00Z", "source_ref": "chat-7"}))
            assert remembered["appended"] == 1 and remembered["principal"] == "marta"
            entry = remembered["entries"][0]
            # the home's default, the same in every interface: public within its scope, and said so
            assert entry["visibility"] == ["public"] and entry["kind"] == "observation"
            assert "1 entry made public in scope 'default'" in remembered["warnings"][0]
            assert remembered["watermarks"] is None  # no refresh: the compiler patches the index's tail

            again = tool_data(await client.call_tool("remember", {"content": fact, "valid_at": "2025-03-01T09:00:00Z", "source_ref": "chat-7"}))
            assert again["appended"] == 0 and again["entries"][0]["entry_id"] == entry["entry_id"]

            ctx = tool_data(await client.call_tool("recall", {"question": "Where does Marta keep her bike?", "format": "json"}))
            assert ctx["asker"] == "marta"
            hits = [i for i in ctx["items"] if "blue shed" in i["text"]]
            assert hits, ctx["rendered"]
            hit = hits[0]
            assert hit["entry_id"] == entry["entry_id"] and hit["source_ref"] == "chat-7"
            assert hit["valid_at"].startswith("2025-03-01") and hit["recorded_at"]
            assert "[chat-7]" in ctx["rendered"]  # the rendering cites the turn by its source ref; ids are in items
            assert ctx["staleness"]["evidence_index"]["decision"] == "patched"

            march = tool_data(await client.call_tool("state", {"entity": "Elena", "as_of": "2024-03-01T00:00:00Z"}))
            assert {f["object"] for f in march["facts"] if f["predicate"] == "lives_in"} == {"Lisbon"}

            assert tool_error_text(await client.call_tool("forget", {"entry_ids": [entry["entry_id"]], "reason": "test"})).count("forbidden")
            # the fixed principal may not write where it may not see (docs/security.md), and what it
            # tried to write is not there for anyone
            planted = await client.call_tool("remember", {"content": "Marta's locker code is 9931.", "visibility": ["elena"]})
            assert "forbidden: entries[0]: 'marta' may not write evidence visible to ['elena']" in tool_error_text(planted)
            secret = tool_data(await client.call_tool("recall", {"question": "What is Marta's locker code?", "k": 20, "format": "json"}))
            assert "9931" not in json.dumps(secret)
            assert "invalid_request: malformed principal" in tool_error_text(await client.call_tool("remember", {"content": "x", "visibility": ["not a principal"]}))

    anyio.run(main)


def test_streamable_http_admin_forget_and_principal_is_required(scratch):
    """Last in the module: the forget (without a rebuild) leaves the scratch home's views dropped."""
    import subprocess

    from mcp import Client

    from api.process import free_port

    bad = subprocess.run([*MEMC, "--home", str(scratch.root), "mcp"], capture_output=True, text=True, timeout=120)
    assert bad.returncode != 0 and "--as PRINCIPAL" in bad.stderr

    from api.auth import KeyStore

    token, _ = KeyStore(scratch).add("ops", admin=True)
    port = free_port()
    proc = subprocess.Popen(
        [*MEMC, "--home", str(scratch.root), "mcp", "--no-keep-fresh", "--http", str(port)],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    try:

        async def main():
            deadline = time.monotonic() + 60
            while True:
                try:
                    client = Client(http_transport(port, token), read_timeout_seconds=120)
                    await client.__aenter__()
                    break
                except Exception:
                    if time.monotonic() > deadline or proc.poll() is not None:
                        raise
                    await anyio.sleep(0.3)
            try:
                assert {t.name for t in (await client.list_tools()).tools} == TOOLS
                made = tool_data(await client.call_tool("remember", {"content": "Ops rotated the VPN secret on Monday."}))
                entry_id = made["entries"][0]["entry_id"]
                assert made["principal"] == "ops" and made["entries"][0]["visibility"] == ["public"] and made["warnings"]
                report = tool_data(await client.call_tool("forget", {"entry_ids": [entry_id], "reason": "test erasure", "rebuild": False}))
                assert report["status"] == "done" and report["erased"] == [entry_id] and report["by"] == "ops"
                assert "invalid_request" in tool_error_text(await client.call_tool("forget", {"reason": "names nothing"}))
            finally:
                await client.__aexit__(None, None, None)
            return entry_id

        entry_id = anyio.run(main)
        from ledger import Ledger

        rows = list(Ledger(scratch.ledger).iter_entries())
        assert not any("VPN secret" in (r["content"] or "") for r in rows) and any(entry_id in (r["attributes"] or "") for r in rows)
    finally:
        proc.terminate()
        proc.wait(timeout=15)


# Issue 20's day-one defects: recall answers with the rendered context an agent reads, the
# JSON only on request; an unknown scope is a tool error naming the scopes the asker may see.
def test_recall_answers_with_the_rendering_and_json_on_request(scratch):
    from mcp import Client

    question = "Where does Elena live?"

    async def main():
        async with Client(_params(scratch, "--as", "elena"), read_timeout_seconds=180) as client:
            recall = next(t for t in (await client.list_tools()).tools if t.name == "recall")
            assert recall.input_schema["properties"]["format"]["enum"] == ["text", "json"]
            assert "format='json'" in recall.description

            text_result = await client.call_tool("recall", {"question": question})
            assert not text_result.is_error, text_result.content
            assert text_result.structured_content is None  # nothing beside the text for a client to forward
            assert len(text_result.content) == 1
            text = text_result.content[0].text

            json_result = await client.call_tool("recall", {"question": question, "format": "json"})
            data = tool_data(json_result)
            json_text = json_result.content[0].text
            assert json.loads(json_text) == data  # the text of the JSON answer is the JSON itself

            # The default is the rendering the JSON carries (one compile per call: the query id
            # under it differs), and it is the lean one.
            assert text.startswith(data["rendered"]), (text[:300], data["rendered"][:300])
            assert text.rstrip().endswith(text_result_query_id(text))
            assert data["items"] and data["rendered"].count("\n") > 3
            assert len(text) * 3 < len(json_text), (len(text), len(json_text))
            with pytest.raises(ValueError):
                json.loads(text)

    anyio.run(main)


def text_result_query_id(text: str) -> str:
    last = text.rstrip().splitlines()[-1]
    assert last.startswith("query "), last
    return last


def test_recall_in_an_unknown_scope_is_an_error_naming_the_visible_scopes(scratch):
    from mcp import Client

    async def main():
        async with Client(_params(scratch, "--as", "elena"), read_timeout_seconds=180) as client:
            msg = tool_error_text(await client.call_tool("recall", {"question": "Where does Elena live?", "scope": "nosuch"}))
            assert "unknown_scope: unknown scope 'nosuch'" in msg and "'nosuch'" in msg and "'team'" in msg, msg
            # the known scope still answers
            assert "Elena" in (await client.call_tool("recall", {"question": "Where does Elena live?", "scope": "team"})).content[0].text

    anyio.run(main)
