#!/usr/bin/env python3
"""Replay a fixed set of attacks against a real `anteroom` binary and print one Markdown table row per attack.

Its one job: start the given binary on a free loopback port (a fresh SQLite file in a temporary folder, or a
throwaway PostgreSQL schema with --postgres), set it up through its own command line (an admin API key, a
person with a password, two sessions with producer tokens), replay each attack while probing /healthz and
sampling the server's resident memory, and say per attack whether the server held up. Every attack gets a fresh
instance, so one attack's leftovers (memory, wedged threads) never count against the next.

Attacks (names for --only; numbers are the brief's):
  1  patterns   backtracking `pattern` / `patternProperties` answered with near-miss values; 100 fields
                of ^\\w{200}$ (and of ^[A-Za-z0-9_]{200}$) answered with valid values
  2  metrics    distinct long random HTTP methods (metric-label cardinality), then RSS growth and /metrics size
  3  signin     16 then 64 threads posting /login with random usernames for ~10 s each
  4  xss        payload in a session title, a question message and a field title; security headers
  5  slowloris  up to 3,000 connections dripping a request line one byte every 10 s for ~30 s
  6  redos      whether a catastrophic pattern is handed to the browser (checked in the page's HTML only)
  12 limiter    distinct 16 KB unknown request ids polled on the producer route (rate-limiter memory)

A row passes when /healthz p99 < 1 s, peak RSS < 256 MiB and the attack's own criterion holds. Exit status 0
only when every row passed. Python 3.11 standard library only; all traffic goes to 127.0.0.1 (and, with
--postgres, to the loopback database named there). `psql` is needed for --postgres.

Usage: scripts/attack.py --binary target/debug/anteroom [--site target/site] [--postgres URL] [--only NAME]
"""

from __future__ import annotations

import argparse
import collections
import http.client
import json
import math
import os
import random
import resource
import select
import shutil
import signal
import socket
import string
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import uuid
from dataclasses import dataclass, field
from typing import Callable

HOST = "127.0.0.1"
MIB = 1024 * 1024

# Pass thresholds shared by every attack.
HEALTHZ_P99_LIMIT_S = 1.0
PEAK_RSS_LIMIT = 256 * MIB
# An answer (or a refusal at create) to a backtracking pattern must come this fast.
PATTERN_REPLY_LIMIT_S = 1.0

# The /healthz prober and the memory sampler.
PROBE_INTERVAL_S = 0.05
PROBE_TIMEOUT_S = 5.0
RSS_INTERVAL_S = 0.1

# A flood stops early when the server grows past this, so a leaking server cannot take the machine down.
RSS_SAFETY_CAP = 2048 * MIB

PERSON = ("attack-person", "attack-password-1")
PLAIN_SESSION = "attack"
XSS_SESSION = "xss"
XSS_PAYLOAD = "Deploy</title><img src=x onerror=alert(1)><title>"
XSS_MARKER = "<img src=x"
CATASTROPHIC_PATTERNS = ("^(a+)+$", "^(a|a)*\\1$")


# ---------------------------------------------------------------------------------------------- small helpers


def log(message: str) -> None:
    print(f"[attack] {message}", file=sys.stderr, flush=True)


def percentile(values: list[float], fraction: float) -> float | None:
    """Nearest-rank percentile; None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


def mib(size: int | None) -> str:
    return "n/a" if size is None else f"{size / MIB:.1f} MiB"


def seconds(value: float | None) -> str:
    if value is None:
        return "n/a"
    return f"{value * 1000:.0f} ms" if value < 1 else f"{value:.2f} s"


def status_counts(counts: collections.Counter) -> str:
    """`200×5 422×1 timeout×2`, numbers first in order, then the named failures."""
    keys = sorted(counts, key=lambda key: (not isinstance(key, int), str(key)))
    return " ".join(f"{key}×{counts[key]}" for key in keys) or "none"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        return probe.getsockname()[1]


def random_name(prefix: str, length: int = 12) -> str:
    return prefix + "".join(random.choices(string.ascii_lowercase + string.digits, k=length))


def unique_request_id(label: str) -> str:
    return f"{label}-{uuid.uuid4().hex[:12]}"


# ------------------------------------------------------------------------------------------------------ HTTP


@dataclass
class Reply:
    """One HTTP exchange: status None means the request failed (`error` says how)."""

    status: int | None
    headers: dict[str, list[str]]
    body: bytes
    seconds: float
    error: str | None = None

    def header(self, name: str) -> str | None:
        values = self.headers.get(name.lower())
        return values[0] if values else None

    @property
    def outcome(self) -> int | str:
        return self.status if self.status is not None else (self.error or "error")

    def message(self, limit: int = 140) -> str:
        """The `message` of a JSON error body, shortened (empty when there is none)."""
        try:
            text = str(json.loads(self.body).get("message", ""))
        except (ValueError, AttributeError):
            return ""
        return text if len(text) <= limit else text[: limit - 1] + "…"


def request(
    port: int,
    method: str,
    path: str,
    *,
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
    timeout: float = 10.0,
    max_body: int = 64 * MIB,
) -> Reply:
    """One request on a fresh connection to 127.0.0.1:port; never raises for network trouble."""
    started = time.monotonic()
    connection = http.client.HTTPConnection(HOST, port, timeout=timeout)
    try:
        connection.request(method, path, body=body, headers=headers or {})
        response = connection.getresponse()
        received: dict[str, list[str]] = {}
        for name, value in response.getheaders():
            received.setdefault(name.lower(), []).append(value)
        content = response.read(max_body)
        return Reply(response.status, received, content, time.monotonic() - started)
    except (socket.timeout, TimeoutError):
        return Reply(None, {}, b"", time.monotonic() - started, "timeout")
    except (OSError, http.client.HTTPException) as error:
        return Reply(None, {}, b"", time.monotonic() - started, type(error).__name__)
    finally:
        connection.close()


def json_body(value: object) -> tuple[bytes, dict[str, str]]:
    return json.dumps(value).encode(), {"Content-Type": "application/json"}


class RawConnection:
    """A kept-alive raw socket that sends prepared request bytes and reads back just the status."""

    def __init__(self, port: int, timeout: float = 5.0):
        self.port = port
        self.timeout = timeout
        self.sock: socket.socket | None = None
        self.buffer = bytearray()

    def exchange(self, raw_request: bytes) -> int | str:
        try:
            if self.sock is None:
                self.sock = socket.create_connection((HOST, self.port), timeout=self.timeout)
                self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                self.buffer.clear()
            self.sock.sendall(raw_request)
            status, keep_alive = self._read_response()
            if not keep_alive:
                self.close()
            return status
        except (socket.timeout, TimeoutError):
            self.close()
            return "timeout"
        except (OSError, ValueError) as error:
            self.close()
            return type(error).__name__

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None

    def _fill(self) -> None:
        assert self.sock is not None
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ConnectionResetError("closed by the server")
        self.buffer += chunk

    def _take_until(self, marker: bytes) -> bytes:
        while (at := self.buffer.find(marker)) < 0:
            self._fill()
        taken = bytes(self.buffer[:at])
        del self.buffer[: at + len(marker)]
        return taken

    def _take(self, size: int) -> None:
        while len(self.buffer) < size:
            self._fill()
        del self.buffer[:size]

    def _read_response(self) -> tuple[int, bool]:
        head = self._take_until(b"\r\n\r\n").decode("latin-1").split("\r\n")
        status = int(head[0].split()[1])
        headers = {}
        for line in head[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        if headers.get("transfer-encoding", "").lower() == "chunked":
            while (size := int(self._take_until(b"\r\n").split(b";")[0], 16)) > 0:
                self._take(size + 2)
            self._take_until(b"\r\n")
        else:
            self._take(int(headers.get("content-length", "0")))
        return status, headers.get("connection", "").lower() != "close"


@dataclass
class FloodResult:
    sent: int
    statuses: collections.Counter
    elapsed: float
    stopped_early: str | None = None


def flood(
    port: int,
    build_request: Callable[[int], bytes],
    *,
    total: int,
    max_seconds: float,
    workers: int,
    should_stop: Callable[[], str | None] = lambda: None,
) -> FloodResult:
    """Sends up to `total` raw requests for at most `max_seconds` from `workers` kept-alive connections."""
    counter = iter(range(total))
    lock = threading.Lock()
    statuses: collections.Counter = collections.Counter()
    stop_reason: list[str] = []
    started = time.monotonic()
    deadline = started + max_seconds

    def work() -> None:
        connection = RawConnection(port)
        try:
            while time.monotonic() < deadline and not stop_reason:
                with lock:
                    index = next(counter, None)
                if index is None:
                    return
                outcome = connection.exchange(build_request(index))
                with lock:
                    statuses[outcome] += 1
                    if index % 200 == 0 and (reason := should_stop()):
                        stop_reason.append(reason)
        finally:
            connection.close()

    threads = [threading.Thread(target=work, daemon=True) for _ in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(max_seconds + 30)
    if time.monotonic() >= deadline and not stop_reason and sum(statuses.values()) < total:
        stop_reason.append(f"time limit {max_seconds:.0f} s")
    return FloodResult(
        sum(statuses.values()), statuses, time.monotonic() - started, stop_reason[0] if stop_reason else None
    )


# ------------------------------------------------------------------------------------------------- databases


class SqliteDatabase:
    """A fresh SQLite file in the instance's temporary folder."""

    def __init__(self, folder: str):
        self.url = f"sqlite://{os.path.join(folder, 'anteroom.sqlite3')}"

    def drop(self) -> None:
        pass


class PostgresSchema:
    """A throwaway schema on a loopback PostgreSQL (created and dropped with `psql`), like the Rust tests do."""

    def __init__(self, admin_url: str):
        self.admin_url = admin_url
        self.name = f"anteroom_attack_{uuid.uuid4().hex}"
        self._psql(f"CREATE SCHEMA {self.name}")
        separator = "&" if "?" in admin_url else "?"
        self.url = f"{admin_url}{separator}options=-c%20search_path%3D{self.name}"

    def _psql(self, statement: str) -> None:
        completed = subprocess.run(
            ["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-d", self.admin_url, "-c", statement],
            capture_output=True,
            text=True,
            timeout=30,
        )
        if completed.returncode != 0:
            raise RuntimeError(f"psql failed on {statement!r}: {completed.stderr.strip()}")

    def drop(self) -> None:
        self._psql(f"DROP SCHEMA IF EXISTS {self.name} CASCADE")


def check_loopback_postgres(url: str) -> None:
    parsed = urllib.parse.urlparse(url)
    if parsed.scheme not in ("postgres", "postgresql"):
        raise SystemExit("--postgres must be a postgres:// URL")
    if parsed.hostname not in (None, "", "127.0.0.1", "localhost", "::1"):
        raise SystemExit("--postgres must point at a loopback database: this script sends traffic nowhere else")
    if shutil.which("psql") is None:
        raise SystemExit("--postgres needs `psql` on PATH to create and drop its throwaway schema")


# -------------------------------------------------------------------------------------------------- instance


class SetupError(RuntimeError):
    pass


class Instance:
    """A running `anteroom serve` with an admin API key, one person, and two sessions made by its own CLI."""

    def __init__(self, binary: str, site: str | None, postgres_url: str | None):
        self.binary = os.path.abspath(binary)
        self.folder = tempfile.mkdtemp(prefix="anteroom-attack-")
        self.port = free_port()
        self.base = f"http://{HOST}:{self.port}"
        self.process: subprocess.Popen | None = None
        try:
            self.database: SqliteDatabase | PostgresSchema = (
                PostgresSchema(postgres_url) if postgres_url else SqliteDatabase(self.folder)
            )
        except Exception:
            shutil.rmtree(self.folder, ignore_errors=True)
            raise
        self.env = self._environment(site)
        self.session_tokens: dict[str, str] = {}
        self.admin_key = ""

    def _environment(self, site: str | None) -> dict[str, str]:
        inherited = {
            name: value
            for name, value in os.environ.items()
            if not name.startswith(("ANTEROOM_", "ELICITATION_")) and name not in ("DATABASE_URL", "RUST_LOG")
        }
        inherited.update(
            DATABASE_URL=self.database.url,
            ANTEROOM_ADDR=f"{HOST}:{self.port}",
            # Per-request info logs would write every 16 KB attack path to the log file.
            RUST_LOG="warn",
        )
        if site:
            inherited["ANTEROOM_SITE_ROOT"] = os.path.abspath(site)
        return inherited

    # The real command line, run before the server starts so only one process writes the fresh database.
    def _cli(self, *args: str, extra_env: dict[str, str] | None = None) -> str:
        completed = subprocess.run(
            [self.binary, *args],
            env={**self.env, **(extra_env or {})},
            cwd=self.folder,
            capture_output=True,
            text=True,
            timeout=120,
        )
        if completed.returncode != 0:
            raise SetupError(f"`anteroom {' '.join(args[:2])}` failed: {completed.stderr.strip()[-500:]}")
        return completed.stdout

    def _create_session(self, session_id: str, title: str) -> None:
        block = self._cli("session", "create", "--id", session_id, "--title", title)
        variables = dict(line.split("=", 1) for line in block.splitlines() if "=" in line)
        request_url = variables["ELICITATION_REQUEST_URL"]
        self.session_tokens[session_id] = request_url.split("/api/v1/s/", 1)[1].split("/", 1)[0]

    def set_up(self) -> None:
        self.admin_key = self._cli("apikey", "create", "--name", "attacker", "--role", "admin").strip()
        self._cli(
            "user", "add", "--username", PERSON[0], "--role", "responder", extra_env={"ANTEROOM_PASSWORD": PERSON[1]}
        )
        self._create_session(PLAIN_SESSION, "Attack target")
        self._create_session(XSS_SESSION, XSS_PAYLOAD)

    def start(self) -> None:
        self.set_up()
        self.launch()

    # The server's log; an instance started again (scripts/faults.py) appends to it.
    log_name = "server.log"

    def launch(self, append: bool = False) -> None:
        """Starts `anteroom serve` on the set-up database and waits for /healthz."""
        log_file = open(os.path.join(self.folder, self.log_name), "ab" if append else "wb")
        self.process = subprocess.Popen(
            [self.binary, "serve"],
            env=self.env,
            cwd=self.folder,
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log_file.close()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise SetupError(f"the server exited with {self.process.returncode}: {self.log_tail()}")
            if request(self.port, "GET", "/healthz", timeout=2).status == 200:
                return
            time.sleep(0.05)
        raise SetupError(f"the server did not answer /healthz within 60 s: {self.log_tail()}")

    def log_tail(self, size: int = 800) -> str:
        try:
            with open(os.path.join(self.folder, self.log_name), "rb") as handle:
                return handle.read()[-size:].decode("utf-8", "replace").strip()
        except OSError:
            return "(no log)"

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def rss_bytes(self) -> int | None:
        if not self.alive():
            return None
        try:
            with open(f"/proc/{self.process.pid}/status") as status:
                for line in status:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1]) * 1024
        except (OSError, ValueError):
            return None
        return None

    def stop(self) -> None:
        try:
            if self.alive():
                self.process.send_signal(signal.SIGTERM)
                try:
                    self.process.wait(5)
                except subprocess.TimeoutExpired:
                    self.process.kill()
                    self.process.wait(5)
        finally:
            try:
                self.database.drop()
            finally:
                shutil.rmtree(self.folder, ignore_errors=True)

    # What attacks do through the API.
    def ask(self, session_id: str, request_id: str, message: str, schema: dict, timeout: float = 10) -> Reply:
        """Posts a question the way a pulsemcp producer does (token route)."""
        body, headers = json_body(
            {
                "message": message,
                "requestedSchema": schema,
                "_meta": {"com.pulsemcp/request-id": request_id, "com.pulsemcp/tool-name": "attack"},
            }
        )
        path = f"/api/v1/s/{self.session_tokens[session_id]}/elicitations"
        return request(self.port, "POST", path, body=body, headers=headers, timeout=timeout)

    def accept(self, request_id: str, content: dict, timeout: float) -> Reply:
        """Answers a question with the admin API key (the orchestrators' respond route)."""
        body, headers = json_body({"action_type": "accept", "content": content})
        headers["Authorization"] = f"Bearer {self.admin_key}"
        path = f"/api/v1/elicitations/{request_id}/respond"
        return request(self.port, "PATCH", path, body=body, headers=headers, timeout=timeout)

    def sign_in(self) -> str:
        """Signs the person in through the form post and returns the Cookie header value."""
        form = urllib.parse.urlencode({"username": PERSON[0], "password": PERSON[1], "next": "/"}).encode()
        reply = request(
            self.port,
            "POST",
            "/login",
            body=form,
            headers={"Content-Type": "application/x-www-form-urlencoded", "Origin": self.base},
        )
        location = reply.header("location") or ""
        cookies = [value.split(";", 1)[0] for value in reply.headers.get("set-cookie", [])]
        if reply.status not in (302, 303) or "error=" in location or not cookies:
            raise SetupError(f"sign-in failed: {reply.outcome} location={location!r}")
        return "; ".join(cookies)

    def page(self, path: str, cookie: str) -> Reply:
        return request(self.port, "GET", path, headers={"Cookie": cookie}, timeout=15)


# ------------------------------------------------------------------------------------------------ monitoring


class HealthProber(threading.Thread):
    """GET /healthz every ~50 ms on a fresh connection; a failure counts as the full 5 s timeout."""

    def __init__(self, port: int):
        super().__init__(daemon=True)
        self.port = port
        self.latencies: list[float] = []
        self.failures = 0
        self.halt = threading.Event()

    def run(self) -> None:
        while not self.halt.is_set():
            reply = request(self.port, "GET", "/healthz", timeout=PROBE_TIMEOUT_S, max_body=4096)
            if reply.status == 200:
                self.latencies.append(reply.seconds)
            else:
                self.failures += 1
                self.latencies.append(max(reply.seconds, PROBE_TIMEOUT_S))
            self.halt.wait(PROBE_INTERVAL_S)


class RssSampler(threading.Thread):
    """Reads the server's VmRSS every ~100 ms and keeps the peak."""

    def __init__(self, instance: Instance):
        super().__init__(daemon=True)
        self.instance = instance
        self.baseline = instance.rss_bytes()
        self.peak = self.baseline or 0
        self.latest = self.baseline or 0
        self.halt = threading.Event()

    def run(self) -> None:
        while not self.halt.is_set():
            rss = self.instance.rss_bytes()
            if rss is not None:
                self.latest = rss
                self.peak = max(self.peak, rss)
            self.halt.wait(RSS_INTERVAL_S)

    @property
    def growth(self) -> int:
        return self.peak - (self.baseline or 0)


class Monitor:
    """The /healthz prober and the RSS sampler for the span of one attack."""

    def __init__(self, instance: Instance):
        self.prober = HealthProber(instance.port)
        self.rss = RssSampler(instance)

    def __enter__(self) -> Monitor:
        self.rss.start()
        self.prober.start()
        return self

    def __exit__(self, *_exc) -> None:
        self.prober.halt.set()
        self.rss.halt.set()
        self.prober.join(PROBE_TIMEOUT_S + 5)
        self.rss.join(2)

    @property
    def healthz_p99(self) -> float | None:
        return percentile(self.prober.latencies, 0.99)

    def rss_over_cap(self) -> str | None:
        if self.rss.latest > RSS_SAFETY_CAP:
            return f"server RSS passed the {mib(RSS_SAFETY_CAP)} safety cap"
        return None


# --------------------------------------------------------------------------------------------------- attacks


@dataclass
class Outcome:
    """What one attack did and whether its own criterion held."""

    requests: int
    summary: str
    passed: bool
    details: list[str] = field(default_factory=list)


def pattern_schema(pattern: str, near_miss: str) -> dict:
    return {
        "type": "object",
        "properties": {"value": {"type": "string", "pattern": pattern, "default": near_miss}},
        "required": ["value"],
    }


def pattern_properties_schema(near_miss: str) -> dict:
    return {
        "type": "object",
        "properties": {"value": {"type": "string", "default": near_miss}},
        "patternProperties": {"^(a+)+$": {"type": "string"}},
    }


def pattern_cases() -> list[tuple[str, dict, dict]]:
    """(label, schema, accepted content) for every backtracking case."""
    short, long = "a" * 40 + "!", "a" * 3000 + "!"
    cases = []
    for pattern in ("^(a+)+$", "^(a|a)*\\1$"):
        for size, near_miss in (("41", short), ("3001", long)):
            cases.append((f"{pattern} {size} chars", pattern_schema(pattern, near_miss), {"value": near_miss}))
    for size, near_miss in (("41", short), ("3001", long)):
        cases.append(
            (
                f"patternProperties ^(a+)+$ {size}-char key",
                pattern_properties_schema(near_miss),
                {"value": near_miss, near_miss: "x"},
            )
        )
    # The brief's wide schema, and (in case \w is refused as too large) its ASCII spelling, so the time to
    # validate 100 valid 200-character values is measured either way.
    for pattern in ("^\\w{200}$", "^[A-Za-z0-9_]{200}$"):
        wide = {f"f{i:03d}": {"type": "string", "pattern": pattern} for i in range(100)}
        cases.append(
            (f"100 fields {pattern}", {"type": "object", "properties": wide}, {name: "a" * 200 for name in wide})
        )
    return cases


def attack_patterns(instance: Instance, monitor: Monitor) -> Outcome:
    """Creates each backtracking schema on the token route, then accepts it with its near-miss answer."""
    budget_end = time.monotonic() + 90
    creates: collections.Counter = collections.Counter()
    answers: collections.Counter = collections.Counter()
    details, all_fine, sent = [], True, 0
    for label, schema, content in pattern_cases():
        remaining = budget_end - time.monotonic()
        if remaining < 5:
            details.append(f"{label}: skipped (attack time budget spent)")
            all_fine = False
            continue
        request_id = unique_request_id("pattern")
        created = instance.ask(PLAIN_SESSION, request_id, f"Pattern check: {label}", schema, timeout=min(20, remaining))
        sent += 1
        creates[created.outcome] += 1
        if created.status == 422:
            fine = created.seconds < PATTERN_REPLY_LIMIT_S
            details.append(f"{label}: refused at create (422) in {seconds(created.seconds)}: {created.message()}")
        elif created.status in (200, 201):
            remaining = budget_end - time.monotonic()
            answered = instance.accept(request_id, content, timeout=max(1.0, min(20, remaining)))
            sent += 1
            answers[answered.outcome] += 1
            fine = answered.status is not None and answered.seconds < PATTERN_REPLY_LIMIT_S
            why = f": {answered.message()}" if answered.status == 422 else ""
            details.append(
                f"{label}: created in {seconds(created.seconds)}, answer {answered.outcome} "
                f"in {seconds(answered.seconds)}{why}"
            )
        else:
            fine = False
            details.append(f"{label}: create failed with {created.outcome} {created.message()}")
        all_fine &= fine
    summary = f"create {status_counts(creates)}; answer {status_counts(answers)}"
    return Outcome(sent, summary, all_fine, details)


def attack_metrics(instance: Instance, monitor: Monitor) -> Outcome:
    """Distinct 256-char methods on /healthz over raw kept-alive sockets, then RSS growth and /metrics size."""
    host_header = f"Host: {HOST}:{instance.port}\r\n\r\n".encode()

    def build(index: int) -> bytes:
        method = f"M{index:07d}" + os.urandom(124).hex().upper()
        return method.encode() + b" /healthz HTTP/1.1\r\n" + host_header

    result = flood(
        instance.port, build, total=20_000, max_seconds=45, workers=4, should_stop=monitor.rss_over_cap
    )
    time.sleep(1)  # let the sampler see the settled size
    metrics = request(instance.port, "GET", "/metrics", timeout=30)
    scraped_with, scrapes = "plain GET", 1
    if metrics.status in (401, 403):
        metrics = request(
            instance.port, "GET", "/metrics", headers={"Authorization": f"Bearer {instance.admin_key}"}, timeout=30
        )
        scraped_with, scrapes = "admin API key", 2
    size = len(metrics.body)
    growth = monitor.rss.growth
    passed = metrics.status == 200 and growth < 32 * MIB and size < 1_000_000
    summary = (
        f"{status_counts(result.statuses)}; RSS +{mib(growth)}; /metrics {metrics.outcome} "
        f"{size / 1e6:.2f} MB"
    )
    details = [
        f"{result.sent} requests in {result.elapsed:.1f} s"
        + (f" (stopped: {result.stopped_early})" if result.stopped_early else ""),
        f"/metrics scraped with a {scraped_with}: {metrics.outcome}, {size} bytes; criterion RSS growth < 32 MiB "
        "and /metrics < 1 MB",
    ]
    return Outcome(result.sent + scrapes, summary, passed, details)


@dataclass
class SignInPhase:
    threads: int
    sent: int
    statuses: collections.Counter
    limited_without_retry_after: int
    limited_latencies: list[float]


def sign_in_phase(instance: Instance, threads: int, duration: float, cap: int) -> SignInPhase:
    """`threads` threads post /login with random usernames and passwords for `duration` seconds."""
    deadline = time.monotonic() + duration
    lock = threading.Lock()
    statuses: collections.Counter = collections.Counter()
    missing_retry_after = [0]
    limited_latencies: list[float] = []
    headers = {"Content-Type": "application/x-www-form-urlencoded", "Origin": instance.base}

    def work() -> None:
        while time.monotonic() < deadline:
            with lock:
                if sum(statuses.values()) >= cap:
                    return
            form = urllib.parse.urlencode(
                {"username": random_name("u-"), "password": random_name("p-", 16), "next": "/"}
            ).encode()
            reply = request(instance.port, "POST", "/login", body=form, headers=headers, timeout=5)
            with lock:
                statuses[reply.outcome] += 1
                if reply.status == 429:
                    limited_latencies.append(reply.seconds)
                    if not reply.header("retry-after"):
                        missing_retry_after[0] += 1

    workers = [threading.Thread(target=work, daemon=True) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(duration + 15)
    return SignInPhase(threads, sum(statuses.values()), statuses, missing_retry_after[0], limited_latencies)


def attack_sign_in(instance: Instance, monitor: Monitor) -> Outcome:
    """16, then 64, concurrent sign-in floods with random usernames, ~10 s each."""
    phases = [sign_in_phase(instance, threads, 10, 20_000) for threads in (16, 64)]
    passed = all(
        phase.statuses[429] > 0 and phase.limited_without_retry_after == 0 for phase in phases
    )
    summary = "; ".join(f"{phase.threads} threads: {status_counts(phase.statuses)}" for phase in phases)
    details = [
        f"{phase.threads} threads: {phase.sent} posts, 429s {phase.statuses[429]} "
        f"(without Retry-After {phase.limited_without_retry_after}, "
        f"p50 {seconds(percentile(phase.limited_latencies, 0.5))})"
        for phase in phases
    ]
    details.append("criterion: each phase got 429s and every 429 carried Retry-After")
    return Outcome(sum(phase.sent for phase in phases), summary, passed, details)


def header_problems(reply: Reply) -> list[str]:
    """What is missing from a page's security headers, in short labels."""
    problems = []
    policy = reply.header("content-security-policy")
    if not policy:
        problems.append("no CSP")
    else:
        directives = {}
        for part in policy.split(";"):
            words = part.split()
            if words:
                directives[words[0].lower()] = [word.lower() for word in words[1:]]
        if directives.get("frame-ancestors") != ["'none'"]:
            problems.append("CSP frame-ancestors not 'none'")
        scripts = directives.get("script-src", directives.get("default-src"))
        if scripts is None:
            problems.append("CSP without script-src/default-src")
        elif "'unsafe-inline'" in scripts:
            problems.append("CSP script-src allows 'unsafe-inline'")
    if (reply.header("x-content-type-options") or "").lower() != "nosniff":
        problems.append("no nosniff")
    if not reply.header("referrer-policy"):
        problems.append("no Referrer-Policy")
    return problems


def payload_places(html: str) -> tuple[int, int]:
    """Unescaped payload occurrences (in markup, inside <script> elements)."""
    lowered = html.lower()
    in_scripts = 0
    for block in lowered.split("<script")[1:]:
        in_scripts += block.split("</script", 1)[0].count(XSS_MARKER)
    return lowered.count(XSS_MARKER) - in_scripts, in_scripts


def attack_xss(instance: Instance, monitor: Monitor) -> Outcome:
    """The payload as session title (CLI), question message and field title; signed-in pages and headers."""
    schema = {
        "type": "object",
        "properties": {"env": {"type": "string", "title": XSS_PAYLOAD, "enum": ["staging", "prod"]}},
    }
    created = instance.ask(XSS_SESSION, unique_request_id("xss"), XSS_PAYLOAD, schema)
    cookie = instance.sign_in()
    passed = created.status in (200, 201, 422)
    verdicts = [f"create {created.outcome}"]
    details = [
        f"question create: {created.outcome}; signed in as {PERSON[0]}",
        "headers wanted: CSP with frame-ancestors 'none' and no 'unsafe-inline' in script-src, "
        "X-Content-Type-Options: nosniff, Referrer-Policy",
    ]
    for path in ("/", f"/sessions/{XSS_SESSION}"):
        page = instance.page(path, cookie)
        in_markup, in_scripts = payload_places(page.body.decode("utf-8", "replace"))
        problems = header_problems(page)
        if in_markup or in_scripts:
            problems.insert(0, f"payload raw {in_markup}× in markup, {in_scripts}× in scripts")
        passed &= page.status == 200 and not problems
        verdicts.append(f"{path} {page.outcome}: " + (", ".join(problems) if problems else "ok"))
        details.append(
            f"GET {path}: {page.outcome}; "
            + (", ".join(problems) if problems else "payload escaped everywhere, headers present")
        )
    return Outcome(len(verdicts) + 1, "; ".join(verdicts), passed, details)


def raise_open_file_limit(wanted: int) -> tuple[int, int]:
    """Raises the soft RLIMIT_NOFILE toward `wanted` (within the hard limit); returns the previous limits."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if target > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
    return soft, hard


def attack_slowloris(instance: Instance, monitor: Monitor) -> Outcome:
    """Up to 3,000 connections each dripping a request line, one byte every 10 s for ~30 s."""
    previous = raise_open_file_limit(3000 + 512)
    sockets: list[socket.socket] = []
    try:
        limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
        count = max(0, min(3000, limit - 256))
        open_errors: collections.Counter = collections.Counter()
        open_deadline = time.monotonic() + 15
        while len(sockets) < count and time.monotonic() < open_deadline:
            try:
                connection = socket.create_connection((HOST, instance.port), timeout=2)
                connection.sendall(b"GET /healthz?slow=")
                connection.setblocking(False)
                sockets.append(connection)
            except OSError as error:
                open_errors[type(error).__name__] += 1
        opened, opened_at = len(sockets), time.monotonic()
        log(f"slowloris: {opened} connections open (soft fd limit {limit}), dripping")
        dropped: collections.Counter = collections.Counter()
        dropped_by_drip: list[str] = []
        drip_end = opened_at + 30
        while sockets and time.monotonic() < drip_end:
            time.sleep(max(0.0, min(10.0, drip_end - time.monotonic())))
            sockets, reasons = drip_one_byte(sockets)
            dropped.update(reasons)
            elapsed = time.monotonic() - opened_at
            dropped_by_drip.append(f"{sum(reasons.values())} gone at the drip after {elapsed:.0f} s")
        still_open = len(sockets)
    finally:
        for connection in sockets:
            connection.close()
        resource.setrlimit(resource.RLIMIT_NOFILE, previous)
    summary = (
        f"{opened} opened" + (f" (open errors {status_counts(open_errors)})" if open_errors else "")
        + f"; dropped by the server: {status_counts(dropped)}; {still_open} still open at the end"
    )
    details = [
        "connections are checked at each drip (every 10 s): " + ", ".join(dropped_by_drip),
        "own criterion: none beyond /healthz p99 and peak RSS",
    ]
    return Outcome(opened, summary, True, details)


def drip_one_byte(sockets: list[socket.socket]) -> tuple[list[socket.socket], collections.Counter]:
    """Sends one more byte on each connection; drops those the server closed, reset or answered, by reason."""
    poller = select.poll()
    for connection in sockets:
        poller.register(connection, select.POLLIN | select.POLLHUP | select.POLLERR)
    readable = {fd for fd, _event in poller.poll(0)}
    kept, reasons = [], collections.Counter()
    for connection in sockets:
        reason = None
        try:
            if connection.fileno() in readable:
                data = connection.recv(256)
                reason = f"answered {data.split()[1].decode()}" if data.startswith(b"HTTP/") else "closed"
            else:
                connection.send(b"a")
        except OSError as error:
            reason = "reset" if isinstance(error, ConnectionResetError) else type(error).__name__
        if reason is None:
            kept.append(connection)
        else:
            reasons[reason] += 1
            connection.close()
    return kept, reasons



def pattern_encodings(pattern: str) -> list[str]:
    """How a pattern may appear in a page: raw, JSON-escaped, HTML-escaped."""
    as_json = json.dumps(pattern)[1:-1]
    return sorted({pattern, as_json, as_json.replace("\\", "\\\\"), pattern.replace("&", "&amp;")})


def attack_redos_in_browser(instance: Instance, monitor: Monitor) -> Outcome:
    """Each catastrophic pattern in a question of its own: refused at create, or absent from the session page
    (its HTML and hydration data) that the browser would hand to `RegExp`."""
    created: dict[str, Reply] = {}
    for pattern in CATASTROPHIC_PATTERNS:
        schema = {
            "type": "object",
            "properties": {"value": {"type": "string", "pattern": pattern, "default": "a" * 40 + "!"}},
        }
        created[pattern] = instance.ask(PLAIN_SESSION, unique_request_id("redos"), "Browser ReDoS check", schema)
    statuses = collections.Counter(reply.outcome for reply in created.values())
    details = [
        f"{pattern}: create {reply.outcome}" + (f" ({reply.message()})" if reply.status == 422 else "")
        for pattern, reply in created.items()
    ]
    accepted = [pattern for pattern, reply in created.items() if reply.status in (200, 201)]
    passed = all(reply.status in (200, 201, 422) for reply in created.values())
    summary = f"create {status_counts(statuses)}"
    if accepted:
        page = instance.page(f"/sessions/{PLAIN_SESSION}", instance.sign_in())
        statuses["page " + str(page.outcome)] += 1
        html = page.body.decode("utf-8", "replace")
        handed = [p for p in accepted if any(encoding in html for encoding in pattern_encodings(p))]
        as_attribute = [p for p in accepted if f'pattern="{p}"' in html]
        passed &= page.status == 200 and not handed
        summary += f"; session page {page.outcome}: " + (
            f"hands {', '.join(handed)} to the browser" if handed else "accepted patterns not in the page"
        )
        if as_attribute:
            details.append(f"also as an <input pattern> attribute (native validation): {', '.join(as_attribute)}")
    details.append("browser not run: only the session page's HTML and hydration data were searched for the pattern")
    return Outcome(sum(statuses.values()), summary, passed, details)


def attack_limiter(instance: Instance, monitor: Monitor) -> Outcome:
    """Polls of distinct 16 KB unknown request ids on the token route: one rate-limiter key each."""
    token = instance.session_tokens[PLAIN_SESSION]
    prefix = f"GET /api/v1/s/{token}/elicitations/".encode()
    suffix = f" HTTP/1.1\r\nHost: {HOST}:{instance.port}\r\n\r\n".encode()

    def build(index: int) -> bytes:
        request_id = f"{index:08d}-" + os.urandom(8192).hex()[: 16 * 1024 - 9]
        return prefix + request_id.encode() + suffix

    result = flood(
        instance.port, build, total=30_000, max_seconds=60, workers=4, should_stop=monitor.rss_over_cap
    )
    time.sleep(1)
    growth = monitor.rss.growth
    summary = f"{status_counts(result.statuses)}; RSS +{mib(growth)}"
    details = [
        f"{result.sent} polls in {result.elapsed:.1f} s"
        + (f" (stopped: {result.stopped_early})" if result.stopped_early else ""),
        "criterion: RSS growth < 64 MiB",
    ]
    return Outcome(result.sent, summary, growth < 64 * MIB, details)


@dataclass(frozen=True)
class Attack:
    number: str
    name: str
    title: str
    run: Callable[[Instance, Monitor], Outcome]


ATTACKS = [
    Attack("1", "patterns", "1 backtracking patterns", attack_patterns),
    Attack("2", "metrics", "2 unbounded metric labels", attack_metrics),
    Attack("3", "signin", "3 sign-in flood", attack_sign_in),
    Attack("4", "xss", "4 stored XSS + headers", attack_xss),
    Attack("5", "slowloris", "5 slowloris", attack_slowloris),
    Attack("6", "redos", "6 ReDoS in the browser (HTML check)", attack_redos_in_browser),
    Attack("12", "limiter", "12 rate-limiter memory", attack_limiter),
]


# ---------------------------------------------------------------------------------------------------- runner


@dataclass
class Row:
    title: str
    requests: int
    summary: str
    healthz_p99: float | None
    peak_rss: int | None
    passed: bool
    details: list[str]

    def markdown(self) -> str:
        cells = [
            self.title,
            str(self.requests),
            self.summary.replace("|", "\\|"),
            seconds(self.healthz_p99),
            mib(self.peak_rss),
            "pass" if self.passed else "**fail**",
        ]
        return "| " + " | ".join(cells) + " |"


def run_attack(attack: Attack, options: argparse.Namespace) -> Row:
    """A fresh instance, the attack under the monitor, and the verdict; the server is always stopped."""
    log(f"{attack.title}: starting a fresh instance")
    instance: Instance | None = None
    try:
        instance = Instance(options.binary, options.site, options.postgres)
        instance.start()
        log(f"{attack.title}: server pid {instance.process.pid} on {instance.base}, attacking")
        with Monitor(instance) as monitor:
            outcome = attack.run(instance, monitor)
        p99, peak = monitor.healthz_p99, monitor.rss.peak
        alive = instance.alive()
        passed = (
            outcome.passed
            and alive
            and p99 is not None
            and p99 < HEALTHZ_P99_LIMIT_S
            and peak < PEAK_RSS_LIMIT
        )
        details = list(outcome.details)
        details.append(
            f"/healthz: {len(monitor.prober.latencies)} probes, {monitor.prober.failures} failed; "
            f"RSS baseline {mib(monitor.rss.baseline)}"
        )
        summary = outcome.summary if alive else f"SERVER DIED ({instance.log_tail(200)}); {outcome.summary}"
        return Row(attack.title, outcome.requests, summary, p99, peak, passed, details)
    except Exception as error:  # noqa: BLE001 — a broken attack is a failed row, never a crash of the run
        tail = [instance.log_tail()] if instance else []
        return Row(attack.title, 0, f"error: {error}", None, None, False, tail)
    finally:
        if instance:
            instance.stop()


def parse_options(argv: list[str]) -> argparse.Namespace:
    names = [attack.name for attack in ATTACKS] + [attack.number for attack in ATTACKS]
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--binary", required=True, help="the anteroom binary to attack")
    parser.add_argument("--site", help="passed as ANTEROOM_SITE_ROOT (the built browser bundle)")
    parser.add_argument("--postgres", metavar="URL", help="a loopback PostgreSQL; each instance gets its own schema")
    parser.add_argument("--only", choices=names, metavar="NAME", help=f"run one attack: {', '.join(names)}")
    options = parser.parse_args(argv)
    if not os.access(options.binary, os.X_OK):
        parser.error(f"{options.binary} is not an executable file")
    if options.site and not os.path.isdir(options.site):
        parser.error(f"{options.site} is not a folder")
    if options.postgres:
        check_loopback_postgres(options.postgres)
    return options


def main(argv: list[str]) -> int:
    options = parse_options(argv)
    # SIGTERM becomes SystemExit, so the `finally` that stops the server runs (Ctrl-C already does this).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    chosen = [attack for attack in ATTACKS if options.only in (None, attack.name, attack.number)]
    started = time.monotonic()
    rows = [run_attack(attack, options) for attack in chosen]
    print("| attack | requests sent | outcome summary (status counts) | /healthz p99 | peak RSS | pass/fail |")
    print("| --- | --- | --- | --- | --- | --- |")
    for row in rows:
        print(row.markdown())
    print()
    for row in rows:
        print(f"- {row.title}:")
        for detail in row.details:
            print(f"  - {detail}")
    backend = "PostgreSQL (a schema per instance)" if options.postgres else "SQLite (a file per instance)"
    print(
        f"\n{sum(row.passed for row in rows)}/{len(rows)} passed in {time.monotonic() - started:.0f} s on {backend}; "
        f"pass = /healthz p99 < 1 s, peak RSS < 256 MiB, and the attack's own criterion."
    )
    return 0 if all(row.passed for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
