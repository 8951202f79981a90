"""The attacks of docs/security.md, one test each, as an attacker on the same machine would try
them: a second API key (bob's), a local process that can reach a port, the analyst's CLI, a
question that quoted a word later erased, and input crafted to slip past validation.

Each test failed on the code before the fix it covers: bob's key planted evidence in alice's
private memory, MCP over HTTP served alice to anyone, `memc sql` read every private row and
/etc/passwd, the query log kept the question's words after an erasure, `state` told a hidden
entity from a missing one, and the inputs below crashed or were taken silently.
"""

from __future__ import annotations

import json
import secrets
import shutil
import string
import subprocess
import sys
import time
from datetime import datetime, timezone

import anyio
import httpx2 as httpx
import pytest

MEMC = [sys.executable, "-m", "cli.main"]


def memc(home, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*MEMC, "--home", str(home.root), *args], capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def served(built_home, tmp_path_factory):
    """An HTTP API over a scratch copy of the built sample corpus, with keys for alice, bob, a
    service that may write for alice, and an admin."""
    from api.auth import KeyStore
    from api.process import ServerProcess
    from memc.home import MemcHome

    home = MemcHome.resolve(tmp_path_factory.mktemp("security") / "home")
    shutil.copytree(built_home[0].root, home.root, ignore=shutil.ignore_patterns("config"))
    store = KeyStore(home)
    keys = {
        "alice": store.add("alice")[0],
        "bob": store.add("bob")[0],
        "mailer": store.add("mail-importer", write_for=["alice"])[0],
        "admin": store.add("ops", admin=True)[0],
    }
    srv = ServerProcess(home.root).start()
    try:
        srv.wait_ready()
        yield srv, keys, home
    finally:
        srv.stop()


def _client(srv, key: str | None) -> httpx.Client:
    return httpx.Client(base_url=srv.url, headers={"Authorization": f"Bearer {key}"} if key else {}, timeout=120)


def _ledger_rows(home) -> dict[str, dict]:
    from ledger import Ledger

    return {r["entry_id"]: r for r in Ledger(home.ledger).iter_entries()}


# ------------------------------------------------------------------ 1. writing into another's memory


def test_bob_cannot_plant_evidence_in_alices_private_memory_over_http(served):
    srv, keys, home = served
    plant = {"content": "Alice lives in Atlantis now.", "valid_at": "2025-06-01T09:00:00Z", "kind": "message",
             "actor": "Alice", "source_ref": "alice-chat:7"}  # fmt: skip
    with _client(srv, keys["bob"]) as c:
        head = c.get("/v1/watermarks").json()["ledger_head"]
        r = c.post("/v1/ingest", json={"entries": [plant], "visibility": ["alice"], "source_uri": "file:///home/alice/chat.jsonl"})
        assert r.status_code == 403 and r.json()["error"]["code"] == "forbidden", r.text
        # one entry of a batch naming alice's visibility refuses the whole batch
        mixed = {"entries": [{"content": "fine", "valid_at": "2025-06-01"}, {**plant, "visibility": ["alice"]}]}
        r = c.post("/v1/ingest", json=mixed)
        assert r.status_code == 403 and "entries[1]" in r.json()["error"]["message"]
        r = c.post("/v1/ingest/file", files={"file": ("chat.md", b"# Alice\n\nAlice lives in Atlantis.\n")}, data={"visibility": "alice"})
        assert r.status_code == 403
        assert c.get("/v1/watermarks").json()["ledger_head"] == head  # nothing of a refused write was committed

        # bob may say things about Alice in public: the ledger names him, and so does provenance
        said = c.post("/v1/ingest", json={"entries": [{**plant, "content": "Alice told me she rides a green tandem."}],
                                          "visibility": ["public"], "scope": "team", "source_uri": "alice-chat"}).json()  # fmt: skip
    entry = said["entries"][0]
    assert entry["ingested_by"] == "bob"
    row = _ledger_rows(home)[entry["entry_id"]]
    assert row["ingested_by"] == "bob" and row["source_uri"] == "memc-api:bob/alice-chat"  # under bob's own name
    with _client(srv, keys["alice"]) as c:
        ctx = c.post("/v1/ask", json={"question": "What does Alice ride? green tandem", "scope": "team"}).json()
    hit = next(i for i in ctx["items"] if "green tandem" in i["text"])
    assert hit["ingested_by"][hit["entry_ids"].index(entry["entry_id"])] == "bob"
    assert "[alice-chat:7 via bob]" in ctx["rendered"], ctx["rendered"]

    # a key granted to write for alice may; the ledger names the service, not alice
    with _client(srv, keys["mailer"]) as c:
        ok = c.post("/v1/ingest", json={"entries": [{"content": "Your parcel arrives on Friday.", "valid_at": "2025-06-02"}], "visibility": ["alice"]})
    assert ok.status_code == 200 and ok.json()["entries"][0]["ingested_by"] == "mail-importer"
    with _client(srv, keys["admin"]) as c:
        ok = c.post("/v1/ingest", json={"entries": [{"content": "Ops note for alice.", "valid_at": "2025-06-02"}], "visibility": ["alice"]})
    assert ok.status_code == 200 and ok.json()["entries"][0]["ingested_by"] == "ops"


def test_memc_ingest_as_a_principal_obeys_the_write_rule(tmp_path):
    from memc.home import MemcHome

    home = MemcHome.resolve(tmp_path / "home").ensure()
    note = tmp_path / "in" / "note.md"
    note.parent.mkdir()
    note.write_text("# Plan\n\nAlice lives in Atlantis.\n")
    r = memc(home, "ingest", str(note), "--as", "bob", "--visibility", "alice")
    assert r.returncode != 0 and "'bob' may not write evidence visible to ['alice']" in r.stderr, r.stderr
    events = tmp_path / "in" / "events.jsonl"
    events.write_text(json.dumps({"content": "planted", "valid_at": "2025-01-01", "visibility": ["alice"]}) + "\n")
    r = memc(home, "ingest", str(events), "--as", "bob", "--visibility", "bob")
    assert r.returncode != 0 and "events.jsonl" in r.stderr and "visibility" in r.stderr
    for reserved in ("memc:admin", "public"):
        r = memc(home, "ingest", str(note), "--as", reserved)
        assert r.returncode != 0 and "--as" in r.stderr, reserved
    assert not list(home.ledger.glob("*.parquet")), "a refused write commits nothing"
    ok = memc(home, "ingest", str(note), "--as", "bob", "--visibility", "bob,alice", "--json")
    assert ok.returncode == 0, ok.stderr
    op = memc(home, "ingest", str(events), "--json")  # the operator (no --as) may write anything
    assert op.returncode == 0, op.stderr
    writers = sorted(r["ingested_by"] for r in _ledger_rows(home).values())
    assert writers == ["bob", "memc:cli"]


def test_keys_cannot_stand_for_memcs_own_names(tmp_path):
    from api.auth import KeyError_, KeyStore
    from memc.home import MemcHome

    store = KeyStore(MemcHome.resolve(tmp_path / "home").ensure())
    for name in ("memc:admin", "memc:cli", "public"):
        with pytest.raises(KeyError_):
            store.add(name)
    with pytest.raises(KeyError_):
        store.add("svc", write_for=["memc:admin"])
    # nor may any --as of the CLI: as memc:admin a compile would read the erasure tombstones
    home = MemcHome.resolve(tmp_path / "home")
    for args in (("ask", "what was erased?"), ("state", "Elena"), ("sql", "select 1"), ("claims",)):
        r = memc(home, *args, "--as", "memc:admin")
        assert r.returncode == 2 and "memc:" in r.stderr, (args, r.stderr)


# ------------------------------------------------------------------ 2. MCP over HTTP authenticates


def test_mcp_over_http_needs_a_key_and_acts_for_its_principal(served):
    from mcp import Client

    from api.process import free_port
    from mcp_client import http_transport, tool_data, tool_error_text

    srv, keys, home = served
    refused = memc(home, "mcp", "--as", "alice", "--http", "0")
    assert refused.returncode != 0 and "API key" in refused.stderr
    port = free_port()
    proc = subprocess.Popen([*MEMC, "--home", str(home.root), "mcp", "--http", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)  # fmt: skip
    try:
        url = f"http://127.0.0.1:{port}/mcp"
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}  # fmt: skip
        headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
        deadline = time.monotonic() + 90
        while True:
            try:
                r = httpx.post(url, json=init, headers=headers, timeout=10)
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline and proc.poll() is None, "the MCP server did not start"
                time.sleep(0.3)
        assert r.status_code == 401, (r.status_code, r.text)
        bad = httpx.post(url, json=init, headers={**headers, "Authorization": "Bearer memc_000000000000_" + "x" * 43}, timeout=10)
        assert bad.status_code == 401

        async def main():
            async with Client(http_transport(port, keys["bob"]), read_timeout_seconds=120) as client:
                made = tool_data(await client.call_tool("remember", {"content": "Bob parks on level 2.", "valid_at": "2025-06-03T08:00:00Z", "visibility": ["bob"]}))
                assert made["principal"] == "bob" and made["entries"][0]["visibility"] == ["bob"]
                planted = await client.call_tool("remember", {"content": "Alice lives in Atlantis.", "visibility": ["alice"], "actor": "Alice"})
                assert "forbidden: entries[0]: 'bob' may not write evidence visible to ['alice']" in tool_error_text(planted)
                ctx = tool_data(await client.call_tool("recall", {"question": "Where does Bob park?", "format": "json"}))
                assert ctx["asker"] == "bob" and any("level 2" in i["text"] for i in ctx["items"])
                assert "forbidden" in tool_error_text(await client.call_tool("forget", {"entry_ids": [made["entries"][0]["entry_id"]], "reason": "x"}))

        anyio.run(main)
    finally:
        # SIGTERM: uvicorn finishes what it serves first. A fresh-clone CI run on a machine
        # loaded to 5-6 took over 15 s; past a minute it is a hang, and the server is killed.
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise AssertionError("the MCP server did not end within 60 s of SIGTERM") from None


# ------------------------------------------------------------------ 3. SQL and claims as a principal


def test_memc_sql_and_claims_run_as_a_principal(tmp_path_factory):
    from forget_homes import forensic_home

    home = forensic_home(tmp_path_factory).home
    private = "select count(*) as n from state_history where not list_contains(visibility, 'public') and not list_contains(visibility, '{p}')"
    as_alice = memc(home, "sql", "--as", "alice", private.format(p="alice"), "--json")
    assert as_alice.returncode == 0, as_alice.stderr
    assert json.loads(as_alice.stdout) == [{"n": 0}]
    admin = memc(home, "sql", "--admin", private.format(p="alice"), "--json")
    assert json.loads(admin.stdout)[0]["n"] > 0, "the home must hold rows alice may not see, or this proves nothing"
    # every mart an asker gets holds only rows it may see; the staging models are not there
    for table in ("state_current", "conflicts", "entities", "interactions", "timeline", "graph_entries"):
        rows = json.loads(memc(home, "sql", "--as", "alice", f"select * from {table}", "--json").stdout)
        assert all("alice" in r["visibility"] or "public" in r["visibility"] for r in rows), table
    assert memc(home, "sql", "--as", "alice", "select * from stg_memc__ledger_entries").returncode != 0
    # no file outside the home, for anyone
    for who in (("--as", "alice"), ("--admin",)):
        r = memc(home, "sql", *who, "select * from read_text('/etc/passwd')")
        assert r.returncode != 0 and "/etc/passwd" in r.stderr and "root:" not in r.stdout, who
    r = memc(home, "sql", "--as", "alice", f"select count(*) from read_parquet('{home.ledger}/*.parquet')")
    assert r.returncode != 0, "an asker reads no file at all, not even the home's own ledger"
    assert memc(home, "sql", "--admin", "select count(*) from stg_memc__ledger_entries").returncode == 0

    claims = json.loads(memc(home, "claims", "--as", "alice", "--json").stdout)
    everything = json.loads(memc(home, "claims", "--admin", "--json").stdout)
    assert claims and len(claims) < len(everything)
    assert all("alice" in c["visibility"] or "public" in c["visibility"] for c in claims)
    assert memc(home, "claims").returncode != 0  # no implied administrator


# ------------------------------------------------------------------ 4. erased words in questions


def test_a_question_quoting_an_erased_word_leaves_no_byte_of_it(tmp_path_factory, monkeypatch):
    from forgetting import forget
    from orchestration.runner import rebuild_views
    from ledger import Ledger
    from ledger.schema import NewEntry
    from query import compile_context
    from canary_stores import all_hits
    from forget_homes import copy_home, forensic_home

    monkeypatch.setenv("MEMC_PARQUET_COMPRESSION", "none")
    home = copy_home(forensic_home(tmp_path_factory), tmp_path_factory.mktemp("erased-word") / "home").home
    # One plain word: shorter than the scrub's needles (16-character lines, 12-character ids).
    word = "Zu" + "".join(secrets.choice(string.ascii_lowercase) for _ in range(7))
    turn = NewEntry(kind="message", scope="ops", content=word, actor="Alice", session_id="oncall:S1",
                    source_ref="oncall:9", valid_at=datetime(2024, 5, 3, 9, 30, tzinfo=timezone.utc), visibility=("alice",))  # fmt: skip
    (eid,) = Ledger(home.ledger).append([turn]).entry_ids
    question = f"What did Alice mean by {word}?"
    ctx = compile_context(question, "alice", home=home, scope="ops")
    assert any(word in it.text for it in ctx.items), "the patched tail shows the turn before the erasure"

    rep = forget(home, entry_ids=[eid], reason="asked", by="alice", rebuild=rebuild_views)
    assert rep.status == "done" and rep.rebuilt
    hits = all_hits(home, [word], [question])
    assert hits == {k: {} for k in hits}, hits


# ------------------------------------------------------------------ 5. hidden and missing look alike


def test_state_answers_a_hidden_entity_as_a_missing_one(tmp_path_factory):
    """The CLI's answer; HTTP and MCP call the same state_for_entity."""
    from forget_homes import forensic_home

    home = forensic_home(tmp_path_factory).home
    admin = json.loads(memc(home, "state", "Dana", "--admin", "--json").stdout)
    assert admin["subjects"] and admin["facts"], "Dana is known, from bob's and carol's private review"
    hidden = json.loads(memc(home, "state", "Dana", "--as", "alice", "--json").stdout)
    missing = json.loads(memc(home, "state", "Nobodyatall", "--as", "alice", "--json").stdout)
    strip = lambda d: {k: v for k, v in d.items() if k not in ("entity", "as_of", "known_at")}  # noqa: E731
    assert strip(hidden) == strip(missing) == {"subjects": [], "asker": "alice", "facts": [], "conflicts": []}
    text = memc(home, "state", "Dana", "--as", "alice").stdout
    assert "no such entity" in text and "ent_" not in text
    assert json.loads(memc(home, "state", "Dana", "--as", "bob", "--json").stdout)["facts"]  # bob may see it


# ------------------------------------------------------------------ 6. inputs that escaped validation


def test_inputs_at_the_edges_get_errors_naming_file_line_and_field(tmp_path):
    from ingestion import IngestError, ingest_paths
    from ledger import Ledger

    ledger = Ledger(tmp_path / "ledger")
    d = tmp_path / "in"
    d.mkdir()

    def refused(name: str, body: str | bytes, *, line: int | None, field: str) -> None:
        p = d / name
        p.write_bytes(body if isinstance(body, bytes) else body.encode())
        with pytest.raises(IngestError) as e:
            ingest_paths(ledger, [p])
        assert (e.value.path, e.value.line, e.value.field) == (str(p), line, field), str(e.value)
        p.unlink()

    ok = json.dumps({"content": "fine", "valid_at": "2024-01-01"})
    refused("early.jsonl", ok + "\n" + json.dumps({"content": "x", "valid_at": "0001-01-01T00:00:00+05:00"}) + "\n", line=2, field="valid_at")
    refused("late.jsonl", json.dumps({"content": "x", "timestamp": "9999-12-31T23:00:00-05:00"}) + "\n", line=1, field="timestamp")
    refused("nul.jsonl", json.dumps({"content": "bad\u0000byte", "valid_at": "2024-01-01"}) + "\n", line=1, field="content")
    turn = {"conversation_id": "c", "session_id": "c:1", "turn_id": "c:1", "speaker": "A", "timestamp": "2024-01-01T10:00:00"}
    refused("conv.jsonl", json.dumps({**turn, "text": "hi\u0000"}) + "\n", line=1, field="text")
    refused("attrs.jsonl", json.dumps({"content": "x", "valid_at": "2024-01-01", "attributes": {"k": "v\u0000"}}) + "\n", line=1, field="attributes")
    mail = "From: a@example.org\nDate: Mon, 01 Jan 0001 00:00:00 +0000\nSubject: old\nMessage-ID: <m1@example.org>\n\nbody\n"
    refused("old.eml", mail, line=2, field="Date")
    assert ledger.head() == 0

    # the same file by another path is a no-op; a link out of the folder is refused unless allowed
    note = d / "note.md"
    note.write_text("# Note\n\nThe boiler is serviced in May.\n")
    (d / "same.md").symlink_to("note.md")
    first = ingest_paths(ledger, [d])
    assert first.appended == 1 and len(first.files) == 1
    assert ingest_paths(ledger, [d / "same.md"]).appended == 0
    assert ingest_paths(ledger, [d / ".." / "in" / "note.md"]).appended == 0
    outside = tmp_path / "outside.txt"
    outside.write_text("not for the ledger\n")
    (d / "link.txt").symlink_to(outside)
    with pytest.raises(IngestError) as e:
        ingest_paths(ledger, [d])
    assert e.value.path == str(d / "link.txt") and "outside the folder" in e.value.message
    assert ingest_paths(ledger, [d], follow_symlinks=True).appended == 1


def test_api_answers_out_of_range_times_with_422_not_500(served):
    srv, keys, _ = served
    with _client(srv, keys["alice"]) as c:
        for when in ("0001-01-01T00:00:00+05:00", "9999-12-31T23:30:00-05:00"):
            r = c.post("/v1/ingest", json={"entries": [{"content": "x", "valid_at": when}]})
            assert r.status_code == 422 and "Traceback" not in r.text, (when, r.status_code, r.text)
        r = c.post("/v1/ingest", json={"entries": [{"content": "nul\u0000", "valid_at": "2024-01-01"}]})
        assert r.status_code == 422 and r.json()["error"]["details"]["field"] == "content"
