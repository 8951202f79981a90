"""How the ledger's files are named and checked: one Parquet file per committed batch, named by its
first seq, beside an empty marker whose name carries the file's SHA-256. The commit protocol,
the purge and verified reads (ledger/store.py) all go through these names."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

BATCH_RE = re.compile(r"^(\d{20})\.parquet$")
# The journal of a compaction in progress (ledger/store.py, "Compaction"): written before its
# commit point, removed after its last step; recover() finishes or undoes what it names.
COMPACTION_JOURNAL = ".compaction.json"
SUM_RE = re.compile(r"^(\d{20})\.([0-9a-f]{64})\.sum$")
TMP_RE = re.compile(r"^(\d+)-[0-9a-f]{32}\.parquet$")


def batch_name(first_seq: int) -> str:
    """``00000000000000000001.parquet``: zero-padded, so names sort as seqs do."""
    return f"{first_seq:020d}.parquet"


def marker_name(first_seq: int, sha: str) -> str:
    """``00000000000000000001.<sha256>.sum``: the batch file's checksum, as an empty file."""
    return f"{first_seq:020d}.{sha}.sum"


def marker_glob(first_seq: int) -> str:
    return f"{first_seq:020d}.*.sum"


def sha256_file(path: Path) -> str:
    with open(path, "rb") as f:
        return sha256_fileobj(f)


def sha256_fileobj(f) -> str:
    h = hashlib.sha256()
    for chunk in iter(lambda: f.read(1 << 20), b""):
        h.update(chunk)
    return h.hexdigest()
