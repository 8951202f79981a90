"""The ledger: append-only, seq-numbered, checksummed Parquet evidence. The only thing memc cannot rebuild.

Only this package writes ledger files; everything else reads through :class:`Ledger`.
"""

from ledger.schema import ENTRY_KINDS, LEDGER_SCHEMA, NewEntry, PUBLIC
from ledger.store import AppendResult, CompactReport, Ledger, LedgerCorruption, VerifyReport, shared_reader
from ledger.s3 import ConditionalPutUnsupported, S3Ledger, open_ledger

__all__ = [
    "ENTRY_KINDS",
    "LEDGER_SCHEMA",
    "PUBLIC",
    "AppendResult",
    "ConditionalPutUnsupported",
    "CompactReport",
    "Ledger",
    "LedgerCorruption",
    "NewEntry",
    "S3Ledger",
    "VerifyReport",
    "open_ledger",
    "shared_reader",
]
