"""The compiled views on object storage: with ``MEMC_STORAGE=s3://bucket/prefix``, every view a
build writes as files (the claims, the warehouse's marts, the Kùzu graph, the memory units, the
skills, the query profile and dossiers) is published under ``MEMC_STORAGE/views/<view>/`` once its
step has written it, and every node that reads a view pulls its copy first. The evidence index
is on object storage already, as LanceDB tables (views/vectors_s3.py); the ledger too
(ledger/s3.py).

So a node that only serves (`memc serve`, `memc ask` on another machine, with read-only
credentials) answers with "what holds now", the graph's relations and the dossiers a build made
elsewhere, and a step a distributed executor runs on another machine (Celery, Kubernetes) finds
the views its inputs wrote: each asset pulls what it reads and publishes what it writes.

    s3://bucket/prefix/views/_builder.json                 the one home that publishes (put-if-absent)
                            /claims/extractor=<key>/day=<day>/claims.parquet ...
                            /warehouse/marts/<mart>.parquet, /warehouse/_watermark.json
                            /graph/kuzu/graph.kuzu ..., /units/..., /skills/..., /profile/...

Files are published one object each, as they change (memc/objectstore.py ``ObjectFolder``: size
and mtime against a local record, ETags against the store), so a build that rewrote two marts
uploads two objects. What stays on the node: the warehouse's DuckDB file (dbt's working state; a
node without it runs the incremental models as a full refresh), dbt's run folders and the
ledger's local mirror. An erasure drops every published view with every object version
(forgetting/cascade.py), and each node's next pull removes its copies.
"""

from __future__ import annotations

import threading
import time
from typing import Sequence

from memc.home import MemcHome
from memc.objectstore import ObjectFolder, claim_builder, get_json, object_key, parse_s3_uri, shared_client, storage_uri, where_is

# The views published, by MemcHome.view_dirs() name ("vectors" is on object storage itself).
VIEWS = ("claims", "warehouse", "graph", "units", "skills", "profile")
# What of a view stays on the node that wrote it (relative paths, globs).
LOCAL_ONLY = {
    "warehouse": ("memc.duckdb*", "dbt/*", "ledger_mirror/*"),
    "graph": ("*.wal", "*.shadow", "*.lock"),
}

# A serving node pulls at most this often per view (a LIST per view, ~3 ms on loopback RGW): an
# ask every turn would otherwise list six prefixes. A build elsewhere is seen within it.
PULL_TTL_S = 2.0
_PULLED: dict[tuple[str, str, str], float] = {}
_PULLED_LOCK = threading.Lock()


_CLAIMED: set[tuple[str, str]] = set()  # (views URI, home id) this process has claimed


class ViewsBuiltElsewhere(RuntimeError):
    """Another home publishes the views under this MEMC_STORAGE prefix."""


def views_uri() -> str | None:
    """``MEMC_STORAGE/views``, or None on a local home."""
    storage = storage_uri()
    return f"{storage}/views" if storage else None


def folder(view: str) -> ObjectFolder:
    uri = views_uri()
    if uri is None:
        raise ValueError("MEMC_STORAGE is not set: the views are local files")
    if view not in VIEWS:
        raise ValueError(f"{view!r} is not a published view (one of: {', '.join(VIEWS)})")
    return ObjectFolder(f"{uri}/{view}", client=shared_client(), skip=LOCAL_ONLY.get(view, ()))


def publish(home: MemcHome, view: str, subs: Sequence[str] = ("",)) -> dict[str, int] | None:
    """Publish what a step wrote of ``view`` (the folders or files ``subs`` under it; "" is the
    whole view). None on a local home. The first publish claims the prefix for this home; another
    home's is refused with ViewsBuiltElsewhere (two builders would delete each other's files)."""
    uri = views_uri()
    if uri is None:
        return None
    bucket, prefix = parse_s3_uri(uri)
    key = object_key(prefix, "_builder.json")
    mine = (uri, home.home_id)
    holder = None if mine in _CLAIMED else claim_builder(shared_client(), bucket, key, home.home_id, where_is(home.root))
    if holder is not None:
        raise ViewsBuiltElsewhere(
            f"the views at {uri} are built by home {holder['builder']} at {holder.get('where')}, not by this one "
            f"({where_is(home.root)}): this home may read them, not publish them (one building home per "
            f"MEMC_STORAGE prefix; to move the building here, stop that home's builds and delete s3://{bucket}/{key})")
    _CLAIMED.add(mine)  # asked once per process, as the index's store does
    return folder(view).push(home.view_dirs()[view], subs)


def pull(home: MemcHome, views: Sequence[str] = VIEWS, *, max_age: float = 0.0) -> dict[str, dict[str, int]] | None:
    """Bring this node's copies of ``views`` up to date; with ``max_age``, skip a view pulled by
    this process less than that many seconds ago. None on a local home."""
    uri = views_uri()
    if uri is None:
        return None
    now = time.monotonic()
    with _PULLED_LOCK:
        due = [v for v in views if not max_age or now - _PULLED.get((uri, str(home.root), v), float("-inf")) >= max_age]
    listing: dict[str, dict[str, dict]] | None = None
    if len(due) > 1:  # one LIST of views/ for all of them: six LISTs cost ~30 ms on loopback RGW
        listing = {v: {} for v in due}
        for rel, obj in ObjectFolder(uri, client=shared_client()).remote().items():
            view, _, sub = rel.partition("/")
            if view in listing and sub:
                listing[view][sub] = obj
    out = {}
    for view in due:
        out[view] = folder(view).pull(home.view_dirs()[view], None if listing is None else listing[view])
        with _PULLED_LOCK:
            _PULLED[(uri, str(home.root), view)] = now
    return out


def built_elsewhere(home: MemcHome) -> dict[str, str] | None:
    """The claim of the home that publishes the views under this MEMC_STORAGE prefix, when that
    is not ``home``: a node that should pull the views, not build them (the server's keeper asks).
    None on a local home, before any home published, or when ``home`` is the builder."""
    uri = views_uri()
    if uri is None:
        return None
    bucket, prefix = parse_s3_uri(uri)
    holder = get_json(shared_client(), bucket, object_key(prefix, "_builder.json"))
    return None if holder is None or holder["builder"] == home.home_id_if_made else holder


def drop() -> None:
    """Delete every published view with every object version (an erasure). No-op on a local home."""
    if views_uri() is None:
        return
    for view in VIEWS:
        folder(view).drop()
    with _PULLED_LOCK:
        _PULLED.clear()
    _CLAIMED.clear()  # dropping keeps the claim object; asking again costs one request
