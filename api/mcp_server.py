"""The MCP server (official MCP Python SDK): memory as tools for an agent.

`memc mcp` serves one memory home over stdio for ONE principal, fixed when the server starts
(``--as``, or the principal of ``--key``): stdio is a pipe to the agent the user started, so
whoever runs the command is that principal already. Over streamable HTTP (``--http PORT``, on
127.0.0.1) any local process could connect, so there is no fixed principal: every request must
carry an API key of the HTTP API (``Authorization: Bearer memc_...``; 401 without a valid one,
through the SDK's own bearer-auth middleware) and each tool call acts for that key's principal,
with its admin flag, scopes and write grants. No tool takes an asker argument, so an agent
cannot ask as someone else. Tools:

* ``remember`` - append one piece of evidence to the ledger (private to the principal unless a
  visibility says otherwise). ``recall`` sees it at once: the context compiler patches the
  evidence index's tail from the ledger (staleness policy ``patch``); ``refresh`` also brings
  the index itself up to date through Dagster (about 1 s warm, longer on the first call);
* ``recall`` - compile a context for a question. By default its result is the rendered context
  as text (what an agent reads: about 2.9k characters on the sample corpus, where the JSON is
  about 12k); ``format="json"`` returns the whole object instead (items with entry ids, source
  refs, times, the plan and watermarks: docs/context.md), as structured content and compact JSON;
* ``state`` - what holds for an entity at a valid time, as known at a transaction time;
* ``forget`` - erase entries (only when the server runs with an admin principal).

Refusals are tool errors whose text starts with the same stable codes as the HTTP API
(``forbidden: ...``, ``invalid_entry: ...``).
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any, Literal

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent

from api.auth import Caller, KeyStore
from api.errors import ApiError
from api.service import Service, json_ready
from api.service import package_version as _version
from memc.home import MemcHome
from query.config import PresetName

INSTRUCTIONS = (
    "memc is a memory compiler. `remember` stores evidence verbatim in an append-only ledger; "
    "`recall` compiles the evidence relevant to a question, each item with its ledger entry id, "
    "source ref and times; `state` tells what holds for a person or thing at a time. Everything "
    "is answered for the principal this server was started for, from only what it may see."
)


class KeyVerifier:
    """The SDK's TokenVerifier over memc's API keys: a bearer token is a key of this home."""

    def __init__(self, keys: KeyStore):
        self.keys = keys

    async def verify_token(self, token: str):
        who = self.keys.authenticate(token)
        if who is None:
            return None
        return AccessToken(token=token, client_id=who.key_id or who.principal, scopes=[], subject=who.principal)


def build_mcp_server(home: MemcHome, caller: Caller | None, *, url: str | None = None, keep_fresh: bool = False):
    """An MCPServer whose every tool acts as ``caller`` (stdio: fixed here, never by the tool
    arguments), or, with ``caller=None`` (streamable HTTP at ``url``), as the principal of the
    API key each request carries. ``keep_fresh``: build the views whenever the ledger is ahead
    of them (api/keeper.py), as `memc serve` does."""

    service = Service(home)
    if keep_fresh:
        service.keep_fresh()
    auth: dict[str, Any] = {}
    if caller is None:
        if url is None:
            raise ValueError("an MCP server without a fixed principal needs its URL (it authenticates every request)")
        # memc is a resource server only: its keys are made by `memc keys add`, not by OAuth.
        auth = {"token_verifier": KeyVerifier(service.keys), "auth": AuthSettings(issuer_url=url, resource_server_url=None)}
    server = MCPServer(
        "memc",
        instructions=INSTRUCTIONS,
        version=_version(),
        log_level="WARNING",
        **auth,
    )

    def _who() -> Caller:
        if caller is not None:
            return caller
        token = get_access_token()
        # Re-read from the key store: a key revoked since the request was authenticated is refused.
        who = service.keys.authenticate(token.token) if token is not None else None
        if who is None:
            raise ToolError("unauthenticated: this request carries no valid API key")
        return who

    def _run(fn, *args, **kwargs) -> dict[str, Any]:
        who = _who()
        try:
            return fn(who, *args, **kwargs)
        except ApiError as exc:
            raise ToolError(str(exc)) from None

    @server.tool(
        name="remember",
        description=(
            "Append one piece of evidence (an observation, a message, a correction...) to memory, "
            "verbatim. Without `visibility` it gets the memory home's default: public to every asker of "
            "its scope unless the home sets default_visibility = \"writer\" (then private to this "
            "server's principal); the result's `warnings` says when it was made public. Give `visibility` "
            "(principals, or [\"public\"]) to choose. Returns its ledger entry id and seq. recall finds it immediately; refresh=true "
            "also rebuilds the evidence index incrementally (slower)."
        ),
    )
    def remember(
        content: str,
        valid_at: datetime | None = None,
        kind: Literal["observation", "message", "event", "correction", "document"] = "observation",
        scope: str | None = None,
        visibility: list[str] | None = None,
        actor: str | None = None,
        session_id: str | None = None,
        source_ref: str | None = None,
        idempotency_key: str | None = None,
        refresh: bool = False,
    ) -> dict[str, Any]:
        # The actor and source ref are the caller's claim: the ledger records the caller as who
        # ingested the entry, and provenance shows it (docs/security.md).
        record = {
            "content": content,
            "valid_at": (valid_at or datetime.now(timezone.utc)).isoformat(),
            "kind": kind,
            "actor": actor,
            "session_id": session_id,
            "source_ref": source_ref,
            "idempotency_key": idempotency_key,
        }
        return _run(
            service.ingest_entries,
            [record],
            scope=scope,
            visibility=visibility,
            refresh=refresh,
            transport="memc-mcp",
        )

    @server.tool(
        name="recall",
        description=(
            "Compile what memory holds about a question: evidence items (verbatim text, source ref, "
            "valid and recorded time) and current facts with their quotes, within a token budget. "
            "Returns the context rendered as text, ready to read (format='text', the default); "
            "format='json' returns the whole object instead (ledger entry ids, scores, the plan, "
            "watermarks and `rendered`), about four times longer. `goal` (with `goal_entities`, "
            "`goal_predicates`): the task the answer is for, which ranks its entities and predicates "
            "first. `uncolored`: leave out every fact about you, for a take not coloured by what "
            "memory knows of you."
        ),
    )
    def recall(
        question: str,
        scope: str | None = None,
        preset: PresetName | None = None,
        budget_tokens: int | None = None,
        k: int | None = None,
        goal: str | None = None,
        goal_entities: list[str] | None = None,
        goal_predicates: list[str] | None = None,
        uncolored: bool = False,
        format: Literal["text", "json"] = "text",
    ) -> CallToolResult:
        state = {"entities": goal_entities or [], "predicates": goal_predicates or []}
        out = _run(service.ask, question, scope=scope, preset=preset, budget_tokens=budget_tokens, k=k, goal=goal, agent_state=state, uncolored=uncolored)
        if format == "text":
            # The rendering only: an agent reads every character of a tool result, and the JSON
            # (ids, scores, the plan) is for programs (12k characters against 2.9k on the samples).
            # The query id goes below it, as `memc ask` prints it, for `memc replay`.
            return CallToolResult(content=[TextContent(type="text", text=f"{out['rendered']}\n\nquery {out['query_id']}")])
        out = json_ready(out)
        # Compact, not the SDK's indent=2: the same bytes a client parses, without the whitespace.
        return CallToolResult(content=[TextContent(type="text", text=json.dumps(out, ensure_ascii=False, separators=(",", ":")))], structured_content=out)

    @server.tool(
        name="state",
        description=(
            "What holds for a person or thing (a name, alias or entity id) at valid time `as_of`, "
            "as memory knew it at `known_at` (both ISO 8601, default now), with each fact's source and "
            "any conflicts."
        ),
    )
    def state(entity: str, as_of: datetime | None = None, known_at: datetime | None = None, scope: str | None = None) -> dict[str, Any]:
        return _run(service.state, entity, as_of=as_of, known_at=known_at, scope=scope)

    @server.tool(
        name="forget",
        description=(
            "Erase evidence by ledger entry ids, source uri, scope or subject, with a reason, and purge "
            "it from every view. Only for a server started with an admin principal."
        ),
    )
    def forget(
        reason: str,
        entry_ids: list[str] | None = None,
        source_uri: str | None = None,
        scope: str | None = None,
        subject: str | None = None,
        rebuild: bool = True,
    ) -> dict[str, Any]:
        return _run(
            service.forget, entry_ids=entry_ids or (), source_uri=source_uri, scope=scope, subject=subject, reason=reason, rebuild=rebuild
        )

    return server
