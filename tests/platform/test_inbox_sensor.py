"""The inbox sensor starts an ingest run; the run ingests the file and records the new head."""

from __future__ import annotations

import logging
import shutil

import dagster as dg

from ledger import Ledger
from memc.home import MemcHome
from orchestration.definitions import build_definitions
from catalog.keys import LEDGER
from catalog.resources import MemcResource
from orchestration.sensors import inbox_sensor

from conftest import SAMPLES


def test_dropped_file_is_ingested_through_a_dagster_run(tmp_path):
    home = MemcHome.resolve(tmp_path / "home").ensure()
    memc = MemcResource(home_dir=str(home.root))
    ctx = dg.build_sensor_context(resources={"memc": memc})
    assert isinstance(inbox_sensor(ctx), dg.SkipReason)

    shutil.copy(SAMPLES / "team" / "elena_tomasz.jsonl", home.inbox / "chat.jsonl")
    (home.inbox / "broken.jsonl").write_text('{"speaker": "X", "text": "hi", "turn_id": "1"\n')
    request = inbox_sensor(dg.build_sensor_context(resources={"memc": memc}))
    assert isinstance(request, dg.RunRequest)

    instance = dg.DagsterInstance.ephemeral()
    job = build_definitions(str(home.root)).resolve_job_def("ingest_inbox")
    # Files younger than the settle time are left for the next pass; age them.
    import os, time

    for p in home.inbox.iterdir():
        if p.is_file():
            os.utime(p, (time.time() - 10, time.time() - 10))
    result = job.execute_in_process(instance=instance, tags=request.tags)
    assert result.success
    assert Ledger(home.ledger).head() == 15
    assert (home.inbox / "processed" / "chat.jsonl").exists()
    assert (home.inbox / "rejected" / "broken.jsonl").exists()
    assert (home.inbox / "rejected" / "broken.jsonl.error.json").exists()
    assert not (home.inbox / "chat.jsonl").exists()
    obs = instance.fetch_observations(LEDGER, limit=1).records
    assert obs and obs[0].asset_observation.tags.get("dagster/data_version") == "15"


def test_sensor_sees_folders_and_the_run_logs_scope_visibility_and_the_public_default(tmp_path):
    """A folder's memc-inbox.toml sets scope and visibility; a file with none is made public, and
    the run's log says so as a warning (issue 20). One in-process run: about 5 s."""
    import os, time

    home = MemcHome.resolve(tmp_path / "home").ensure()
    memc = MemcResource(home_dir=str(home.root))
    (home.inbox / "private").mkdir()
    (home.inbox / "private" / "memc-inbox.toml").write_text('scope = "team"\nvisibility = ["elena", "priya"]\n')
    shutil.copy(SAMPLES / "private" / "elena_priya.jsonl", home.inbox / "private" / "chat.jsonl")
    shutil.copy(SAMPLES / "team" / "team-notes.md", home.inbox / "notes.md")
    for p in (home.inbox / "private" / "chat.jsonl", home.inbox / "notes.md"):
        os.utime(p, (time.time() - 10, time.time() - 10))

    request = inbox_sensor(dg.build_sensor_context(resources={"memc": memc}))
    assert isinstance(request, dg.RunRequest) and "private/chat.jsonl:" in request.run_key

    instance = dg.DagsterInstance.ephemeral()
    result = build_definitions(str(home.root)).resolve_job_def("ingest_inbox").execute_in_process(instance=instance, tags=request.tags)
    assert result.success
    rows = list(Ledger(home.ledger).iter_entries())
    assert {(r["scope"], tuple(r["visibility"])) for r in rows} == {("team", ("elena", "priya")), ("default", ("public",))}
    assert (home.inbox / "processed" / "private" / "chat.jsonl").exists()
    logs = instance.all_logs(result.run_id)
    warnings = [e.user_message for e in logs if e.level == logging.WARNING and "made public" in e.user_message]
    assert len(warnings) == 1 and warnings[0].startswith("inbox/notes.md: 1 entry made public in scope 'default'")
    assert any("private/chat.jsonl" in e.user_message and "(scope team, visible to elena, priya)" in e.user_message for e in logs)
