// One real `anteroom serve` per Playwright worker, on a fresh SQLite database of its own, with people and an
// API key created through the real command line first. A server per worker lets the spec files run on two
// workers at once without one test's questions and live events landing in another's queue.
import { test as base } from "@playwright/test";
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

/** Everyone signs in with this password (see support.ts for the people). */
export const PASSWORD = "e2e-password-1";

const binary = resolve(__dirname, "../../target/debug/anteroom");
const site = resolve(__dirname, "../../target/site");
const people: [string, string][] = [
  ["admin", "admin"],
  ["rita", "responder"],
  ["bob", "responder"],
  ["vic", "viewer"],
];

/** The ports of the worker this file is loaded in: its server's, and the SMTP server's of mail.spec.ts. */
export function workerPorts(): { http: number; smtp: number } {
  // Playwright numbers its running workers 0..workers-1 and reuses a number when it restarts a worker.
  const index = Number(process.env.TEST_PARALLEL_INDEX ?? 0);
  const http = 3140 + 10 * index;
  return { http, smtp: http + 1 };
}

export interface WorkerServer {
  url: string;
  dir: string;
}

function environment(dir: string, ports: { http: number; smtp: number }): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    ANTEROOM_ADDR: `127.0.0.1:${ports.http}`,
    ANTEROOM_SITE_ROOT: site,
    ANTEROOM_PASSWORD: PASSWORD,
    // The expiry sweep runs every two seconds, so an expired question shows up without a reload.
    ANTEROOM_EXPIRE_SCHEDULE: "*/2 * * * * *",
    // Pushes and their closing messages go out within a second (reach.spec.ts).
    ANTEROOM_WEBHOOK_SCHEDULE: "*/1 * * * * *",
    // Mail goes to mail.spec.ts's SMTP server on loopback.
    ANTEROOM_SMTP_URL: `smtp://127.0.0.1:${ports.smtp}`,
    ANTEROOM_SMTP_FROM: "Anteroom <anteroom@example.com>",
    // A push service on plain http on loopback is accepted only in development mode.
    ANTEROOM_DEVELOPMENT: "true",
    DATABASE_URL: `sqlite://${join(dir, "anteroom.sqlite3")}`,
    RUST_LOG: "warn",
  };
}

function command(env: NodeJS.ProcessEnv, args: string[]): string {
  const result = spawnSync(binary, args, { env, encoding: "utf8" });
  if (result.status !== 0) {
    throw new Error(`anteroom ${args.join(" ")} failed (${result.status}): ${result.stderr}`);
  }
  return result.stdout;
}

async function healthy(url: string, server: ChildProcess, log: () => string): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if (server.exitCode !== null) throw new Error(`anteroom serve exited (${server.exitCode}):\n${log()}`);
    try {
      if ((await fetch(`${url}/healthz`)).ok) return;
    } catch {
      // Not listening yet.
    }
    await new Promise((done) => setTimeout(done, 100));
  }
  throw new Error(`anteroom serve did not become healthy within 60 s:\n${log()}`);
}

export const test = base.extend<object, { workerServer: WorkerServer }>({
  workerServer: [
    // Playwright reads a fixture's dependencies from its first parameter, which must be a destructuring.
    // eslint-disable-next-line no-empty-pattern
    async ({}, use) => {
      const ports = workerPorts();
      const dir = mkdtempSync(join(tmpdir(), "anteroom-e2e-"));
      const env = environment(dir, ports);
      for (const [name, role] of people) command(env, ["user", "add", "--username", name, "--role", role]);
      writeFileSync(join(dir, "admin.key"), command(env, ["apikey", "create", "--name", "e2e", "--role", "admin"]));
      // support.ts reads the key from here; each worker is a process of its own.
      process.env.ANTEROOM_E2E_DIR = dir;
      const server = spawn(binary, ["serve"], { env, stdio: ["ignore", "ignore", "pipe"] });
      let log = "";
      server.stderr!.on("data", (chunk: Buffer) => {
        log = (log + chunk.toString()).slice(-20_000);
      });
      const url = `http://127.0.0.1:${ports.http}`;
      await healthy(url, server, () => log);
      await use({ url, dir });
      server.kill("SIGTERM");
      await new Promise((done) => (server.exitCode !== null ? done(null) : server.once("exit", done)));
      if (log.trim()) process.stderr.write(`anteroom serve (worker ${process.env.TEST_PARALLEL_INDEX}):\n${log}\n`);
      rmSync(dir, { recursive: true, force: true });
    },
    { scope: "worker", auto: true },
  ],
  baseURL: async ({ workerServer }, use) => use(workerServer.url),
});

export { expect } from "@playwright/test";
