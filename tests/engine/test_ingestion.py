"""Ingestion against a real ledger in tmp_path: formats, idempotency, bad input, the inbox.

Bad-input tests assert three things each: the IngestError names the file/line/field, the
ledger is byte-for-byte unchanged (head and files), and the source file is untouched.
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest

from ingestion import (
    FileReport,
    IngestError,
    IngestReport,
    Limits,
    check_inbox_name,
    ingest_file,
    ingest_paths,
    parse_file,
    pending_inbox_files,
    process_inbox,
)
from ledger import Ledger
from memc.home import MemcHome

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "ingestion"
REPO = Path(__file__).resolve().parents[2]


# --------------------------------------------------------------------------- helpers


@pytest.fixture()
def ledger(tmp_path: Path) -> Ledger:
    return Ledger(tmp_path / "ledger")


def fixture_copy(tmp_path: Path, name: str, dest: str | None = None) -> Path:
    out = tmp_path / "src" / (dest or name)
    out.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(FIXTURES / name, out)
    return out


def ledger_state(ledger: Ledger) -> tuple[int, list[tuple[str, int]]]:
    # dotfiles are the ledger's own locks, not evidence
    files = sorted((p.name, p.stat().st_size) for p in ledger.root.iterdir() if p.is_file() and not p.name.startswith("."))
    return ledger.head(), files


def rows(ledger: Ledger) -> list[dict]:
    return list(ledger.iter_entries())


def turn(**over) -> dict:
    base = {
        "conversation_id": "c1",
        "session_id": "c1:S1",
        "turn_id": "D1:1",
        "speaker": "Ana",
        "text": "hello",
        "timestamp": "2024-03-01T09:00:00",
    }
    base.update(over)
    return {k: v for k, v in base.items() if v is not ...}


def jsonl(*objs) -> str:
    return "".join((o if isinstance(o, str) else json.dumps(o)) + "\n" for o in objs)


def tree_snapshot(root: Path, exclude: Path) -> dict[str, tuple]:
    """Every path under root except ``exclude``: what a write outside the memory home would change."""
    snap = {}
    for dirpath, dirs, files in os.walk(root):
        d = Path(dirpath)
        if d == exclude or exclude in d.parents:
            dirs[:] = []
            continue
        for name in dirs + files:
            p = d / name
            if p == exclude:
                continue
            st = os.lstat(p)
            snap[str(p.relative_to(root))] = (st.st_mode, st.st_size, st.st_mtime_ns, os.readlink(p) if p.is_symlink() else None)
    return snap


# --------------------------------------------------------------------------- formats


def test_conversation_jsonl(tmp_path, ledger):
    src = fixture_copy(tmp_path, "conversation.jsonl")
    report = ingest_paths(ledger, [src], scope="team-a", visibility=["ana", "ben"])
    assert isinstance(report, IngestReport)
    (fr,) = report.files
    assert (fr.format, fr.parsed, fr.appended, fr.duplicates, fr.first_seq, fr.last_seq) == ("conversation", 4, 4, 0, 1, 4)
    assert report.head == 4
    got = rows(ledger)
    first, third, last = got[0], got[2], got[3]
    assert first["kind"] == "message" and first["actor"] == "Ana" and first["session_id"] == "conv-demo:S1"
    assert first["source_ref"] == "D1:1" and first["scope"] == "team-a"
    assert first["content"] == "I just moved to Lisbon for the new job."
    assert first["valid_at"] == datetime(2024, 3, 1, 9, 15, tzinfo=timezone.utc)
    assert first["visibility"] == ["ana", "ben"]
    assert first["source_uri"] == src.resolve().as_uri()
    attrs = json.loads(third["attributes"])
    assert attrs["conversation_id"] == "conv-demo" and attrs["turn_index"] == 2 and attrs["session_index"] == 1
    assert attrs["image_caption"] == "a photo of red rooftops and a river at sunset"
    assert attrs["date_time_raw"] == "9:15 am on 1 March, 2024"
    assert last["valid_at"] == datetime(2024, 3, 9, 17, 40, tzinfo=timezone.utc)  # +01:00 normalised to UTC


def test_events_jsonl(tmp_path, ledger):
    src = fixture_copy(tmp_path, "events.jsonl")
    report = ingest_paths(ledger, src, visibility=["team"])
    assert report.files[0].format == "events" and report.files[0].appended == 3  # the blank line is skipped
    deploy, pref, corr = rows(ledger)
    assert (deploy["kind"], deploy["actor"], deploy["session_id"], deploy["source_ref"]) == ("event", "ci-bot", "deploys", "run-481")
    assert deploy["visibility"] == ["team"]
    assert pref["kind"] == "observation" and pref["confidence"] == 0.8
    assert pref["valid_at"] == datetime(2024, 4, 2, 9, 30, tzinfo=timezone.utc)
    assert json.loads(pref["attributes"]) == {"topic": "language"}
    assert corr["kind"] == "correction" and corr["visibility"] == ["ana", "assistant"]
    assert corr["idempotency_key"].startswith("x_") and json.loads(corr["attributes"]) == {"idempotency_key": "crm-7781"}


def test_event_keys_are_namespaced_by_scope(tmp_path, ledger):
    """A file's own idempotency key cannot suppress another scope's entry with the same key."""
    src = tmp_path / "k.jsonl"
    src.write_text(jsonl({"content": "x", "valid_at": "2024-01-01", "idempotency_key": "crm-1"}))
    assert ingest_paths(ledger, [src], scope="tenant-a").appended == 1
    assert ingest_paths(ledger, [src], scope="tenant-b").appended == 1
    assert ingest_paths(ledger, [src], scope="tenant-a").appended == 0
    src.write_text(jsonl({"content": "edited", "valid_at": "2024-01-01", "idempotency_key": "crm-1"}))
    assert ingest_paths(ledger, [src], scope="tenant-a").files[0].noop  # the caller's key decides


def test_markdown_front_matter_and_heading(tmp_path, ledger):
    notes = fixture_copy(tmp_path, "meeting-notes.md")
    standup = fixture_copy(tmp_path, "standup.md")
    report = ingest_paths(ledger, [notes, standup])
    assert [f.format for f in report.files] == ["markdown", "markdown"]
    a, b = rows(ledger)
    assert a["kind"] == "document" and a["source_ref"] == "meeting-notes.md"
    assert a["content"] == notes.read_text()  # verbatim, front matter included
    assert a["valid_at"] == datetime(2024, 2, 14, 16, 0, tzinfo=timezone.utc)
    assert json.loads(a["attributes"])["title"] == "Quarterly planning"
    # no date: the file's mtime; the heading inside the code fence is not the title
    assert b["valid_at"] == datetime.fromtimestamp(standup.stat().st_mtime, tz=timezone.utc)
    assert json.loads(b["attributes"]) == {"title": "Standup, Tuesday", "format": "markdown", "valid_at_from": "file-mtime"}


def test_text_date_line_and_stem_title(tmp_path, ledger):
    src = fixture_copy(tmp_path, "journal.txt")
    ingest_paths(ledger, [src])
    (doc,) = rows(ledger)
    assert doc["valid_at"] == datetime(2024, 1, 20, tzinfo=timezone.utc)
    assert json.loads(doc["attributes"])["title"] == "journal"
    assert doc["source_ref"] == "journal.txt" and doc["content"].startswith("Date: 2024-01-20\n")


def test_text_copied_with_new_mtime_is_still_a_duplicate(tmp_path, ledger):
    a = tmp_path / "a" / "note.txt"
    a.parent.mkdir()
    a.write_text("Ana prefers tea.\n")
    ingest_paths(ledger, [a])
    b = tmp_path / "b" / "note.txt"
    b.parent.mkdir()
    b.write_text("Ana prefers tea.\n")
    os.utime(b, (1_000_000_000, 1_000_000_000))
    assert ingest_paths(ledger, [b]).files[0].status == "already ingested (no-op)"


def test_email_plain(tmp_path, ledger):
    src = fixture_copy(tmp_path, "plain.eml")
    report = ingest_paths(ledger, [src])
    assert report.files[0].format == "email"
    (mail,) = rows(ledger)
    assert mail["kind"] == "document" and mail["actor"] == "ana@example.org"
    assert mail["valid_at"] == datetime(2024, 3, 5, 13, 3, tzinfo=timezone.utc)
    assert mail["source_ref"] == "<20240305.1403.ana@example.org>"
    assert mail["session_id"] == "<20240304.0900.ben@example.org>"  # the thread root
    assert mail["content"] == "Hi Ben,\n\nI move to the new flat on 15 March. São Bento is close by.\n\nAna\n"
    attrs = json.loads(mail["attributes"])
    assert attrs["subject"] == "Moving date"
    assert attrs["to"] == ["Ben Costa <ben@example.org>", "ops@example.org"] and attrs["cc"] == ["carla@example.org"]


def test_email_html_only_is_stripped(tmp_path, ledger):
    src = fixture_copy(tmp_path, "html-only.eml")
    ingest_paths(ledger, [src])
    (mail,) = rows(ledger)
    assert mail["content"] == "Opening hours\n\nOpen daily 7–23.\n\nClosed on 1 May."
    assert "alert" not in mail["content"] and "color" not in mail["content"]
    assert mail["source_ref"] == "html-only.eml"  # no Message-ID: the file name
    attrs = json.loads(mail["attributes"])
    assert attrs["subject"] == "Climbing gym – opening hours" and attrs["body_type"] == "text/html"
    assert attrs["attachments"] == ["hours.pdf"]


def test_directory_walk_sorted_known_extensions_only(tmp_path, ledger):
    d = tmp_path / "drop"
    (d / "sub").mkdir(parents=True)
    (d / ".hidden").mkdir()
    shutil.copy2(FIXTURES / "journal.txt", d / "b.txt")
    shutil.copy2(FIXTURES / "events.jsonl", d / "sub" / "a.jsonl")
    shutil.copy2(FIXTURES / "standup.md", d / "a.md")
    (d / "image.png").write_bytes(b"\x89PNG")
    (d / ".draft.md").write_text("# not yet")
    (d / ".hidden" / "x.txt").write_text("secret")
    report = ingest_paths(ledger, [d])
    assert [f.path.relative_to(d).as_posix() for f in report.files] == ["a.md", "b.txt", "sub/a.jsonl"]
    assert report.appended == 5 and report.head == 5
    assert "3 file(s): 5 parsed, 5 appended" in report.summary()


# --------------------------------------------------------------------------- idempotency


def test_reingest_is_a_noop_that_says_so(tmp_path, ledger):
    src = fixture_copy(tmp_path, "conversation.jsonl")
    ingest_paths(ledger, [src])
    before = ledger_state(ledger)
    again = ingest_paths(ledger, [src])
    (fr,) = again.files
    assert (fr.appended, fr.duplicates, fr.first_seq, fr.noop) == (0, 4, None, True)
    assert fr.status == "already ingested (no-op)"
    assert "already ingested (no-op)" in again.summary()
    assert ledger_state(ledger) == before


def test_grown_conversation_appends_only_new_turns(tmp_path, ledger):
    src = fixture_copy(tmp_path, "conversation.jsonl")
    ingest_paths(ledger, [src])
    with open(src, "a") as f:
        f.write(jsonl(turn(conversation_id="conv-demo", session_id="conv-demo:S2", turn_id="D2:2", text="Yes, two streets away!")))
    (fr,) = ingest_paths(ledger, [src]).files
    assert (fr.parsed, fr.appended, fr.duplicates, fr.first_seq, fr.last_seq) == (5, 1, 4, 5, 5)
    assert fr.status == "appended 1 new, 4 already present"
    assert rows(ledger)[-1]["source_ref"] == "D2:2"


def test_one_file_is_one_batch(tmp_path, ledger):
    ingest_paths(ledger, [fixture_copy(tmp_path, "conversation.jsonl"), fixture_copy(tmp_path, "events.jsonl")])
    assert [(b.first_seq, b.rows) for b in ledger.batches()] == [(1, 4), (5, 3)]


# --------------------------------------------------------------------------- bad input

GOOD = turn()

# name, file content (bytes), expected (line, field, message fragment), extra kwargs
BAD_CASES = [
    ("malformed-json", jsonl(GOOD, turn(turn_id="D1:2"), '{"speaker": "Ana", "text": "hi"'), (3, None, "not valid JSON")),
    ("json-array-line", jsonl(GOOD, "[1, 2]"), (2, None, "expected one JSON object per line, got an array")),
    ("nan-constant", jsonl({"content": "x", "valid_at": "2024-01-01"}, '{"content": "y", "valid_at": "2024-01-01", "confidence": NaN}'), (2, None, "NaN is not a JSON value")),
    ("missing-field", jsonl(GOOD, turn(turn_id="D1:2", timestamp=...)), (2, "timestamp", "missing required field")),
    ("wrong-type", jsonl(GOOD, turn(turn_id="D1:2", speaker=42)), (2, "speaker", "expected a string, got a number")),
    ("wrong-type-index", jsonl(turn(turn_index="3")), (1, "turn_index", "expected an integer, got a string")),
    ("bad-timestamp", jsonl(GOOD, turn(turn_id="D1:2", timestamp="yesterday")), (2, "timestamp", "not an ISO 8601 time ('yesterday')")),
    ("event-bad-confidence", jsonl({"content": "x", "valid_at": "2024-01-01", "confidence": 1.5}), (1, "confidence", "less than or equal to 1")),
    ("event-bool-confidence", jsonl({"content": "x", "valid_at": "2024-01-01", "confidence": True}), (1, "confidence", "got a boolean")),
    ("event-bad-principal", jsonl({"content": "x", "valid_at": "2024-01-01", "visibility": ["ana smith"]}), (1, "visibility", "malformed principal")),
    ("event-forged-erasure", jsonl({"content": "x", "valid_at": "2024-01-01", "kind": "erasure"}), (1, "kind", "not a kind a file may carry")),
    ("event-typo-field", jsonl({"content": "x", "valid_at": "2024-01-01", "visiblity": ["ana"]}), (1, "visiblity", "unknown field")),
    ("event-no-content", jsonl({"valid_at": "2024-01-01"}), (1, "content", "missing required field (or 'text')")),
    ("event-both-times", jsonl({"content": "x", "valid_at": "2024-01-01", "timestamp": "2024-01-01"}), (1, "timestamp", "not both")),
    ("event-attributes-array", jsonl({"content": "x", "valid_at": "2024-01-01", "attributes": [1]}), (1, "attributes", "expected an object")),
    # Every problem of a line is found (pydantic), the misspelt field named first and the rest counted.
    ("event-two-problems", jsonl({"content": 5, "valid_at": "2024-01-01", "visiblity": ["ana"]}), (1, "visiblity", "unknown field (allowed: content, text, valid_at, timestamp, kind, actor, session_id, source_ref, confidence, visibility, attributes, idempotency_key) (and 1 more problem(s))")),
    ("two-wrong-types", jsonl(turn(speaker=42, turn_index="3")), (1, "speaker", "expected a string, got a number (and 1 more problem(s))")),
    ("blank-lines-only", "\n  \n\n", (None, None, "no entries: every line is blank")),
]


@pytest.mark.parametrize("name,content,expected", BAD_CASES, ids=[c[0] for c in BAD_CASES])
def test_bad_jsonl_commits_nothing(tmp_path, ledger, name, content, expected):
    ingest_paths(ledger, [fixture_copy(tmp_path, "events.jsonl", "prior.jsonl")])  # a non-empty ledger
    before = ledger_state(ledger)
    src = tmp_path / "in" / f"{name}.jsonl"
    src.parent.mkdir()
    src.write_text(content)
    original = src.read_bytes()
    with pytest.raises(IngestError) as ei:
        ingest_paths(ledger, [src])
    err = ei.value
    line, field, fragment = expected
    assert (err.path, err.line, err.field) == (str(src), line, field), str(err)
    assert fragment in err.message
    assert str(err).startswith(f"{src}:{line}:" if line else f"{src}:")
    assert ledger_state(ledger) == before
    assert src.read_bytes() == original


def test_error_message_reads_like_a_diagnostic(tmp_path, ledger, monkeypatch):
    monkeypatch.chdir(tmp_path)
    lines = [turn(turn_id=f"D1:{i}") for i in range(1, 17)] + [turn(turn_id="D1:17", timestamp="17/03/2024")]
    Path("conv.jsonl").write_text(jsonl(*lines))
    with pytest.raises(IngestError) as ei:
        ingest_paths(ledger, ["conv.jsonl"])
    assert str(ei.value) == "conv.jsonl:17: field 'timestamp': not an ISO 8601 time ('17/03/2024')"
    assert ledger.head() == 0  # the 16 good lines before it were not committed either


def test_not_utf8_names_line_and_byte_offset(tmp_path, ledger):
    src = tmp_path / "latin1.jsonl"
    first = jsonl(GOOD).encode()
    second = json.dumps(turn(turn_id="D1:2", text="caf\u00e9"), ensure_ascii=False).encode("latin-1") + b"\n"
    src.write_bytes(first + second)
    with pytest.raises(IngestError) as ei:
        ingest_paths(ledger, [src])
    err = ei.value
    offset = len(first) + second.index(b"\xe9")
    assert err.line == 2 and f"byte 0xe9 at byte offset {offset}" in err.message and "UTF-8" in err.message
    assert ledger.head() == 0


def test_not_utf8_text_document(tmp_path, ledger):
    src = tmp_path / "notes.txt"
    src.write_bytes(b"line one\nline two \xff\xfe\n")
    with pytest.raises(IngestError) as ei:
        ingest_paths(ledger, [src])
    assert ei.value.line == 2 and "byte 0xff at byte offset 18" in ei.value.message
    assert ledger.head() == 0


def test_utf8_bom_is_accepted(tmp_path, ledger):
    src = tmp_path / "bom.jsonl"
    src.write_bytes(b"\xef\xbb\xbf" + jsonl(GOOD).encode())
    assert ingest_paths(ledger, [src]).appended == 1


@pytest.mark.parametrize(
    "name,data,expected",
    [
        ("empty.jsonl", b"", (None, None, "empty file (0 bytes)")),
        ("empty.md", b"", (None, None, "empty file (0 bytes)")),
        ("blank.md", b"  \n\n", (None, None, "the document is empty")),
        ("binary.txt", b"abc\n\x00\x01\x02", (2, None, "contains NUL bytes")),
        ("bad-date.md", b"---\ndate: March 1st\n---\n# Hi\n", (2, "date", "not an ISO 8601 time ('March 1st')")),
        ("bad-date-line.txt", b"\nDate: soon\nbody\n", (2, "date", "not an ISO 8601 time")),
        ("no-date.eml", b"From: a@example.org\nSubject: hi\n\nbody\n", (None, "Date", "missing Date header")),
        ("bad-date.eml", b"From: a@example.org\nSubject: hi\nDate: tomorrow-ish\n\nbody\n", (3, "Date", "not an RFC 5322 date")),
        ("bad-from.eml", b"Subject: hi\nFrom: ,,,\nDate: Tue, 05 Mar 2024 14:03:00 +0100\n\nbody\n", (2, "From", "no e-mail address")),
        ("empty-body.eml", b"From: a@example.org\nDate: Tue, 05 Mar 2024 14:03:00 +0100\n\n  \n", (None, "body", "body is empty")),
        ("not-mail.eml", b"just some words\nand more\n", (None, None, "does not look like an e-mail")),
        ("image.png", b"\x89PNG", (None, None, "unsupported file type '.png'")),
    ],
)
def test_bad_documents_commit_nothing(tmp_path, ledger, name, data, expected):
    src = tmp_path / name
    src.write_bytes(data)
    with pytest.raises(IngestError) as ei:
        ingest_paths(ledger, [src])
    line, field, fragment = expected
    assert (ei.value.path, ei.value.line, ei.value.field) == (str(src), line, field), str(ei.value)
    assert fragment in ei.value.message
    assert ledger_state(ledger) == (0, [])
    assert src.read_bytes() == data


def test_oversize_file_rejected_before_reading(tmp_path, ledger):
    src = tmp_path / "huge.jsonl"
    with open(src, "wb") as f:  # sparse: 65 MiB on paper, nothing to read
        f.truncate(65 * 1024 * 1024)
    with pytest.raises(IngestError) as ei:
        ingest_paths(ledger, [src])
    assert ei.value.message.startswith("file is 65 MiB; the limit is 64 MiB per file")
    small = Limits(max_file_bytes=100)
    src2 = tmp_path / "small.jsonl"
    src2.write_text(jsonl(*[turn(turn_id=f"D1:{i}") for i in range(5)]))
    with pytest.raises(IngestError, match="limit is 100 bytes per file"):
        ingest_paths(ledger, [src2], limits=small)
    assert ledger.head() == 0


def test_oversize_document_and_line(tmp_path, ledger):
    doc = tmp_path / "big.md"
    with open(doc, "wb") as f:
        f.truncate(2 * 1024 * 1024)
    with pytest.raises(IngestError, match=r"document is 2 MiB; one document may be at most 1 MiB"):
        ingest_paths(ledger, [doc])
    src = tmp_path / "long-line.jsonl"
    src.write_text(jsonl(GOOD, turn(turn_id="D1:2", text="x" * 5000), turn(turn_id="D1:3")))
    with pytest.raises(IngestError) as ei:
        ingest_paths(ledger, [src], limits=Limits(max_record_bytes=1000))
    assert ei.value.line == 2 and "longer than the 1000 bytes limit" in ei.value.message
    assert ledger.head() == 0


def test_content_longer_than_the_ledger_allows(tmp_path, ledger):
    src = tmp_path / "long.jsonl"
    src.write_text(jsonl({"content": "y" * 1_000_001, "valid_at": "2024-01-01"}))
    with pytest.raises(IngestError) as ei:
        ingest_paths(ledger, [src])
    assert (ei.value.line, ei.value.field) == (1, "content")
    assert "1,000,001 characters; the ledger keeps at most 1,000,000" in ei.value.message
    assert ledger.head() == 0


def test_unreadable_paths(tmp_path, ledger):
    d = tmp_path / "folder.jsonl"
    d.mkdir()
    with pytest.raises(IngestError, match="is a directory, not a file") as ei:
        ingest_file(ledger, d)
    assert ei.value.path == str(d)
    with pytest.raises(IngestError, match="no such file or directory") as ei:
        ingest_paths(ledger, [tmp_path / "missing.jsonl"])
    assert ei.value.path == str(tmp_path / "missing.jsonl")
    with pytest.raises(IngestError, match="NUL byte"):
        ingest_paths(ledger, [str(tmp_path / "a\x00b.jsonl")])
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(IngestError, match="not a regular file"):  # and it does not block
        ingest_file(ledger, fifo)
    with pytest.raises(IngestError, match="not a valid scope") as ei:
        ingest_paths(ledger, [FIXTURES / "journal.txt"], scope="a b")
    assert ei.value.field == "scope"
    assert ledger_state(ledger) == (0, [])


def test_permission_denied(tmp_path, ledger):
    src = tmp_path / "secret.jsonl"
    src.write_text(jsonl(GOOD))
    src.chmod(0)
    if not _can_read(src):  # an ordinary user
        with pytest.raises(IngestError, match="permission denied: the file cannot be read"):
            ingest_paths(ledger, [src])
        assert ledger.head() == 0
        return
    # Root reads anything, and CI runs as root: this branch used to skip when setpriv was missing.
    # Instead the ingest runs in a child that lost, before exec, the two capabilities that let root
    # read a mode-000 file (prctl(PR_CAPBSET_DROP) in preexec_fn; no tool needed). The child
    # first shows the capabilities are gone, so a drop that did not happen cannot pass as a check.
    script = (
        "import json, sys\n"
        "caps = int(next(l for l in open('/proc/self/status') if l.startswith('CapEff:')).split()[1], 16)\n"
        "assert not caps & 0b110, f'CAP_DAC_OVERRIDE/CAP_DAC_READ_SEARCH still effective: {caps:x}'\n"
        "from ingestion import IngestError, ingest_paths\n"
        "from ledger import Ledger\n"
        "l = Ledger(sys.argv[1])\n"
        "try:\n"
        "    ingest_paths(l, [sys.argv[2]])\n"
        "    print(json.dumps({'ok': True}))\n"
        "except IngestError as e:\n"
        "    print(json.dumps(e.to_dict()))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script, str(ledger.root), str(src)], preexec_fn=_drop_dac_capabilities,
        cwd=REPO, capture_output=True, text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(REPO)},
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert got["path"] == str(src) and "permission denied" in got["message"], got
    assert ledger_state(ledger) == (0, [])


def _can_read(path: Path) -> bool:
    try:
        path.open("rb").close()
    except PermissionError:
        return False
    return True


def _drop_dac_capabilities() -> None:
    """In the child before exec: take CAP_DAC_OVERRIDE (1) and CAP_DAC_READ_SEARCH (2) out of the
    bounding set, so the exec'd root process does not get them back (needs CAP_SETPCAP, which root
    in a container has; without it the test fails here, it does not pass or skip)."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (1, 2):
        if libc.prctl(24, cap, 0, 0, 0) != 0:  # PR_CAPBSET_DROP
            raise OSError(ctypes.get_errno(), f"prctl(PR_CAPBSET_DROP, {cap})")


def test_bad_file_after_good_ones(tmp_path, ledger):
    """Each file is its own transaction: earlier files stay, the bad one commits nothing, and a
    missing path is found before anything is committed."""
    good = fixture_copy(tmp_path, "events.jsonl")
    bad = tmp_path / "bad.jsonl"
    bad.write_text(jsonl(GOOD, "{oops"))
    with pytest.raises(IngestError):
        ingest_paths(ledger, [good, tmp_path / "typo.jsonl"])
    assert ledger.head() == 0
    with pytest.raises(IngestError) as ei:
        ingest_paths(ledger, [good, bad])
    assert ei.value.path == str(bad) and ei.value.line == 2
    assert ledger.head() == 3
    bad.write_text(jsonl(GOOD))
    report = ingest_paths(ledger, [good, bad])  # the re-run after the fix
    assert [f.appended for f in report.files] == [0, 1]


def test_error_survives_pickling():
    err = IngestError("not an ISO 8601 time", path="c.jsonl", line=3, field="timestamp")
    back = pickle.loads(pickle.dumps(err))
    assert (back.path, back.line, back.field, str(back)) == ("c.jsonl", 3, "timestamp", str(err))


def test_parse_file_does_not_touch_the_ledger(tmp_path):
    parsed = parse_file(FIXTURES / "conversation.jsonl", scope="s")
    assert parsed.format == "conversation" and len(parsed.entries) == 4
    assert not (tmp_path / "ledger").exists()


def test_forced_format(tmp_path, ledger):
    src = tmp_path / "notes.log"
    src.write_text("Date: 2024-05-01\nserver rebooted\n")
    with pytest.raises(IngestError, match="unsupported file type '.log'"):
        ingest_paths(ledger, [src])
    (fr,) = ingest_paths(ledger, [src], format="text").files
    assert fr.format == "text" and fr.appended == 1


def test_ingestion_does_not_import_dagster():
    code = "import sys, ingestion, ingestion.inbox; print('dagster' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "False", out.stderr


# --------------------------------------------------------------------------- inbox


@pytest.fixture()
def home(tmp_path) -> MemcHome:
    return MemcHome(tmp_path / "home").ensure()


def drop(home: MemcHome, name: str, data: bytes | str, *, age: float = 10.0) -> Path:
    """Put a file in the inbox that finished being written ``age`` seconds ago."""
    p = home.inbox / name
    p.write_bytes(data.encode() if isinstance(data, str) else data)
    t = time.time() - age
    os.utime(p, (t, t))
    return p


def test_inbox_moves_good_to_processed_and_bad_to_rejected(home):
    ledger = Ledger(home.ledger)
    drop(home, "conv.jsonl", (FIXTURES / "conversation.jsonl").read_bytes())
    drop(home, "notes.md", (FIXTURES / "meeting-notes.md").read_bytes())
    drop(home, "broken.jsonl", jsonl(GOOD, turn(turn_id="D1:2", timestamp="soon")))
    drop(home, "photo.png", b"\x89PNG")
    drop(home, ".partial.jsonl", jsonl(GOOD))  # hidden: an upload in progress
    (home.inbox / "subdir").mkdir()

    assert [p.name for p in pending_inbox_files(home)] == ["broken.jsonl", "conv.jsonl", "notes.md", "photo.png"]
    report = process_inbox(home, ledger, scope="s1", visibility=["ana"])

    assert [p.name for p in report.processed] == ["conv.jsonl", "notes.md"]
    assert [r.name for r in report.rejected] == ["broken.jsonl", "photo.png"]
    assert report.appended == 5 and ledger.head() == 5
    assert sorted(os.listdir(home.inbox)) == [".partial.jsonl", "processed", "rejected", "subdir"]
    assert sorted(os.listdir(home.inbox / "processed")) == ["conv.jsonl", "notes.md"]
    assert sorted(os.listdir(home.inbox / "rejected")) == [
        "broken.jsonl", "broken.jsonl.error.json", "photo.png", "photo.png.error.json",
    ]  # fmt: skip
    err = json.loads((home.inbox / "rejected" / "broken.jsonl.error.json").read_text())
    assert (err["file"], err["line"], err["field"]) == ("broken.jsonl", 2, "timestamp")
    assert err["message"] == "not an ISO 8601 time ('soon')"
    assert err["error"].endswith("broken.jsonl:2: field 'timestamp': not an ISO 8601 time ('soon')")
    # provenance points at where the file is kept now
    first = rows(ledger)[0]
    assert first["source_uri"] == (home.inbox / "processed" / "conv.jsonl").resolve().as_uri()
    assert first["scope"] == "s1" and first["visibility"] == ["ana"]
    assert "2 processed (5 new entries), 2 rejected" in report.summary()


def test_inbox_redrop_is_noop_and_suffixes_the_name(home):
    ledger = Ledger(home.ledger)
    data = (FIXTURES / "conversation.jsonl").read_bytes()
    drop(home, "conv.jsonl", data)
    process_inbox(home, ledger)
    drop(home, "conv.jsonl", data)
    report = process_inbox(home, ledger)
    (p,) = report.processed
    assert p.report.status == "already ingested (no-op)" and p.moved_to.name == "conv-1.jsonl"
    assert ledger.head() == 4
    drop(home, "conv.jsonl", data + jsonl(turn(turn_id="D9:1")).encode())
    (p,) = process_inbox(home, ledger).processed
    assert (p.report.appended, p.report.duplicates, p.moved_to.name) == (1, 4, "conv-2.jsonl")


def test_inbox_leaves_a_file_still_being_written(home):
    ledger = Ledger(home.ledger)
    drop(home, "live.jsonl", jsonl(GOOD), age=0.0)
    report = process_inbox(home, ledger)
    assert [d.name for d in report.deferred] == ["live.jsonl"] and "still being written" in report.deferred[0].reason
    assert (home.inbox / "live.jsonl").exists() and ledger.head() == 0
    assert pending_inbox_files(home, settle_seconds=1.0) == []
    old = time.time() - 5
    os.utime(home.inbox / "live.jsonl", (old, old))
    assert [p.name for p in process_inbox(home, ledger).processed] == ["live.jsonl"]


def test_inbox_rejects_symlink_pointing_outside(tmp_path, home):
    ledger = Ledger(home.ledger)
    outside = tmp_path / "outside"
    outside.mkdir()
    secret = outside / "secret.jsonl"
    secret.write_text(jsonl({"content": "the admin password is hunter2", "valid_at": "2024-01-01"}))
    (home.inbox / "evil.jsonl").symlink_to(secret)
    before = tree_snapshot(tmp_path, exclude=home.root)

    report = process_inbox(home, ledger)

    (r,) = report.rejected
    assert r.name == "evil.jsonl" and "symbolic link pointing outside the inbox" in r.error.message
    assert ledger.head() == 0
    moved = home.inbox / "rejected" / "evil.jsonl"
    assert moved.is_symlink() and os.readlink(moved) == str(secret)  # the link moved, not its target
    assert tree_snapshot(tmp_path, exclude=home.root) == before
    assert secret.read_text().startswith('{"content": "the admin')


@pytest.mark.parametrize("name", ["../outside.jsonl", "/etc/passwd", "a\x00b.jsonl", "sub/../../x.jsonl", "..", ""])
def test_inbox_names_with_path_tricks_write_nothing(tmp_path, home, name):
    ledger = Ledger(home.ledger)
    (tmp_path / "outside.jsonl").write_text(jsonl(GOOD))
    before = tree_snapshot(tmp_path, exclude=home.root)
    report = process_inbox(home, ledger, names=[name])
    (r,) = report.rejected
    assert r.moved_to is None and r.error_file is None
    assert ledger.head() == 0
    assert tree_snapshot(tmp_path, exclude=home.root) == before
    assert os.listdir(home.inbox / "rejected") == []


def test_check_inbox_name():
    assert check_inbox_name("conv 2024-03.jsonl") == "conv 2024-03.jsonl"
    for bad, fragment in [("../x", "path separator"), ("/abs", "path separator"), ("a\x00", "NUL"), ("a\nb", "control")]:
        with pytest.raises(IngestError, match=fragment):
            check_inbox_name(bad)


def test_inbox_named_file_is_processed_alone(home):
    ledger = Ledger(home.ledger)
    drop(home, "a.jsonl", jsonl(GOOD))
    drop(home, "b.jsonl", jsonl(turn(turn_id="D1:2")))
    report = process_inbox(home, ledger, names=["b.jsonl", "gone.jsonl"])
    assert [p.name for p in report.processed] == ["b.jsonl"]
    assert [d.name for d in report.deferred] == ["gone.jsonl"]
    assert (home.inbox / "a.jsonl").exists()


def test_inbox_refuses_processed_folder_that_leaves_the_home(tmp_path, home):
    ledger = Ledger(home.ledger)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (home.inbox / "processed").symlink_to(elsewhere, target_is_directory=True)
    drop(home, "a.jsonl", jsonl(GOOD))
    with pytest.raises(IngestError, match="must be a real folder inside the memory home"):
        process_inbox(home, ledger)
    assert os.listdir(elsewhere) == [] and ledger.head() == 0 and (home.inbox / "a.jsonl").exists()


def test_rejected_name_collision_keeps_both_reports(home):
    ledger = Ledger(home.ledger)
    drop(home, "bad.jsonl", "{nope\n")
    process_inbox(home, ledger)
    drop(home, "bad.jsonl", jsonl(GOOD, "[]"))
    (r,) = process_inbox(home, ledger).rejected
    assert r.moved_to.name == "bad-1.jsonl" and r.error_file.name == "bad-1.jsonl.error.json"
    assert json.loads(r.error_file.read_text())["line"] == 2
    assert json.loads((home.inbox / "rejected" / "bad.jsonl.error.json").read_text())["line"] == 1


def test_missing_inbox_is_nothing_to_do(tmp_path):
    home = MemcHome(tmp_path / "fresh")
    ledger = Ledger(tmp_path / "fresh-ledger")
    assert pending_inbox_files(home) == []
    report = process_inbox(home, ledger)
    assert report.summary() == "inbox: nothing to do" and not home.inbox.exists()


def test_reports_are_json_ready(tmp_path, ledger):
    report = ingest_paths(ledger, [fixture_copy(tmp_path, "journal.txt")])
    d = json.loads(json.dumps(report.to_dict()))
    assert d["files"][0]["status"] == "appended 1" and d["head"] == 1
    assert isinstance(report.files[0], FileReport)
