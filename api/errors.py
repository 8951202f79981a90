"""The errors both interfaces report, with stable codes.

Every refusal the service layer makes is an :class:`ApiError`: a stable ``code`` a client can
branch on, the HTTP status it maps to, a message for a person, and optional JSON ``details``.
The HTTP API renders it as ``{"error": {"code", "message", "details"}}``; the MCP server as a
tool error whose text starts with the code.

| status | code | when |
|---|---|---|
| 400 | ``malformed_json``, ``bad_request`` | the body cannot be parsed, or a parameter is unsupported |
| 401 | ``unauthenticated`` | no API key, or an unknown or revoked one |
| 403 | ``forbidden`` | the key's principal may not do this (forget without admin, a scope outside the key's) |
| 404 | ``not_found`` | no such route |
| 404 | ``unknown_scope`` | an ask names a scope holding nothing the caller may see (details: the scope, and the scopes it may see) |
| 405 | ``method_not_allowed`` | the route exists, the method does not |
| 413 | ``payload_too_large`` | the request body is over the server's limit |
| 422 | ``invalid_request``, ``invalid_entry`` | the body parsed but a field is wrong (the entry index and field are named) |
| 500 | ``internal_error`` | a bug; the client gets a reference, the server log gets the trace |
| 500 | ``invalid_config`` | the memory home's memc.toml is invalid (an ingest reads ``[ingest] default_visibility``; the message names the file and field) |
| 503 | ``stale_view``, ``view_unavailable`` | a view is behind the ledger by more than the caller tolerates, or not built |
"""

from __future__ import annotations

from typing import Any


class ApiError(Exception):
    def __init__(self, status: int, code: str, message: str, details: Any = None, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.details = details
        self.headers = headers or {}

    def body(self) -> dict[str, Any]:
        err: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.details is not None:
            err["details"] = self.details
        return {"error": err}

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


def bad_request(message: str, details: Any = None) -> ApiError:
    return ApiError(400, "bad_request", message, details)


def unauthenticated(message: str = "an API key is required: send 'Authorization: Bearer <key>'") -> ApiError:
    return ApiError(401, "unauthenticated", message, headers={"WWW-Authenticate": "Bearer"})


def forbidden(message: str) -> ApiError:
    return ApiError(403, "forbidden", message)


def invalid(message: str, details: Any = None, code: str = "invalid_request") -> ApiError:
    return ApiError(422, code, message, details)


def unknown_scope(scope: str, visible: list[str], message: str) -> ApiError:
    return ApiError(404, "unknown_scope", message, {"scope": scope, "visible_scopes": visible})


def stale_view(message: str, details: Any) -> ApiError:
    return ApiError(503, "stale_view", message, details, headers={"Retry-After": "5"})


def view_unavailable(message: str, details: Any = None) -> ApiError:
    return ApiError(503, "view_unavailable", message, details, headers={"Retry-After": "30"})
