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
records written by versions that kept the question."""

from __future__ import annotations

import json
import os
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
