"""Who may see what. One definition, used by every store filter and by the independent checker.

An entry's visibility is a list of principals; ``public`` admits every asker. A missing, empty
or malformed visibility admits nobody but an administrator.

Administrators are not askers of the context compiler: a context is always compiled for one
principal and only ever holds what that principal may see (``compile_context`` has no admin
mode, so no caller can widen it by a flag). Administrators read the ledger itself (`memc ledger
export`), fold state over every claim (`memc state --admin`) and erase (`memc forget`); the API
decides who holds an admin key. Erasure tombstones are visible to :data:`ADMIN` only.

Writing has its rule too (:func:`may_write`): a principal may put evidence only where it can
see it itself (its own name or ``public`` in the visibility), or where a grant of its key lets
it write for someone (an ingestion service writing into each user's memory). Otherwise any key
holder could plant evidence in another principal's private memory.
"""

from __future__ import annotations

import re
from typing import Iterable

# Who may see an entry is a list of principals; PUBLIC lets every asker see it. These patterns are
# the one definition: every literal a store inlines into a filter (LanceDB, Cypher) matched one.
PUBLIC = "public"
PRINCIPAL_PATTERN = r"^[A-Za-z0-9_.@:\-]{1,128}$"
SCOPE_PATTERN = r"^[A-Za-z0-9_.:\-]{1,128}$"
# Principals in this namespace are memc's own (the operator, the inbox, producers, the admin
# visibility of tombstones); no API key, MCP server or ``--as`` may stand for one.
RESERVED_PREFIX = "memc:"

PRINCIPAL_RE = re.compile(PRINCIPAL_PATTERN)
SCOPE_RE = re.compile(SCOPE_PATTERN)

# The visibility of what only administrators may see (erasure tombstones). Principals in the
# reserved "memc:" namespace are never handed out as asker names.
ADMIN = RESERVED_PREFIX + "admin"


def check_literal(value: object, pattern: re.Pattern[str], what: str) -> str:
    """``value`` itself when it is a string matching ``pattern``, else a ValueError naming
    ``what``. Every literal a store inlines into query text (a LanceDB filter, Cypher) passes this
    first; none of the patterns admits a quote or a backslash, so nothing depends on escaping."""
    if not isinstance(value, str) or not pattern.match(value):
        raise ValueError(f"malformed {what} {value!r}: must match {pattern.pattern}")
    return value


def principal_problem(name: object) -> str | None:
    """Why ``name`` cannot be a principal an asker or writer acts as (None when it can)."""
    if not isinstance(name, str) or not PRINCIPAL_RE.match(name):
        return f"{name!r} is not a valid principal: use 1-128 letters, digits and _.@:-"
    if name == PUBLIC:
        return f"{PUBLIC!r} is the visibility every asker has, not a principal to act as"
    if name.startswith(RESERVED_PREFIX):
        return f"{name!r}: names starting with {RESERVED_PREFIX!r} are memc's own (operator, producers, admin)"
    return None


def well_formed(visibility: Iterable[str] | None) -> bool:
    vis = list(visibility or [])
    return bool(vis) and all(isinstance(p, str) and PRINCIPAL_RE.match(p) for p in vis)


def may_see(asker: str, visibility: Iterable[str] | None, *, admin: bool = False) -> bool:
    if admin:
        return True
    if not well_formed(visibility):
        return False
    vis = set(visibility or [])
    return PUBLIC in vis or asker in vis


def may_write(writer: str, visibility: Iterable[str] | None, *, admin: bool = False, write_for: Iterable[str] = ()) -> bool:
    """May ``writer`` ingest evidence with this visibility? Admins may; anyone else only evidence
    that it, or a principal its key may write for, is among those who see (``public`` included)."""
    if admin:
        return True
    if not well_formed(visibility):
        return False
    vis = set(visibility or [])
    return PUBLIC in vis or writer in vis or bool(vis & set(write_for))


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
