"""The check on procedural memory: every skill traces to trajectories in the ledger that all its
readers may see (views/skills.skills_sound)."""

import dagster as dg

from catalog.keys import SKILLS
from catalog.resources import MemcResource
from checks import audit_result
from memc.atomic import read_parquet
from views.skills import SKILLS_FILE, event_rows, skills_sound


@dg.asset_check(
    asset=SKILLS,
    name="skills_sound",
    blocking=True,
    description="Every skill's source and compared trajectories are trajectories in the ledger, in its scope, visible to every reader its visibility admits; its id is the hash of its scope, steps and trajectories; its support passed the gate.",
)
def skills_sound_check(memc: MemcResource) -> dg.AssetCheckResult:
    home = memc.home
    events, _ = event_rows(memc.ledger())  # a trajectory is an event: skills_sound reads no other row
    return audit_result(skills_sound(read_parquet(home.skills / SKILLS_FILE), events))


CHECKS = [skills_sound_check]
