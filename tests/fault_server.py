"""A real OpenAI-compatible HTTP server on 127.0.0.1 that misbehaves on cue: 429, 500, garbage, slowness."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class FaultServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.script: list[str] = []  # one behaviour per request; the last one repeats
        self.reply = "ok"
        self.requests: list[dict[str, object]] = []
        self.active = 0
        self.max_active = 0
        self.delay = 0.0
        self._lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def next_behaviour(self) -> str:
        with self._lock:
            if not self.script:
                return "ok"
            return self.script.pop(0) if len(self.script) > 1 else self.script[0]


class _Handler(BaseHTTPRequestHandler):
    server: FaultServer

    def log_message(self, *args: object) -> None:
        pass

    def _send(
        self, code: int, body: bytes, ctype: str = "application/json", headers: dict[str, str] | None = None
    ) -> None:
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self._done()  # the client may send its next request the moment these bytes arrive
        self.wfile.write(body)

    def _done(self) -> None:
        """This request stops counting as active (once), before its last bytes go out."""
        if not getattr(self, "_finished", False):
            self._finished = True
            with self.server._lock:
                self.server.active -= 1

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        srv = self.server
        self._finished = False
        with srv._lock:
            srv.requests.append(body)
            srv.active += 1
            srv.max_active = max(srv.max_active, srv.active)
        try:
            if srv.delay:
                time.sleep(srv.delay)
            behaviour = srv.next_behaviour()
            if behaviour in ("429", "500", "503", "400"):
                self._send(int(behaviour), b'{"error": "injected"}', headers={"Retry-After": "0"})
            elif behaviour == "garbage":
                self._send(200, b"<html>definitely not json")
            elif behaviour == "slow":
                time.sleep(2.0)
                self._send(200, b"{}")
            elif behaviour == "stall-stream":
                self._stream(srv.reply, stall=2.0)
            elif body.get("stream"):
                self._stream(srv.reply)
            else:
                text = srv.reply if behaviour == "ok" else behaviour
                payload = {
                    "choices": [{"message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 11, "completion_tokens": 7},
                }
                self._send(200, json.dumps(payload).encode())
        finally:
            self._done()

    def _stream(self, text: str, stall: float = 0.0) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        for i, word in enumerate(text.split(" ")):
            if stall and i == 1:
                time.sleep(stall)  # the first token arrives, then the server goes silent
                return
            event = {"choices": [{"delta": {"content": word + " "}, "finish_reason": None}]}
            self.wfile.write(f"data: {json.dumps(event)}\n\n".encode())
            self.wfile.flush()
        done = {"choices": [], "usage": {"prompt_tokens": 11, "completion_tokens": len(text.split(" "))}}
        self._done()
        self.wfile.write(f"data: {json.dumps(done)}\n\ndata: [DONE]\n\n".encode())


@contextmanager
def fault_server() -> Iterator[FaultServer]:
    srv = FaultServer()
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        yield srv
    finally:
        srv.shutdown()
        srv.server_close()
