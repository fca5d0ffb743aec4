// Playwright drives Debian's Chromium against real `anteroom serve` processes: one per worker, each on a fresh
// temporary database with people and an API key created through the real command line (tests/server.ts).
import { defineConfig } from "@playwright/test";

export default defineConfig({
  testDir: "./tests",
  // Two workers, each with its own server: a spec file's tests run in order on one worker, and the files are
  // shared out between the two. ANTEROOM_E2E_WORKERS=1 runs everything on one server, one test at a time.
  workers: Number(process.env.ANTEROOM_E2E_WORKERS ?? 2),
  fullyParallel: false,
  forbidOnly: !!process.env.CI,
  retries: 0,
  timeout: 30_000,
  expect: { timeout: 5_000 },
  reporter: [["list"]],
  use: {
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
});
