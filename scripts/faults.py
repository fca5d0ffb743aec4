#!/usr/bin/env python3
"""Kill a real `anteroom` server mid-work, again and again, and check that nothing acknowledged was lost or doubled.

Its one job: start the given binary on a free loopback port (a fresh SQLite file, or a throwaway PostgreSQL
schema with --postgres) with a webhook receiver of its own, run producers and responders against it for the
given time while SIGKILLing the server at random moments and starting it again, then check what the server
holds against what every client was told:

  producers   create questions through the unchanged pulsemcp protocol (token route) and poll them, retrying an
              unacknowledged create with the same body (the same request id) until it is acknowledged
  responders  answer acknowledged questions with a content of their own, one through `/mcp` (the MCP tool
              `respond_to_elicitation`, opening a new MCP session when a restart lost its own) and the rest
              through the API, retrying an unacknowledged answer with the same content until it is acknowledged
  killer      SIGKILLs the server at random moments, --kills times, and starts it again on the same database

Checks at the end (on a freshly started server):
  every acknowledged create exists;          no retry made a second question (rounds per session = ids)
  every acknowledged answer is stored once,   with its content, and the producer's poll got exactly that
  no question is in an impossible state       (docs/lifecycle.md: an answered round has its responses and its
                                              answerer; an open one has neither)
  every question's creation reached the webhook receiver at least once, and each delivery id took effect once

Prints a Markdown table and exits 0 only when every check holds. Python 3.11 standard library only (it reuses
scripts/attack.py's helpers); all traffic stays on 127.0.0.1. `psql` is needed for --postgres.

Usage: scripts/faults.py --binary target/release/anteroom [--seconds 60] [--kills 5] [--postgres URL]
"""

from __future__ import annotations

import argparse
import collections
import copy
import http.server
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from attack import (  # noqa: E402  (the shared helpers live beside this script)
    Instance,
    check_loopback_postgres,
    free_port,
    json_body,
    log,
    request,
)

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


class Server(Instance):
    """An Instance that can be killed with SIGKILL and started again on the same database."""

    def __init__(self, binary: str, site: str | None, postgres_url: str | None, sessions: int, hook_port: int):
        super().__init__(binary, site, postgres_url)
        self.sessions = [f"faults-{index}" for index in range(sessions)]
        self.env["ANTEROOM_WEBHOOKS"] = f"http://127.0.0.1:{hook_port}/hook"
        self.env["ANTEROOM_WEBHOOK_SCHEDULE"] = "*/1 * * * * *"
        self.responder_key = ""

    def set_up(self) -> None:
        self.admin_key = self._cli("apikey", "create", "--name", "faults", "--role", "admin").strip()
        self.responder_key = self._cli("apikey", "create", "--name", "responder", "--role", "responder").strip()
        for session in self.sessions:
            self._create_session(session, session)

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


def responder(servers: list[Server], ledger: Ledger, stop: threading.Event, number: int) -> None:
    # The other instance than the producers', where there are two: answers cross instances.
    server = servers[(number + 1) % len(servers)]
    # The first responder answers through `/mcp`, the rest through the API.
    mcp = McpClient(server) if number == 0 else None
    while not stop.is_set():
        with ledger.lock:
            request_id = ledger.to_answer.popleft() if ledger.to_answer else None
        if request_id is None:
            time.sleep(0.05)
            continue
        n = random.randrange(1, 1_000_000_000)
        if mcp is not None:
            while True:
                if mcp.respond(request_id, n) is not None:
                    with ledger.lock:
                        ledger.answered[request_id] = n
                        ledger.through_mcp += 1
                    break
                with ledger.lock:
                    ledger.retries["answer over /mcp"] += 1
                if stop.is_set():
                    break
                time.sleep(RETRY_PAUSE_S)
            continue
        body, headers = json_body({"action_type": "accept", "content": {"n": n}})
        headers["Authorization"] = f"Bearer {server.responder_key}"
        path = f"/api/v1/elicitations/{request_id}/respond"
        reply = until_acknowledged(
            lambda: request(server.port, "PATCH", path, body=body, headers=headers, timeout=REQUEST_TIMEOUT_S),
            # 200: recorded, or the same answer replayed after an unacknowledged try.
            lambda reply: reply.status == 200,
            ledger,
            "answer",
            stop,
        )
        if reply.status == 200:
            with ledger.lock:
                ledger.answered[request_id] = n


def killer(servers: list[Server], kills: int, seconds: float, stop: threading.Event, killed: list[float]) -> None:
    moments = sorted(random.uniform(seconds * 0.05, seconds * 0.9) for _ in range(kills))
    started = time.monotonic()
    for moment in moments:
        time.sleep(max(0.0, started + moment - time.monotonic()))
        if stop.is_set():
            return
        server = random.choice(servers)
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


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--binary", required=True)
    parser.add_argument("--site")
    parser.add_argument("--postgres", help="a loopback PostgreSQL URL: run on a throwaway schema there")
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--kills", type=int, default=5)
    parser.add_argument("--producers", type=int, default=6)
    parser.add_argument("--responders", type=int, default=3)
    parser.add_argument("--instances", type=int, default=None, help="instances on the database (PostgreSQL: 2)")
    parser.add_argument("--restart-postgres", action="store_true", help="restart the PostgreSQL cluster once, mid-run")
    options = parser.parse_args(argv)
    if options.postgres:
        check_loopback_postgres(options.postgres)
    instances = options.instances or (2 if options.postgres else 1)
    if instances > 1 and not options.postgres:
        raise SystemExit("several instances share a PostgreSQL database only: add --postgres")

    hook_port = free_port()
    hooks = HookReceiver(hook_port)
    threading.Thread(target=hooks.serve_forever, daemon=True).start()
    server = Server(options.binary, options.site, options.postgres, options.producers, hook_port)
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
            f"{options.kills} kills in {options.seconds:.0f} s"
        )
        workers = [
            threading.Thread(target=producer, args=(servers, session, ledger, stop, index), daemon=True)
            for index, session in enumerate(server.sessions)
        ] + [
            threading.Thread(target=responder, args=(servers, ledger, stop, index), daemon=True)
            for index in range(options.responders)
        ]
        for worker in workers:
            worker.start()
        chaos = [threading.Thread(target=killer, args=(servers, options.kills, options.seconds, stop, killed))]
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
        f"({ledger.through_mcp} of them through /mcp), "
        f"retries: {dict(ledger.retries)}\n"
    )
    print("| check | items | result |\n| --- | ---: | --- |")
    for check in checks:
        result = "pass" if check.passed else f"FAIL: {'; '.join(check.problems[:5])}"
        print(f"| {check.name} | {check.count} | {result} |")
    return 0 if all(check.passed for check in checks) and len(killed) == options.kills else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
