"""API keys: who is calling, and what that principal may do.

A key is shown once, when it is made (``memc keys add``), and never stored: the memory home keeps
only its SHA-256 in ``<home>/config/api_keys.json`` (mode 0600, replaced atomically), with the
principal it stands for, the admin flag and the scopes it may use::

    {"format": "memc-api-keys/1",
     "keys": [{"key_id": "3f9a1c2b4d5e", "principal": "tomasz", "admin": false, "scopes": null,
               "sha256": "<hex of sha256(key)>", "created_at": "...", "revoked_at": null}]}

A key reads ``memc_<key_id>_<secret>``: the id finds the record, the secret (32 random bytes,
URL-safe base64) is what the hash proves, compared with :func:`hmac.compare_digest`. Revoking
sets ``revoked_at``; a running server re-reads the file when it changes, so a revoked key stops
working at the next request.

The principal comes from the key and only from the key: no request field names the asker.

Scope rule: a key may be limited to scopes (``--scope``, repeatable). A limited key must name
one of its scopes on every ingest, ask and state (with one scope, that one is the default) and
is refused (403) outside them; an unlimited key may use any scope and ask across all of them.
An admin key crosses every scope, may forget, and may fold state over every claim whoever may
see it. Scopes are namespaces; visibility (who may see an entry) applies to every non-admin
principal inside any scope.

Write rule (:func:`memc.visibility.may_write`): a non-admin key may ingest only evidence that its
principal is among those who see (its name or ``public`` in the visibility), or that names a
principal the key was granted to write for (``memc keys add --write-for alice``: an ingestion
service filing each user's mail). Every entry records who ingested it (``ingested_by``), and
that name is shown with the entry's provenance, so an ``actor`` a caller names is read as the
caller's claim, not as the actor's own word.
"""

from __future__ import annotations

import fcntl
import hashlib
import hmac
import json
import os
import re
import secrets
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Iterator

from api.errors import forbidden
from ledger.schema import PUBLIC, SCOPE_PATTERN
from memc.atomic import write_json
from memc.home import MemcHome
from memc.visibility import may_write, principal_problem

FORMAT = "memc-api-keys/1"
_TOKEN = re.compile(r"^memc_([0-9a-f]{12})_([A-Za-z0-9_-]{43})$")
# Compared against when the key id is unknown, so a miss costs the same hash and compare as a hit.
_DUMMY = hashlib.sha256(b"memc-no-such-key").hexdigest()


class KeyError_(ValueError):
    """A key operation was refused (unknown key id, malformed principal or scope)."""


@dataclass(frozen=True)
class Caller:
    """The authenticated principal of one request, and what its key allows."""

    principal: str
    admin: bool = False
    scopes: tuple[str, ...] | None = None  # None: every scope
    key_id: str | None = None
    write_for: tuple[str, ...] = ()  # principals whose private memory this key may write into

    def check_write(self, visibility: Any, *, where: str = "") -> None:
        """403 unless this caller may ingest evidence with ``visibility`` (the write rule)."""

        if not may_write(self.principal, visibility, admin=self.admin, write_for=self.write_for):
            allowed = sorted({PUBLIC, self.principal, *self.write_for})
            raise forbidden(
                f"{where}{self.principal!r} may not write evidence visible to {list(visibility or [])}: "
                f"a visibility must include one of {allowed}"
            )

    def may_use_scope(self, scope: str) -> bool:
        return self.admin or self.scopes is None or scope in self.scopes

    def resolve_scope(self, scope: str | None, *, for_write: bool = False) -> str | None:
        """The scope a request works in, after the scope rule: raises 403 outside the key's scopes.

        A limited key with one scope defaults to it; with several it must name one. A write with
        no scope goes to ``default`` for an unlimited key."""

        if scope is None:
            if self.scopes is not None and not self.admin:
                if len(self.scopes) == 1:
                    return self.scopes[0]
                raise forbidden(f"this key is limited to scopes {list(self.scopes)}: name one of them")
            return "default" if for_write else None
        if not self.may_use_scope(scope):
            raise forbidden(f"this key may not use scope {scope!r} (it is limited to {list(self.scopes or ())})")
        return scope

    def to_dict(self) -> dict[str, Any]:
        return {
            "principal": self.principal,
            "admin": self.admin,
            "scopes": list(self.scopes) if self.scopes is not None else None,
            "key_id": self.key_id,
            "write_for": list(self.write_for),
        }


def hash_key(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def check_principal(principal: str) -> str:
    problem = principal_problem(principal)
    if problem:
        raise KeyError_(problem)
    return principal


def check_write_for(principals: Any) -> tuple[str, ...]:
    return tuple(check_principal(p) for p in dict.fromkeys(principals or ()))


def check_scopes(scopes: Any) -> tuple[str, ...] | None:
    if scopes is None:
        return None
    out = tuple(dict.fromkeys(scopes))
    bad = [s for s in out if not isinstance(s, str) or not re.match(SCOPE_PATTERN, s)]
    if bad or not out:
        raise KeyError_(f"malformed scope(s) {bad!r}: use 1-128 letters, digits and _.:-")
    return out


class KeyStore:
    """The keys of one memory home. Safe for the CLI and a running server to share."""

    def __init__(self, home: MemcHome):
        self.path = home.root / "config" / "api_keys.json"
        self._cache: tuple[tuple[int, int, int], dict[str, dict[str, Any]]] | None = None
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ reading

    def _read(self) -> dict[str, dict[str, Any]]:
        try:
            st = self.path.stat()
        except FileNotFoundError:
            return {}
        stamp = (st.st_ino, st.st_mtime_ns, st.st_size)
        with self._lock:
            if self._cache is not None and self._cache[0] == stamp:
                return self._cache[1]
            data = json.loads(self.path.read_text())
            if data.get("format") != FORMAT:
                raise RuntimeError(f"{self.path}: unknown key file format {data.get('format')!r}")
            records = {r["key_id"]: r for r in data.get("keys", [])}
            self._cache = (stamp, records)
            return records

    def list(self) -> list[dict[str, Any]]:
        """Every key ever made, revoked ones too, without their hashes."""
        return [{k: v for k, v in r.items() if k != "sha256"} for r in self._read().values()]

    def authenticate(self, token: str | None) -> Caller | None:
        """The caller a presented key stands for, or None for a missing, unknown or revoked key."""
        if not token:
            return None
        m = _TOKEN.match(token.strip())
        record = self._read().get(m.group(1)) if m else None
        presented = hash_key(token.strip())
        ok = hmac.compare_digest(presented, record["sha256"] if record else _DUMMY)
        if not ok or record is None or record.get("revoked_at"):
            return None
        scopes = record.get("scopes")
        return Caller(
            principal=record["principal"],
            admin=bool(record.get("admin")),
            scopes=tuple(scopes) if scopes is not None else None,
            key_id=record["key_id"],
            write_for=tuple(record.get("write_for") or ()),
        )

    # ------------------------------------------------------------------ writing

    @contextmanager
    def _locked(self) -> Iterator[dict[str, dict[str, Any]]]:
        """Read-modify-write under an exclusive file lock, so two `memc keys add` lose nothing."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path.parent / ".api_keys.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            records = dict(self._read())
            yield records
            write_json({"format": FORMAT, "keys": list(records.values())}, self.path)
            os.chmod(self.path, 0o600)

    def add(self, principal: str, *, admin: bool = False, scopes: Any = None, write_for: Any = ()) -> tuple[str, dict[str, Any]]:
        """Make a key: returns (the key, shown only now; its record, without the hash)."""
        check_principal(principal)
        scopes = check_scopes(scopes)
        write_for = check_write_for(write_for)
        with self._locked() as records:
            key_id = secrets.token_hex(6)
            while key_id in records:
                key_id = secrets.token_hex(6)
            token = f"memc_{key_id}_{secrets.token_urlsafe(32)}"
            record = {
                "key_id": key_id,
                "principal": principal,
                "admin": bool(admin),
                "scopes": list(scopes) if scopes is not None else None,
                "write_for": list(write_for),
                "sha256": hash_key(token),
                "created_at": datetime.now(timezone.utc).isoformat(),
                "revoked_at": None,
            }
            records[key_id] = record
        return token, {k: v for k, v in record.items() if k != "sha256"}

    def revoke(self, key_id: str) -> dict[str, Any]:
        with self._locked() as records:
            if key_id not in records:
                raise KeyError_(f"no key {key_id!r} (see `memc keys list`)")
            record = dict(records[key_id])
            if not record.get("revoked_at"):
                record["revoked_at"] = datetime.now(timezone.utc).isoformat()
            records[key_id] = record
        return {k: v for k, v in record.items() if k != "sha256"}
