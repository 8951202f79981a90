"""The query log: one JSON line per compile (asker, scope, the entity ids the question names and
those it got facts about, plan, routes, latency, tokens, watermarks, the ids of the entries the
context showed), never the question's words nor the returned content. The query profile (PGO)
reads it to find what is asked about most, and which evidence contexts show.

Why no question text: a question can quote evidence ("what did she mean by <a word>?"), and an
erasure can only find erased text in other files by searching for it, which is exact for long
lines and ids but not for one short word. Keeping no words keeps the promise for every question
(docs/security.md). Entity ids are content-addressed hashes of a scope and a name.

<home>/querylog/YYYY-MM-DD.jsonl, appended with O_APPEND (one write per record, so concurrent
compiles never interleave within a line). An erasure still scrubs it like any other file, for
records written by versions that kept the question.

Replay (`memc replay QUERY_ID`, query/replay.py) needs the question again, so the user gives it,
and the record keeps a keyed fingerprint to check it against: HMAC-SHA256 of the text under a
random per-home key (<home>/config/querylog.key, mode 0600). Without the key a fingerprint is
noise; with it, it confirms an exact guess of the whole question and nothing less. An erasure
deletes the key (forgetting/cascade.py), so no fingerprint logged before it can be tested again:
replay of those compiles is refused, and the promise above holds for them too."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Any


def log_dir(home) -> Path:
    return home.querylog


def record_compile(home, record: dict[str, Any]) -> None:
    now = datetime.now(timezone.utc)
    d = log_dir(home)
    d.mkdir(parents=True, exist_ok=True)
    line = json.dumps({"at": now.isoformat(), **record}, default=str, ensure_ascii=False) + "\n"
    fd = os.open(d / f"{now:%Y-%m-%d}.jsonl", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        os.write(fd, line.encode("utf-8"))
    finally:
        os.close(fd)


def read_log(home) -> list[dict[str, Any]]:
    out = []
    for p in sorted(log_dir(home).glob("*.jsonl")):
        with open(p, encoding="utf-8") as f:
            out += [json.loads(line) for line in f if line.strip()]
    return out


KEY_BYTES = 32


def question_key(home) -> bytes:
    """The home's fingerprint key, created on first use (write-then-link, so two first compiles
    agree on one key and a reader never sees a half-written file)."""
    path = home.querylog_key
    try:
        return _read_key(path)
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, secrets.token_bytes(KEY_BYTES))
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.link(tmp, path)
    except FileExistsError:
        pass  # another compile made it first: use theirs
    finally:
        tmp.unlink()
    return _read_key(path)


def _read_key(path: Path) -> bytes:
    key = path.read_bytes()
    if len(key) != KEY_BYTES:
        raise ValueError(f"{path} holds {len(key)} bytes, not a {KEY_BYTES}-byte key: delete it and a new one is made (old compiles then cannot be replayed)")
    return key


def key_id(key: bytes) -> str:
    """Which key fingerprinted a record (a hash of the key, which reveals nothing of it)."""
    return hashlib.sha256(b"memc querylog key id\0" + key).hexdigest()[:12]


def fingerprint(key: bytes, text: str) -> str:
    return hmac.new(key, text.encode("utf-8"), hashlib.sha256).hexdigest()


def find_record(home, query_id: str) -> dict[str, Any] | None:
    """The record of the compile ``query_id``, newest day first."""
    d = log_dir(home)
    for p in sorted(d.glob("*.jsonl"), reverse=True) if d.is_dir() else []:
        with open(p, encoding="utf-8") as f:
            for line in f:
                if query_id in line:
                    rec = json.loads(line)
                    if rec.get("query_id") == query_id:
                        return rec
    return None
