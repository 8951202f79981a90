"""The HTTP API as a client meets it: real requests over loopback to `memc serve` subprocesses.

Two servers, started once for the module: one over the session's built sample corpus (asks and
state, read only) and one over a scratch copy of it (ingest, idempotency, scopes, staleness,
size limits, internal errors), so writes never disturb the shared home. Forgetting drops the views,
so its test starts a server over a copy of its own: no test depends on running before or after it.
"""

from __future__ import annotations

import http.client
import json
import shutil
import subprocess
import sys

import httpx2 as httpx
import pytest

from conftest import SAMPLES

MEMC = [sys.executable, "-m", "cli.main"]
MAX_BODY_MB = 0.25


def _keys(home, *specs):
    from api.auth import KeyStore

    store = KeyStore(home)
    return {name: store.add(principal, admin=admin, scopes=scopes)[0] for name, principal, admin, scopes in specs}


@pytest.fixture(scope="module")
def servers(built_home, tmp_path_factory):
    """(built server, its keys, fresh server, its keys, fresh home)."""
    from api.process import ServerProcess
    from memc.home import MemcHome

    home, _ = built_home
    built_keys = _keys(home, ("tomasz", "tomasz", False, None), ("elena", "elena", False, None), ("admin", "ops", True, None))
    fresh = MemcHome.resolve(tmp_path_factory.mktemp("api") / "home")
    shutil.copytree(home.root, fresh.root, ignore=shutil.ignore_patterns("config"))
    fresh_keys = _keys(
        fresh,
        ("alice", "alice", False, None),
        ("bob", "bob", False, None),
        ("crm", "crm-bot", False, ("crm",)),
        ("admin", "ops", True, None),
    )
    a = ServerProcess(home.root).start()
    b = ServerProcess(fresh.root, args=["--max-body-mb", str(MAX_BODY_MB)]).start()
    try:
        a.wait_ready()
        b.wait_ready()
        yield a, built_keys, b, fresh_keys, fresh
    finally:
        a.stop()
        b.stop()


@pytest.fixture(scope="module")
def built(servers):
    srv, keys = servers[0], servers[1]
    return srv, keys


@pytest.fixture(scope="module")
def fresh(servers):
    return servers[2], servers[3], servers[4]


def client(srv, key: str | None = None, *, header: str = "bearer") -> httpx.Client:
    headers = {}
    if key and header == "bearer":
        headers["Authorization"] = f"Bearer {key}"
    elif key:
        headers["X-API-Key"] = key
    return httpx.Client(base_url=srv.url, headers=headers, timeout=120)


def err(resp, status: int, code: str) -> dict:
    assert resp.status_code == status, (resp.status_code, resp.text)
    body = resp.json()
    assert set(body) == {"error"} and body["error"]["code"] == code, body
    assert "Traceback" not in resp.text
    return body["error"]


# ---------------------------------------------------------------------------------- operations


def test_health_openapi_and_unknown_routes(built):
    srv, _ = built
    with client(srv) as c:
        assert c.get("/v1/health").json()["status"] == "ok"
        doc = c.get("/openapi.json").json()
        err(c.get("/v1/nope"), 404, "not_found")
        err(c.delete("/v1/health"), 405, "method_not_allowed")
    paths = doc["paths"]
    for path, method in [("/v1/ingest", "post"), ("/v1/ingest/file", "post"), ("/v1/ask", "post"), ("/v1/state", "get"),
                         ("/v1/forget", "post"), ("/v1/watermarks", "get"), ("/v1/health", "get")]:  # fmt: skip
        assert method in paths[path], path
    ask = paths["/v1/ask"]["post"]
    assert ask["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].endswith("/ContextOut")
    for code in ("401", "403", "413", "422", "503"):
        assert ask["responses"][code]["content"]["application/json"]["schema"]["$ref"].endswith("/ErrorBody"), code
    assert {"HTTPBearer", "APIKeyHeader"} <= set(doc["components"]["securitySchemes"])
    # the asker is not a field anywhere a client could set it
    assert "asker" not in doc["components"]["schemas"]["AskRequest"]["properties"]


def test_unauthenticated_and_revoked_keys(built, tmp_path):
    srv, keys = built
    with client(srv) as c:
        e = c.get("/v1/watermarks")
        err(e, 401, "unauthenticated")
        assert e.headers["www-authenticate"] == "Bearer"
        err(c.post("/v1/ask", json={"question": "Where does Elena live?"}), 401, "unauthenticated")
    with client(srv, "memc_000000000000_" + "A" * 43) as c:
        err(c.get("/v1/whoami"), 401, "unauthenticated")
    # a key made and revoked through the CLI while the server runs
    home = str(srv.home)
    made = json.loads(subprocess.run([*MEMC, "--home", home, "keys", "add", "--principal", "temp", "--json"], capture_output=True, text=True, check=True).stdout)
    listed = subprocess.run([*MEMC, "--home", home, "keys", "list", "--json"], capture_output=True, text=True, check=True).stdout
    assert made["key_id"] in listed and made["key"] not in listed and "sha256" not in listed
    stored = (srv.home / "config" / "api_keys.json").read_text()
    # The secret is what follows the id; it may itself hold "_" (URL-safe base64), so split once
    # by the prefix: its last "_"-piece alone was sometimes a character or two found anywhere.
    secret = made["key"].split("_", 2)[2]
    assert len(secret) == 43 and made["key"] not in stored and secret not in stored
    assert oct((srv.home / "config" / "api_keys.json").stat().st_mode & 0o777) == "0o600"
    with client(srv, made["key"], header="x-api-key") as c:
        assert c.get("/v1/whoami").json() == {"principal": "temp", "admin": False, "scopes": None, "key_id": made["key_id"], "write_for": []}
        subprocess.run([*MEMC, "--home", home, "keys", "revoke", made["key_id"]], capture_output=True, text=True, check=True)
        err(c.get("/v1/whoami"), 401, "unauthenticated")


def test_watermarks_report_every_view(built):
    srv, keys = built
    with client(srv, keys["tomasz"]) as c:
        w = c.get("/v1/watermarks").json()
    assert w["ledger_head"] > 0
    assert set(w["views"]) >= {"claims", "state", "evidence_index", "entity_graph"}
    assert w["views"]["evidence_index"] == w["ledger_head"] and w["behind"]["evidence_index"] == 0


# ---------------------------------------------------------------------------------- ask and state


def test_a_key_never_sees_another_principals_private_evidence(built):
    srv, keys = built
    q = {"question": "Where does Elena live now?", "scope": "team", "preset": "thorough"}
    with client(srv, keys["tomasz"]) as c:
        ctx = c.post("/v1/ask", json=q).json()
        # the body cannot name another asker: an unknown field is refused, not obeyed
        err(c.post("/v1/ask", json={**q, "asker": "elena"}), 422, "invalid_request")
        state = c.get("/v1/state", params={"entity": "Elena"}).json()
        err(c.get("/v1/state", params={"entity": "Elena", "as_admin": "true"}), 403, "forbidden")
    assert ctx["asker"] == "tomasz" and ctx["items"], ctx
    assert "Potsdam" not in json.dumps(ctx) and "Potsdam" not in json.dumps(state)
    assert state["asker"] == "tomasz" and {f["object"] for f in state["facts"] if f["predicate"] == "lives_in"} == {"Berlin"}

    with client(srv, keys["elena"]) as c:
        ctx_e = c.post("/v1/ask", json=q).json()
        state_e = c.get("/v1/state", params={"entity": "Elena"}).json()
    assert ctx_e["asker"] == "elena"
    # each compile's id in the query log, for `memc replay`
    assert ctx["query_id"].startswith("q_") and ctx_e["query_id"].startswith("q_") and ctx["query_id"] != ctx_e["query_id"]
    potsdam = [i for i in ctx_e["items"] if "Potsdam" in i["text"]]
    assert potsdam and all(i["entry_id"].startswith("e_") and i["source_refs"] for i in potsdam)
    assert "EP1:4" in potsdam[0]["source_refs"]
    assert "Potsdam" in {f["object"] for f in state_e["facts"] if f["predicate"] == "lives_in"}

    with client(srv, keys["admin"]) as c:
        admin_state = c.get("/v1/state", params={"entity": "Elena", "as_admin": "true"}).json()
    assert admin_state["asker"] == "(administrator)" and "Potsdam" in json.dumps(admin_state["facts"])


def test_state_as_of_and_ask_parameters(built):
    srv, keys = built
    with client(srv, keys["tomasz"]) as c:
        march = c.get("/v1/state", params={"entity": "Elena", "as_of": "2024-03-01T00:00:00Z"}).json()
        assert {f["object"] for f in march["facts"] if f["predicate"] == "lives_in"} == {"Lisbon"}
        before = c.get("/v1/state", params={"entity": "Elena", "known_at": "2000-01-01T00:00:00Z"}).json()
        assert before["facts"] == []
        nobody = c.get("/v1/state", params={"entity": "Nobody Atall"}).json()
        assert nobody["subjects"] == [] and nobody["facts"] == []
        err(c.get("/v1/state", params={"entity": "Elena", "as_of": "last tuesday"}), 422, "invalid_request")
        err(c.get("/v1/state"), 422, "invalid_request")

        small = c.post("/v1/ask", json={"question": "Which order did Tomasz mention?", "k": 2, "budget_tokens": 400, "max_lag": 0}).json()
        assert len(small["items"]) <= 2 and small["tokens"] <= 400 and "Context for" in small["rendered"]
        assert any("ORD-48213" in i["text"] for i in small["items"])
        err(c.post("/v1/ask", json={"question": ""}), 422, "invalid_request")
        err(c.post("/v1/ask", json={"question": "x", "preset": "slowest"}), 422, "invalid_request")
        err(c.post("/v1/ask", json={"question": "x", "budget_tokens": 1}), 422, "invalid_request")
        err(c.post("/v1/ask", content=b'{"question": "x",', headers={"content-type": "application/json"}), 400, "malformed_json")

        # as_of is implemented (there is no 501 fallback any more): the one right answer is where
        # she lived on 2024-03-01, Lisbon, and nothing she said later
        r = c.post("/v1/ask", json={"question": "Where does Elena live?", "as_of": "2024-03-01T00:00:00Z"})
        assert r.status_code == 200, r.text
        then = r.json()
        assert then["as_of"].startswith("2024-03-01"), then["as_of"]
        assert {f["object"] for f in then["state"] if f["subject"] == "Elena" and f["predicate"] == "lives_in"} == {"Lisbon"}, then["rendered"]
        assert "Potsdam" not in r.text

    with client(srv, keys["elena"]) as c:  # asked as whom, for what (query/asking.py)
        mine = c.post("/v1/ask", json={"question": "Where do I live now?"}).json()
        assert any(f["subject"] == "Elena" and f["object"] == "Potsdam" for f in mine["state"]), mine["rendered"]
        plain = c.post("/v1/ask", json={"question": "Where do I live now?", "uncolored": True}).json()
        assert plain["uncolored"] and not any(f["subject"] == "Elena" for f in plain["state"])
        task = {"goal": "onboarding redesign review", "entities": ["Priya"], "predicates": ["works_at"]}
        shaped = c.post("/v1/ask", json={"question": "What should I prepare?", "agent_state": task, "uncolored": True}).json()
        assert shaped["goal"] == {"text": task["goal"], "entities": ["Priya"], "predicates": ["works_at"]} and any(f["subject"] == "Priya" and f["predicate"] == "works_at" for f in shaped["state"])
        e = err(c.post("/v1/ask", json={"question": "x", "agent_state": {"predicates": ["lives_near"]}}), 422, "invalid_request")
        assert "lives_near" in e["message"]


# ---------------------------------------------------------------------------------- ingest


def _entries(*texts, valid_at="2025-01-15T10:00:00Z"):
    return [{"content": t, "valid_at": valid_at, "kind": "observation"} for t in texts]


def test_ingest_batch_is_atomic_and_idempotent(fresh):
    srv, keys, home = fresh
    body = {"entries": _entries("Alice's locker code is 4711.", "Alice parks on level 3."), "scope": "ops"}
    with client(srv, keys["alice"]) as c:
        first = c.post("/v1/ingest", json=body, headers={"Idempotency-Key": "req-1"}).json()
        assert first["appended"] == 2 and first["duplicates"] == 0 and first["principal"] == "alice"
        # public within the scope by default, the same as memc ingest and the inbox, and said so
        assert [e["visibility"] for e in first["entries"]] == [["public"], ["public"]]
        (warning,) = first["warnings"]
        assert "2 entries made public in scope 'ops' because no visibility was given" in warning
        assert "'visibility' in the request" in warning and 'default_visibility = "writer"' in warning
        assert first["last_seq"] == first["ledger_head"] == first["first_seq"] + 1
        again = c.post("/v1/ingest", json=body, headers={"Idempotency-Key": "req-1"}).json()
        assert again["appended"] == 0 and again["duplicates"] == 2
        assert again["warnings"] == []  # nothing new was made public
        assert [e["entry_id"] for e in again["entries"]] == [e["entry_id"] for e in first["entries"]]
        assert not any(e["new"] for e in again["entries"])

        head = c.get("/v1/watermarks").json()["ledger_head"]
        bad = {"entries": [*_entries("fine"), {"content": "bad", "valid_at": "2025-01-15", "visibility": ["no spaces allowed"]}]}
        e = err(c.post("/v1/ingest", json=bad), 422, "invalid_entry")
        assert e["details"] == {"entry": 1, "field": "visibility"}
        err(c.post("/v1/ingest", json={"entries": [{"content": "x", "valid_at": "yesterday-ish"}]}), 422, "invalid_request")
        err(c.post("/v1/ingest", json={"entries": [{"content": "x", "valid_at": "2025-01-01", "kind": "erasure"}]}), 422, "invalid_request")
        err(c.post("/v1/ingest", json={"entries": []}), 422, "invalid_request")
        assert c.get("/v1/watermarks").json()["ledger_head"] == head  # nothing of a refused batch was committed

    from ledger import Ledger

    rows = {r["entry_id"]: r for r in Ledger(home.ledger).iter_entries()}
    row = rows[first["entries"][0]["entry_id"]]
    assert row["content"] == "Alice's locker code is 4711." and row["scope"] == "ops"
    assert row["ingested_by"] == "alice" and row["source_uri"] == "memc-api:alice"


def test_home_default_visibility_writer_makes_http_ingest_private_to_the_caller(fresh):
    """memc.toml [ingest] default_visibility = "writer": entries with no visibility are private to
    the key's principal, with no warning; an explicit visibility still wins; a bad value is a 500
    naming the file and field. The setting is read per request, so the shared server sees it."""
    srv, keys, home = fresh
    config = home.root / "memc.toml"
    assert not config.exists()
    try:
        config.write_text('[ingest]\ndefault_visibility = "writer"\n')
        with client(srv, keys["alice"]) as c:
            mine = c.post("/v1/ingest", json={"entries": _entries("Alice keeps a spare charger in drawer 2.")}).json()
            assert [e["visibility"] for e in mine["entries"]] == [["alice"]] and mine["warnings"] == []
            up = c.post("/v1/ingest/file", files={"file": ("drawer.md", b"# Drawer\n\nDrawer 2 holds chargers.\n")}).json()
            assert up["entries"][0]["visibility"] == ["alice"] and up["warnings"] == []
            said = c.post("/v1/ingest", json={"entries": _entries("The kitchen closes at 3."), "visibility": ["public"]}).json()
            assert said["entries"][0]["visibility"] == ["public"] and said["warnings"] == []  # asked for: no warning
            config.write_text('[ingest]\ndefault_visibility = "everyone"\n')
            e = err(c.post("/v1/ingest", json={"entries": _entries("x")}), 500, "invalid_config")
            assert "memc.toml" in e["message"] and "ingest.default_visibility" in e["message"]
    finally:
        config.unlink(missing_ok=True)


def test_ingest_file_upload(fresh):
    srv, keys, _ = fresh
    notes = b"---\ndate: 2025-02-01\n---\n# Parking\n\nLevel 3 is reserved for visitors from March.\n"
    with client(srv, keys["alice"]) as c:
        up = c.post("/v1/ingest/file", files={"file": ("parking.md", notes)}, data={"scope": "team", "visibility": "public"}).json()
        assert up["format"] == "markdown" and up["appended"] == 1 and up["entries"][0]["visibility"] == ["public"]
        again = c.post("/v1/ingest/file", files={"file": ("../../parking.md", notes)}, data={"scope": "team", "visibility": "public"}).json()
        assert again["appended"] == 0 and again["file"] == "parking.md"
        assert up["warnings"] == []  # the visibility was given
        chat = c.post("/v1/ingest/file", files={"file": ("chat.jsonl", (SAMPLES / "team" / "elena_tomasz.jsonl").read_bytes())}).json()
        assert chat["format"] == "conversation" and chat["appended"] > 5 and chat["entries"][0]["scope"] == "default"
        assert chat["entries"][0]["visibility"] == ["public"] and "made public in scope 'default'" in chat["warnings"][0]
        e = err(c.post("/v1/ingest/file", files={"file": ("tool.exe", b"MZ\x90\x00")}), 422, "invalid_entry")
        assert "unsupported file type" in e["message"] and "/tmp" not in e["message"]
        err(c.post("/v1/ingest/file", data={"scope": "team"}), 422, "invalid_request")


def test_scope_rule(fresh):
    srv, keys, _ = fresh
    with client(srv, keys["crm"]) as c:
        who = c.get("/v1/whoami").json()
        assert who["scopes"] == ["crm"] and who["admin"] is False
        ok = c.post("/v1/ingest", json={"entries": _entries("Customer 42 prefers e-mail.")}).json()
        assert ok["entries"][0]["scope"] == "crm"  # a key with one scope defaults to it
        err(c.post("/v1/ingest", json={"entries": _entries("x"), "scope": "ops"}), 403, "forbidden")
        err(c.post("/v1/ask", json={"question": "locker code", "scope": "ops"}), 403, "forbidden")
        err(c.get("/v1/state", params={"entity": "Alice", "scope": "ops"}), 403, "forbidden")
    with client(srv, keys["admin"]) as c:  # admin crosses scopes
        assert c.post("/v1/ingest", json={"entries": _entries("Ops note."), "scope": "ops"}).status_code == 200


def test_refresh_makes_new_evidence_askable_for_its_principal_only_and_staleness_is_503(fresh):
    srv, keys, _ = fresh
    with client(srv, keys["bob"]) as c:
        c.post("/v1/ingest", json={"entries": _entries("Bob's spare key hangs behind the boiler."), "visibility": ["bob"]})
        e = err(c.post("/v1/ask", json={"question": "Where is Bob's spare key?", "max_lag": 0}), 503, "stale_view")
        assert e["details"]["views"]["evidence_index"]["behind"] >= 1 and e["details"]["max_lag"] == 0
        r = c.post("/v1/ingest", json={"entries": _entries("Bob waters the ferns on Fridays."), "visibility": ["bob"], "refresh": True}).json()
        assert r["watermarks"]["behind"]["evidence_index"] == 0
        ctx = c.post("/v1/ask", json={"question": "Where is Bob's spare key?"}).json()
        hit = [i for i in ctx["items"] if "boiler" in i["text"]]
        assert hit and hit[0]["entry_id"].startswith("e_") and hit[0]["recorded_at"]
    with client(srv, keys["alice"]) as c:  # Bob's entries are private to bob
        ctx = c.post("/v1/ask", json={"question": "Where is Bob's spare key?"}).json()
        assert "boiler" not in json.dumps(ctx)


def test_body_limit_is_413(fresh):
    srv, keys, _ = fresh
    big = {"entries": _entries("x" * int(MAX_BODY_MB * 1024 * 1024 + 10))}
    with client(srv, keys["alice"]) as c:
        err(c.post("/v1/ingest", json=big), 413, "payload_too_large")
    # without a Content-Length (chunked), the server stops reading at the limit
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=60)
    chunk = b"a" * 65536
    conn.request("POST", "/v1/ingest", body=iter([chunk] * 8), headers={"Authorization": f"Bearer {keys['alice']}", "Content-Type": "application/json"}, encode_chunked=True)
    resp = conn.getresponse()
    assert resp.status == 413 and json.loads(resp.read())["error"]["code"] == "payload_too_large"
    conn.close()


def test_internal_errors_are_500_without_a_trace(fresh):
    srv, keys, home = fresh
    marts = home.marts
    aside = home.root / "marts-aside"
    marts.rename(aside)
    try:
        with client(srv, keys["alice"]) as c:  # not built: the state view is unavailable, not a bug
            err(c.get("/v1/state", params={"entity": "Alice"}), 503, "view_unavailable")
        marts.mkdir()
        for name in ("entities", "state_history", "state_closings", "conflicts"):
            (marts / f"{name}.parquet").write_bytes(b"PAR1 this is not parquet PAR1")
        with client(srv, keys["alice"]) as c:
            e = err(c.get("/v1/state", params={"entity": "Alice"}), 500, "internal_error")
        ref = e["message"].split("reference ")[1].split(";")[0]
        assert "parquet" not in e["message"].lower()
        log = srv.log()
        assert ref in log and "Traceback" in log
    finally:
        shutil.rmtree(marts, ignore_errors=True)
        aside.rename(marts)


def test_a_view_never_built_is_reported_and_one_too_far_behind_is_503(fresh):
    srv, keys, home = fresh
    mark = home.warehouse / "_watermark.json"
    aside = mark.with_name("_watermark.aside")
    mark.rename(aside)  # the state view now reads as never built
    try:
        with client(srv, keys["alice"]) as c:
            r = c.post("/v1/ask", json={"question": "Where does Elena live?"})
            w = c.get("/v1/watermarks").json()
    finally:
        aside.rename(mark)
    assert w["views"]["state"] is None
    assert r.status_code == 200, r.text  # nothing in a view never built can be stale: answered, and said
    assert r.json()["staleness"]["state"]["decision"] == "never_built"
    assert "state never_built" in r.json()["rendered"]
    # A built view too far behind still fails closed, with what is behind and by how much.
    with client(srv, keys["alice"]) as c:
        c.post("/v1/ingest", json={"entries": _entries("Alice repots the basil in spring.")})
        r = c.post("/v1/ask", json={"question": "What does Alice repot?", "max_lag": 0})
    e = err(r, 503, "stale_view")
    assert r.headers["retry-after"]
    assert e["details"]["views"]["state"]["watermark"] is not None and e["details"]["views"]["state"]["behind"] >= 1


@pytest.fixture
def forgettable(built_home, tmp_path):
    """A server over a copy of the built corpus of its own: forgetting without a rebuild drops the
    views, which would change what every later test on the shared scratch server sees."""
    from api.process import ServerProcess
    from memc.home import MemcHome

    home = MemcHome.resolve(tmp_path / "home")
    shutil.copytree(built_home[0].root, home.root, ignore=shutil.ignore_patterns("config"))
    keys = _keys(home, ("alice", "alice", False, None), ("admin", "ops", True, None))
    with ServerProcess(home.root) as srv:
        yield srv, keys, home


def test_forget_is_admin_only_and_erases(forgettable):
    srv, keys, home = forgettable
    with client(srv, keys["alice"]) as c:
        made = c.post("/v1/ingest", json={"entries": _entries("Alice's old phone number is 555-0199.")}).json()
        entry_id = made["entries"][0]["entry_id"]
        err(c.post("/v1/forget", json={"entry_ids": [entry_id], "reason": "GDPR request"}), 403, "forbidden")
    with client(srv, keys["admin"]) as c:
        err(c.post("/v1/forget", json={"entry_ids": [entry_id]}), 422, "invalid_request")  # a reason is required
        err(c.post("/v1/forget", json={"reason": "nothing named"}), 422, "invalid_request")
        err(c.post("/v1/forget", json={"entry_ids": ["e_" + "0" * 24], "reason": "no such entry"}), 422, "invalid_request")
        r = c.post("/v1/forget", json={"entry_ids": [entry_id], "reason": "GDPR request", "rebuild": False})
        assert r.status_code == 200, r.text
        report = r.json()
        assert report["status"] == "done" and report["erased"] == [entry_id] and report["by"] == "ops"
        # the views were dropped for the next build: the compiler answers from the purged ledger
        # alone (the evidence index patched), names the views as not built, and never the number
        r = c.post("/v1/ask", json={"question": "What is Alice's old phone number?"})
        assert r.status_code == 200, r.text
        assert "555-0199" not in r.text and entry_id not in r.text
        assert r.json()["staleness"]["state"]["decision"] == "never_built"
        assert r.json()["staleness"]["evidence_index"]["decision"] == "patched"

    from ledger import Ledger

    rows = list(Ledger(home.ledger).iter_entries())
    assert not any("555-0199" in (row["content"] or "") for row in rows)
    assert any(row["kind"] == "erasure" and entry_id in (row["attributes"] or "") for row in rows)
