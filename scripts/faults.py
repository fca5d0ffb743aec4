#!/usr/bin/env python3
"""Kill a real `anteroom` server mid-work, again and again, and check that nothing acknowledged was lost or doubled.

Its one job: start the given binary on a free loopback port (a fresh SQLite file, or a throwaway PostgreSQL
schema with --postgres) with a webhook receiver of its own, run producers and responders against it for the
given time while SIGKILLing the server at random moments and starting it again, then check what the server
holds against what every client was told:

  producers   create questions through the unchanged pulsemcp protocol (token route) and poll them, retrying an
              unacknowledged create with the same body (the same request id) until it is acknowledged
  responders  answer acknowledged questions with a content of their own, one through `/mcp` (the MCP tool
              `respond_to_elicitation`, opening a new MCP session when a restart lost its own), one as a person
              on the session's page (signed in, the page's CSRF token, the form's server function `/fn/answer`,
              signing in again when a restart lost the sign-in) and the rest through the API, retrying an
              unacknowledged answer with the same content (and the same form attempt) until it is acknowledged
  wrappers    real `anteroom wrap` workers, each wrapping the Python SDK's stdio MCP server
              (wrap/tests/sdk/python_server.py) under a harness that calls its `deploy` tool again and again;
              the wrapper asks through its own leased rounds (claim, renew, start-delivery, delivered,
              resolve) and one wrapper is SIGKILLed mid-run, a dead worker holding whatever lease it had
  killer      SIGKILLs the server at random moments, --kills times, and starts it again on the same database

Checks at the end (on a freshly started server):
  every acknowledged create exists;          no retry made a second question (rounds per session = ids)
  every acknowledged answer is stored once,   with its content, and the producer's poll got exactly that
  no question is in an impossible state       (docs/lifecycle.md: an answered round has its responses and its
                                              answerer; an open one has neither)
  every answer to a wrapper reached its tool call exactly once, or its round says it did not; no call got two
  results; no lease outlives its worker: none is live once every wrapper stopped, and the killed wrapper's
  lease ran out within its length of the kill
  every question's creation reached the webhook receiver at least once, and each delivery id took effect once

Prints a Markdown table and exits 0 only when every check holds. Python 3.11 standard library only (it reuses
scripts/attack.py's helpers); all traffic stays on 127.0.0.1. `psql` is needed for --postgres; the wrappers need
a Python with the `mcp` SDK (--python, default target/mcp-sdk-venv/bin/python, which `cargo xtask test` makes)
and are reported as skipped without one.

Usage: scripts/faults.py --binary target/release/anteroom [--seconds 60] [--kills 5] [--wrappers 2]
                         [--postgres URL]
"""

from __future__ import annotations

import argparse
import collections
import copy
import datetime
import http.server
import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from attack import (  # noqa: E402  (the shared helpers live beside this script)
    PERSON,
    Instance,
    check_loopback_postgres,
    free_port,
    json_body,
    log,
    request,
)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The wrapped server: the Python SDK's stdio fixture, whose `deploy` tool asks {env: string}.
WRAPPED_SERVER = os.path.join(ROOT, "wrap", "tests", "sdk", "python_server.py")
# A wrapper's lease length (the server's default, which `anteroom wrap` uses).
LEASE_SECONDS = 60
SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
# How long a client waits on one request before it counts it as unanswered (and retries it).
REQUEST_TIMEOUT_S = 5.0
# Between two tries of the same request while the server is down.
RETRY_PAUSE_S = 0.2


@dataclass
class Ledger:
    """What the clients were told, shared by every thread (under `lock`)."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    created: dict[str, str] = field(default_factory=dict)  # request id -> session
    answered: dict[str, int] = field(default_factory=dict)  # request id -> the acknowledged content's n
    polled: dict[str, dict] = field(default_factory=dict)  # request id -> the producer's final poll reply
    to_answer: collections.deque = field(default_factory=collections.deque)
    retries: collections.Counter = field(default_factory=collections.Counter)
    through_mcp: int = 0
    through_page: int = 0
    # The wrappers: round request id -> the acknowledged env; what each harness's calls returned.
    wrap_answered: dict[str, str] = field(default_factory=dict)
    wrap_results: list[dict] = field(default_factory=list)  # {"session", "worker", "id", "reply"}
    wrap_calls: int = 0
    # The killed wrapper: its session, owner's process id and when it died.
    wrap_killed: list[tuple[str, int, float]] = field(default_factory=list)
    # When each server SIGKILL happened (wall clock), to tell a round orphaned by one.
    kill_times: list[float] = field(default_factory=list)


class Server(Instance):
    """An Instance that can be killed with SIGKILL and started again on the same database."""

    def __init__(
        self, binary: str, site: str | None, postgres_url: str | None, sessions: int, wrappers: int, hook_port: int
    ):
        super().__init__(binary, site, postgres_url)
        self.sessions = [f"faults-{index}" for index in range(sessions)]
        self.wrap_sessions = [f"faults-wrap-{index}" for index in range(wrappers)]
        self.env["ANTEROOM_WEBHOOKS"] = f"http://127.0.0.1:{hook_port}/hook"
        self.env["ANTEROOM_WEBHOOK_SCHEDULE"] = "*/1 * * * * *"
        self.responder_key = ""

    def set_up(self) -> None:
        self.admin_key = self._cli("apikey", "create", "--name", "faults", "--role", "admin").strip()
        self.responder_key = self._cli("apikey", "create", "--name", "responder", "--role", "responder").strip()
        self._cli(
            "user", "add", "--username", PERSON[0], "--role", "responder", extra_env={"ANTEROOM_PASSWORD": PERSON[1]}
        )
        for session in self.sessions + self.wrap_sessions:
            self._create_session(session, session)

    def request_url(self, session: str) -> str:
        """The session's capability URL, as `anteroom session create` prints it for ELICITATION_REQUEST_URL."""
        return f"{self.base}/api/v1/s/{self.session_tokens[session]}/elicitations"

    def sibling(self) -> "Server":
        """Another instance on the same database (PostgreSQL), with its own port and log."""
        other = copy.copy(self)
        other.port = free_port()
        other.base = f"http://127.0.0.1:{other.port}"
        other.env = {**self.env, "ANTEROOM_ADDR": f"127.0.0.1:{other.port}"}
        other.process = None
        other.log_name = f"server-{other.port}.log"
        return other

    def kill(self) -> None:
        if self.alive():
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(10)

    def restart(self) -> None:
        self.launch(append=True)

    def get(self, path: str):
        return request(self.port, "GET", path, headers={"Authorization": f"Bearer {self.admin_key}"}, timeout=10)


class HookReceiver(http.server.ThreadingHTTPServer):
    """Takes the server's webhooks: each delivery id, and how many times each took effect (its first arrival)."""

    def __init__(self, port: int):
        self.lock = threading.Lock()
        self.arrivals: collections.Counter = collections.Counter()  # delivery id -> arrivals
        self.created: set[str] = set()  # round ids whose question.created took effect
        self.effects: collections.Counter = collections.Counter()  # (event, round id) -> effects
        super().__init__(("127.0.0.1", port), HookHandler)


class HookHandler(http.server.BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 (the standard library's name)
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        delivery = self.headers.get("X-Anteroom-Delivery") or ""
        receiver: HookReceiver = self.server  # type: ignore[assignment]
        with receiver.lock:
            receiver.arrivals[delivery] += 1
            if receiver.arrivals[delivery] == 1:
                # The receiver's effect happens once per delivery id, however often it arrives.
                round_id = str(body.get("data", {}).get("round_id", ""))
                receiver.effects[(body.get("event"), round_id)] += 1
                if body.get("event") == "question.created":
                    receiver.created.add(round_id)
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args) -> None:
        pass


def until_acknowledged(send, ok, ledger: Ledger, kind: str, stop: threading.Event):
    """Sends the same request until its reply is an acknowledgement (or the run stops); returns that reply."""
    while True:
        reply = send()
        if ok(reply):
            return reply
        with ledger.lock:
            ledger.retries[kind] += 1
        if stop.is_set() and reply.status is not None:
            return reply
        time.sleep(RETRY_PAUSE_S)


def accept_through_api(server: "Server", request_id: str, content: dict, final: tuple[int, ...], ledger: Ledger,
                       kind: str, stop: threading.Event):
    """Accepts with `content` through the respond route, the same body until a reply in `final` (or the stop)."""
    body, headers = json_body({"action_type": "accept", "content": content})
    headers["Authorization"] = f"Bearer {server.responder_key}"
    path = f"/api/v1/elicitations/{request_id}/respond"
    return until_acknowledged(
        lambda: request(server.port, "PATCH", path, body=body, headers=headers, timeout=REQUEST_TIMEOUT_S),
        lambda reply: reply.status in final,
        ledger,
        kind,
        stop,
    )


def producer(servers: list[Server], session: str, ledger: Ledger, stop: threading.Event, number: int) -> None:
    server = servers[number % len(servers)]
    token = server.session_tokens[session]
    asked = 0
    while not stop.is_set():
        asked += 1
        request_id = f"{session}-q{asked}"
        body, headers = json_body(
            {
                "message": f"Question {asked} of {session}",
                "requestedSchema": SCHEMA,
                "_meta": {"com.pulsemcp/request-id": request_id, "com.pulsemcp/tool-name": "faults"},
            }
        )
        path = f"/api/v1/s/{token}/elicitations"
        created = until_acknowledged(
            lambda: request(server.port, "POST", path, body=body, headers=headers, timeout=REQUEST_TIMEOUT_S),
            lambda reply: reply.status in (200, 201),
            ledger,
            "create",
            stop,
        )
        if created.status not in (200, 201):
            return
        with ledger.lock:
            ledger.created[request_id] = session
            ledger.to_answer.append(request_id)
        # Poll as the pulsemcp client does until the answer (the run's end leaves the rest to the checks).
        while True:
            reply = request(server.port, "GET", f"{path}/{request_id}", timeout=REQUEST_TIMEOUT_S)
            if reply.status == 200:
                polled = json.loads(reply.body)
                if polled.get("action") != "pending":
                    with ledger.lock:
                        ledger.polled[request_id] = polled
                    break
            if stop.is_set() and reply.status == 200:
                break
            time.sleep(0.1 + random.random() * 0.2)


class McpClient:
    """Anteroom's own MCP tools over Streamable HTTP (protocol 2025-11-25, with a session), as an orchestrator
    answers through `/mcp`. A session lost with a killed server is opened again."""

    def __init__(self, server: "Server"):
        self.server = server
        self.session: str | None = None
        self.numbers = 0

    def _post(self, message: dict):
        body, headers = json_body(message)
        headers["Authorization"] = f"Bearer {self.server.responder_key}"
        headers["Accept"] = "application/json, text/event-stream"
        if self.session:
            headers["Mcp-Session-Id"] = self.session
        return request(self.server.port, "POST", "/mcp", body=body, headers=headers, timeout=REQUEST_TIMEOUT_S)

    @staticmethod
    def _result(reply) -> dict | None:
        """The JSON-RPC message of a reply, whether sent as JSON or as one server-sent event."""
        text = reply.body.decode("utf-8", "replace")
        for line in text.splitlines():
            if line.startswith("data:"):
                text = line[5:].strip()
        try:
            return json.loads(text)
        except ValueError:
            return None

    def _open(self) -> bool:
        self.session = None
        reply = self._post(
            {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "faults", "version": "1"}}}
        )
        if reply.status != 200:
            return False
        self.session = reply.header("mcp-session-id")
        return self._post({"jsonrpc": "2.0", "method": "notifications/initialized"}).status in (200, 202)

    def respond(self, request_id: str, n: int):
        """One try of `respond_to_elicitation`; returns the tool's structured result, or None (not acknowledged)."""
        if self.session is None and not self._open():
            return None
        self.numbers += 1
        reply = self._post(
            {"jsonrpc": "2.0", "id": self.numbers, "method": "tools/call", "params": {
                "name": "respond_to_elicitation",
                "arguments": {"request_id": request_id, "action_type": "accept", "content": {"n": n}}}}
        )
        if reply.status == 404:
            self.session = None  # the server restarted: its sessions are gone
            return None
        message = self._result(reply) if reply.status == 200 else None
        result = (message or {}).get("result")
        if not result or result.get("isError"):
            return None
        return result


class PageClient:
    """A person answering on the session's page: signed in through the form, the CSRF token of the rendered
    page, and the form's server function `/fn/answer` with the form's attempt id — the call the hydrated
    banner makes. A sign-in lost with a restart (or a refused one) is made again."""

    def __init__(self, server: "Server"):
        self.server = server
        self.cookie: str | None = None

    def _form(self, session: str, request_id: str) -> tuple[str, str, str] | None:
        """The round id, the CSRF token and the field's name, read from the session's page."""
        if self.cookie is None:
            try:
                self.cookie = self.server.sign_in()
            except Exception:  # noqa: BLE001 (a server down or starting: the caller retries)
                return None
        page = request(self.server.port, "GET", f"/sessions/{session}", headers={"Cookie": self.cookie},
                       timeout=REQUEST_TIMEOUT_S)
        if page.status != 200:
            self.cookie = None
            return None
        html = page.body.decode("utf-8", "replace")
        # Each open question is a banner form: its hidden round and csrf inputs, then its controls.
        for form in re.findall(r"<form[^>]*banner-form.*?</form>", html, re.S):
            if f"Question {request_id.rsplit('-q', 1)[1]} of {session}" not in form:
                continue
            round_id = re.search(r'name="round"[^>]*value="([^"]+)"|value="([^"]+)"[^>]*name="round"', form)
            csrf = re.search(r'name="csrf"[^>]*value="([^"]+)"|value="([^"]+)"[^>]*name="csrf"', form)
            control = re.search(r'name="([^"/]+/n)"', form)
            if round_id and csrf and control:
                return (round_id.group(1) or round_id.group(2), csrf.group(1) or csrf.group(2), control.group(1))
        return None

    def respond(self, session: str, request_id: str, n: int, form: dict) -> bool:
        """One try; `form` keeps what the page showed the first time, so a retry after a lost reply posts the
        same attempt (the server replays it) even though the page no longer shows the question."""
        if not form:
            found = self._form(session, request_id)
            if found is None:
                return False
            form.update(round=found[0], csrf=found[1], control=found[2], attempt=f"faults-{random.getrandbits(64):x}")
        if self.cookie is None:
            try:
                self.cookie = self.server.sign_in()
            except Exception:  # noqa: BLE001
                return False
            # A new sign-in has a new CSRF token: every page carries it (the header's sign-out form).
            page = request(self.server.port, "GET", f"/sessions/{session}", headers={"Cookie": self.cookie},
                           timeout=REQUEST_TIMEOUT_S)
            csrf = re.search(rb'name="csrf"[^>]*value="([^"]+)"', page.body or b"")
            if page.status != 200 or csrf is None:
                self.cookie = None
                return False
            form["csrf"] = csrf.group(1).decode()
        body, headers = json_body({"post": {
            "session_id": session, "round_id": form["round"], "action": "accept", "csrf": form["csrf"],
            "attempt": form["attempt"], "values": [[form["control"], str(n)]],
        }})
        headers.update(Cookie=self.cookie, Accept="application/json")
        reply = request(self.server.port, "POST", "/fn/answer", body=body, headers=headers, timeout=REQUEST_TIMEOUT_S)
        if reply.status in (401, 403) or (reply.status or 0) >= 500 and b"sign" in (reply.body or b""):
            self.cookie = None
            return False
        if reply.status != 200:
            return False
        try:
            notice = json.loads(reply.body)
        except ValueError:
            return False
        if "recorded" in notice:
            return True
        # A refused CSRF token (a new sign-in): read the page again on the next try.
        if "closed" in notice or "refused" in notice:
            self.cookie = None
        return False


def responder(servers: list[Server], ledger: Ledger, stop: threading.Event, number: int) -> None:
    # The other instance than the producers', where there are two: answers cross instances.
    server = servers[(number + 1) % len(servers)]
    # The first responder answers through `/mcp`, the second on the page, the rest through the API.
    mcp = McpClient(server) if number == 0 else None
    page = PageClient(server) if number == 1 else None
    while not stop.is_set():
        with ledger.lock:
            request_id = ledger.to_answer.popleft() if ledger.to_answer else None
            session = ledger.created.get(request_id or "")
        if request_id is None:
            time.sleep(0.05)
            continue
        n = random.randrange(1, 1_000_000_000)
        if page is not None or mcp is not None:
            if page is not None:
                form: dict = {}
                answered = lambda: page.respond(session, request_id, n, form)  # noqa: E731
                channel = "on the page"
            else:
                answered = lambda: mcp.respond(request_id, n) is not None  # noqa: E731
                channel = "over /mcp"
            while True:
                if answered():
                    with ledger.lock:
                        ledger.answered[request_id] = n
                        if page is not None:
                            ledger.through_page += 1
                        else:
                            ledger.through_mcp += 1
                    break
                with ledger.lock:
                    ledger.retries[f"answer {channel}"] += 1
                if stop.is_set():
                    break
                time.sleep(RETRY_PAUSE_S)
            continue
        # 200: recorded, or the same answer replayed after an unacknowledged try.
        reply = accept_through_api(server, request_id, {"n": n}, (200,), ledger, "answer", stop)
        if reply.status == 200:
            with ledger.lock:
                ledger.answered[request_id] = n


class Wrapper:
    """A real `anteroom wrap` over the Python SDK's stdio server, under a minimal harness: `initialize` at
    2025-11-25 with no elicitation capability (only the wrapper can answer), then one `deploy` call at a time."""

    def __init__(self, server: "Server", session: str, python: str, log_path: str):
        environment = {
            name: value
            for name, value in os.environ.items()
            if not name.startswith(("ANTEROOM_", "ELICITATION_")) and name != "RUST_LOG"
        }
        environment.update(ELICITATION_REQUEST_URL=server.request_url(session), RUST_LOG="warn")
        with open(log_path, "ab") as log_file:
            self.process = subprocess.Popen(
                [server.binary, "wrap", "--server", "faults-wrap", "--", python, WRAPPED_SERVER],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log_file,
                env=environment,
                start_new_session=True,
            )
        self.owner = f"wrap-{self.process.pid}"
        self.replies: dict[int, dict] = {}
        self.arrived = threading.Condition()
        self.ids = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stdout:
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if isinstance(message, dict) and isinstance(message.get("id"), int) and "method" not in message:
                with self.arrived:
                    # A second reply to one id is kept apart, so the check can see it.
                    key = message["id"] if message["id"] not in self.replies else -message["id"]
                    self.replies[key] = message
                    self.arrived.notify_all()

    def _send(self, message: dict) -> bool:
        try:
            self.process.stdin.write((json.dumps(message) + "\n").encode())
            self.process.stdin.flush()
            return True
        except (BrokenPipeError, OSError, ValueError):
            return False

    def call(self, method: str, params: dict, stop: threading.Event, patience: float) -> tuple[int, dict | None]:
        """Sends a request and waits for its reply (until `patience` seconds after `stop` is set)."""
        self.ids += 1
        number = self.ids
        if not self._send({"jsonrpc": "2.0", "id": number, "method": method, "params": params}):
            return number, None
        stopped_at = None
        with self.arrived:
            while number not in self.replies:
                if stop.is_set():
                    stopped_at = stopped_at or time.monotonic()
                    if time.monotonic() - stopped_at > patience:
                        return number, None
                if self.process.poll() is not None:
                    return number, None
                self.arrived.wait(0.2)
            return number, self.replies[number]

    def open(self, stop: threading.Event) -> bool:
        _, reply = self.call("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                            "clientInfo": {"name": "faults-harness", "version": "1"}}, stop, 10)
        return bool(reply and "result" in reply) and self._send(
            {"jsonrpc": "2.0", "method": "notifications/initialized"})

    def close(self) -> None:
        """Ends the harness's side; the wrapper fails what it holds and exits."""
        try:
            self.process.stdin.close()
        except OSError:
            pass
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.kill()

    def kill(self) -> None:
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process.wait(10)


def wrapped_agent(servers: list[Server], session: str, python: str, ledger: Ledger, stop: threading.Event,
                  number: int, kill_at: float | None) -> None:
    """An agent whose harness runs `anteroom wrap`: calls `deploy` until the run stops. When `kill_at` comes
    (seconds from now), the wrapper and its server are SIGKILLed mid-call and the agent starts a new one."""
    server = servers[number % len(servers)]
    started = time.monotonic()
    log_path = os.path.join(server.folder, f"wrap-{number}.log")
    wrapper = Wrapper(server, session, python, log_path)
    incarnation = 0
    while not wrapper.open(stop):
        if stop.is_set():
            wrapper.close()
            return
        wrapper.kill()
        time.sleep(RETRY_PAUSE_S)
        wrapper = Wrapper(server, session, python, log_path)
    killer_thread = None
    if kill_at is not None:
        def kill_later(target: Wrapper) -> None:
            time.sleep(max(0.0, started + kill_at - time.monotonic()))
            if not stop.is_set():
                with ledger.lock:
                    ledger.wrap_killed.append((session, target.process.pid, time.time()))
                target.kill()
        killer_thread = threading.Thread(target=kill_later, args=(wrapper,), daemon=True)
        killer_thread.start()
    while not stop.is_set():
        # Patient after the stop: the responders settle what was asked before it.
        number_, reply = wrapper.call("tools/call", {"name": "deploy", "arguments": {}}, stop, 20)
        with ledger.lock:
            ledger.wrap_calls += 1
            if reply is not None:
                ledger.wrap_results.append({"session": session, "owner": wrapper.owner, "id": number_, "reply": reply})
        if wrapper.process.poll() is not None and not stop.is_set():
            # Killed: the agent starts again with a new wrapper (and a new owner).
            incarnation += 1
            wrapper = Wrapper(server, session, python, log_path)
            while not wrapper.open(stop) and not stop.is_set():
                wrapper.kill()
                time.sleep(RETRY_PAUSE_S)
                wrapper = Wrapper(server, session, python, log_path)
        elif reply is None and not stop.is_set():
            time.sleep(RETRY_PAUSE_S)
    wrapper.close()
    with wrapper.arrived:
        doubled = [key for key in wrapper.replies if key < 0]
    with ledger.lock:
        ledger.wrap_results.extend(
            {"session": session, "owner": wrapper.owner, "id": -key, "reply": {"doubled": True}} for key in doubled
        )


def wrap_responder(servers: list[Server], ledger: Ledger, stop: threading.Event, sessions: list[str]) -> None:
    """Answers the wrappers' open rounds through the API as they appear, each with an env of its own."""
    server = servers[-1]
    while not stop.is_set():
        for session in sessions:
            reply = request(server.port, "GET", f"/api/v1/sessions/{session}/rounds",
                            headers={"Authorization": f"Bearer {server.responder_key}"}, timeout=REQUEST_TIMEOUT_S)
            if reply.status != 200:
                continue
            for stored in json.loads(reply.body).get("rounds", []):
                request_id = stored.get("request_id")
                with ledger.lock:
                    known = request_id in ledger.wrap_answered
                if stored.get("status") != "pending" or known:
                    continue
                env = f"env-{random.getrandbits(48):x}"
                # 409: it ended meanwhile (its wrapper was killed, or stopped and failed it): nothing acknowledged.
                answered = accept_through_api(
                    server, request_id, {"env": env}, (200, 409), ledger, "answer to a wrapper", stop
                )
                if answered.status == 200:
                    with ledger.lock:
                        ledger.wrap_answered[request_id] = env
        time.sleep(0.1)


def killer(servers: list[Server], kills: int, seconds: float, stop: threading.Event, killed: list[float],
           ledger: Ledger) -> None:
    moments = sorted(random.uniform(seconds * 0.05, seconds * 0.9) for _ in range(kills))
    started = time.monotonic()
    for moment in moments:
        time.sleep(max(0.0, started + moment - time.monotonic()))
        if stop.is_set():
            return
        server = random.choice(servers)
        with ledger.lock:
            ledger.kill_times.append(time.time())
        server.kill()
        down = time.monotonic()
        time.sleep(random.uniform(0.1, 1.0))
        server.restart()
        killed.append(time.monotonic() - down)


def restart_postgres(seconds: float, stop: threading.Event, outcome: list[str]) -> None:
    """Restarts the local PostgreSQL cluster once, mid-run (`pg_ctlcluster`, as the machine's init would)."""
    time.sleep(seconds / 2)
    if stop.is_set():
        return
    clusters = subprocess.run(["pg_lsclusters", "-h"], capture_output=True, text=True)
    fields = clusters.stdout.split()
    if clusters.returncode != 0 or len(fields) < 2:
        outcome.append("skipped: no pg_lsclusters here")
        return
    started = time.monotonic()
    restarted = subprocess.run(["pg_ctlcluster", fields[0], fields[1], "restart"], capture_output=True, text=True)
    if restarted.returncode == 0:
        outcome.append(f"restarted in {time.monotonic() - started:.1f} s")
    else:
        outcome.append(f"restart failed: {restarted.stderr.strip()[:200]}")


@dataclass
class Check:
    name: str
    count: int
    problems: list[str]

    @property
    def passed(self) -> bool:
        return not self.problems


def check_everything(server: Server, ledger: Ledger, hooks: HookReceiver) -> list[Check]:
    checks = []
    rounds: dict[str, dict] = {}
    doubled: list[str] = []
    for session in server.sessions:
        reply = server.get(f"/api/v1/sessions/{session}/rounds")
        if reply.status != 200:
            doubled.append(f"{session}: its rounds could not be read ({reply.outcome})")
            continue
        stored = json.loads(reply.body).get("rounds", [])
        counts = collections.Counter(round_.get("request_id") for round_ in stored)
        doubled.extend(f"{session}: {rid} stored {n} times" for rid, n in counts.items() if n > 1)
        rounds.update((round_.get("request_id"), round_) for round_ in stored)
    problems = [f"{rid}: acknowledged, not stored" for rid in ledger.created if rid not in rounds]
    checks.append(Check("every acknowledged create exists", len(ledger.created), problems))
    # A create stored but never acknowledged (killed before it replied) is allowed: the producer's retry with
    # the same id found it. Two questions for one id are not.
    problems = doubled
    checks.append(Check("no retry made a second question", len(server.sessions), problems))

    problems = []
    for request_id, n in ledger.answered.items():
        stored = rounds.get(request_id, {})
        responses = stored.get("responses") or {}
        contents = [response.get("content") for response in responses.values()]
        if contents != [{"n": n}]:
            problems.append(f"{request_id}: acknowledged n={n}, stored {contents}")
        polled = ledger.polled.get(request_id)
        if polled is not None and polled.get("content") != {"n": n}:
            problems.append(f"{request_id}: acknowledged n={n}, the producer's poll got {polled}")
    checks.append(Check("every acknowledged answer stored once, as given, and polled as given", len(ledger.answered), problems))

    problems = []
    for request_id, stored in rounds.items():
        status = stored.get("status")
        responses = stored.get("responses") or {}
        if status == "pending" and (responses or stored.get("responded_by")):
            problems.append(f"{request_id}: pending with responses")
        if status not in ("pending", "failed") and not (responses and stored.get("responded_by")):
            problems.append(f"{request_id}: {status} without responses or answerer")
        failure = (stored.get("failure") or {}).get("code")
        if request_id in ledger.answered and (
            status == "pending" or (status == "failed" and failure != "undelivered")
        ):
            # An acknowledged answer reaches its producer, or the round says it did not.
            problems.append(f"{request_id}: answer acknowledged, round {status} ({failure})")
    checks.append(Check("no question in an impossible state", len(rounds), problems))

    problems = []
    # Deliveries retry every few seconds: give the outbox a moment to catch up after the last restart.
    deadline = time.monotonic() + 30
    wanted = {stored.get("round_id") for stored in rounds.values()}
    while time.monotonic() < deadline:
        with hooks.lock:
            missing = wanted - hooks.created
        if not missing:
            break
        time.sleep(0.5)
    with hooks.lock:
        missing = wanted - hooks.created
        doubled = [key for key, effects in hooks.effects.items() if effects > 1]
        redelivered = sum(arrivals - 1 for arrivals in hooks.arrivals.values())
    problems.extend(f"question.created for {rid} never arrived" for rid in sorted(missing))
    problems.extend(f"{key} took effect {hooks.effects[key]} times" for key in doubled)
    checks.append(
        Check(f"webhooks: each creation arrived, none took effect twice ({redelivered} redelivered)", len(wanted), problems)
    )
    return checks


def check_wrappers(server: Server, ledger: Ledger) -> list[Check]:
    rounds: dict[str, dict] = {}
    for session in server.wrap_sessions:
        reply = server.get(f"/api/v1/sessions/{session}/rounds")
        if reply.status == 200:
            rounds.update((r.get("request_id"), r) for r in json.loads(reply.body).get("rounds", []))
    killed = {f"wrap-{pid}": at for _, pid, at in ledger.wrap_killed}
    received: collections.Counter = collections.Counter()
    problems = []
    for result in ledger.wrap_results:
        reply = result["reply"]
        if reply.get("doubled"):
            problems.append(f"{result['owner']} call {result['id']} got two results")
            continue
        try:
            told = json.loads(reply["result"]["content"][0]["text"])
        except (KeyError, IndexError, TypeError, ValueError):
            continue  # an error reply: the call did not get an answer, which the rounds must say
        if told.get("action") == "accept":
            received[(told.get("content") or {}).get("env")] += 1
    stored_envs = {
        (response.get("content") or {}).get("env")
        for stored in rounds.values()
        for response in (stored.get("responses") or {}).values()
    }
    orphaned = []
    for request_id, env in ledger.wrap_answered.items():
        stored = rounds.get(request_id, {})
        status = stored.get("status")
        owner = (stored.get("lease") or {}).get("owner_id")
        arrived = received.get(env, 0)
        created = datetime.datetime.fromisoformat(stored.get("created_at") or "1970-01-01T00:00:00+00:00").timestamp()
        if status == "response_validated" and owner is None and not arrived and any(
            -0.05 <= kill - created <= REQUEST_TIMEOUT_S for kill in ledger.kill_times
        ):
            # Created just before a SIGKILL took the reply with it: the wrapper does not repeat a write that
            # may have been done, so no worker ever claimed this round. It ends `undelivered` at its deadline.
            orphaned.append(request_id)
        elif status == "resolved" and arrived != 1:
            problems.append(f"{request_id}: resolved, its answer reached {arrived} calls")
        elif status == "failed" and arrived:
            problems.append(f"{request_id}: failed ({(stored.get('failure') or {}).get('code')}), yet a call got it")
        elif status in ("response_validated", "delivery_started", "delivered") and owner not in killed:
            problems.append(f"{request_id}: {status} with its worker gone ({owner})")
        elif status in (None, "pending"):
            problems.append(f"{request_id}: answer acknowledged, round {status}")
    problems.extend(f"a call got {env}, which no round stored" for env in received if env not in stored_envs)
    checks = [Check(
        "wrappers: each answer reached its call once, or its round says it did not; no call got two results "
        f"({len(orphaned)} asked as a kill took the reply, never claimed, left to end undelivered)",
        len(ledger.wrap_answered), problems,
    )]

    problems = []
    now = time.time()
    leased = 0
    for request_id, stored in rounds.items():
        lease = stored.get("lease")
        if not lease:
            continue
        leased += 1
        expires = datetime.datetime.fromisoformat(lease["expires_at"]).timestamp()
        owner = lease.get("owner_id")
        if owner in killed:
            if expires - killed[owner] > LEASE_SECONDS + 2:
                problems.append(f"{request_id}: {owner} died, its lease ran {expires - killed[owner]:.0f} s past")
        elif expires > now and stored.get("status") not in ("resolved", "failed"):
            problems.append(f"{request_id}: {stored.get('status')}, lease of {owner} live after every wrapper stopped")
    checks.append(Check(
        f"no lease outlives its worker ({len(killed)} wrapper killed)", leased, problems
    ))
    return checks


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--binary", required=True)
    parser.add_argument("--site")
    parser.add_argument("--postgres", help="a loopback PostgreSQL URL: run on a throwaway schema there")
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--kills", type=int, default=5)
    parser.add_argument("--producers", type=int, default=6)
    parser.add_argument("--responders", type=int, default=3)
    parser.add_argument("--wrappers", type=int, default=2, help="agents under `anteroom wrap` (one is SIGKILLed)")
    parser.add_argument(
        "--python",
        default=os.environ.get("ANTEROOM_TEST_MCP_PYTHON") or os.path.join(ROOT, "target", "mcp-sdk-venv", "bin", "python"),
        help="a Python with the mcp SDK, for the wrapped server",
    )
    parser.add_argument("--instances", type=int, default=None, help="instances on the database (PostgreSQL: 2)")
    parser.add_argument("--restart-postgres", action="store_true", help="restart the PostgreSQL cluster once, mid-run")
    options = parser.parse_args(argv)
    if options.postgres:
        check_loopback_postgres(options.postgres)
    instances = options.instances or (2 if options.postgres else 1)
    if instances > 1 and not options.postgres:
        raise SystemExit("several instances share a PostgreSQL database only: add --postgres")

    wrappers = options.wrappers
    if wrappers and subprocess.run([options.python, "-c", "import mcp"], capture_output=True).returncode != 0:
        log(f"faults: wrappers skipped: no Python with the mcp SDK at {options.python} (run `cargo xtask test` once)")
        wrappers = 0
    hook_port = free_port()
    hooks = HookReceiver(hook_port)
    threading.Thread(target=hooks.serve_forever, daemon=True).start()
    server = Server(options.binary, options.site, options.postgres, options.producers, wrappers, hook_port)
    servers = [server]
    ledger = Ledger()
    stop = threading.Event()
    killed: list[float] = []
    postgres_restart: list[str] = []
    try:
        server.start()
        for _ in range(instances - 1):
            servers.append(server.sibling())
            servers[-1].restart()
        log(
            f"faults: {instances} instance(s), {options.producers} producers, {options.responders} responders, "
            f"{wrappers} wrapped agents, {options.kills} kills in {options.seconds:.0f} s"
        )
        workers = [
            threading.Thread(target=producer, args=(servers, session, ledger, stop, index), daemon=True)
            for index, session in enumerate(server.sessions)
        ] + [
            threading.Thread(target=responder, args=(servers, ledger, stop, index), daemon=True)
            for index in range(options.responders)
        ] + [
            threading.Thread(
                target=wrapped_agent,
                args=(servers, session, options.python, ledger, stop, index, options.seconds * 0.4 if index == 0 else None),
                daemon=True,
            )
            for index, session in enumerate(server.wrap_sessions)
        ]
        if wrappers:
            workers.append(
                threading.Thread(target=wrap_responder, args=(servers, ledger, stop, server.wrap_sessions), daemon=True)
            )
        for worker in workers:
            worker.start()
        chaos = [threading.Thread(target=killer, args=(servers, options.kills, options.seconds, stop, killed, ledger))]
        if options.restart_postgres:
            chaos.append(threading.Thread(target=restart_postgres, args=(options.seconds, stop, postgres_restart)))
        for thread in chaos:
            thread.start()
        time.sleep(options.seconds)
        for thread in chaos:
            thread.join()
        # Let what is in flight settle: the responders answer what was created, the producers poll it.
        settle = time.monotonic() + 20
        while time.monotonic() < settle:
            with ledger.lock:
                done = not ledger.to_answer and len(ledger.polled) >= len(ledger.answered)
            if done:
                break
            time.sleep(0.2)
        stop.set()
        for worker in workers:
            worker.join(30)
        # The checks read a server started afresh, as an operator would after the last crash.
        for each in servers:
            each.kill()
        server.restart()
        checks = check_everything(server, ledger, hooks)
        if wrappers:
            checks.extend(check_wrappers(server, ledger))
    finally:
        for each in servers[1:]:
            each.kill()
        server.stop()
        hooks.shutdown()

    backend = "PostgreSQL" if options.postgres else "SQLite"
    if postgres_restart:
        backend += f" (PostgreSQL itself {postgres_restart[0]})"
    print(
        f"\n{backend}, {instances} instance(s): {len(killed)} SIGKILLs (down {min(killed, default=0):.2f}–{max(killed, default=0):.2f} s each), "
        f"{len(ledger.created)} questions acknowledged, {len(ledger.answered)} answers acknowledged "
        f"({ledger.through_mcp} of them through /mcp, {ledger.through_page} on the page), "
        f"{ledger.wrap_calls} tool calls through {wrappers} wrapped agents ({len(ledger.wrap_answered)} answered, "
        f"{len(ledger.wrap_killed)} wrapper killed), "
        f"retries: {dict(ledger.retries)}\n"
    )
    print("| check | items | result |\n| --- | ---: | --- |")
    for check in checks:
        result = "pass" if check.passed else f"FAIL: {'; '.join(check.problems[:5])}"
        print(f"| {check.name} | {check.count} | {result} |")
    return 0 if all(check.passed for check in checks) and len(killed) == options.kills else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
