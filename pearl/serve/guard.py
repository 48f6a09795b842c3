"""The gate every request passes before the app reads it: the API key, the body's size, and the
metrics of what was answered.

A plain ASGI middleware rather than FastAPI's: it refuses an oversized body from its Content-Length,
or after `max_body_bytes` of a chunked one, before a byte is parsed, and it sees every answer,
404s and 500s included."""

from __future__ import annotations

import hmac
import time

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from pearl.serve.errors import error_response
from pearl.serve.metrics import ServeMetrics

OPEN_PATHS = frozenset({"/health"})  # a load balancer's probe needs no key


class Guard:
    def __init__(self, app: ASGIApp, api_key: str | None, max_body_bytes: int, metrics: ServeMetrics,
                 routes: frozenset[str]):
        self.app = app
        self.key = None if api_key is None else api_key.encode()
        self.max_body_bytes = max_body_bytes
        self.metrics = metrics
        self.routes = routes  # metric labels: the app's own paths, anything else counts as "other"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path, started, status = scope["path"], time.perf_counter(), 500

        async def answer(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        headers = dict(scope["headers"])
        try:
            refusal = self._unauthorised(path, headers)
            if refusal is None:
                refusal, receive = await self._bounded_body(path, headers, receive)
            if refusal is not None:
                await refusal(scope, receive, answer)
            else:
                await self.app(scope, receive, answer)
        finally:
            self.metrics.observe(path if path in self.routes else "other", status, time.perf_counter() - started)

    def _unauthorised(self, path: str, headers: dict[bytes, bytes]):
        if self.key is None or path in OPEN_PATHS:
            return None
        sent = headers.get(b"authorization", b"")
        scheme, _, token = sent.partition(b" ")
        if scheme.lower() == b"bearer" and hmac.compare_digest(token.strip(), self.key):
            return None
        problem = "a wrong API key" if sent else "no API key"
        return error_response(path, f"{problem}: send the header 'Authorization: Bearer <key>' with the "
                              "server's --api-key", 401, headers={"WWW-Authenticate": "Bearer"})

    async def _bounded_body(self, path: str, headers: dict[bytes, bytes], receive: Receive):
        """(a 413 refusal or None, the receive the app reads the body from)."""
        length = headers.get(b"content-length")
        limit = self.max_body_bytes
        if length is not None and length.isdigit() and int(length) > limit:
            return self._too_large(path, f"{int(length)} bytes"), receive
        if length is not None:
            return None, receive  # the server reads no more than Content-Length says
        # chunked: read it here, stopping at the limit, then hand the app what was read
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return None, receive  # the client left; the app sees the disconnect on its own read
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            if size > limit:
                return self._too_large(path, f"more than {limit} bytes"), receive
            if not message.get("more_body", False):
                break
        replay = [{"type": "http.request", "body": b"".join(chunks), "more_body": False}]

        async def read() -> Message:
            return replay.pop() if replay else await receive()

        return None, read

    def _too_large(self, path: str, size: str):
        return error_response(path, f"the body holds {size}, at most {self.max_body_bytes} (the server's "
                              "--max-body-bytes): send fewer texts per request", 413)
