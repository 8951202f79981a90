"""Who may see what. One definition, used by every store filter and by the independent checker.

An entry's visibility is a list of principals; ``public`` admits every asker. A missing, empty
or malformed visibility admits nobody but an administrator.

Administrators are not askers of the context compiler: a context is always compiled for one
principal and only ever holds what that principal may see (``compile_context`` has no admin
mode, so no caller can widen it by a flag). Administrators read the ledger itself (`memc ledger
export`), fold state over every claim (`memc state --admin`) and erase (`memc forget`); the API
decides who holds an admin key. Erasure tombstones are visible to :data:`ADMIN` only.
"""

from __future__ import annotations

import re
from typing import Iterable

from ledger.schema import PRINCIPAL_PATTERN, PUBLIC

_PRINCIPAL = re.compile(PRINCIPAL_PATTERN)

# The visibility of what only administrators may see (erasure tombstones). Principals in the
# reserved "memc:" namespace are never handed out as asker names.
ADMIN = "memc:admin"


def well_formed(visibility: Iterable[str] | None) -> bool:
    vis = list(visibility or [])
    return bool(vis) and all(isinstance(p, str) and _PRINCIPAL.match(p) for p in vis)


def may_see(asker: str, visibility: Iterable[str] | None, *, admin: bool = False) -> bool:
    if admin:
        return True
    if not well_formed(visibility):
        return False
    vis = set(visibility or [])
    return PUBLIC in vis or asker in vis


def meet(visibilities: Iterable[Iterable[str] | None]) -> list[str]:
    """Who may see something derived from all of these: ``public`` is the identity, otherwise the
    principals common to every input. Same rule as the dbt macro ``visibility_meet``."""
    result: set[str] | None = None
    for vis in visibilities:
        if not well_formed(vis):
            return []
        v = set(vis or [])
        if PUBLIC in v:
            continue
        result = v if result is None else result & v
    return [PUBLIC] if result is None else sorted(result)
