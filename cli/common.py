"""What every command shares: the ``--home`` option, JSON output and time options."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import click

from memc.home import MemcHome
from memc.visibility import principal_problem


def _json_default(v: Any) -> Any:
    if hasattr(v, "isoformat"):
        return v.isoformat()
    if isinstance(v, Path):
        return str(v)
    return str(v)


def dump(obj: Any) -> None:
    """Print ``obj`` as indented JSON (datetimes as ISO strings)."""
    click.echo(json.dumps(obj, indent=2, default=_json_default, ensure_ascii=False))


def home_option(f):
    """``--home`` on every command, overriding the one given to ``memc`` itself."""
    return click.option(
        "--home",
        "home_dir",
        type=click.Path(file_okay=False),
        default=None,
        help="Memory home (default: $MEMC_HOME or ./memc_home).",
    )(f)


def resolve_home(ctx: click.Context, home_dir: str | None) -> MemcHome:
    """The memory home a command works on: its own ``--home``, else ``memc --home``, else the default."""
    return MemcHome.resolve(home_dir or (ctx.obj or {}).get("home_dir"))


def require_ledger(home: MemcHome, then: str) -> None:
    """Refuse a command that needs evidence when there is none, saying what to do (``then``): no
    ledger directory in the home, or, with the ledger on object storage (MEMC_STORAGE), no
    committed batch there (another node's home has no ledger directory of its own)."""
    from ledger import open_ledger, storage_uri  # lazy: pyarrow and pydantic, 0.5 s every command would pay

    storage = storage_uri()
    if storage is None:
        if home.ledger.exists():
            return
        where = str(home.ledger)
    else:
        if open_ledger(home.ledger, write=False).head() > 0:
            return
        where = storage + "/ledger"
    raise click.ClickException(f"no ledger at {where}: {then}")


def pull_views(home: MemcHome, *views: str) -> None:
    """With the views on object storage (MEMC_STORAGE), bring this node's copies of ``views`` up to
    date before a command reads them (views/published.py); nothing for a local home."""
    from views import published  # lazy, as above

    published.pull(home, views)


def parse_time(value: str | None, name: str) -> datetime | None:
    """An ISO date or time option (UTC when no zone is given), or None when not given."""
    if value is None:
        return None
    try:
        t = datetime.fromisoformat(value)
    except ValueError:
        raise click.BadParameter(f"{value!r} is not an ISO date or time (e.g. 2024-06-01 or 2024-06-01T12:00)", param_hint=name) from None
    return t.replace(tzinfo=timezone.utc) if t.tzinfo is None else t


def time_or_now(value: str | None, name: str) -> datetime:
    """An ISO date or time option (UTC if no zone given); now when not given."""
    return parse_time(value, name) or datetime.now(timezone.utc)


def principal_arg(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """The ``--as`` callback: a principal anyone may act as (not ``public``, not a ``memc:`` name:
    ``--as memc:admin`` would otherwise read what only administrators may, such as tombstones)."""
    problem = principal_problem(value) if value is not None else None
    if problem:
        raise click.BadParameter(problem, ctx=ctx, param=param)
    return value
