"""The inbox's scope and visibility (issue 20): folders with sidecars, per-file overrides, the
home's default visibility and the warning when evidence is made public because nothing said
otherwise. Real files through process_inbox into a real Parquet ledger (about a second in all)."""

from __future__ import annotations

import json
import os
import time

import pytest

from ingestion import IngestError, load_ingest_settings, pending_inbox_files, process_inbox, resolve_visibility
from ingestion.settings import IngestSettings
from ledger import Ledger
from memc.home import MemcHome


def _turn(i: int, text: str, speaker: str = "Elena") -> str:
    return json.dumps({"conversation_id": "c1", "session_id": "s1", "turn_id": f"T{i}", "speaker": speaker, "text": text, "timestamp": f"2025-05-0{i}T10:00:00"})


def _drop(home: MemcHome, rel: str, text: str) -> None:
    path = home.inbox / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    old = time.time() - 60  # past the settle time
    os.utime(path, (old, old))


def _rows(ledger: Ledger) -> list[dict]:
    return list(ledger.iter_entries())


@pytest.fixture()
def home(tmp_path) -> MemcHome:
    return MemcHome(tmp_path / "home").ensure()


def test_folder_sidecars_set_scope_and_visibility_inherited_and_overridden(home):
    ledger = Ledger(home.ledger)
    (home.inbox / "team").mkdir()
    (home.inbox / "team" / "memc-inbox.toml").write_text('scope = "team"\nvisibility = ["elena", "priya"]\n')
    (home.inbox / "team" / "board").mkdir()
    (home.inbox / "team" / "board" / "memc-inbox.toml").write_text('visibility = "public"\n')  # scope inherited
    _drop(home, "team/chat.jsonl", _turn(1, "I moved to Potsdam."))
    _drop(home, "team/board/minutes.md", "# Minutes\n\nThe board meets on Tuesdays.\n")
    _drop(home, "team/one-off.md", "# Note\n\nOnly Priya sees this.\n")
    (home.inbox / "team" / "one-off.md.memc.toml").write_text('visibility = ["priya"]\n')

    # the sensor sees files in folders, never the sidecars
    listed = [p.relative_to(home.inbox).as_posix() for p in pending_inbox_files(home)]
    assert listed == ["team/board/minutes.md", "team/chat.jsonl", "team/one-off.md"]

    report = process_inbox(home, ledger)
    got = {p.name: (p.scope, p.visibility, p.settings_from) for p in report.processed}
    assert got == {
        "team/board/minutes.md": ("team", ("public",), ("team/memc-inbox.toml", "team/board/memc-inbox.toml")),
        "team/chat.jsonl": ("team", ("elena", "priya"), ("team/memc-inbox.toml",)),
        "team/one-off.md": ("team", ("priya",), ("team/memc-inbox.toml", "team/one-off.md.memc.toml")),
    }
    by_text = {r["content"]: (r["scope"], list(r["visibility"])) for r in _rows(ledger)}
    assert by_text["I moved to Potsdam."] == ("team", ["elena", "priya"])
    assert any(v == ("team", ["priya"]) for v in by_text.values())
    assert report.warnings == []  # every visibility was given by a sidecar
    # filed under the folder it came from; the per-file sidecar went with its file; the folder
    # sidecars stay for the next drop
    assert (home.inbox / "processed" / "team" / "chat.jsonl").exists()
    assert (home.inbox / "processed" / "team" / "board" / "minutes.md").exists()
    assert (home.inbox / "processed" / "team" / "one-off.md.memc.toml").exists()
    assert not (home.inbox / "team" / "one-off.md.memc.toml").exists()
    assert (home.inbox / "team" / "memc-inbox.toml").exists() and (home.inbox / "team" / "board" / "memc-inbox.toml").exists()
    d = json.loads(json.dumps(report.to_dict()))
    assert {(p["name"], p["scope"], tuple(p["visibility"])) for p in d["processed"]} >= {("team/chat.jsonl", "team", ("elena", "priya"))}
    assert "processed team/chat.jsonl -> processed/team/chat.jsonl: appended 1 (scope team, visible to elena, priya)" in report.summary()


def test_no_sidecar_is_scope_default_public_and_says_so(home):
    ledger = Ledger(home.ledger)
    _drop(home, "chat.jsonl", "\n".join([_turn(1, "I live in Madrid now."), _turn(2, "Nice!", "Tomasz")]) + "\n")
    report = process_inbox(home, ledger)
    (p,) = report.processed
    assert (p.scope, p.visibility) == ("default", ("public",))
    (warning,) = report.warnings
    assert warning.startswith("inbox/chat.jsonl: 2 entries made public in scope 'default' because no visibility was given")
    assert "memc-inbox.toml" in warning and 'default_visibility = "writer"' in warning
    assert report.to_dict()["warnings"] == [warning] and f"warning: {warning}" in report.summary()
    # dropping it again appends nothing, so nothing new is made public
    _drop(home, "chat.jsonl", "\n".join([_turn(1, "I live in Madrid now."), _turn(2, "Nice!", "Tomasz")]) + "\n")
    assert process_inbox(home, ledger).warnings == []


@pytest.mark.parametrize(
    "sidecar, line, field, fragment",
    [
        ('scope = "team"\nvisibility = [elena]\n', 2, None, "not valid TOML"),
        ('scope = "team"\nvisibility = ["has space"]\n', None, "visibility", "e.g. visibility = ["),
        ('scope = "no spaces please"\n', None, "scope", "not a valid scope"),
        ('scope = "team"\nvisiblity = "public"\n', None, "visiblity", "unknown setting"),
    ],
)
def test_a_bad_sidecar_rejects_the_files_under_it_naming_sidecar_line_and_field(home, sidecar, line, field, fragment):
    ledger = Ledger(home.ledger)
    (home.inbox / "team").mkdir()
    (home.inbox / "team" / "memc-inbox.toml").write_text(sidecar)
    _drop(home, "team/a.jsonl", _turn(1, "Hello."))
    _drop(home, "team/sub/b.md", "# B\n\nbody\n")

    report = process_inbox(home, ledger)
    assert sorted(r.name for r in report.rejected) == ["team/a.jsonl", "team/sub/b.md"]
    assert ledger.head() == 0
    err = json.loads((home.inbox / "rejected" / "team" / "a.jsonl.error.json").read_text())
    assert (err["file"], err["path"], err["line"], err["field"]) == ("team/a.jsonl", "team/memc-inbox.toml", line, field)
    assert fragment in err["message"]
    assert (home.inbox / "rejected" / "team" / "sub" / "b.md.error.json").exists()
    assert (home.inbox / "team" / "memc-inbox.toml").exists()  # the sender fixes it in place


def test_home_default_writer_needs_a_visibility_from_the_inbox(home):
    """Under default_visibility = "writer" the inbox (memc itself, no principal) cannot make a file
    private to anyone: it rejects files no sidecar gives a visibility, rather than hide or show them."""
    ledger = Ledger(home.ledger)
    (home.root / "memc.toml").write_text('[ingest]\ndefault_visibility = "writer"\n')
    _drop(home, "loose.md", "# Loose\n\nno sidecar\n")
    _drop(home, "ops/told.md", "# Told\n\nops only\n")
    (home.inbox / "ops" / "memc-inbox.toml").write_text('scope = "ops"\nvisibility = ["alice"]\n')

    report = process_inbox(home, ledger)
    assert [p.name for p in report.processed] == ["ops/told.md"] and report.warnings == []
    (r,) = report.rejected
    assert r.name == "loose.md" and r.error.field == "visibility"
    assert "default_visibility is 'writer'" in r.error.message and "memc-inbox.toml" in r.error.message
    assert [(e["scope"], list(e["visibility"])) for e in _rows(ledger)] == [("ops", ["alice"])]


def test_inbox_paths_in_folders_and_their_tricks(tmp_path, home):
    ledger = Ledger(home.ledger)
    _drop(home, "team/a.jsonl", _turn(1, "Hi."))
    report = process_inbox(home, ledger, names=["team/a.jsonl", "processed/x.jsonl", "team/../../x.jsonl"])
    assert [p.name for p in report.processed] == ["team/a.jsonl"]
    assert {r.name for r in report.rejected} == {"processed/x.jsonl", "team/../../x.jsonl"}
    assert all(r.moved_to is None for r in report.rejected)
    # a symlinked folder is not walked, and named through, it is refused without a move
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "s.jsonl").write_text(_turn(1, "secret"))
    (home.inbox / "link").symlink_to(outside, target_is_directory=True)
    report = process_inbox(home, ledger, names=["link/s.jsonl"])
    (r,) = report.rejected
    assert r.moved_to is None and "symlinked folder" in r.error.message
    assert (outside / "s.jsonl").exists() and ledger.head() == 1


def test_load_ingest_settings_names_file_line_and_field(tmp_path):
    assert load_ingest_settings(tmp_path) == IngestSettings()  # no memc.toml: public
    cfg = tmp_path / "memc.toml"
    cfg.write_text('[freshness]\nstate = 5\n')  # other tables only
    assert load_ingest_settings(tmp_path).default_visibility == "public"
    cfg.write_text('[ingest]\ndefault_visibility = "writer"\n')
    s = load_ingest_settings(tmp_path)
    assert s.default_visibility == "writer" and str(cfg) in s.origin
    for text, line, field in [
        ('[ingest]\ndefault_visibility = "everyone"\n', None, "ingest.default_visibility"),
        ('[ingest]\ndefault_visiblity = "writer"\n', None, "ingest.default_visiblity"),
        ('[ingest]\ndefault_visibility = writer\n', 2, None),
    ]:
        cfg.write_text(text)
        with pytest.raises(IngestError) as info:
            load_ingest_settings(tmp_path)
        assert (info.value.path, info.value.line, info.value.field) == (str(cfg), line, field)


def test_resolve_visibility():
    public, writer = IngestSettings(), IngestSettings(default_visibility="writer", origin="memc.toml [ingest] default_visibility")
    given = resolve_visibility(["elena"], writer="bob", settings=public)
    assert (given.principals, given.defaulted, given.public_by_default) == (("elena",), False, False)
    said_public = resolve_visibility(["public"], writer="bob", settings=public)
    assert said_public.principals == ("public",) and not said_public.public_by_default
    d = resolve_visibility(None, writer="bob", settings=public)
    assert d.principals == ("public",) and d.public_by_default
    assert resolve_visibility(None, writer="bob", settings=writer).principals == ("bob",)
    assert not resolve_visibility(None, writer="bob", settings=writer).public_by_default
    with pytest.raises(IngestError, match="give a visibility"):
        resolve_visibility(None, writer="memc:cli", settings=writer)
