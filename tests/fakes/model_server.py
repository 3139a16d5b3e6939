"""A scripted model server on 127.0.0.1 for the real harness binaries (`claude`, `codex`).

It speaks the streaming wire formats the real clients use:

- Anthropic Messages API (`POST /v1/messages`, what Claude Code sends with
  `ANTHROPIC_BASE_URL`): with `"stream": true` a server-sent event stream
  (`message_start`, `content_block_start` / `content_block_delta` / `content_block_stop`
  for text and `tool_use` blocks, `message_delta` with the stop reason and usage,
  `message_stop`), else one `message` object. `POST /v1/messages/count_tokens` and
  `GET /v1/models` answer too.
- OpenAI Responses API (`POST /v1/responses`, what `codex exec` sends to a custom
  `model_providers` entry with `wire_api = "responses"`): an event stream
  (`response.created`, `response.output_item.added` / `.done` for `message` and
  `function_call` items, `response.output_text.delta`, `response.completed` with usage).
- OpenAI Chat Completions (`POST /v1/chat/completions`), streamed or not, for clients
  that speak only that (Pi's `openai-completions` providers, Copilot CLI's BYOK).
- Gemini API (`POST /v1beta/models/{model}:generateContent`, `:streamGenerateContent`,
  `:countTokens`; what Gemini CLI sends to `GOOGLE_GEMINI_BASE_URL`): fakes/gemini_wire.py.

Every request is logged (method, path, headers, JSON body) in `server.received`. Model
requests take the next scripted `Turn` (text, tool calls, a JSON answer, an HTTP error);
when the script is empty they get `server.default`. A turn may carry a `when` predicate:
it is then given only to a request it matches (e.g. the request that carries a tool
result), and other requests skip past it to the default. Requests the harness makes for
itself (Claude Code's title or quota probes) can be kept off the script with `side`.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from fakes.gemini_wire import GEMINI_ACTIONS, gemini_error, gemini_model, gemini_response
from fakes.model_wire import (
    STRUCTURED_OUTPUT,
    Received,
    Text,
    ToolCall,
    Turn,
    answer,
    anthropic_events,
    anthropic_message,
    chat_chunks,
    chat_completion,
    error,
    error_body,
    new_id,
    not_found,
    responses_events,
    text,
    tool,
)

__all__ = [
    "STRUCTURED_OUTPUT",
    "ModelServer",
    "Received",
    "Text",
    "ToolCall",
    "Turn",
    "answer",
    "error",
    "text",
    "tool",
]

MODEL_ROUTES = ("/v1/messages", "/v1/responses", "/v1/chat/completions", "/responses")


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    fake: ModelServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a client that gave up leaves a broken pipe; not news


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _receive(self, method: str) -> Received:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body: Any = json.loads(raw) if raw else None
        except json.JSONDecodeError:
            body = raw.decode(errors="replace")
        received = Received(
            method,
            self.path,
            {k.lower(): v for k, v in self.headers.items()},
            body,
            time.monotonic(),
            len(raw),
        )
        self.server.fake.log(received)
        return received

    def do_GET(self) -> None:
        received = self._receive("GET")
        if received.route.rstrip("/") in ("/v1/models", "/models"):
            self._json(200, self.server.fake.models_body())
        else:
            self._json(404, not_found(received))

    def do_HEAD(self) -> None:
        self._receive("HEAD")
        self.send_response(200)
        self.send_header("content-length", "0")
        self.end_headers()

    def do_POST(self) -> None:
        received = self._receive("POST")
        fake = self.server.fake
        route = received.route.rstrip("/")
        if route.endswith("/messages/count_tokens"):
            self._json(200, {"input_tokens": max(1, received.raw_size // 4)})
            return
        if route.endswith(":countTokens"):
            self._json(200, {"totalTokens": max(1, received.raw_size // 4)})
            return
        gemini = route.endswith(GEMINI_ACTIONS)
        if not gemini and not route.endswith(MODEL_ROUTES):
            self._json(404, not_found(received))
            return
        turn = fake.take(received).for_request(received)
        if turn.hang:
            fake.stopping.wait(60)
            return
        if turn.delay:
            fake.stopping.wait(turn.delay)
        body = received.body if isinstance(received.body, dict) else {}
        model = str(body.get("model") or "fake-model")
        if gemini:
            self._gemini(route, turn)
            return
        if turn.status != 200:
            self._json(turn.status, error_body(route, turn))
            return
        if route.endswith("/messages"):
            if body.get("stream"):
                self._events(anthropic_events(turn, model), named=True, stall=turn.stall)
            else:
                self._json(200, anthropic_message(turn, model))
        elif route.endswith("/chat/completions"):
            if body.get("stream"):
                self._events(chat_chunks(turn, model), named=False, done=True)
            else:
                self._json(200, chat_completion(turn, model))
        else:
            self._events(responses_events(turn, model), named=True, stall=turn.stall)

    def _gemini(self, route: str, turn: Turn) -> None:
        if turn.status != 200:
            self._json(turn.status, gemini_error(turn))
        elif route.endswith(":streamGenerateContent"):
            response = gemini_response(turn, gemini_model(route))
            self._events(iter([response]), named=False)
        else:
            self._json(200, gemini_response(turn, gemini_model(route)))

    def _json(self, status: int, value: Any) -> None:
        data = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.send_header("request-id", f"req_fake{new_id():06d}")
        self.end_headers()
        self.wfile.write(data)

    def _events(
        self,
        events: Iterator[dict[str, Any]],
        *,
        named: bool,
        done: bool = False,
        stall: bool = False,
    ) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("request-id", f"req_fake{new_id():06d}")
        self.send_header("connection", "close")
        self.end_headers()
        self.close_connection = True
        for event in events:
            head = f"event: {event['type']}\n" if named else ""
            self.wfile.write(f"{head}data: {json.dumps(event)}\n\n".encode())
            self.wfile.flush()
            if stall:  # a stream that started and then went quiet, as a stuck upstream does
                self.server.fake.stopping.wait(60)
                return
        if done:
            self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()


@dataclass
class ModelServer:
    """`with ModelServer([...]) as server:` — scripted turns in order, then `default`.

    `side(request)` marks requests the harness makes for itself; they get `side_reply`
    and never consume the script.
    """

    script: list[Turn] = field(default_factory=list)
    default: Turn = field(default_factory=lambda: text("ok"))
    side: Callable[[Received], bool] | None = None
    # Answers computed from the request (e.g. per specialist); None falls through.
    respond: Callable[[Received], Turn | None] | None = None
    side_reply: Turn = field(default_factory=lambda: text("ok"))
    models: tuple[str, ...] = ("claude-sonnet-5", "claude-haiku-4-5", "gpt-5.1-codex")

    def __post_init__(self) -> None:
        self.queue: deque[Turn] = deque(self.script)
        self.received: list[Received] = []
        self.served: list[tuple[Received, Turn]] = []
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.fake = self
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def url(self) -> str:
        """The base URL without a path (`ANTHROPIC_BASE_URL`)."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def openai_url(self) -> str:
        """The base URL with `/v1` (an OpenAI provider's `base_url`)."""
        return f"{self.url}/v1"

    def push(self, *turns: Turn) -> None:
        """Queue more scripted turns."""
        with self._lock:
            self.queue.extend(turns)

    def log(self, received: Received) -> None:
        with self._lock:
            self.received.append(received)

    def take(self, received: Received) -> Turn:
        """The turn for one model request: a side reply, else `respond`'s turn, else the
        first matching scripted turn, else the default."""
        with self._lock:
            answered = self.respond(received) if self.respond is not None else None
            if self.side is not None and self.side(received):
                turn = self.side_reply
            elif answered is not None:
                turn = answered
            else:
                turn = self._first_match(received)
            self.served.append((received, turn))
            return turn

    def _first_match(self, received: Received) -> Turn:
        for index, turn in enumerate(self.queue):
            if turn.when is None or turn.when(received):
                del self.queue[index]
                return turn
            break  # a guarded turn at the head waits for its request
        return self.default

    def model_requests(self) -> list[Received]:
        """The requests that asked the model (not counted, listed or probed)."""
        with self._lock:
            return [r for r, _ in self.served]

    def main_requests(self) -> list[Received]:
        """The model requests that took from the script or the default (not side ones)."""
        with self._lock:
            return [r for r, t in self.served if t is not self.side_reply]

    def models_body(self) -> dict[str, Any]:
        data = [
            {"type": "model", "id": name, "display_name": name, "object": "model",
             "created_at": "2026-01-01T00:00:00Z", "owned_by": "fake"}
            for name in self.models
        ]  # fmt: skip
        return {"data": data, "has_more": False, "first_id": self.models[0],
                "last_id": self.models[-1], "object": "list"}  # fmt: skip

    def __enter__(self) -> ModelServer:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stopping.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)
