"""The dbt project, as Dagster sees it. Self-contained (no package-relative imports) so that
``dagster-dbt project prepare-and-package --file orchestration/dbt_project.py`` can load it."""

import contextlib
import functools
import hashlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path

from catalog.dbt_child import PARENT_ENV, ZYGOTE_ENV

DBT_PROJECT_DIR = Path(__file__).resolve().parent.parent / "dbt_project"
MANIFEST = DBT_PROJECT_DIR / "target" / "manifest.json"


def manifest_is_stale() -> bool:
    """True when a model, macro or YAML file is newer than the manifest (or there is none).

    ``prepare_if_dev`` would otherwise re-parse in every process ``dagster dev`` starts (2-5 s
    each, docs/stack-notes.md)."""
    if not MANIFEST.exists():
        return True
    built = MANIFEST.stat().st_mtime
    for sub in ("models", "macros", "tests"):
        for p in (DBT_PROJECT_DIR / sub).rglob("*"):
            if p.is_file() and p.stat().st_mtime > built:
                return True
    return any(
        (DBT_PROJECT_DIR / f).stat().st_mtime > built for f in ("dbt_project.yml", "profiles.yml")
    )


def project_fingerprint() -> str:
    """A hash of the dbt project's own files (models, macros, tests, dbt_project.yml): which
    project a warehouse was built by. dagster-dbt's code version of a model is its SQL file's
    checksum, which a change to a macro it calls leaves as it was."""
    h = hashlib.sha256()
    files = [p for sub in ("models", "macros", "tests") for p in (DBT_PROJECT_DIR / sub).rglob("*") if p.is_file()]
    for p in sorted([*files, DBT_PROJECT_DIR / "dbt_project.yml"]):
        h.update(p.relative_to(DBT_PROJECT_DIR).as_posix().encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()[:16]


@functools.cache
def dbt_project():
    from dagster_dbt import DbtProject  # lazy: 2.5 s; `memc up` and the runner need the manifest, not the rest

    # The profile reads MEMC_HOME; parsing does not touch the warehouse, so any value will do.
    os.environ.setdefault("MEMC_HOME", str(Path.cwd() / "memc_home"))
    project = DbtProject(project_dir=DBT_PROJECT_DIR, profiles_dir=DBT_PROJECT_DIR)
    if manifest_is_stale():
        project.prepare_if_dev()
    return project


def dbt_executable() -> str:
    """The dbt beside this interpreter, through `memc-dbt` (catalog/dbt_child.py: ended with the
    build that started it) where that is installed: `memc` is often run without activating its
    virtualenv, and dagster-dbt's default is whatever ``dbt`` is first on PATH (none, then)."""
    for name in ("memc-dbt", "dbt"):
        exe = Path(sys.executable).with_name(name)
        if exe.exists():
            return str(exe)
    return "dbt"


def ensure_manifest() -> Path:
    """Parse the dbt project if its manifest is missing or stale (what ``make`` does up front),
    with the dbt beside this interpreter (dagster-dbt's own preparer looks on PATH)."""
    if manifest_is_stale():
        from dagster_dbt import DbtCliResource  # lazy: as above

        project = dbt_project()
        DbtCliResource(project_dir=project, dbt_executable=dbt_executable()).cli(["parse", "--quiet"], target_path=project.target_path).wait()
    return MANIFEST


def ledger_parquet(home_root: Path) -> str:
    """The Parquet glob dbt's ledger source reads (``MEMC_LEDGER_PARQUET`` in
    models/staging/_sources.yml): the ledger's own batch files, or, with the ledger on object
    storage (MEMC_STORAGE), a local mirror of its committed batches under the warehouse, brought
    up to date here (DuckDB 2.0 has no offline httpfs, and a glob over the bucket would also see
    uncommitted and superseded objects). Call it before each dbt invocation."""
    from ledger import S3Ledger, open_ledger, storage_uri
    from memc.home import MemcHome

    home = MemcHome.resolve(home_root)
    if storage_uri() is None:  # local: no handle needed (opening one runs the ledger's recovery)
        return str(home.ledger / "*.parquet")
    ledger = open_ledger(home.ledger, write=False)
    assert isinstance(ledger, S3Ledger)
    folder = home.warehouse / "ledger_mirror"
    ledger.mirror(folder)
    return str(folder / "*.parquet")


def dbt_home_env(home_root: Path) -> dict[str, str]:
    """The variables the dbt profile and sources read for the home at ``home_root``."""
    return {"MEMC_HOME": str(home_root), "MEMC_LEDGER_PARQUET": ledger_parquet(home_root)}


BUILD_DBT_DEFAULTS = {"DBT_LOG_LEVEL_FILE": "warn", "DBT_WRITE_JSON": "false"}


@contextlib.contextmanager
def dbt_home_environ(home_root: Path, watermark: int | None = None, *, zygote: str | None = None) -> Iterator[None]:
    """Set :func:`dbt_home_env` (and ``MEMC_WATERMARK``, the highest ledger seq the build reads,
    when given; ``MEMC_DBT_ZYGOTE``, the socket of a warm dbt, and ``MEMC_DBT_PARENT``, this
    process's pid, catalog/dbt_child.py) in this process while a dbt child is started
    (dagster-dbt's ``cli`` copies ``os.environ`` into the child and takes no environment of its
    own), then put the previous values back: an in-process run (tests, ``memc build``) must not
    leave one home's ledger glob or watermark behind for the next dbt started from the same
    process."""
    values = dbt_home_env(home_root)
    # dbt's debug log and its JSON artifacts (a 6 MB manifest.json written twice, run_results.json)
    # are 0.4 s of a one-message build's 3.9 s dbt step (docs/benchmarks.md); what dagster-dbt
    # reads comes from dbt's stdout. So by default a build's folder keeps a dbt.log of warnings
    # and errors only; set DBT_LOG_LEVEL_FILE=debug and DBT_WRITE_JSON=true to get both back.
    values |= {k: v for k, v in BUILD_DBT_DEFAULTS.items() if k not in os.environ}
    if watermark is not None:
        values["MEMC_WATERMARK"] = str(watermark)
    if zygote is not None:
        values[ZYGOTE_ENV] = zygote
    values[PARENT_ENV] = str(os.getpid())  # the dbt child's starting process (catalog/dbt_child.py)
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def dbt_command(home_root: Path, args: list[str], folder: Path, *, warehouse: Path | None = None) -> tuple[list[str], dict[str, str]]:
    """The command and environment of one dbt invocation on this project for the home at
    ``home_root``, outside Dagster. Its target and log folders are ``folder/target`` and
    ``folder/logs``: the project's own ``target/`` holds the manifest Dagster loads, which a
    ``dbt docs generate`` or a scratch ``dbt run`` there would rewrite under a running code
    server. ``warehouse`` names another DuckDB file than the home's (``MEMC_WAREHOUSE_DB`` in
    profiles.yml). The calling process starts the command: it is named as memc-dbt's parent."""
    cmd = [
        dbt_executable(), *args,
        "--project-dir", str(DBT_PROJECT_DIR), "--profiles-dir", str(DBT_PROJECT_DIR),
        "--target-path", str(folder / "target"), "--log-path", str(folder / "logs"),
    ]  # fmt: skip
    env = {**os.environ, "DO_NOT_TRACK": "1", "DBT_SEND_ANONYMOUS_USAGE_STATS": "false", **dbt_home_env(home_root)}
    env[PARENT_ENV] = str(os.getpid())  # this process starts it (catalog/dbt_child.py)
    if warehouse is not None:
        env["MEMC_WAREHOUSE_DB"] = str(warehouse)
    return cmd, env
