"""A scripted OpenAI-compatible chat-completions server on 127.0.0.1: the one allowed fake.

The extractor under test talks real HTTP to it. Each request to ``POST /v1/chat/completions``
takes the next scripted reply (status, headers, body, delay); when the script runs out, the
``default`` reply answers. Every request is recorded with its arrival time, so tests can check
retries, backoff and Retry-After.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    status: int = 200
    body: Any = None  # dict/list -> JSON; str -> sent as is
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds before answering (a slow server, for timeouts)


def completion(content: Any, *, model: str = "fake-model") -> Reply:
    """A chat-completions answer whose message content is ``content`` (dict -> JSON text)."""
    text = content if isinstance(content, str) else json.dumps(content)
    return Reply(
        body={
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        }
    )


def claims_answer(*claims: dict[str, Any]) -> Reply:
    return completion({"claims": list(claims)})


class FakeLLM:
    def __init__(self, *script: Reply, default: Reply | None = None):
        self.script = list(script)
        self.default = default or claims_answer()
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    @property
    def base_url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def push(self, *replies: Reply) -> None:
        with self._lock:
            self.script.extend(replies)

    def _next(self) -> Reply:
        with self._lock:
            return self.script.pop(0) if self.script else self.default

    def __enter__(self) -> "FakeLLM":
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # keep pytest output clean
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = None
                with fake._lock:
                    fake.requests.append(
                        {"path": self.path, "at": time.monotonic(), "body": body, "auth": self.headers.get("Authorization")}
                    )
                if self.path != "/v1/chat/completions":
                    self._send(Reply(404, {"error": {"message": f"no route {self.path}"}}))
                    return
                reply = fake._next()
                if reply.delay:
                    time.sleep(reply.delay)
                self._send(reply)

            def _send(self, reply: Reply) -> None:
                payload = reply.body if isinstance(reply.body, str) else json.dumps(reply.body if reply.body is not None else {})
                data = payload.encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for k, v in reply.headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client timed out and hung up, as a client should

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        # a short poll interval: shutdown() waits up to one interval (0.5 s by default, per server)
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
