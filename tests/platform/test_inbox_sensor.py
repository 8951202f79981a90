"""The inbox sensor starts an ingest run; the run ingests the file and records the new head."""

from __future__ import annotations

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
