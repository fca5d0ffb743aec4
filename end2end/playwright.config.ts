// Playwright drives Debian's Chromium against a real `anteroom serve` on a fresh temporary database, with
// people and an API key created through the real command line first.
import { defineConfig } from "@playwright/test";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const port = Number(process.env.ANTEROOM_E2E_PORT ?? 3137);
const baseURL = `http://127.0.0.1:${port}`;
// Workers load this file again: the folder made by the main process is passed down in the environment.
const dataDir = process.env.ANTEROOM_E2E_DIR ?? mkdtempSync(join(tmpdir(), "anteroom-e2e-"));
process.env.ANTEROOM_E2E_DIR = dataDir;

// Everyone signs in with this password (see tests/support.ts for the people).
const password = "e2e-password-1";
const binary = "../target/debug/anteroom";
const people = [
  ["admin", "admin"],
  ["rita", "responder"],
  ["bob", "responder"],
  ["vic", "viewer"],
]
  .map(([name, role]) => `${binary} user add --username ${name} --role ${role}`)
  .join(" && ");

export default defineConfig({
  testDir: "./tests",
  workers: 1,
  fullyParallel: false,
  forbidOnly: !!process.env.CI,
  retries: 0,
  timeout: 30_000,
  expect: { timeout: 5_000 },
  reporter: [["list"]],
  use: {
    baseURL,
    browserName: "chromium",
    trace: "retain-on-failure",
    launchOptions: {
      executablePath: process.env.ANTEROOM_CHROMIUM ?? "/usr/bin/chromium",
      args: [
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
      ],
    },
  },
  webServer: {
    command: `sh -c '${people} && ${binary} apikey create --name e2e --role admin > "${join(dataDir, "admin.key")}" && exec ${binary} serve'`,
    url: `${baseURL}/healthz`,
    reuseExistingServer: false,
    timeout: 60_000,
    stdout: "pipe",
    stderr: "pipe",
    env: {
      ANTEROOM_ADDR: `127.0.0.1:${port}`,
      ANTEROOM_SITE_ROOT: "../target/site",
      ANTEROOM_PASSWORD: password,
      // The expiry sweep runs every two seconds, so an expired question shows up without a reload.
      ANTEROOM_EXPIRE_SCHEDULE: "*/2 * * * * *",
      // Pushes and their closing messages go out within a second (tests/reach.spec.ts).
      ANTEROOM_WEBHOOK_SCHEDULE: "*/1 * * * * *",
      // Mail goes to tests/mail.spec.ts's SMTP server on loopback.
      ANTEROOM_SMTP_URL: `smtp://127.0.0.1:${process.env.ANTEROOM_E2E_SMTP_PORT ?? 3138}`,
      ANTEROOM_SMTP_FROM: "Anteroom <anteroom@example.com>",
      // A push service on plain http on loopback is accepted only in development mode.
      ANTEROOM_DEVELOPMENT: "true",
      DATABASE_URL: `sqlite://${join(dataDir, "anteroom.sqlite3")}`,
      RUST_LOG: "warn",
    },
  },
});
