"""What the fake provider APIs (fake_anthropic_server, fake_gemini_server) share: a threaded HTTP
server on 127.0.0.1 that records every POST (path, lower-cased headers, JSON body) and answers
JSON. A subclass answers a recorded request with ``respond(seen, n)`` → (status, body[, headers]).

``trickle_s``: when set, every body is written one byte every that many seconds (its full
Content-Length announced first): a slow server that no per-read timeout catches."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Seen:
    path: str
    headers: dict[str, str]
    body: Any


class FakeJSONAPI:
    def __init__(self) -> None:
        self.requests: list[Seen] = []
        self.trickle_s: float | None = None
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True  # a trickling answer is not waited for when the server stops
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def __enter__(self) -> Any:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def respond(self, seen: Seen, n: int) -> tuple[int, Any, dict[str, str]]:
        """(status, JSON body, extra headers) for the n-th request (1-based)."""
        raise NotImplementedError

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = None
                seen = Seen(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                with server._lock:
                    server.requests.append(seen)
                    n = len(server.requests)
                status, obj, headers = server.respond(seen, n)
                data = obj if isinstance(obj, bytes) else json.dumps(obj).encode()  # (bytes: a raw body)
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                if server.trickle_s is None:
                    self.wfile.write(data)
                    return
                self.wfile.flush()
                try:
                    for i in range(len(data)):
                        time.sleep(server.trickle_s)
                        self.wfile.write(data[i:i + 1])
                        self.wfile.flush()
                except OSError:  # the client hung up
                    pass

        return Handler
