"""The gate every request passes before the app reads it: the Host, the API key, the body's size, and
the metrics of what was answered.

A plain ASGI middleware rather than FastAPI's: it refuses an oversized body from its Content-Length,
or after `max_body_bytes` of a chunked one, before a byte is parsed, and it sees every answer,
404s and 500s included.

A server bound to a loopback address answers only requests whose Host is a loopback name: a web page
whose own name an attacker re-points at 127.0.0.1 (DNS rebinding) sends its Host, and gets 421.
Starlette's TrustedHostMiddleware does the same check but answers in plain text, not in the
service's one-line JSON, and reads "[::1]:8000" as the host "[".
"""

from __future__ import annotations

import hmac
import ipaddress
import time

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from pearl.serve.errors import error_response
from pearl.serve.metrics import ServeMetrics

OPEN_PATHS = frozenset({"/health"})  # a load balancer's probe needs no key


def is_loopback(host: str) -> bool:
    """Whether `host` (a name or an address, IPv6 with or without brackets) is this machine's loopback."""
    host = host.strip("[]").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def host_name(header: bytes) -> str:
    """The name of a Host header, without its port: "[::1]:8000" → "::1", "localhost:8000" → "localhost"."""
    text = header.decode("latin-1").strip()
    if text.startswith("["):
        return text[1:text.find("]")] if "]" in text else text
    return text.rsplit(":", 1)[0] if text.count(":") == 1 else text


class Guard:
    def __init__(self, app: ASGIApp, api_key: str | None, max_body_bytes: int, metrics: ServeMetrics,
                 routes: frozenset[str], bind_host: str | None = None):
        """`bind_host`: the address the server listens on; a loopback one turns the Host check on."""
        self.app = app
        self.bind_host = bind_host if bind_host is not None and is_loopback(bind_host) else None
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
        keyed = self._keyed(headers)
        scope.setdefault("state", {})["keyed"] = keyed  # /health shows its manifest only to a keyed request
        try:
            refusal = self._misdirected(path, headers)
            if refusal is None and not keyed and self.key is not None and path not in OPEN_PATHS:
                refusal = self._unauthorised(path, headers)
            if refusal is None:
                refusal, receive = await self._bounded_body(path, headers, receive)
            if refusal is not None:
                await refusal(scope, receive, answer)
            else:
                await self.app(scope, receive, answer)
        finally:
            self.metrics.observe(path if path in self.routes else "other", status, time.perf_counter() - started)

    def _keyed(self, headers: dict[bytes, bytes]) -> bool:
        """Whether the request carries the server's API key (never, on a server without one)."""
        if self.key is None:
            return False
        scheme, _, token = headers.get(b"authorization", b"").partition(b" ")
        return scheme.lower() == b"bearer" and hmac.compare_digest(token.strip(), self.key)

    def _misdirected(self, path: str, headers: dict[bytes, bytes]):
        if self.bind_host is None:
            return None
        sent = headers.get(b"host")
        if sent is not None and is_loopback(host_name(sent)):
            return None
        shown = "no Host header" if sent is None else f"the Host {sent.decode('latin-1')[:100]!r}"
        return error_response(path, f"{shown}: this server listens on {self.bind_host} and answers only requests "
                              "for localhost, 127.0.0.1 or [::1] (a guard against DNS rebinding); to serve other "
                              "names, bind another address with --host and set --api-key", 421)

    def _unauthorised(self, path: str, headers: dict[bytes, bytes]):
        sent = headers.get(b"authorization", b"")
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
