"""What the HTTP API and the MCP server both do, for one authenticated caller.

The interfaces only translate: HTTP requests and MCP tool calls become calls here with a
:class:`~api.auth.Caller` whose principal came from an API key (HTTP) or the server's own
configuration (MCP), never from the request. Everything underneath is the same code the CLI
runs: ingestion's entry builder and the ledger's atomic append, ``compile_context``,
``state_for_entity`` and ``forgetting.forget``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import re
import tempfile
import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence

from api.auth import Caller, KeyStore
from api.errors import ApiError, forbidden, invalid, stale_view, unknown_scope, view_unavailable
from api.keeper import ViewKeeper
from api.local import package_version
from catalog.keys import EVIDENCE_INDEX
from forgetting import forget
from ingestion import IngestError, load_ingest_settings, parse_file, public_default_warning, resolve_visibility
from ingestion.formats import DEFAULT_LIMITS, Source, event_entry
from ledger import open_ledger
from memc.visibility import PUBLIC
from memc.home import MemcHome
from memc.locks import exclusive
from orchestration.runner import build, rebuild_views
from query.acl import UnknownScopeError
from query.asking import Goal, GoalError
from query.compile import compile_context, prepare, settle_heap, view_watermarks
from query.config import QueryConfig
from query.staleness import StaleViewError
from query.state import StateQueryError, state_for_entity
from views.embedder_onnx import question_embedder
from views import published

log = logging.getLogger("memc.api")

# How a caller gives a visibility: named in the warning about a public default.
VISIBILITY_HOW = "'visibility' in the request (principals, or [\"public\"] to say so and silence this)"

# Views whose lag behind the ledger an ask may refuse with 503 (``max_lag``): the ones the
# context compiler reads.
ASK_VIEWS = ("evidence_index", "state")


def json_ready(obj: Any) -> Any:
    """Datetimes as ISO strings, tuples as lists: what both transports send."""
    return json.loads(json.dumps(obj, default=_default, ensure_ascii=False))


def _default(v: Any) -> Any:
    if hasattr(v, "isoformat"):
        return v.isoformat()
    if isinstance(v, (set, frozenset)):
        return sorted(v)
    return str(v)


def _utc(t: datetime | None) -> datetime:
    if t is None:
        return datetime.now(timezone.utc)
    return t.replace(tzinfo=timezone.utc) if t.tzinfo is None else t.astimezone(timezone.utc)


class Service:
    """One memory home, served. Thread-safe: HTTP handlers run in a thread pool."""

    def __init__(self, home: MemcHome):
        self.home = home.ensure()
        self.keys = KeyStore(home)
        self._ledger = None
        self._embedder = None
        self._lock = threading.Lock()
        self._build_lock = threading.Lock()
        self.keeper: ViewKeeper | None = None
        self._settled: dict[str, Any] | None = None  # the views' watermarks when the heap was last settled

    def keep_fresh(self, **kw: Any) -> ViewKeeper:
        """Build the views by itself whenever the ledger is ahead of them (api/keeper.py): what
        `memc serve` and `memc mcp` do unless told --no-keep-fresh. On a node whose views
        another home builds and publishes (MEMC_STORAGE), pull them instead."""

        def run_build():
            if published.built_elsewhere(self.home) is not None:
                # The views under MEMC_STORAGE are another home's to build (views/published.py):
                # this node serves them, so it brings its copies up to date instead of building.
                published.pull(self.home)
                return None
            with self._build_lock:
                return build(self.home)

        if self.keeper is None:
            self.keeper = ViewKeeper(run_build, self.watermarks, warm=self.read_views, **kw).start()
        return self.keeper

    def read_views(self) -> None:
        """Read what the next compile reads of the views (query's ``prepare``); once per version
        of the views, settle the heap after it (``settle_heap``: the long-lived objects out of
        the collector's reach), so no compile pays a full collection over them."""
        prepare(self.home)
        views = view_watermarks(self.home)
        if views != self._settled:
            settle_heap()
            self._settled = views

    def build_now(self, *, force: bool = False) -> dict[str, Any]:
        """`memc build` run here for the operator (the local channel, api/local.py): the same
        in-process build, after any build that holds the home (waited for, not refused: it is
        usually this server's keeper, whose work this build then finds done). The views just
        built are read ahead of the next ask, as after the keeper's builds."""
        with self._building("memc build (through memc serve)"):
            report = build(self.home, force=force)
        if self.keeper is not None:
            self.keeper.warm_up()
        return dataclasses.asdict(report)

    @contextlib.contextmanager
    def _building(self, what: str) -> Iterator[None]:
        """Hold the home's build lock for a request that must build (or erase) now, waiting for
        the build that holds it: this server's keeper, another worker of `memc serve --workers`,
        or a `memc build`. The keeper does not wait: it retries (api/keeper.py)."""
        with self._build_lock, exclusive(self.home.build_lock, what, wait=True):
            yield

    # ------------------------------------------------------------------ shared pieces

    @property
    def ledger(self):
        with self._lock:
            if self._ledger is None:
                self._ledger = open_ledger(self.home.ledger)
            return self._ledger

    @property
    def embedder(self):
        """One embedder per server: loading the model per request would cost seconds. The ONNX
        one when exported (views/embedder_onnx.py: it releases the GIL while it runs), else one
        torch thread: a server encodes questions, one at a time each, beside the retrieval."""

        with self._lock:
            if self._embedder is None:
                self._embedder = question_embedder(threads=1)
            return self._embedder

    def watermarks(self) -> dict[str, Any]:
        head = self.ledger.head()
        views = view_watermarks(self.home)
        return {
            "ledger_head": head,
            "views": views,
            "behind": {name: (head - w if w is not None else None) for name, w in views.items()},
        }

    def refresh_index(self) -> dict[str, Any]:
        """Bring the evidence index up to the ledger head through Dagster (only that asset:
        incremental, about a second for a few new entries), so the next ask sees new evidence.
        Claims and state catch up on the next full `memc build`."""

        with self._building("memc serve: evidence index refresh"):
            report = build(self.home, selection=[EVIDENCE_INDEX])
        if not report.success:
            log.error("evidence index refresh failed: %s", report.failed_steps)
            raise ApiError(500, "internal_error", "refreshing the evidence index failed; see the server log")
        return self.watermarks()

    # ------------------------------------------------------------------ ingest

    def _source(self, caller: Caller, scope: str, visibility: Sequence[str], source_uri: str):
        return Source(
            display="request",
            name="request",
            stem="request",
            source_uri=source_uri,
            scope=scope,
            visibility=tuple(visibility),
            mtime=datetime.now(timezone.utc),
            limits=DEFAULT_LIMITS,
            ingested_by=caller.principal,
        )

    @staticmethod
    def _source_uri(caller: Caller, given: str | None, transport: str) -> str:
        """Where the evidence came from, as the ledger records it. A non-admin caller's URI is
        kept under its own name (``memc-api:bob/<what bob said>``): what a caller says about the
        source is its claim, and must not pass for another principal's file or conversation."""
        base = f"{transport}:{caller.principal}"
        if caller.admin:
            return given or base
        return f"{base}/{given}" if given else base

    def _visibility(self, caller: Caller, given: Sequence[str] | None):
        """The request's visibility, else the home's default (memc.toml [ingest], ``public`` unless
        set; ingestion/settings.py): the same default as `memc ingest` and the inbox."""
        try:
            settings = load_ingest_settings(self.home.root)
        except IngestError as exc:  # the operator's file, not the request: say what to fix, server-side
            log.error("memc.toml is invalid: %s", exc)
            raise ApiError(500, "invalid_config", f"the memory home's configuration is invalid: {exc}") from None
        try:
            return resolve_visibility(given, writer=caller.principal, settings=settings, how=VISIBILITY_HOW)
        except IngestError as exc:
            raise invalid(exc.message, {"field": "visibility"}) from None

    def _append(self, caller: Caller, entries: list, *, refresh: bool, defaulted: Sequence[bool] = ()) -> dict[str, Any]:
        """``defaulted[i]``: entry i took the default visibility (nobody gave one); each new one
        made public that way is counted in the response's ``warnings``."""
        result = self.ledger.append(entries)  # one atomic append for the whole request
        appended = set(result.entry_ids)
        made_public = sum(
            1 for e, d in zip(entries, defaulted) if d and e.entry_id in appended and PUBLIC in e.visibility
        )
        warnings = [public_default_warning(made_public, entries[0].scope, how=VISIBILITY_HOW)] if made_public else []
        if warnings:
            log.warning("%s: %s", caller.principal, warnings[0])
        out = {
            "principal": caller.principal,
            "received": len(entries),
            "appended": result.appended,
            "duplicates": result.duplicates,
            "first_seq": result.first_seq,
            "last_seq": result.last_seq,
            "ledger_head": result.head,
            "entries": [
                {
                    "entry_id": e.entry_id,
                    "kind": e.kind,
                    "scope": e.scope,
                    "visibility": list(e.visibility),
                    "ingested_by": e.ingested_by,
                    "new": e.entry_id in appended,
                }
                for e in entries
            ],
            "watermarks": None,
            "warnings": warnings,
        }
        if refresh:
            out["watermarks"] = self.refresh_index()
        if self.keeper is not None and result.appended:
            self.keeper.poke()
        return out

    def ingest_entries(
        self,
        caller: Caller,
        records: Sequence[Mapping[str, Any]],
        *,
        scope: str | None = None,
        visibility: Sequence[str] | None = None,
        source_uri: str | None = None,
        idempotency_key: str | None = None,
        refresh: bool = False,
        transport: str = "memc-api",
    ) -> dict[str, Any]:
        """A batch of event records (the fields of ingestion's ``events`` format) as one atomic
        append. Built by ingestion's own entry builder, so the API accepts exactly what a dropped
        events file would. Without a visibility (the request's or the entry's own) an entry gets the
        home's default: public within its scope unless memc.toml says ``default_visibility =
        "writer"`` (then private to the caller), and ``warnings`` says when it was made public. The write
        rule holds for every entry (403 for the whole batch when one breaks it); each entry
        records the caller as who ingested it.

        Idempotency: an entry's own ``idempotency_key``, or the request's key plus the entry's
        position, namespaced by the caller's principal (and, by the builder, by scope), so a
        retried request appends nothing and one caller cannot pre-empt another's keys."""

        scope = caller.resolve_scope(scope, for_write=True)
        vis = self._visibility(caller, visibility)
        source = self._source(caller, scope, vis.principals, self._source_uri(caller, source_uri, transport))
        entries = []
        defaulted = []
        for i, rec in enumerate(records):
            rec = {k: v for k, v in dict(rec).items() if v is not None}
            if "idempotency_key" in rec:
                rec["idempotency_key"] = f"{caller.principal}:{rec['idempotency_key']}"
            elif idempotency_key:
                rec["idempotency_key"] = f"{caller.principal}:{idempotency_key}:{i}"
            try:
                entry = event_entry(rec, source, i)
            except IngestError as exc:
                raise invalid(
                    f"entries[{i}]: {exc.message}" + (f" (field {exc.field!r})" if exc.field else ""),
                    {"entry": i, "field": exc.field},
                    code="invalid_entry",
                ) from None
            caller.check_write(entry.visibility, where=f"entries[{i}]: ")
            entries.append(entry)
            defaulted.append(vis.defaulted and rec.get("visibility") is None)
        if not entries:
            raise invalid("no entries given", {"field": "entries"})
        return self._append(caller, entries, refresh=refresh, defaulted=defaulted)

    def ingest_file(
        self,
        caller: Caller,
        data: bytes,
        filename: str,
        *,
        scope: str | None = None,
        visibility: Sequence[str] | None = None,
        format: str | None = None,
        refresh: bool = False,
    ) -> dict[str, Any]:
        """One uploaded file (any format `memc ingest` reads) as one atomic append."""

        scope = caller.resolve_scope(scope, for_write=True)
        vis = self._visibility(caller, visibility)
        # The name becomes a document's source_ref: keep its last component, in safe characters.
        name = re.sub(r"[^A-Za-z0-9._-]", "_", os.path.basename(filename or "").strip()) or "upload"
        name = name.lstrip(".") or "upload"
        with tempfile.TemporaryDirectory(prefix="memc-upload-") as tmp:
            path = Path(tmp) / name
            path.write_bytes(data)
            try:
                parsed = parse_file(
                    path,
                    scope=scope,
                    visibility=vis.principals,
                    format=format,
                    source_uri=self._source_uri(caller, f"upload/{name}", "memc-api"),
                    ingested_by=caller.principal,
                )
            except IngestError as exc:
                raise invalid(str(exc).replace(str(path), name), {"file": name, "line": exc.line, "field": exc.field}, code="invalid_entry") from None
        for i, e in enumerate(parsed.entries):
            caller.check_write(e.visibility, where=f"{name}: entry {i + 1}: ")
        # A record of an events file may carry its own visibility; one that says "public" itself
        # is counted with the defaulted ones (the parsed entry does not say which it was).
        defaulted = [vis.defaulted and e.visibility == vis.principals for e in parsed.entries]
        out = self._append(caller, list(parsed.entries), refresh=refresh, defaulted=defaulted)
        out["format"] = parsed.format
        out["file"] = name
        return out

    # ------------------------------------------------------------------ ask

    def ask(
        self,
        caller: Caller,
        question: str,
        *,
        scope: str | None = None,
        as_of: datetime | None = None,
        known_at: datetime | None = None,
        budget_tokens: int | None = None,
        preset: str | None = None,
        k: int | None = None,
        max_lag: int | None = None,
        goal: str | None = None,
        agent_state: Mapping[str, Any] | None = None,
        uncolored: bool = False,
    ) -> dict[str, Any]:
        """A context compiled for the caller's own principal (never another's). ``goal`` or
        ``agent_state`` (goal, entities, predicates): the task that shapes the compile."""

        scope = caller.resolve_scope(scope)
        try:
            config = QueryConfig.preset(preset or "balanced")
        except ValueError as exc:
            raise invalid(str(exc), {"field": "preset"}) from None
        update = {name: v for name, v in (("budget_tokens", budget_tokens), ("k", k)) if v is not None}
        if update:
            config = QueryConfig(**{**config.model_dump(), **update})
        if max_lag is not None:
            self._check_lag(max_lag)
        state = dict(agent_state or {})
        try:
            wanted = Goal(
                text=" ".join(t for t in (goal, state.get("goal")) if t) or None,
                entities=tuple(state.get("entities") or ()),
                predicates=tuple(state.get("predicates") or ()),
            )
        except GoalError as exc:
            raise invalid(str(exc), {"field": "agent_state.predicates"}) from None
        try:
            ctx = compile_context(
                question, caller.principal, home=self.home, scope=scope, config=config, embedder=self.embedder,
                as_of=_utc(as_of) if as_of is not None else None, known_at=_utc(known_at) if known_at is not None else None,
                goal=wanted, uncolored=uncolored,
            )  # fmt: skip
        except StaleViewError as exc:  # the compiler failed closed on a stale view
            raise stale_view(str(exc), json_ready(exc.to_dict())) from None
        except UnknownScopeError as exc:
            raise unknown_scope(exc.scope, exc.visible, str(exc)) from None
        out = json_ready(ctx.to_dict())
        out["rendered"] = ctx.render()
        return out

    def _check_lag(self, max_lag: int) -> None:
        marks = self.watermarks()
        late = {}
        for name in ASK_VIEWS:
            behind = marks["behind"].get(name)
            if behind is None or behind > max_lag:
                late[name] = {"watermark": marks["views"].get(name), "behind": behind}
        if late:
            raise stale_view(
                f"{', '.join(late)} {'is' if len(late) == 1 else 'are'} more than {max_lag} entries behind the ledger "
                f"(head {marks['ledger_head']}); retry after a build, or raise max_lag",
                {"ledger_head": marks["ledger_head"], "max_lag": max_lag, "views": late},
            )

    # ------------------------------------------------------------------ state

    def state(
        self,
        caller: Caller,
        entity: str,
        *,
        as_of: datetime | None = None,
        known_at: datetime | None = None,
        scope: str | None = None,
        as_admin: bool = False,
    ) -> dict[str, Any]:
        """What holds for ``entity`` for the caller's principal; ``as_admin`` (admin keys only)
        folds every claim whoever may see it."""

        if as_admin and not caller.admin:
            raise forbidden("only an admin key may fold state over every principal's claims (as_admin)")
        scope = caller.resolve_scope(scope)
        try:
            result = state_for_entity(
                self.home.marts,
                entity,
                principal=None if as_admin else caller.principal,
                as_of=_utc(as_of),
                known_at=_utc(known_at),
                scope=scope,
                ledger=self.home.ledger,
            )
        except StateQueryError as exc:
            raise view_unavailable(f"the state view cannot be read: {exc}") from None
        return json_ready(result)

    # ------------------------------------------------------------------ forget

    def forget(
        self,
        caller: Caller,
        *,
        entry_ids: Iterable[str] = (),
        source_uri: str | None = None,
        scope: str | None = None,
        subject: str | None = None,
        reason: str,
        rebuild: bool = True,
    ) -> dict[str, Any]:
        """Erase by opaque ids (entries, a source, a scope or a subject): admin keys only. The
        erasure entry records the caller's principal as who asked."""
        if not caller.admin:
            raise forbidden("forgetting needs an admin key")
        entry_ids = tuple(entry_ids or ())
        if not (entry_ids or source_uri or scope or subject):
            raise invalid("name what to forget: entry_ids, source_uri, scope or subject")

        try:
            # Under the build lock: the keeper's build must not compile views while the erasure
            # purges the ledger and rebuilds them (api/keeper.py).
            with self._building("memc serve: forget"):
                report = forget(
                    self.home,
                    entry_ids=entry_ids,
                    source_uri=source_uri,
                    scope=scope,
                    subject=subject,
                    reason=reason,
                    by=caller.principal,
                    rebuild=rebuild_views if rebuild else None,
                )
        except (ValueError, LookupError) as exc:
            raise invalid(str(exc)) from None
        return json_ready(report.to_dict())


__all__ = ["Service", "json_ready", "package_version"]
