"""The state build's plain parts, apart from Dagster (assets/state.py is the thin asset over them):
which extractor's claims dbt folds, when the incremental models must be rebuilt from scratch, the
dbt command line and where its artifacts go, and the catalog text and column types of dbt's nodes
(what the Dagster UI shows for each dbt test check and model)."""

from __future__ import annotations

import functools
import json
import re
import shutil
from pathlib import Path

import duckdb

from catalog.dbt_project import DBT_PROJECT_DIR
from claims.extractors import active_extractor_key
from ledger import open_ledger
from memc.home import MemcHome
from memc.watermark import read_watermark


def extractor_key() -> str:
    """The claims folder dbt folds (``var('extractor_key')``): the active extractor's key."""

    return active_extractor_key()


@functools.cache
def fold_version() -> str:
    """The fold's rules version, dbt_project.yml's var ``fold_version`` (memory_actions records
    it on every action)."""
    import yaml  # lazy: only a build reads it (PyYAML comes with dbt)

    return str(yaml.safe_load((DBT_PROJECT_DIR / "dbt_project.yml").read_text())["vars"]["fold_version"])


def full_refresh_reason(home: MemcHome, watermark: int, key: str) -> str | None:
    """Why the incremental models must be rebuilt from scratch, or None when appending is exact.

    The incremental models append what lies above their highest seq, which is right only while
    the ledger grows and old claims stay as they were: a new extractor rewrites every claim, an
    erasure rewrites ledger files, a ledger that shrank was restored or replaced, and new fold
    rules pair claims differently (fold-2: a restatement closes nothing, where the pairs fold-1
    appended have it closing the claim it restates)."""
    if not home.warehouse_db.exists():
        return None  # the first build is a full build anyway
    previous = read_watermark(home.warehouse)
    if previous is None:
        return "no watermark from the previous build"
    if previous.get("extractor") != key:
        return f"extractor changed ({previous.get('extractor')} -> {key})"
    # Watermarks written before the fold's version was recorded are fold-1's.
    if previous.get("fold", "fold-1") != fold_version():
        return f"fold rules changed ({previous.get('fold', 'fold-1')} -> {fold_version()})"
    if watermark < int(previous["watermark"]):
        return f"ledger head {watermark} is below the last build's {previous['watermark']}"
    if watermark > int(previous["watermark"]):
        kinds = open_ledger(home.ledger, write=False).read(["kind"], since_seq=int(previous["watermark"]), until_seq=watermark)
        if "erasure" in set(kinds.column("kind").to_pylist()):
            return "an erasure was recorded since the last build"
    return None


def dbt_build_args(watermark: int, key: str, full_refresh: bool) -> list[str]:
    """The state asset's ``dbt build``: every model and data test (the data tests are the asset
    checks users see), without the fold's unit tests. Those test the SQL against fixed inputs,
    so their result changes only with the project's code: dbt runs them in development and CI,
    not in each production build (tests/platform/test_state.py runs them through a real `dbt
    build`; `dbt test --select test_type:unit` on a home does too). They were 15 of the 117
    nodes and about a fifth of the dbt child's CPU time in a build of the sample corpus
    (21 s against 26 s, three builds each, interleaved).

    The watermark is not among the ``--vars``: it changes with every build, and dbt parses the
    whole project again whenever the CLI vars change. The asset passes it as MEMC_WATERMARK
    (:func:`catalog.dbt_project.dbt_home_environ`; the ``within_watermark`` macro reads it), and
    seeds the build's target folder with the last build's parse (:func:`seed_partial_parse`)."""
    args = ["build", "--vars", json.dumps({"extractor_key": key}), "--exclude-resource-type", "unit_test"]
    return [*args, "--full-refresh"] if full_refresh else args


PARTIAL_PARSE = "partial_parse.msgpack"


# Beside a build's parse: the fingerprint of the project files it was made from.
PARSED_PROJECT = "parsed_project"


def seed_partial_parse(target: Path, project: str) -> bool:
    """Copy the newest earlier build's parse of this home (``partial_parse.msgpack`` in a sibling
    target folder) into ``target``, so that dbt parses only what changed since (dbt checks the
    files' hashes, its version, the vars and the profile itself, and parses everything again
    when any of those differ). dagster-dbt would otherwise copy the project's own parse, made
    for another warehouse path (the profile differs), which dbt discards.

    Only a parse of the same project files (``project``: :func:`catalog.dbt_project.project_fingerprint`,
    written beside each build's parse) is seeded; after an upgrade that changed them, dbt parses
    the whole project once. dbt does not always read a file again to see that it changed (a
    YAML file whose modification time equals the one its parse recorded is taken as unchanged:
    dbt/parser/read_files.py), and a build seeded with a parse of other project files once ran
    the data tests of the old files (the column tests that 070b1d1 grouped per model), which
    dagster-dbt's manifest did not hold: the step failed. Returns whether a parse was found."""
    target.mkdir(parents=True, exist_ok=True)
    (target / PARSED_PROJECT).write_text(project)
    earlier = sorted(
        (
            p for p in target.parent.glob(f"*/{PARTIAL_PARSE}")
            if p.parent != target and (p.parent / PARSED_PROJECT).is_file() and (p.parent / PARSED_PROJECT).read_text() == project
        ),
        key=lambda p: p.stat().st_mtime,
    )  # fmt: skip
    if not earlier:
        return False
    shutil.copy2(earlier[-1], target / PARTIAL_PARSE)
    return True


# dbt's artifacts of the last few builds are kept for debugging (each ~1 MB: dagster-dbt's copy of
# the partial-parse file, the compiled SQL, a dbt.log of warnings and errors; ~6 MB more with the
# JSON artifacts, see catalog.dbt_project.BUILD_DBT_DEFAULTS).
KEEP_DBT_TARGETS = 5


def dbt_target(home: MemcHome, run_id: str) -> Path:
    """Where one build's dbt writes its target and its log (``DBT_LOG_PATH`` is the same
    folder): ``<home>/warehouse/dbt/<run id>``, inside the folder dbt owns, so that an erasure
    drops it with the warehouse, and not in the installed project's ``target/``, which every
    memory home on the machine shared (dbt.log and run_results.json can quote a value, e.g. a
    DuckDB conversion error). Older builds' folders beyond the last few are removed."""
    root = home.warehouse / "dbt"
    root.mkdir(parents=True, exist_ok=True)
    old = sorted((p for p in root.iterdir() if p.is_dir()), key=lambda p: p.stat().st_mtime)
    for p in old[: max(0, len(old) - (KEEP_DBT_TARGETS - 1))]:
        shutil.rmtree(p, ignore_errors=True)
    return root / run_id


def _ref_name(expr: str) -> str:
    """``ref('x')`` -> ``x``, ``source('a', 'b')`` -> ``a.b``: the relationship's target as named."""
    names = re.findall(r"""['"]([^'"]+)['"]""", expr)
    return ".".join(names) if names else expr


def _leading_comment(sql: str) -> str | None:
    """The comment a singular test's SQL opens with (``--`` lines, ``/* */`` or ``{# #}``)."""
    text = sql.strip()
    if m := re.match(r"(?s)^(?:/\*|\{#-?)(.*?)(?:\*/|-?#\})", text):
        return " ".join(m[1].split()) or None
    lines = []
    for line in text.splitlines():
        if not line.strip().startswith("--"):
            break
        lines.append(line.strip()[2:].strip())
    return " ".join(lines).strip() or None


def _listed(names: list[str]) -> str:
    """Column names quoted and joined as a sentence lists them: a, a and b, a, b and c."""
    quoted = [f"`{n}`" for n in names]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " and " + quoted[-1]


def _is_one_of(column: str | None, values: list) -> str:
    return f"{column} is one of " + ", ".join(f"'{v}'" for v in values)


def _no_two_rows_share(columns: list[str]) -> str:
    return "no two rows share (" + ", ".join(f"`{c}`" for c in columns) + ")"


def _columns_hold_sentence(kwargs: dict) -> str:
    """A ``columns_hold`` test's rules as one sentence, rule by rule in the order the test checks them."""
    parts = []
    if nulls := kwargs.get("not_null"):
        parts.append(f"{_listed(nulls)} {'is' if len(nulls) == 1 else 'are'} never null")
    single = [c for c in kwargs.get("unique") or [] if isinstance(c, str)]
    if single:
        parts.append(f"{_listed(single)} {'is' if len(single) == 1 else 'are each'} unique")
    parts += [_no_two_rows_share(c) for c in kwargs.get("unique") or [] if not isinstance(c, str)]
    for column, values in (kwargs.get("accepted_values") or {}).items():
        parts.append(_is_one_of(f"`{column}`", values))
    return "; ".join(parts)


def dbt_test_description(manifest: dict, test: dict) -> str:
    """What a dbt test checks, in a sentence for the catalog (dagster-dbt leaves an asset check's
    description empty unless the test has ``meta.description``): the test's own description from
    its yml when it has one; for a generic test, a sentence made from the test and its arguments
    (the project's own generic tests say theirs in dbt_project/macros/_macros.yml); for a
    singular test, the comment its SQL opens with."""
    own = test.get("description") or (test.get("meta") or {}).get("description")
    if own:
        return " ".join(own.split())
    meta = test.get("test_metadata")
    if not meta:  # a singular test: dbt_project/tests/*.sql
        return _leading_comment(test.get("raw_code") or "") or f"the singular test {test['name']} returns no rows"
    name, kwargs = meta["name"], meta.get("kwargs") or {}
    col = f"`{kwargs['column_name']}`" if kwargs.get("column_name") else None
    if name == "not_null":
        sentence = f"{col} is never null"
    elif name == "unique":
        sentence = f"{col} is unique: no two rows share a value"
    elif name == "accepted_values":
        sentence = _is_one_of(col, kwargs.get("values", []))
    elif name == "relationships":
        sentence = f"every {col} names an existing `{kwargs.get('field')}` of {_ref_name(kwargs.get('to', '?'))} (no orphans)"
    elif name == "unique_combination_of_columns":  # dbt_utils'
        sentence = _no_two_rows_share(kwargs.get("combination_of_columns") or [])
    elif name == "columns_hold":  # the project's per-model rules (dbt_project/macros/tests.sql)
        sentence = _columns_hold_sentence(kwargs)
    else:
        macro = next((m for m in test.get("depends_on", {}).get("macros", []) if m.endswith(f".test_{name}")), None)
        text = " ".join(((manifest.get("macros", {}).get(macro) or {}).get("description") or "").split())
        args = ", ".join(f"{k}={v}" for k, v in kwargs.items() if k not in ("model", "column_name"))
        sentence = f"{text.rstrip('.')} (on {col or 'the model'}{', ' + args if args else ''})" if text else f"{name} on {col or 'the model'}{' with ' + args if args else ''} returns no rows"
    where = (test.get("config") or {}).get("where")
    return f"{sentence}{f', where {where}' if where else ''}."


def warehouse_columns(db: Path) -> dict[tuple[str, str], list[tuple[str, str]]]:
    """Every relation's columns and DuckDB types in the warehouse, by (schema, name), in order;
    opened read-only (dbt owns the file)."""
    if not db.exists():
        return {}
    with duckdb.connect(str(db), read_only=True) as con:
        rows = con.execute(
            "select table_schema, table_name, column_name, data_type from information_schema.columns"
            " order by table_schema, table_name, ordinal_position"
        ).fetchall()
    out: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for schema, table, column, data_type in rows:
        out.setdefault((schema, table), []).append((column, data_type))
    return out
