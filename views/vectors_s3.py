"""The evidence index on object storage: :class:`S3LanceVectorStore`, LanceDB tables under
``MEMC_STORAGE + "/vectors"`` (docs/scale.md), so that every node that answers questions reads the
one index a build embedded, instead of embedding the ledger again.

LanceDB commits each write on S3 by a conditional put of the next version's manifest (no DynamoDB;
FINDINGS: 41 of 41 rows under 4x10 concurrent appends on Ceph RGW), so ``sync``'s deletes, adds and
index rebuilds work there as on a local directory. What does not is the local store's rebuild: it
builds the new table in a staging directory and swaps it in with two renames, and S3 has no rename.
Here a rebuild writes a new *physical* table, ``<table>__<token>``, with every index built, then
points the logical name at it with one small object, ``vectors/_current/<table>.json`` (a PUT is
atomic: readers see the old table or the new one, never a half-built one), and only then deletes
every object, and every object version, of the old physical table. Deleting whole tables is how
erased text leaves object storage: ``memc forget`` drops the index (``drop``: every physical
table of each part, e.g. the turns' and the claims', their pointers and the watermark, with every
version) and the next build writes a fresh one;
tests/platform/test_storage_s3.py lists every object version afterwards to prove it.

One writer at a time, as for the local store (the Dagster asset, held by its pool), and one
building home per prefix: the first write puts ``vectors/_builder.json`` naming the home (its
``home_id``, host and path) with a put-if-absent, and a write from any other home is refused with
:class:`IndexBuiltElsewhere`, naming the builder (two homes' rebuilds would each point the index at
their own table and delete the other's). Every home may read; ``drop`` (an erasure) is allowed
from any, since the index is rebuildable and its builder writes it again. A reader that
opened the old physical table just before a swap fails on its next read of a deleted file and
answers on the new table when asked again, as a local reader of a retired directory does.
"""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid
from typing import Any, Callable

from memc.objectstore import aws_region, claim_builder, delete_every_version, get_json, object_key, parse_s3_uri, put_json, shared_client
from memc.watermark import FILE as WATERMARK_FILE
from memc.watermark import watermark_record
from memc.visibility import check_literal
from views.lance_filters import TABLE_RE
from views.vectors import DEFAULT_TABLE, LanceVectorStore

# Between the logical name and the token: never inside a logical name memc uses ("evidence").
PHYSICAL_SEP = "__"

# One LanceDB connection per URI in a process (a connection keeps the indexes it has read; the
# physical name changes with every rebuild, so nothing of a retired table is served from it).
_CONNECTIONS: dict[tuple[str, tuple[tuple[str, str], ...]], Any] = {}
_CONNECTIONS_LOCK = threading.Lock()

# The pointer each (URI, table) was last read as, and when: a compile opens the table 2-4 times
# and a GET of the pointer costs ~3 ms on loopback RGW (2026-12-03), so it is read again only
# after this long. A rebuild by another process is seen within it; a table a rebuild deleted
# sooner fails to open and sends the reader to the pointer at once. (An erasure's compiles are
# safe either way: query/acl.py drops erased entries from every context from the tombstone on.)
POINTER_TTL_S = 2.0
_POINTERS: dict[tuple[str, str], tuple[str, float]] = {}


def lance_storage_options() -> dict[str, str]:
    """LanceDB's object-store options from the standard AWS variables that boto3 reads too (so the
    ledger and the index reach the same store with one set of settings)."""
    opts = {"aws_region": aws_region()}
    endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
    if endpoint:
        opts["aws_endpoint"] = endpoint
        if endpoint.startswith("http://"):
            opts["allow_http"] = "true"  # an RGW or an emulator on loopback
    for var, key in (("AWS_ACCESS_KEY_ID", "aws_access_key_id"), ("AWS_SECRET_ACCESS_KEY", "aws_secret_access_key"),
                     ("AWS_SESSION_TOKEN", "aws_session_token")):
        if os.environ.get(var):
            opts[key] = os.environ[var]
    return opts


class IndexBuiltElsewhere(RuntimeError):
    """Another home builds the evidence index under this prefix: this one may read it, not write it."""


class S3LanceVectorStore(LanceVectorStore):
    """:class:`~views.vectors.VectorStore` over LanceDB tables on an ``s3://bucket/prefix``.
    ``builder``: the id of the home that writes through this store (``MemcHome.home_id``: the same
    from every process and host working on that home); ``where``: its host and path, for the error
    another home gets. Without them (a script, a benchmark), the URI stands for the builder."""

    def __init__(self, uri: str, *, builder: str | Callable[[], str] | None = None, where: str | None = None,
                 client: Any = None, vector_index_min_rows: int | None = None) -> None:
        super().__init__(uri.rstrip("/"), vector_index_min_rows=vector_index_min_rows)
        self.bucket, self.prefix = parse_s3_uri(self.uri)
        self.client = client or shared_client()
        self.storage_options = lance_storage_options()
        self._builder = builder or self.uri  # a callable is asked on the first write only: readers make no id
        self.where = where or f"{socket.gethostname()} (no home)"
        self._claimed = False

    # -- the one building home --------------------------------------------------------------------

    def _builder_key(self) -> str:
        return object_key(self.prefix, "_builder.json")

    def _claim(self) -> None:
        """Before any write: this store's builder is the prefix's, or becomes it if there is none."""
        if self._claimed:
            return
        if callable(self._builder):
            self._builder = self._builder()
        key = self._builder_key()
        holder = claim_builder(self.client, self.bucket, key, self._builder, self.where)
        if holder is not None:
            raise IndexBuiltElsewhere(
                f"the evidence index at {self.uri} is built by home {holder['builder']} at {holder.get('where')}, "
                f"not by this one ({self.where}): this home may ask and serve from it, not build it (one "
                f"building home per MEMC_STORAGE prefix; to move the building here, stop that home's builds "
                f"and delete s3://{self.bucket}/{key})")
        self._claimed = True

    def sync(self, rows: Any, embedder: Any, *, table: str = DEFAULT_TABLE) -> dict[str, Any]:
        self._claim()
        return super().sync(rows, embedder, table=table)

    def rebuild(self, rows: Any, embedder: Any, *, table: str = DEFAULT_TABLE) -> dict[str, Any]:
        self._claim()
        return super().rebuild(rows, embedder, table=table)

    def compact(self, table: str = DEFAULT_TABLE, **kw: Any) -> None:
        self._claim()
        super().compact(table, **kw)

    # -- plumbing ---------------------------------------------------------------------------------

    def _connection(self, table: str | None = None) -> Any:
        import lancedb  # lazy, as in the local store

        key = (self.uri, tuple(sorted(self.storage_options.items())))  # another endpoint or key: another connection
        with _CONNECTIONS_LOCK:
            conn = _CONNECTIONS.get(key)
            if conn is None:
                conn = _CONNECTIONS[key] = lancedb.connect(self.uri, storage_options=self.storage_options)
            return conn

    def _pointer_key(self, table: str) -> str:
        return object_key(self.prefix, "_current", f"{table}.json")

    def _physical(self, table: str, *, fresh: bool = False) -> str | None:
        """The physical table the logical name points at, or None before the first build; the
        pointer read within the last POINTER_TTL_S seconds unless ``fresh``."""
        cached = _POINTERS.get((self.uri, table))
        if cached is not None and not fresh and time.monotonic() - cached[1] < POINTER_TTL_S:
            return cached[0]
        pointer = self._get_json(self._pointer_key(table))
        if pointer is None:
            _POINTERS.pop((self.uri, table), None)
            return None
        name = pointer["table"]
        check_literal(name, TABLE_RE, "physical table name")
        _POINTERS[(self.uri, table)] = (name, time.monotonic())
        return name

    def _open(self, table: str) -> Any | None:
        check_literal(table, TABLE_RE, "table name")
        self._db = self._connection()
        for fresh in (False, True):
            physical = self._physical(table, fresh=fresh)
            if physical is None:
                return None  # reading never creates the store
            try:
                return self._db.open_table(physical)
            except ValueError:
                continue  # deleted by a rebuild since the pointer was read: read it again
        return None  # the pointer names a table deleted by hand: as if never built

    def built(self, table: str = DEFAULT_TABLE) -> bool:
        return self._physical(table) is not None

    def table_names(self) -> list[str]:
        names = {t.partition(PHYSICAL_SEP)[0] for t in self.db.list_tables().tables}
        return sorted(n for n in names if self._physical(n) is not None)

    def _swap_in(self, table: str, batch: Any, schema: Any) -> Any:
        return self._point_at_new(table, batch, schema, indexed=True)

    def _create(self, table: str, batch: Any, schema: Any) -> Any:
        # The first build's first commit is pointed at at once, so that a build that stops is
        # found and completed by the next sync (LanceVectorStore._fill); it has no watermark yet.
        return self._point_at_new(table, batch, schema, indexed=False)

    def _point_at_new(self, table: str, batch: Any, schema: Any, *, indexed: bool) -> Any:
        physical = f"{table}{PHYSICAL_SEP}{uuid.uuid4().hex[:12]}"
        check_literal(physical, TABLE_RE, "physical table name")
        db = self._connection()
        tbl = db.create_table(physical, data=batch, schema=schema)
        if indexed:
            self._ensure_fts(tbl, force=True)
            self._ensure_scalar(tbl, force=True)
            self._ensure_vector_index(tbl, force=True)
        # The commit point: from here readers open the new table.
        self._put_json(self._pointer_key(table), {"table": physical})
        _POINTERS[(self.uri, table)] = (physical, time.monotonic())
        # The old table, and any a crashed rebuild left unpointed at, with every object version.
        for name in self._physicals(table):
            if name != physical:
                self._delete_every_version(self._table_prefix(name))
        self._db = db
        return tbl

    def _drop_part(self, table: str) -> None:
        check_literal(table, TABLE_RE, "table name")
        for name in self._physicals(table):
            self._delete_every_version(self._table_prefix(name))
        self._delete_every_version(self._pointer_key(table))
        _POINTERS.pop((self.uri, table), None)

    def _watermark_key(self) -> str:
        return object_key(self.prefix, WATERMARK_FILE)

    def read_watermark(self) -> dict[str, Any] | None:
        return self._get_json(self._watermark_key())

    def write_watermark(self, view: str, watermark: int, **info: Any) -> dict[str, Any]:
        self._claim()
        record = watermark_record(view, watermark, **info)
        self._put_json(self._watermark_key(), record)
        return record

    def clear_watermark(self) -> None:
        self._delete_every_version(self._watermark_key())

    def bytes_stored(self) -> int:
        total = 0
        for page in self.client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=self._dir_prefix()):
            total += sum(o["Size"] for o in page.get("Contents", []))
        return total

    # -- objects ------------------------------------------------------------------------------------

    def _physicals(self, table: str) -> list[str]:
        """Every physical table of the logical ``table`` (``<table>__<token>``), pointed at or not."""
        return [n for n in self._connection().list_tables().tables
                if PHYSICAL_SEP in n and n.partition(PHYSICAL_SEP)[0] == table]

    def _get_json(self, key: str) -> dict[str, Any] | None:
        return get_json(self.client, self.bucket, key)

    def _put_json(self, key: str, obj: dict[str, Any], **kw: Any) -> None:
        put_json(self.client, self.bucket, key, obj, **kw)

    def _dir_prefix(self) -> str:
        return f"{self.prefix}/" if self.prefix else ""

    def _table_prefix(self, physical: str) -> str:
        return f"{self._dir_prefix()}{physical}.lance/"

    def _delete_every_version(self, prefix: str) -> None:
        delete_every_version(self.client, self.bucket, prefix)
