"""The inbox's rejections name every bad line (issue 20): a sender fixes a file in one pass, not
one line per drop. Real files through process_inbox into a real ledger."""

from __future__ import annotations

import json
import os
import time

from ingestion.errors import MAX_REPORTED
from ingestion.inbox import process_inbox
from ledger import Ledger
from memc.home import MemcHome


def _aged(path):
    # process_inbox leaves files younger than its settle time for the next pass.
    os.utime(path, (time.time() - 60, time.time() - 60))


def _line(i: int, **over) -> str:
    rec = {"content": f"note {i}", "valid_at": "2025-01-01T10:00:00Z", **over}
    return json.dumps({k: v for k, v in rec.items() if v is not None})


def test_error_json_names_every_bad_line_with_file_line_and_field(tmp_path):
    home = MemcHome.resolve(tmp_path / "home").ensure()
    ledger = Ledger(home.ledger)
    lines = [
        _line(1),
        _line(2, valid_at="yesterday"),  # line 2: bad time
        '{"content": "no closing brace"',  # line 3: not JSON
        _line(4),
        _line(5, content=None),  # line 5: missing content
        _line(6, colour="red"),  # line 6: unknown field
        _line(7),
    ]
    (home.inbox / "notes.jsonl").write_text("\n".join(lines) + "\n")
    _aged(home.inbox / "notes.jsonl")

    report = process_inbox(home, ledger)
    assert [r.name for r in report.rejected] == ["notes.jsonl"]
    assert ledger.head() == 0  # nothing of a rejected file is committed, not even its good lines
    payload = json.loads((home.inbox / "rejected" / "notes.jsonl.error.json").read_text())
    # the first error stays where it was, for readers of the old shape
    assert payload["line"] == 2 and payload["field"] == "valid_at"
    got = [(e["file"], e["line"], e["field"]) for e in payload["errors"]]
    assert got == [("notes.jsonl", 2, "valid_at"), ("notes.jsonl", 3, None), ("notes.jsonl", 5, "content"), ("notes.jsonl", 6, "colour")]
    assert payload["error_count"] == 4 and payload["errors_truncated"] is False
    assert all(e["message"] for e in payload["errors"])
    assert "(and 3 more)" in report.summary()


def test_error_json_stops_at_the_limit(tmp_path):
    home = MemcHome.resolve(tmp_path / "home").ensure()
    ledger = Ledger(home.ledger)
    bad = MAX_REPORTED + 30
    text = "\n".join(_line(i, valid_at="soon") if i % 2 else "[1, 2]" for i in range(bad)) + "\n"
    (home.inbox / "many.jsonl").write_text(text)
    _aged(home.inbox / "many.jsonl")

    process_inbox(home, ledger)
    payload = json.loads((home.inbox / "rejected" / "many.jsonl.error.json").read_text())
    assert payload["error_count"] == MAX_REPORTED == len(payload["errors"])
    assert payload["errors_truncated"] is True
    assert [e["line"] for e in payload["errors"]] == list(range(1, MAX_REPORTED + 1))
    assert ledger.head() == 0
