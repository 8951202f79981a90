"""Procedural memory: skills mined from the ledger's trajectories (views/skills.py). Unpartitioned:
a skill's gate compares trajectories across days and is replayed in time order, so the view is
mined whole, in well under a second for thousands of trajectories. It reads the ledger only, so
an erasure's rebuild mines it again without the erased trajectories."""

import dagster as dg

import views.skills
from assets.columns import column_metadata, field_comments
from catalog.keys import LEDGER, SKILLS, SKILLS_GROUP
from catalog.resources import MemcResource
from memc.watermark import write_watermark
from views.skills import SKILLS_VERSION, build_skills


@dg.asset(
    key=SKILLS,
    deps=[LEDGER],
    group_name=SKILLS_GROUP,
    kinds={"parquet"},
    code_version=SKILLS_VERSION,
    metadata=column_metadata(views.skills.SKILLS_SCHEMA, field_comments(views.skills)),
)
def skills(context: dg.AssetExecutionContext, memc: MemcResource) -> dg.MaterializeResult:
    """Skills: ways of doing a family of tasks that worked better than the other ways tried,
    mined from the trajectories in the ledger (ingestion's `trajectories` format). Grain: one
    row per skill: its scope, trigger (the words of its task family), normalised steps,
    termination, support (trajectories that followed it), success rate against the family's
    other trajectories, the entry ids of both (pointers), status (active, or retired once its
    recent followers fell below the gate) and visibility (the meet of every trajectory it was
    computed from). The context compiler shows the active ones an asker may see
    (views.skills.matching_skills). Rebuilt whole from the ledger."""

    home = memc.home
    stats = build_skills(home, memc.ledger())
    write_watermark(home.skills, "skills", stats["ledger_watermark"], rows=stats["skills"] + stats["retired"])
    memc.publish("skills")
    context.log.info(f"skills: {stats}")
    return dg.MaterializeResult(
        metadata={
            "dagster/row_count": stats["skills"] + stats["retired"],
            "active": stats["skills"],
            "retired": stats["retired"],
            "trajectories": stats["trajectories"],
            "families": stats["families"],
            "ledger_watermark": stats["ledger_watermark"],
            "path": dg.MetadataValue.path(stats["path"]),
        }
    )


ASSETS = [skills]
