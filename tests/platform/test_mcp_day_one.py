"""MCP day-one defects (issue 20): `recall` answers with the rendered context an agent reads,
the JSON only on request; an unknown scope is a tool error naming the scopes the asker may see.
The official SDK's client over stdio to a real `memc mcp`, on a scratch copy of the built corpus."""

from __future__ import annotations

import json
import os
import shutil
import sys

import anyio
import pytest
from mcp_client import tool_data, tool_error_text

MEMC = [sys.executable, "-m", "cli.main"]


@pytest.fixture(scope="module")
def scratch(built_home, tmp_path_factory):
    from memc.home import MemcHome

    home, _ = built_home
    copy = MemcHome.resolve(tmp_path_factory.mktemp("mcp-day-one") / "home")
    shutil.copytree(home.root, copy.root, ignore=shutil.ignore_patterns("config"))
    return copy


def _params(home, *args: str):
    from mcp import StdioServerParameters

    env = {k: v for k, v in os.environ.items() if k.startswith(("PATH", "PYTHON", "HOME", "VIRTUAL_ENV", "LANG", "LC_"))}
    env.update({"HF_HUB_OFFLINE": "1", "DAGSTER_DISABLE_TELEMETRY": "1", "DO_NOT_TRACK": "1"})
    return StdioServerParameters(command=MEMC[0], args=[*MEMC[1:], "--home", str(home.root), "mcp", "--no-keep-fresh", *args], env=env)


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
