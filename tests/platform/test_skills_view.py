"""Procedural memory through real Dagster runs: the invented trajectory corpus ingested into a
fresh home, the skills asset materialized with its check, the expected skills found (and served
to an asker by matching_skills and shown by the compiler under "How this was done before"), then the trajectories one skill came from erased through the
forgetting cascade, whose rebuild (every view, through Dagster) leaves that skill gone and the
others in place."""

from __future__ import annotations

from trajectory_corpus import SCOPE, write_corpus

from catalog.keys import SKILLS
from forgetting import forget
from ingestion import ingest_paths
from ledger import Ledger
from memc.home import MemcHome
from orchestration.runner import build, rebuild_views
from query import compile_context
from views.skills import load_skills, matching_skills

RELOAD_STEP = "reload_config(mode=rolling, service=*)"


def test_skills_are_mined_checked_served_and_erased_with_their_trajectories(tmp_path):
    home = MemcHome.resolve(tmp_path / "home").ensure()
    corpus = write_corpus(tmp_path / "runs.jsonl")
    ledger = Ledger(home.ledger)
    first = ingest_paths(ledger, [corpus], scope=SCOPE, visibility=("public",))
    assert first.appended == 43 and first.files[0].format == "trajectories"
    assert ingest_paths(ledger, [corpus], scope=SCOPE, visibility=("public",)).appended == 0, "idempotent"

    report = build(home, selection=[SKILLS])
    assert report.success, report.failed_steps
    assert "skills" in report.materialized
    assert report.checks.get("skills:skills_sound") is True, report.checks

    skills = {s.skill_id: s for s in load_skills(home)}
    by_status = sorted((s.status, s.steps[2]) for s in skills.values())
    assert by_status == [
        ("active", "push_image(tag=*)"),  # the canary deploy, after tests, build and push
        ("active", RELOAD_STEP),
        ("retired", "restart_pods(service=*)"),
    ], by_status
    [deploy] = matching_skills(home, "deploy the web service to production", "tomasz", SCOPE)
    assert deploy.steps[-1] == "promote_canary()" and deploy.support == 10
    [reload] = matching_skills(home, "rotate the API key for billing", "tomasz", SCOPE)
    assert reload.steps[2] == RELOAD_STEP

    # The compiler shows the matching skill under "How this was done before", its steps in order.
    ctx = compile_context("How do I deploy the web service to production?", "tomasz", home=home, scope=SCOPE)
    assert [sk["skill_id"] for sk in ctx.skills] == [deploy.skill_id]
    text = ctx.render()
    assert "How this was done before:" in text and "succeeded 90%" in text
    assert text.index("1. run_tests(suite=all)") < text.index("6. promote_canary()") < text.index("Evidence:")
    # a goal names the task as well as a question does; a question about nothing like it gets none
    assert compile_context("What next?", "tomasz", home=home, scope=SCOPE, goal="rotate the API key for billing").skills[0]["skill_id"] == reload.skill_id
    assert compile_context("Who signed the lease?", "tomasz", home=home, scope=SCOPE).skills == []

    rep = forget(home, entry_ids=list(reload.source_entry_ids), reason="the reload runs held a live key", by="ops-admin", rebuild=rebuild_views)
    assert rep.status == "done" and rep.rebuilt and not rep.build_failed_steps, rep.to_dict()
    assert "skills" in rep.views_dropped

    after = {s.skill_id: s for s in load_skills(home)}
    assert reload.skill_id not in after and not any(RELOAD_STEP in s.steps for s in after.values())
    assert deploy.skill_id in after, "the deploy family read none of the erased trajectories"
    assert matching_skills(home, "rotate the API key for billing", "tomasz", SCOPE) == []
    assert compile_context("How do I rotate the API key for billing?", "tomasz", home=home, scope=SCOPE).skills == []
