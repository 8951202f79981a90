"""The HTTP API: `memc serve` runs :func:`create_app` under uvicorn on 127.0.0.1.

Routes (all under ``/v1``; every one but ``/health`` needs an API key, as
``Authorization: Bearer <key>`` or ``X-API-Key: <key>``):

| method | path | who | what |
|---|---|---|---|
| GET | /health | anyone | liveness |
| GET | /whoami | any key | the principal, admin flag and scopes of the key |
| GET | /watermarks | any key | ledger head and each view's watermark and lag |
| POST | /ingest | any key | a batch of entries (JSON) as one atomic append; ``Idempotency-Key`` header |
| POST | /ingest/file | any key | one file (multipart) as one atomic append |
| POST | /ask | any key | a compiled context for the key's principal |
| GET | /state | any key | what holds for an entity, as of a valid time, as known at a time |
| POST | /forget | admin key | erase entries by id, source, scope or subject |
| POST | /local/ask | the operator's token, loopback only | `memc ask` handed to this server (api/local.py; not in the OpenAPI document) |

Outside ``/v1``, without a key: ``/openapi.json``, and the pages over it, ``/docs`` (Swagger UI)
and ``/redoc``, whose scripts and styles this server serves itself (``/docs-assets/``), offline.

Errors are ``{"error": {"code", "message", "details"}}`` with the codes of :mod:`api.errors`;
a bug answers 500 ``internal_error`` with a reference, and the trace goes to the server log only.
"""

from __future__ import annotations

import logging
import threading
from importlib.resources import files
import uuid
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Annotated, Any

from fastapi import Depends, FastAPI, File, Form, Header, Query, Request, UploadFile
from fastapi.exceptions import RequestValidationError
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer
from starlette.exceptions import HTTPException as StarletteHTTPException

from api import models as m
from api.auth import Caller, KeyError_, check_principal
from api.errors import ApiError, invalid, unauthenticated
from api.local import LOCAL_ASK_PATH, LOCAL_BUILD_PATH, check_token, is_loopback, remove_record
from api.service import Service, package_version as _version
from api.workers import settings_from_environment
from memc.home import MemcHome

log = logging.getLogger("memc.api")

DEFAULT_MAX_BODY_BYTES = 8 * 1024 * 1024

_bearer = HTTPBearer(auto_error=False, description="An API key from `memc keys add`.")
_api_key = APIKeyHeader(name="X-API-Key", auto_error=False, description="The same key, in a header of its own.")

_STATUS_CODES = {
    400: "bad_request",
    401: "unauthenticated",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    406: "not_acceptable",
    413: "payload_too_large",
    415: "unsupported_media_type",
    422: "invalid_request",
}


def _errors(*codes: int) -> dict[int | str, dict[str, Any]]:
    text = {
        400: "Malformed request (bad JSON or multipart)",
        401: "Missing, unknown or revoked API key",
        403: "The key's principal may not do this",
        404: "The scope holds nothing the key's principal may see (details list the scopes it may see)",
        413: "Request body over the server's limit",
        422: "A field is invalid (the field and entry are named)",
        500: "Internal error (a reference; the trace is in the server log), or the home's memc.toml is invalid (`invalid_config`, naming the file and field)",
        503: "A view is stale or not built (details say which)",
    }
    return {c: {"model": m.ErrorBody, "description": text[c]} for c in (*codes, 400, 401, 413, 500)}


class BodyLimit:
    """Refuses bodies over ``max_bytes`` with 413 before the app reads them: by Content-Length
    when given, else by buffering at most ``max_bytes`` of a chunked body."""

    def __init__(self, app, max_bytes: int):
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        length = dict(scope.get("headers") or []).get(b"content-length")
        if length is not None:
            try:
                too_big = int(length) > self.max_bytes
            except ValueError:
                return await _send_error(send, ApiError(400, "bad_request", "Content-Length is not a number"))
            if too_big:
                return await _send_error(send, self._error(int(length)))
            return await self.app(scope, receive, send)
        # No length (chunked): read up to the limit, then replay what was read.
        chunks, size, more = [], 0, True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away
            body = message.get("body", b"")
            size += len(body)
            if size > self.max_bytes:
                return await _send_error(send, self._error(None))
            chunks.append(body)
            more = message.get("more_body", False)
        replayed = False

        async def replay():
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": b"".join(chunks), "more_body": False}
            return await receive()

        return await self.app(scope, replay, send)

    def _error(self, length: int | None) -> ApiError:
        said = f" ({length} bytes)" if length is not None else ""
        return ApiError(413, "payload_too_large", f"the request body{said} is over this server's limit of {self.max_bytes} bytes")


async def _send_error(send, err: ApiError) -> None:
    resp = JSONResponse(err.body(), status_code=err.status, headers=err.headers or None)
    body = resp.body
    await send({"type": "http.response.start", "status": resp.status_code, "headers": resp.raw_headers})
    await send({"type": "http.response.body", "body": body})


# Swagger UI's and ReDoc's assets, from the fastapi-standalone-docs wheel: FastAPI's own pages
# load them from a CDN, so /docs and /redoc were blank on a machine without internet. Served at
# DOCS_ASSETS under fixed names (no path from the request reaches the file system).
DOCS_ASSETS = "/docs-assets"
_ASSETS = {
    "swagger-ui-bundle.js": ("swagger", "swagger-ui-bundle.js", "text/javascript"),
    "swagger-ui.css": ("swagger", "swagger-ui.css", "text/css"),
    "redoc.standalone.js": ("redoc", "redoc.standalone.js", "text/javascript"),
    "favicon.png": ("fastapi", "favicon.png", "image/png"),
}


def _asset(name: str):
    folder, file, media = _ASSETS[name]
    return str(files("fastapi_standalone_docs") / "static" / folder / file), media


def _warm(service: Service) -> None:
    try:
        service.embedder.encode(["warm up"])
    except Exception:  # the first ask will say what is wrong
        log.warning("could not load the embedding model at start-up", exc_info=True)


def _caller(
    request: Request,
    bearer: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
    api_key: Annotated[str | None, Depends(_api_key)],
) -> Caller:
    """The principal of the request's API key (Bearer or X-API-Key); 401 without a valid one."""
    token = bearer.credentials if bearer is not None else api_key
    who = request.app.state.service.keys.authenticate(token)
    if who is None:
        raise unauthenticated() if not token else unauthenticated("unknown or revoked API key")
    return who


Auth = Annotated[Caller, Depends(_caller)]


def create_app(
    home: MemcHome, *, max_body_bytes: int = DEFAULT_MAX_BODY_BYTES, warm: bool = False, keep_fresh: bool = False, local_token: str | None = None,
    owns_record: bool = True,
) -> FastAPI:  # fmt: skip
    """The API over one memory home. ``warm`` loads the embedding model in the background at
    start-up, so the first ask does not pay for it (about 10 s on 2 cores). ``keep_fresh`` builds
    the views whenever the ledger is ahead of them (api/keeper.py), so an application that only
    ingests and asks gets contexts from built views. ``local_token``: the operator's token of
    <home>/run/serve.json, which opens ``POST /v1/local/ask`` to `memc ask` on this machine
    (api/local.py), and whose record the shutdown removes; without it that route does not exist."""
    service = Service(home)

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        if warm:
            threading.Thread(target=_warm, args=(service,), name="memc-warm", daemon=True).start()
        if keep_fresh:
            service.keep_fresh()
        yield
        if service.keeper is not None:
            service.keeper.stop()
        if local_token and owns_record:
            # Here, not after uvicorn returns: on SIGTERM uvicorn re-raises the signal once it has
            # shut down, and the process ends before any code after the server would run.
            remove_record(home, local_token)

    app = FastAPI(
        lifespan=lifespan,
        docs_url=None,  # served below from local assets
        redoc_url=None,
        title="memc",
        version=_version(),
        description=(
            "A memory compiler for AI agents. The ledger keeps the evidence; contexts are compiled for "
            "the principal of the API key, from only what that principal may see. Errors are "
            '`{"error": {"code", "message", "details"}}`.'
        ),
    )
    app.state.service = service
    app.add_middleware(BodyLimit, max_bytes=max_body_bytes)

    # -------------------------------------------------------------- errors

    @app.exception_handler(ApiError)
    async def _api_error(request: Request, exc: ApiError):
        return JSONResponse(exc.body(), status_code=exc.status, headers=exc.headers or None)

    @app.exception_handler(RequestValidationError)
    async def _validation_error(request: Request, exc: RequestValidationError):
        errs = exc.errors()
        if any(e.get("type") == "json_invalid" for e in errs):
            err = ApiError(400, "malformed_json", "the request body is not valid JSON")
        else:
            # Field locations and messages only: echoing the rejected values back is not needed.
            details = [{"loc": list(e.get("loc", ())), "msg": e.get("msg", ""), "type": e.get("type", "")} for e in errs]
            first = details[0] if details else {"loc": [], "msg": "invalid"}
            where = ".".join(str(p) for p in first["loc"][1:] or first["loc"])
            err = ApiError(422, "invalid_request", f"{where}: {first['msg']}" if where else first["msg"], details)
        return JSONResponse(err.body(), status_code=err.status)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException):
        code = _STATUS_CODES.get(exc.status_code, "http_error")
        message = exc.detail if isinstance(exc.detail, str) else code.replace("_", " ")
        return JSONResponse({"error": {"code": code, "message": message}}, status_code=exc.status_code, headers=getattr(exc, "headers", None))

    @app.exception_handler(Exception)
    async def _internal_error(request: Request, exc: Exception):
        ref = uuid.uuid4().hex[:12]
        log.error("internal error %s on %s %s", ref, request.method, request.url.path, exc_info=exc)
        return JSONResponse(
            {"error": {"code": "internal_error", "message": f"internal error (reference {ref}; the details are in the server log)"}},
            status_code=500,
        )

    # -------------------------------------------------------------- docs, offline

    @app.get("/docs", include_in_schema=False)
    def swagger_ui() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=app.openapi_url, title=f"{app.title} - Swagger UI",
            swagger_js_url=f"{DOCS_ASSETS}/swagger-ui-bundle.js", swagger_css_url=f"{DOCS_ASSETS}/swagger-ui.css",
            swagger_favicon_url=f"{DOCS_ASSETS}/favicon.png",
        )  # fmt: skip

    @app.get("/redoc", include_in_schema=False)
    def redoc() -> HTMLResponse:
        return get_redoc_html(
            openapi_url=app.openapi_url, title=f"{app.title} - ReDoc", redoc_js_url=f"{DOCS_ASSETS}/redoc.standalone.js",
            redoc_favicon_url=f"{DOCS_ASSETS}/favicon.png", with_google_fonts=False,  # fonts from Google are a CDN too
        )  # fmt: skip

    @app.get(DOCS_ASSETS + "/{name}", include_in_schema=False)
    def docs_asset(name: str) -> FileResponse:
        if name not in _ASSETS:
            raise StarletteHTTPException(404, "no such asset")
        path, media = _asset(name)
        # The files change only with the package version: let a browser keep them a day.
        return FileResponse(path, media_type=media, headers={"Cache-Control": "public, max-age=86400"})

    # -------------------------------------------------------------- routes

    @app.get("/v1/health", response_model=m.Health, tags=["operations"], responses=_errors())
    def health() -> dict[str, Any]:
        """Liveness; no key needed and nothing about the memory told."""
        return {"status": "ok", "version": _version()}

    @app.get("/v1/whoami", response_model=m.WhoAmI, tags=["operations"], responses=_errors())
    def whoami(who: Auth) -> dict[str, Any]:
        """The principal this key stands for: every answer is compiled for it and only it."""
        return who.to_dict()

    @app.get("/v1/watermarks", response_model=m.Watermarks, tags=["operations"], responses=_errors())
    def watermarks(who: Auth) -> dict[str, Any]:
        """The ledger head and the seq each view was compiled against."""
        return service.watermarks()

    @app.post("/v1/ingest", response_model=m.IngestResponse, tags=["evidence"], responses=_errors(403, 422))
    def ingest(
        body: m.IngestRequest,
        who: Auth,
        idempotency_key: Annotated[
            str | None,
            Header(min_length=1, max_length=200, description="Retrying with the same key appends nothing new."),
        ] = None,
    ) -> dict[str, Any]:
        """Append a batch of entries in one atomic ledger append, validated by the same entry
        builder as an events file. An entry with no visibility (its own or the request's) gets the
        home's default, the same in every interface: public within its scope unless the home's
        memc.toml sets ``[ingest] default_visibility = "writer"`` (private to the caller); the
        response's ``warnings`` says when entries were made public that way. The key may only write
        evidence its principal is among those who see (or a
        principal it was granted to write for): 403 otherwise, for the whole batch. The ledger
        records the caller as who ingested each entry (``ingested_by``), shown with its provenance."""
        return service.ingest_entries(
            who,
            [e.model_dump(mode="json", exclude_none=True) for e in body.entries],
            scope=body.scope,
            visibility=body.visibility,
            source_uri=body.source_uri,
            idempotency_key=idempotency_key,
            refresh=body.refresh,
        )

    @app.post("/v1/ingest/file", response_model=m.IngestResponse, tags=["evidence"], responses=_errors(403, 422))
    def ingest_file(
        who: Auth,
        file: Annotated[UploadFile, File(description="Conversation or events JSONL, .txt, .md or .eml.")],
        scope: Annotated[str | None, Form(pattern=r"^[A-Za-z0-9_.:\-]{1,128}$")] = None,
        visibility: Annotated[
            str | None,
            Form(description="Comma-separated principals ('public' = every asker of the scope); default: the home's "
                 "default visibility, public unless memc.toml [ingest] default_visibility = \"writer\" (the caller only)."),
        ] = None,
        format: Annotated[str | None, Form(pattern="^(jsonl|conversation|events|text|markdown|email)$")] = None,
        refresh: Annotated[bool, Form()] = False,
    ) -> dict[str, Any]:
        """Append one file, as `memc ingest` would, in one atomic append. Re-uploading is a no-op.
        Without a visibility the file's entries get the home's default (public unless memc.toml
        says otherwise), and ``warnings`` says so."""
        data = file.file.read()
        vis = [p.strip() for p in visibility.split(",") if p.strip()] if visibility else None
        return service.ingest_file(who, data, file.filename or "upload", scope=scope, visibility=vis, format=format, refresh=refresh)

    @app.post("/v1/ask", response_model=m.ContextOut, tags=["query"], responses=_errors(403, 404, 422, 503))
    def ask(body: m.AskRequest, who: Auth) -> dict[str, Any]:
        """Compile a context for the question, for the key's principal only, with provenance
        (entry ids, source refs, times) and the watermarks it was compiled against. A scope
        holding nothing the principal may see is 404 ``unknown_scope``, naming the scopes it may see."""
        return service.ask(
            who,
            body.question,
            scope=body.scope,
            as_of=body.as_of,
            known_at=body.known_at,
            budget_tokens=body.budget_tokens,
            preset=body.preset,
            k=body.k,
            max_lag=body.max_lag,
            goal=body.goal,
            agent_state=body.agent_state.model_dump() if body.agent_state else None,
            uncolored=body.uncolored,
        )

    @app.get("/v1/state", response_model=m.StateOut, tags=["query"], responses=_errors(403, 422, 503))
    def state(
        who: Auth,
        entity: Annotated[str, Query(min_length=1, max_length=512, description="A name, alias or entity id.")],
        as_of: Annotated[datetime | None, Query(description="Valid time (default now).")] = None,
        known_at: Annotated[datetime | None, Query(description="Transaction time (default now).")] = None,
        scope: Annotated[str | None, Query(pattern=r"^[A-Za-z0-9_.:\-]{1,128}$")] = None,
        as_admin: Annotated[bool, Query(description="Admin keys only: fold every claim, whoever may see it.")] = False,
    ) -> dict[str, Any]:
        """What holds for an entity for the key's principal, bi-temporally, with sources and conflicts."""
        return service.state(who, entity, as_of=as_of, known_at=known_at, scope=scope, as_admin=as_admin)

    @app.post("/v1/forget", response_model=m.ForgetOut, tags=["evidence"], responses=_errors(403, 422))
    def forget(body: m.ForgetRequest, who: Auth) -> dict[str, Any]:
        """Erase entries (by id, source, scope or subject) and purge them from every view. Admin keys only."""
        return service.forget(
            who,
            entry_ids=body.entry_ids,
            source_uri=body.source_uri,
            scope=body.scope,
            subject=body.subject,
            reason=body.reason,
            rebuild=body.rebuild,
        )

    if local_token:

        def _local_caller(request: Request, bearer: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]) -> None:
            """The operator's token, from a loopback address: checked before the body is read."""
            client = request.client.host if request.client else None
            if not (is_loopback(client) and check_token(bearer.credentials if bearer else None, local_token)):
                raise unauthenticated("the local channel takes the token of <home>/run/serve.json, from this machine only")

        @app.post(LOCAL_ASK_PATH, include_in_schema=False, dependencies=[Depends(_local_caller)])
        def local_ask(body: m.LocalAskRequest) -> dict[str, Any]:
            """`memc ask --as ASKER` compiled here: the same Service.ask as /v1/ask, for the
            principal the operator named, with the rules of ``--as`` (no ``memc:`` name, not
            admin, any scope). The answer is the ask response as the service built it (no
            response model), so the CLI prints exactly what its own compile would."""
            try:
                caller = Caller(principal=check_principal(body.asker))
            except KeyError_ as exc:
                raise invalid(str(exc), {"field": "asker"}) from None
            return service.ask(
                caller, body.question, scope=body.scope, as_of=body.as_of, known_at=body.known_at, budget_tokens=body.budget_tokens,
                preset=body.preset, k=body.k, max_lag=body.max_lag, goal=body.goal, uncolored=body.uncolored,
                agent_state=body.agent_state.model_dump() if body.agent_state else None,
            )  # fmt: skip

        @app.post(LOCAL_BUILD_PATH, include_in_schema=False, dependencies=[Depends(_local_caller)])
        def local_build(body: m.LocalBuildRequest) -> dict[str, Any]:
            """`memc build` run in this process (Service.build_now): the build's report."""
            return service.build_now(force=body.force)

    return app


def from_environment() -> FastAPI:
    """The app of one worker of ``memc serve --workers N`` (uvicorn's app factory, api/workers.py):
    the parent process wrote the record and removes it."""
    root, settings = settings_from_environment()
    return create_app(MemcHome.resolve(root), owns_record=False, **settings)
