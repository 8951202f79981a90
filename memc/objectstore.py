"""Object storage (S3 and compatible stores) for the ledger and the views: the one setting that
selects it (``MEMC_STORAGE``), boto3's client from the standard AWS variables, the store-wide
helpers (deleting every version, small JSON objects, the one building home), and
:class:`ObjectFolder`, a local folder kept on object storage file by file.

A view is built as local files (DuckDB, Kùzu and dbt write files, not objects) and published with
``ObjectFolder.push``; every other node, and every step a distributed executor runs elsewhere,
brings its copy up to date with ``ObjectFolder.pull`` (docs/scale.md, "Views on object storage").
"""

from __future__ import annotations

import fnmatch
import json
import os
import socket
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Sequence
from urllib.parse import urlparse

from memc.locks import exclusive


def storage_uri() -> str | None:
    """MEMC_STORAGE as given (``s3://bucket/prefix``), or None for local files."""
    storage = os.environ.get("MEMC_STORAGE", "").strip()
    if not storage:
        return None
    if not storage.startswith("s3://"):
        raise ValueError(f"MEMC_STORAGE={storage!r}: expected s3://<bucket>/<prefix> (unset it for local files)")
    return storage.rstrip("/")


def parse_s3_uri(uri: str) -> tuple[str, str]:
    """``s3://bucket/some/prefix`` -> (``bucket``, ``some/prefix``); a clear error otherwise."""
    u = urlparse(uri)
    if u.scheme != "s3" or not u.netloc:
        raise ValueError(f"MEMC_STORAGE={uri!r}: expected s3://<bucket>/<prefix>")
    return u.netloc, u.path.strip("/")


def s3_client():
    """boto3's S3 client from the standard AWS variables (AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID,
    AWS_SECRET_ACCESS_KEY, AWS_DEFAULT_REGION...). Request checksums only when an operation
    requires them unless AWS_REQUEST_CHECKSUM_CALCULATION says otherwise: Ceph RGW 16.2 answers
    411 to the chunked uploads that carry botocore's default CRC trailers."""
    import boto3
    from botocore.config import Config

    cfg = Config(
        request_checksum_calculation=os.environ.get("AWS_REQUEST_CHECKSUM_CALCULATION", "when_required"),
        response_checksum_validation=os.environ.get("AWS_RESPONSE_CHECKSUM_VALIDATION", "when_required"),
        retries={"mode": "standard", "max_attempts": 5},
    )
    return boto3.client("s3", region_name=aws_region(), config=cfg)


_CLIENTS: dict[tuple[str | None, ...], Any] = {}
_CLIENTS_LOCK = threading.Lock()


def shared_client() -> Any:
    """One boto3 client per store and credentials in a process: a compile makes a store per ask,
    and a client costs ~6 ms to make (230 ms the first time, with boto3's imports); clients are
    thread-safe."""
    key = tuple(os.environ.get(v) for v in ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_REGION",
                                            "AWS_DEFAULT_REGION", "AWS_PROFILE"))
    with _CLIENTS_LOCK:
        client = _CLIENTS.get(key)
        if client is None:
            client = _CLIENTS[key] = s3_client()
        return client


def object_key(prefix: str, *parts: str) -> str:
    """The object key of ``parts`` under a store's ``prefix`` (an empty prefix: the bucket's root)."""
    return "/".join(p for p in (prefix, *parts) if p)


def aws_region() -> str:
    """The region the standard AWS variables name (us-east-1 when none does: RGW ignores it)."""
    return os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"


def http_status(exc: Exception) -> int | None:
    """The HTTP status of a botocore error (None for others)."""
    resp = getattr(exc, "response", None) or {}
    return resp.get("ResponseMetadata", {}).get("HTTPStatusCode")


def delete_every_version(client, bucket: str, prefix: str, *, whole_key: bool = False) -> None:
    """Delete every object under ``prefix`` (with ``whole_key``, the one object named ``prefix``) and,
    in a versioned bucket, every stored version of it: a plain delete there only adds a delete
    marker and keeps the bytes. One request per object version: a batch is one object, a LanceDB
    table one per data file, index file and manifest."""
    def mine(key: str) -> bool:
        return key == prefix if whole_key else key.startswith(prefix)

    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for obj in page.get("Contents", []):
            if mine(obj["Key"]):
                client.delete_object(Bucket=bucket, Key=obj["Key"])
    for page in client.get_paginator("list_object_versions").paginate(Bucket=bucket, Prefix=prefix):
        for v in page.get("Versions", []) + page.get("DeleteMarkers", []):
            if mine(v["Key"]):
                client.delete_object(Bucket=bucket, Key=v["Key"], VersionId=v["VersionId"])


def get_json(client, bucket: str, key: str) -> dict[str, Any] | None:
    """One small JSON object (a pointer, a watermark, a builder claim), None if absent."""
    try:
        return json.loads(client.get_object(Bucket=bucket, Key=key)["Body"].read())
    except client.exceptions.NoSuchKey:
        return None


def put_json(client, bucket: str, key: str, obj: dict[str, Any], **kw: Any) -> None:
    client.put_object(Bucket=bucket, Key=key, Body=json.dumps(obj).encode(), ContentType="application/json", **kw)


def claim_builder(client, bucket: str, key: str, builder: str, where: str) -> dict[str, Any] | None:
    """Make ``builder`` the one home that writes under a prefix, by a put-if-absent of ``key``
    (``{"builder", "where", "claimed_at"}``). Returns None when the prefix is this builder's (now
    or already), else the other holder's claim, for the caller's error to name."""
    claim = {"builder": builder, "where": where, "claimed_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    try:
        put_json(client, bucket, key, claim, IfNoneMatch="*")
        return None
    except Exception as exc:
        if http_status(exc) not in (409, 412):
            raise
    holder = get_json(client, bucket, key)
    if holder is None:  # 409: a claim being put at this moment; the write is not known to be ours
        raise RuntimeError(f"s3://{bucket}/{key}: another home is claiming this prefix at this moment; try again")
    return None if holder["builder"] == builder else holder


def where_is(root: Path) -> str:
    """Host and path of a home, as a builder claim names it for another home's error."""
    return f"{socket.gethostname()}:{Path(root).resolve()}"


# -- a local folder on object storage ----------------------------------------------------------

RECORD = ".objects.json"  # in the local folder: what each file was when last pushed or pulled
LOCK = ".objects.lock"
_PART = ".part"  # a download in progress; never a name a reader globs for (*.parquet, *.json)


class ObjectFolder:
    """A local folder and its copy under ``s3://bucket/prefix``, one object per file, key = the
    file's path relative to the folder.

    ``push`` uploads the files changed since they were last pushed or pulled (size and mtime
    against the local record) and deletes the objects of files gone, within the sub-folders
    named, so that steps of one run on different machines, each writing its own partitions,
    never delete each other's. ``pull`` downloads every object whose ETag differs from the one
    recorded (each file whole: a temporary beside it, then ``os.replace``) and removes local
    files whose objects are gone, so an erasure that dropped the objects reaches every node at
    its next pull. A local file changed since the record and not yet pushed is left alone unless
    the object changed too (then the object wins: another node published after it).

    Files match objects one by one; a set of files (the marts of one build) is not swapped as
    one: a reader between two files' downloads sees a new file beside an old one, as a reader
    of a local dbt build does between two models. Pushes and pulls on one folder are serialized
    across processes by a lock file in it. ``skip``: glob patterns of relative paths that stay
    local (a view's engine files, scratch)."""

    def __init__(self, uri: str, *, client: Any = None, skip: Sequence[str] = ()) -> None:
        self.uri = uri.rstrip("/")
        self.bucket, self.prefix = parse_s3_uri(self.uri)
        self.client = client or shared_client()
        self.skip = (RECORD, LOCK, f"*{_PART}", "*.tmp", *skip)

    def _key(self, rel: str) -> str:
        return object_key(self.prefix, rel)

    def _skipped(self, rel: str) -> bool:
        return any(fnmatch.fnmatch(rel, pat) or fnmatch.fnmatch(Path(rel).name, pat) for pat in self.skip)

    def remote(self, sub: str = "") -> dict[str, dict[str, Any]]:
        """Every object of ``sub`` (a relative folder or file; "" for all): relative path -> ETag
        and size."""
        base = f"{self.prefix}/" if self.prefix else ""
        out = {}
        for page in self.client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=base + sub):
            for obj in page.get("Contents", []):
                rel = obj["Key"][len(base):]
                if (not sub or rel == sub or rel.startswith(f"{sub}/")) and not self._skipped(rel):
                    out[rel] = {"etag": obj["ETag"], "size": obj["Size"]}
        return out

    def _local(self, local: Path, sub: str) -> dict[str, os.stat_result]:
        top = local / sub if sub else local
        out = {}
        if top.is_file() and not self._skipped(sub):
            out[sub] = top.stat()
        elif top.is_dir():
            for path in top.rglob("*"):
                rel = path.relative_to(local).as_posix()
                if path.is_file() and not self._skipped(rel):
                    out[rel] = path.stat()
        return out

    def push(self, local: Path, subs: Sequence[str] = ("",)) -> dict[str, int]:
        """Publish the files under each of ``subs`` (relative folders; "" is the whole folder)."""
        local = Path(local)
        local.mkdir(parents=True, exist_ok=True)
        uploaded = deleted = 0
        with exclusive(local / LOCK, f"push to {self.uri}", wait=True):
            record = self._record(local)
            for sub in subs:
                remote = self.remote(sub)
                files = self._local(local, sub)
                for rel, st in sorted(files.items()):
                    seen = record.get(rel)
                    if seen and seen["size"] == st.st_size and seen["mtime_ns"] == st.st_mtime_ns and remote.get(rel, {}).get("etag") == seen["etag"]:
                        continue
                    with open(local / rel, "rb") as f:
                        etag = self.client.put_object(Bucket=self.bucket, Key=self._key(rel), Body=f)["ETag"]
                    record[rel] = {"etag": etag, "size": st.st_size, "mtime_ns": st.st_mtime_ns}
                    uploaded += 1
                for rel in sorted(set(remote) - set(files)):
                    delete_every_version(self.client, self.bucket, self._key(rel), whole_key=True)
                    record.pop(rel, None)
                    deleted += 1
            self._save(local, record)
        return {"uploaded": uploaded, "deleted": deleted}

    def pull(self, local: Path, remote: dict[str, dict[str, Any]] | None = None) -> dict[str, int]:
        """Bring the local folder up to date with the objects (``remote``: their listing, when
        the caller listed a parent prefix once for several folders)."""
        local = Path(local)
        remote = self.remote() if remote is None else {rel: o for rel, o in remote.items() if not self._skipped(rel)}
        if not remote and not (local / RECORD).exists():
            return {"downloaded": 0, "removed": 0}  # nothing published, nothing pulled before: no folder made
        fetch, gone = self._behind(local, remote, self._record(local))
        if not fetch and not gone:
            return {"downloaded": 0, "removed": 0}  # the usual case of a serving node: no lock taken, nothing written
        local.mkdir(parents=True, exist_ok=True)
        with exclusive(local / LOCK, f"pull from {self.uri}", wait=True):
            record = self._record(local)
            fetch, gone = self._behind(local, remote, record)  # again: another process may have pulled meanwhile
            for rel in fetch:
                path = local / rel
                path.parent.mkdir(parents=True, exist_ok=True)
                tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}{_PART}")
                try:
                    got = self.client.get_object(Bucket=self.bucket, Key=self._key(rel))
                    with open(tmp, "wb") as f:
                        for chunk in got["Body"].iter_chunks(1 << 20):
                            f.write(chunk)
                    os.replace(tmp, path)
                finally:
                    tmp.unlink(missing_ok=True)
                st = path.stat()
                record[rel] = {"etag": got["ETag"], "size": st.st_size, "mtime_ns": st.st_mtime_ns}
            for rel in gone:
                (local / rel).unlink(missing_ok=True)
                record.pop(rel)
            self._save(local, record)
        return {"downloaded": len(fetch), "removed": len(gone)}

    @staticmethod
    def _behind(local: Path, remote: dict[str, dict[str, Any]], record: dict[str, dict[str, Any]]) -> tuple[list[str], list[str]]:
        """What a pull must do: the objects to download (not the recorded one, or its file
        missing) and the recorded files whose objects are gone, each sorted."""
        fetch = [rel for rel, obj in sorted(remote.items()) if record.get(rel, {}).get("etag") != obj["etag"] or not (local / rel).exists()]
        return fetch, sorted(set(record) - set(remote))

    def drop(self) -> None:
        """Delete every object under the prefix, with every stored version (an erasure)."""
        delete_every_version(self.client, self.bucket, f"{self.prefix}/" if self.prefix else "")

    @staticmethod
    def _record(local: Path) -> dict[str, dict[str, Any]]:
        try:
            return json.loads((local / RECORD).read_text())
        except FileNotFoundError:
            return {}

    @staticmethod
    def _save(local: Path, record: dict[str, dict[str, Any]]) -> None:
        tmp = local / f"{RECORD}.{uuid.uuid4().hex}{_PART}"
        tmp.write_text(json.dumps(record, sort_keys=True))
        os.replace(tmp, local / RECORD)
