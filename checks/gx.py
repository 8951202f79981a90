"""Great Expectations 1.x suites on the ledger and on the claims. Plain module: no Dagster.

The suites restate, independently of the code that writes the data, what the design promises:

ledger: the schema; no nulls where a value is required; entry ids and seqs unique; seqs
gap-free from 1; ``recorded_at`` never decreasing with seq; a known kind; visibility present
and well formed (principals as the ledger accepts them); confidence in [0, 1].

claims: the schema; no nulls where required; claim ids unique; confidence in [0, 1]; a known
polarity; visibility well formed; every claim's source entry resolvable in the ledger, and its
quote present verbatim in that entry (its content, or the caption of a picture it shares).

Two facts GX cannot see row by row are added as derived columns before validation (the
step from the previous seq; whether the quote occurs in the source), so that every failure
names the offending rows by id (``entry_id`` / ``claim_id``).

``import great_expectations`` costs 4.6 s (scipy, sqlalchemy, altair): it happens once per
process, inside :func:`_validation_definition`, never at import of this module.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from claims.model import CLAIM_SCHEMA
from ledger.schema import ENTRY_KINDS, LEDGER_SCHEMA, PRINCIPAL_PATTERN, said_in

LEDGER_SUITE = "ledger_suite"
CLAIMS_SUITE = "claims_suite"

# A principal as the ledger accepts it, and a visibility list as "p1,p2,...".
_PRINCIPAL = PRINCIPAL_PATTERN.strip("^$")
VISIBILITY_REGEX = rf"^{_PRINCIPAL}(?:,{_PRINCIPAL})*$"

# Derived columns (computed here, validated by GX).
SEQ_STEP = "seq_step"  # seq minus the previous row's seq (the first row: minus 0); gap-free means 1
VISIBILITY_TEXT = "visibility_text"  # the list joined by commas; None when the list is null
QUOTE_IN_SOURCE = "quote_in_source"  # the quote occurs verbatim in the source entry (content or caption)
# The source entry is in the ledger. A derived column, not the ledger's ids as a suite parameter:
# GX handles a parameter's value set as an object of its own, and with the 1M ids of a 1M-entry
# ledger it took 63.5 s for 50k claims against 3.6 s (the 1M-entry bench build's suite: 529 s).
SOURCE_IN_LEDGER = "source_in_ledger"

ID_COLUMN = {LEDGER_SUITE: "entry_id", CLAIMS_SUITE: "claim_id"}
MAX_IDS = 50  # failing ids kept per expectation (the count is always exact)


def _required(schema: pa.Schema) -> list[str]:
    return [f.name for f in schema if not f.nullable]


def _ledger_expectations(gx) -> list:
    E = gx.expectations
    cols = [*LEDGER_SCHEMA.names, SEQ_STEP, VISIBILITY_TEXT]
    out = [E.ExpectTableColumnsToMatchSet(column_set=cols, exact_match=True, description="schema: exactly the ledger's columns")]
    out += [E.ExpectColumnValuesToNotBeNull(column=c, description=f"{c} is required") for c in _required(LEDGER_SCHEMA)]
    out += [
        E.ExpectColumnValuesToBeUnique(column="seq", description="seq unique"),
        E.ExpectColumnValuesToBeUnique(column="entry_id", description="entry_id unique"),
        E.ExpectColumnValuesToBeInSet(column=SEQ_STEP, value_set=[1], description="seq gap-free from 1"),
        E.ExpectColumnValuesToBeIncreasing(column="recorded_at", description="recorded_at never decreases with seq"),
        E.ExpectColumnValuesToBeInSet(column="kind", value_set=list(ENTRY_KINDS), description="kind is a known entry kind"),
        E.ExpectColumnValuesToNotBeNull(column=VISIBILITY_TEXT, description="visibility present"),
        E.ExpectColumnValuesToMatchRegex(column=VISIBILITY_TEXT, regex=VISIBILITY_REGEX, description="visibility well formed"),
        E.ExpectColumnValuesToBeBetween(column="confidence", min_value=0.0, max_value=1.0, description="confidence in [0, 1]"),
    ]
    return out


def _claims_expectations(gx) -> list:
    E = gx.expectations
    cols = [*CLAIM_SCHEMA.names, VISIBILITY_TEXT, SOURCE_IN_LEDGER, QUOTE_IN_SOURCE]
    out = [E.ExpectTableColumnsToMatchSet(column_set=cols, exact_match=True, description="schema: exactly the claims' columns")]
    out += [E.ExpectColumnValuesToNotBeNull(column=c, description=f"{c} is required") for c in _required(CLAIM_SCHEMA)]
    out += [
        E.ExpectColumnValuesToBeUnique(column="claim_id", description="claim_id unique"),
        E.ExpectColumnValuesToBeBetween(column="confidence", min_value=0.0, max_value=1.0, description="confidence in [0, 1]"),
        E.ExpectColumnValuesToBeInSet(column="polarity", value_set=["assert", "retract"], description="polarity assert or retract"),
        E.ExpectColumnValuesToNotBeNull(column=VISIBILITY_TEXT, description="visibility present"),
        E.ExpectColumnValuesToMatchRegex(column=VISIBILITY_TEXT, regex=VISIBILITY_REGEX, description="visibility well formed"),
        E.ExpectColumnValuesToBeInSet(column=SOURCE_IN_LEDGER, value_set=[True], description="source entry resolvable in the ledger"),
        E.ExpectColumnValuesToBeInSet(column=QUOTE_IN_SOURCE, value_set=[True], description="quote present in the source entry"),
    ]
    return out


@functools.cache
def _validation_definition(suite_name: str):
    """One ephemeral GX context per process, one validation definition per suite (cached:
    building them takes ~0.02 s, importing GX 4.6 s)."""
    import great_expectations as gx  # lazy: 4 s to import; paid only when a check runs
    from great_expectations.data_context.types.base import ProgressBarsConfig  # lazy: as above

    context = _context()
    context.variables.progress_bars = ProgressBarsConfig(globally=False)  # else tqdm floods run logs
    batch = context.data_sources.get("memc").add_dataframe_asset(name=suite_name).add_batch_definition_whole_dataframe("whole")
    suite = context.suites.add(gx.ExpectationSuite(name=suite_name))
    for expectation in (_ledger_expectations if suite_name == LEDGER_SUITE else _claims_expectations)(gx):
        suite.add_expectation(expectation)
    return context.validation_definitions.add(gx.ValidationDefinition(name=f"{suite_name}_validation", data=batch, suite=suite))


@functools.cache
def _context():
    import great_expectations as gx  # lazy: 4 s to import; paid only when a check runs

    context = gx.get_context(mode="ephemeral")  # in memory: no great_expectations/ folder, no analytics
    context.data_sources.add_pandas(name="memc")
    return context


# ------------------------------------------------------------------------------ frames


def _joined(column: pa.ChunkedArray, separator: str) -> pa.Array:
    """Each list of ``column`` as its items joined by ``separator``, None for a null list. In Arrow,
    unless an item is null (Arrow would make the whole row null): then as str() each, "None" too."""
    if pc.list_flatten(column).null_count == 0:
        return pc.binary_join(column, separator)
    return pa.array([None if v is None else separator.join(str(p) for p in v) for v in column.to_pylist()], pa.string())


def _visibility_text(column: pa.ChunkedArray) -> list[str | None]:
    """Each visibility list as "p1,p2,..." (None for a null list)."""
    return _joined(column, ",").to_pylist()


# What separates a list's items in a frame's cell: no principal, id or name holds it.
LIST_SEPARATOR = "\x1f"


def _frame(table: pa.Table):
    """``table`` as a pandas frame GX can fingerprint: each list column (visibility, derived_from)
    as its items joined by LIST_SEPARATOR, a null list still null (what the suites ask of a list
    column: present, not null). GX hashes each batch's frame (``hash_pandas_dataframe``) and, when
    a column holds values pandas cannot hash (the numpy arrays ``to_pandas`` makes of lists),
    pickles the whole frame instead, content and all: 1.08 of the ledger suite's 2.10 s at 100k
    entries. Joined in Arrow: tuples made in Python were ~0.25 s of the ledger's frame at 100k."""
    for i, f in enumerate(table.schema):
        if pa.types.is_list(f.type) or pa.types.is_large_list(f.type):
            table = table.set_column(i, f.name, _joined(table.column(i), LIST_SEPARATOR))
    return table.to_pandas()


def ledger_frame(table: pa.Table):
    """The ledger as GX validates it: in seq order, with the derived columns."""
    if "seq" in table.column_names:
        table = table.sort_by("seq")
    df = _frame(table)
    if "seq" in df.columns:
        previous = df["seq"].shift(1, fill_value=0)
        df[SEQ_STEP] = (df["seq"] - previous).astype("Int64")
    else:
        df[SEQ_STEP] = pd.Series([None] * len(df), dtype="Int64")
    df[VISIBILITY_TEXT] = _visibility_text(table.column("visibility")) if "visibility" in table.column_names else None
    return df


def claims_frame(claims: pa.Table, sources: dict[str, tuple[str, str | None]]):
    """The claims with the derived columns; ``sources`` maps ledger entry id -> (content, attributes)."""
    df = _frame(claims)
    rows = claims.select([c for c in ("source_entry_id", "quote") if c in claims.column_names]).to_pylist()
    df[VISIBILITY_TEXT] = _visibility_text(claims.column("visibility")) if "visibility" in claims.column_names else None
    in_ledger = [r.get("source_entry_id") in sources for r in rows]
    df[SOURCE_IN_LEDGER] = in_ledger
    df[QUOTE_IN_SOURCE] = [
        found and said_in(r.get("quote"), *sources[r["source_entry_id"]]) for found, r in zip(in_ledger, rows)
    ]
    return df


# ------------------------------------------------------------------------------ results


@dataclass
class Outcome:
    expectation: str  # e.g. "expect_column_values_to_be_between(confidence)"
    description: str
    success: bool
    unexpected_count: int = 0
    failing_ids: list[str] = field(default_factory=list)


@dataclass
class SuiteReport:
    suite: str
    rows: int
    outcomes: list[Outcome]

    @property
    def success(self) -> bool:
        return all(o.success for o in self.outcomes)

    @property
    def failed(self) -> list[Outcome]:
        return [o for o in self.outcomes if not o.success]

    def failing_ids(self) -> list[str]:
        seen: dict[str, None] = {}
        for o in self.failed:
            seen.update(dict.fromkeys(o.failing_ids))
        return list(seen)

    def metadata(self) -> dict[str, Any]:
        """What a Dagster check shows: counts, each failed expectation with its rows' ids."""
        return {
            "suite": self.suite,
            "rows": self.rows,
            "evaluated_expectations": len(self.outcomes),
            "failed_expectations": len(self.failed),
            "failed": {o.description: {"expectation": o.expectation, "unexpected": o.unexpected_count, "ids": o.failing_ids} for o in self.failed},
            f"failing_{ID_COLUMN[self.suite]}s": ", ".join(self.failing_ids()[:MAX_IDS]) or "none",
        }


def _run(suite_name: str, df, parameters: dict[str, Any] | None = None) -> SuiteReport:
    id_col = ID_COLUMN[suite_name]
    result_format: dict[str, Any] = {"result_format": "COMPLETE"}
    if id_col in df.columns:
        result_format["unexpected_index_column_names"] = [id_col]
    res = _validation_definition(suite_name).run(
        batch_parameters={"dataframe": df}, expectation_parameters=parameters or {}, result_format=result_format
    )
    outcomes = []
    for r in res.results:
        cfg = r.expectation_config
        column = cfg.kwargs.get("column")
        ids = []
        for item in (r.result or {}).get("unexpected_index_list") or []:
            value = item.get(id_col) if isinstance(item, dict) else item
            ids.append(str(value))
        count = (r.result or {}).get("unexpected_count") or 0
        if r.exception_info and r.exception_info.get("raised_exception"):
            # A missing column makes column expectations raise: a failure, not a pass.
            ids, count = [], max(count, 1)
        outcomes.append(
            Outcome(
                expectation=f"{cfg.type}({column})" if column else cfg.type,
                description=cfg.description or cfg.type,
                success=bool(r.success),
                unexpected_count=int(count),
                failing_ids=ids[:MAX_IDS],
            )
        )
    return SuiteReport(suite=suite_name, rows=len(df), outcomes=outcomes)


def validate_ledger(table: pa.Table) -> SuiteReport:
    return _run(LEDGER_SUITE, ledger_frame(table))


def validate_claims(claims: pa.Table, ledger_entries: pa.Table) -> SuiteReport:
    """``ledger_entries`` needs ``entry_id``, ``content`` and ``attributes`` (the entries the claims
    may cite, and what each says: a quote may come from the caption of a picture it shares)."""
    texts = zip(ledger_entries.column("content").to_pylist(), ledger_entries.column("attributes").to_pylist())
    sources = dict(zip(ledger_entries.column("entry_id").to_pylist(), texts))
    return _run(CLAIMS_SUITE, claims_frame(claims, sources))
