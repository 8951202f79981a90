"""The ledger: append-only, seq-numbered, checksummed Parquet evidence. The only thing memc cannot rebuild.

Only this package writes ledger files; everything else opens the ledger with :func:`open_ledger`
(local files, or object storage when MEMC_STORAGE says so) and reads through it.
"""

from ledger.schema import ENTRY_KINDS, LEDGER_SCHEMA, NewEntry, PUBLIC
from ledger.store import AppendResult, CompactReport, Ledger, LedgerCorruption, VerifyReport
from ledger.s3 import ConditionalPutUnsupported, LedgerBusy, S3Ledger
from ledger.open import open_ledger, shared_reader, storage_uri

__all__ = [
    "ENTRY_KINDS",
    "LEDGER_SCHEMA",
    "PUBLIC",
    "AppendResult",
    "ConditionalPutUnsupported",
    "CompactReport",
    "Ledger",
    "LedgerBusy",
    "LedgerCorruption",
    "NewEntry",
    "S3Ledger",
    "VerifyReport",
    "open_ledger",
    "shared_reader",
    "storage_uri",
]
