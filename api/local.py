"""The local channel: `memc ask` hands its question to a `memc serve` running on the same home.

Why: a cold `memc ask` spends most of its time loading what a running server already holds. On
the 2-core machine (docs/benchmarks.md, "`memc ask` from a cold process") importing torch and
sentence-transformers for the question's embedding costs 6-7 s of the ~10 s; through a running
server the CLI process imports only click and the stdlib's HTTP client.

The record: `memc serve` writes ``<home>/run/serve.json`` once its socket is bound, and removes it
when it stops::

    {"format": "memc-serve/1", "pid": 1234, "host": "127.0.0.1", "port": 8765,
     "token": "<43 URL-safe characters>", "started_at": "...", "version": "0.1.0"}

It is written atomically with mode 0600 (write-then-rename). A record whose pid no longer runs
(a server killed by SIGKILL, or a recycled pid that is not a `memc ... serve`) is ignored.

The token is the operator's credential, not a principal's. Only the home's owner can read the
record, and that owner can read every file of the home and already compiles as any principal
with `memc ask --as P` (docs/security.md, "Threat model"). So the server accepts the token on
two routes only, from a loopback address only: ``POST /v1/local/ask`` compiles as the principal
the body names, under the same rules as ``--as`` (no ``memc:`` name, no admin, every scope), and
``POST /v1/local/build`` runs `memc build` in the server's process, whose Dagster, dbt adapter,
Great Expectations and spaCy are loaded already (a one-message build from the shell took 16-17 s,
~6 s of it the build itself). The token is made afresh at each start and compared in constant
time. API keys and their routes are unchanged: a process that cannot read the home's files still gets nothing without a
key. The token goes only to the port of a live server recorded in a file only the operator can
write, which that server holds bound for as long as the record exists.

The client uses ``http.client`` from the stdlib: httpx would add about 0.1 s of imports to every
`memc ask`.
"""

from __future__ import annotations

import hmac
import http.client
import ipaddress
import json
import os
import secrets
import socket
from datetime import datetime, timezone
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from memc.home import MemcHome
from memc.processes import pid_alive

FORMAT = "memc-serve/1"
LOCAL_ASK_PATH = "/v1/local/ask"
LOCAL_BUILD_PATH = "/v1/local/build"
# Seconds to wait for the TCP connection: a live server on loopback accepts within
# milliseconds, so a longer wait means it is wedged and the local compile is the better bet.
CONNECT_TIMEOUT_S = 2.0
# Seconds to wait for the answer once connected. A server started seconds ago may still be
# loading the model (~10 s on 2 cores): waiting for it is no slower than loading it here.
ANSWER_TIMEOUT_S = 60.0
# A build's answer comes when the build is done: seconds for new messages, ~10 min for a cold
# 100k-entry home, longer at 1M; an hour bounds a wedged server, not a slow build.
BUILD_TIMEOUT_S = 3600.0


class ServerUnavailable(Exception):
    """The recorded server could not answer: unreachable, an error status, or a garbled reply."""


def record_path(home: MemcHome) -> Path:
    return home.root / "run" / "serve.json"


def is_loopback(host: str | None) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host or "").is_loopback
    except ValueError:
        return False


def connect_host(bound: str) -> str | None:
    """Where a process on this machine reaches a server bound to ``bound`` over loopback; None
    when it is bound to one outside address only (its requests would not come from loopback)."""
    if bound in ("", "0.0.0.0"):
        return "127.0.0.1"
    if bound == "::":
        return "::1"
    if bound == "localhost":
        return "127.0.0.1"
    return bound if is_loopback(bound) else None


def new_token() -> str:
    return secrets.token_urlsafe(32)


def check_token(presented: str | None, expected: str | None) -> bool:
    if not presented or not expected:
        return False
    return hmac.compare_digest(presented.encode("utf-8"), expected.encode("utf-8"))


def package_version() -> str:
    """memc's installed version, as the record and the API report it."""
    try:
        return version("memc")
    except PackageNotFoundError:
        return "0"


def write_record(home: MemcHome, *, host: str, port: int, token: str, version: str) -> Path:
    """Record a started server (mode 0600 from the first byte: the token must never be readable
    by anyone else, not even for the moment between create and chmod)."""
    path = record_path(home)
    path.parent.mkdir(parents=True, exist_ok=True)
    os.chmod(path.parent, 0o700)
    record = {
        "format": FORMAT,
        "pid": os.getpid(),
        "host": host,
        "port": port,
        "token": token,
        "started_at": datetime.now(timezone.utc).isoformat(),
        "version": version,
    }
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, (json.dumps(record, indent=2) + "\n").encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    return path


def remove_record(home: MemcHome, token: str) -> None:
    """Remove the record if it is still this server's: a second server started on the same home
    has replaced it, and its record must outlive the first server's exit."""
    path = record_path(home)
    try:
        if json.loads(path.read_text()).get("token") == token:
            path.unlink()
    except (OSError, ValueError):
        pass


def _serves(pid: int) -> bool:
    """The pid runs a `memc serve` (not a recycled pid running something else)."""
    if not pid_alive(pid):
        return False
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return True  # no /proc here: the liveness check is all we have
    return b"serve" in argv


def read_record(home: MemcHome) -> dict[str, Any] | None:
    """The running server of this home, reachable over loopback, or None."""
    try:
        record = json.loads(record_path(home).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("format") != FORMAT:
        return None
    try:
        pid, port = int(record["pid"]), int(record["port"])
    except (KeyError, TypeError, ValueError):
        return None
    host = connect_host(str(record.get("host", "")))
    if host is None or not record.get("token") or not _serves(pid):
        return None
    return {**record, "pid": pid, "port": port, "connect": host}


def _post(record: dict[str, Any], path: str, body: dict[str, Any], answer_timeout: float) -> dict[str, Any]:
    """POST ``body`` to the recorded server's local route; its JSON answer, or
    :class:`ServerUnavailable` saying why not."""
    conn = http.client.HTTPConnection(record["connect"], record["port"], timeout=CONNECT_TIMEOUT_S)
    try:
        conn.connect()
        conn.sock.settimeout(answer_timeout)
        conn.request(
            "POST", path, body=json.dumps(body).encode("utf-8"),
            headers={"Content-Type": "application/json", "Authorization": f"Bearer {record['token']}"},
        )  # fmt: skip
        resp = conn.getresponse()
        data = resp.read()
    except (OSError, socket.timeout, http.client.HTTPException) as exc:
        raise ServerUnavailable(f"unreachable ({exc.__class__.__name__}: {exc})" if str(exc) else f"unreachable ({exc.__class__.__name__})") from None
    finally:
        conn.close()
    try:
        answer = json.loads(data)
    except ValueError:
        raise ServerUnavailable(f"answered {resp.status} with a body that is not JSON") from None
    if resp.status != 200:
        err = answer.get("error", {}) if isinstance(answer, dict) else {}
        raise ServerUnavailable(f"answered {resp.status} {err.get('code', '')}: {err.get('message', '')}".rstrip(": "))
    if not isinstance(answer, dict):
        raise ServerUnavailable("answered 200 with a body that is not an object")
    return answer


def ask(record: dict[str, Any], body: dict[str, Any], *, answer_timeout: float = ANSWER_TIMEOUT_S) -> dict[str, Any]:
    """The recorded server's answer to the question (the ask response, with ``rendered``)."""
    answer = _post(record, LOCAL_ASK_PATH, body, answer_timeout)
    if "rendered" not in answer:
        raise ServerUnavailable("answered 200 without a context")
    return answer


def build(record: dict[str, Any], *, force: bool = False, answer_timeout: float = BUILD_TIMEOUT_S) -> dict[str, Any]:
    """Have the recorded server run `memc build` (``force``: every view); its report, the fields
    of orchestration.runner.BuildReport."""
    report = _post(record, LOCAL_BUILD_PATH, {"force": force}, answer_timeout)
    if "ledger_head" not in report or "success" not in report:
        raise ServerUnavailable("answered 200 without a build report")
    return report


__all__ = [
    "ANSWER_TIMEOUT_S", "BUILD_TIMEOUT_S", "FORMAT", "LOCAL_ASK_PATH", "LOCAL_BUILD_PATH", "ServerUnavailable", "ask", "build",
    "check_token", "connect_host", "is_loopback", "new_token", "read_record", "record_path", "remove_record", "write_record",
]  # fmt: skip
