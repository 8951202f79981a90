"""Which ledger a caller gets: the local one under the memory home (the default) or the one on
object storage that MEMC_STORAGE names (docs/scale.md). Every reader and writer outside this
package opens the ledger through :func:`open_ledger` or :func:`shared_reader`."""

from __future__ import annotations

import os
import threading

from ledger.s3 import S3Ledger
from ledger.store import Ledger
from memc.objectstore import storage_uri


def open_ledger(root: str | os.PathLike[str], *, write: bool = True) -> Ledger | S3Ledger:
    """The ledger the settings select: ``S3Ledger(MEMC_STORAGE + "/ledger")`` when MEMC_STORAGE is an
    ``s3://`` URI, else the local :class:`~ledger.store.Ledger` at ``root`` (the default). An
    ``s3://`` root is opened on S3 whatever MEMC_STORAGE says. ``write=False`` skips the store's
    conditional-put probe (a reader needs none)."""
    root_s = os.fspath(root)
    if root_s.startswith("s3://"):
        return S3Ledger(root_s, write=write)
    storage = storage_uri()
    if storage:
        return S3Ledger(storage + "/ledger", write=write)
    return Ledger(root)


_READERS: dict[str, Ledger | S3Ledger] = {}
_READERS_LOCK = threading.Lock()


def shared_reader(root: str | os.PathLike[str]) -> Ledger | S3Ledger:
    """One long-lived ledger handle per location in a process, for readers that come back often
    (the context compiler, its ACL checker). A fresh local instance verifies every batch file's
    checksum again on its first read: at 100k entries (111 files) 244 ms against 10 ms for the
    shared one, on every compile while a view lags the ledger; a fresh S3 one GETs every batch.
    Sharing is safe: what a handle caches is keyed by each batch's name and checksum (local: size
    and mtime), and an erasure's rewrite changes them."""
    root_s, storage = os.fspath(root), storage_uri()
    if root_s.startswith("s3://"):
        key = root_s.rstrip("/")
    else:
        key = storage + "/ledger" if storage else os.path.abspath(root_s)
    with _READERS_LOCK:
        reader = _READERS.get(key)
        if reader is None or (isinstance(reader, Ledger) and not reader.root.is_dir()):
            reader = _READERS[key] = open_ledger(root, write=False)
        return reader
