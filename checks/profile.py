"""Checks on the profile-guided views: the dossiers are exactly the state marts' rows about their
entities at the state build the marts hold, and the profile names only entities of the mart."""

import dagster as dg

from catalog.keys import ENTITY_DOSSIERS, QUERY_PROFILE
from catalog.resources import MemcResource
from checks import audit_result
from views.audit import Audit
from views.dossiers import audit_dossiers
from views.marts import ENTITIES, mart_path, read_mart
from views.profile import read_profile


@dg.asset_check(
    asset=ENTITY_DOSSIERS,
    blocking=True,
    description=(
        "Every dossier fact is a state_current row of the state build the marts hold, with the same values and "
        "position, and every state_current and conflicts row about a dossier's entity is in it; the name index is "
        "exactly state_current's subjects. (A dossier that misses a row would change answers, not just speed.)"
    ),
)
def entity_dossiers_match_state(memc: MemcResource) -> dg.AssetCheckResult:
    problems, metadata = audit_dossiers(memc.home)
    return audit_result(Audit.of(problems, **metadata))


@dg.asset_check(
    asset=QUERY_PROFILE,
    blocking=True,
    description=(
        "Every profiled entity is an entity of the entities mart, under its canonical name: names come from the "
        "mart, never from question text."
    ),
)
def query_profile_names_known_entities(memc: MemcResource) -> dg.AssetCheckResult:
    home = memc.home
    profile = read_profile(home).to_pylist()
    path = mart_path(home, ENTITIES)
    known = {}
    if path.exists():
        known = {(r["scope"], r["entity_id"]): r["name"] for r in read_mart(path, columns=["scope", "entity_id", "name"]).to_pylist()}
    problems = [
        f"{r['scope']}/{r['entity_id']} is not an entity of the mart" if (r["scope"], r["entity_id"]) not in known
        else f"{r['scope']}/{r['entity_id']} is not under its canonical name"
        for r in profile
        if known.get((r["scope"], r["entity_id"]), object()) != r["entity"]
    ]
    return audit_result(Audit.of(problems, entities=len(profile)))


CHECKS = [entity_dossiers_match_state, query_profile_names_known_entities]
