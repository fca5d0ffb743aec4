// Passkeys in Chromium with its virtual authenticator (CDP WebAuthn): a person signed in with their password adds
// a passkey on the profile page, signs out, follows a push notification's "open" link to a question while signed
// out, signs in with the passkey in one touch and lands on the question; then removes the passkey, which no
// longer signs in. Browsers offer passkeys only to a domain name, so this spec starts its own Anteroom whose
// public URL is http://localhost:PORT beside the worker's.
import { expect, test, workerPorts, PASSWORD } from "./server";
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { randomUUID } from "node:crypto";
import type { BrowserContext, Page } from "@playwright/test";
import AxeBuilder from "@axe-core/playwright";

const binary = resolve(__dirname, "../../target/debug/anteroom");
const port = workerPorts().http + 3;
const url = `http://localhost:${port}`;

let anteroom: ChildProcess;
let dir: string;
let env: NodeJS.ProcessEnv;
let apiKey: string;

function cli(args: string[]): string {
  const result = spawnSync(binary, args, { env, encoding: "utf8" });
  expect(result.status, result.stderr).toBe(0);
  return result.stdout;
}

test.beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "anteroom-e2e-passkeys-"));
  env = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    ANTEROOM_ADDR: `127.0.0.1:${port}`,
    ANTEROOM_PUBLIC_URL: url,
    ANTEROOM_SITE_ROOT: resolve(__dirname, "../../target/site"),
    ANTEROOM_PASSWORD: PASSWORD,
    ANTEROOM_DEVELOPMENT: "true",
    DATABASE_URL: `sqlite://${join(dir, "anteroom.sqlite3")}`,
    RUST_LOG: "warn",
  };
  cli(["user", "add", "--username", "pat", "--role", "responder"]);
  apiKey = cli(["apikey", "create", "--name", "e2e", "--role", "admin"]).trim();
  anteroom = spawn(binary, ["serve"], { env, stdio: "ignore" });
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    try {
      if ((await fetch(`http://127.0.0.1:${port}/healthz`)).ok) return;
    } catch {
      // Not listening yet.
    }
    await new Promise((done) => setTimeout(done, 100));
  }
  throw new Error("anteroom serve (for passkeys) did not become healthy within 30 s");
});

test.afterAll(async () => {
  anteroom?.kill("SIGTERM");
  if (anteroom) await new Promise((done) => (anteroom.exitCode !== null ? done(null) : anteroom.once("exit", done)));
  rmSync(dir, { recursive: true, force: true });
});

/** A browser with a platform authenticator that verifies its user (a fingerprint, say) without asking. */
async function withAuthenticator(context: BrowserContext, page: Page): Promise<void> {
  const cdp = await context.newCDPSession(page);
  await cdp.send("WebAuthn.enable");
  await cdp.send("WebAuthn.addVirtualAuthenticator", {
    options: {
      protocol: "ctap2",
      transport: "internal",
      hasResidentKey: true,
      hasUserVerification: true,
      isUserVerified: true,
      automaticPresenceSimulation: true,
    },
  });
}

/** The page as it is now has no accessibility violation of impact serious or critical (axe-core). */
async function accessible(page: Page): Promise<void> {
  const results = await new AxeBuilder({ page }).analyze();
  const serious = results.violations.filter((violation) => violation.impact === "serious" || violation.impact === "critical");
  expect(serious.map((violation) => `${violation.id} at ${violation.nodes[0]?.target.join(" ")}`)).toEqual([]);
}

/** A question on a session of its own, asked through the producer API; the session's page path. */
async function question(): Promise<string> {
  const id = `e2e-${randomUUID().slice(0, 8)}`;
  const created = await fetch(`${url}/api/v1/sessions`, {
    method: "POST",
    headers: { Authorization: `Bearer ${apiKey}`, "Content-Type": "application/json" },
    body: JSON.stringify({ id, title: "Passkey deploy", agent: "claude-code" }),
  });
  expect(created.status).toBe(201);
  const { producer_token: token } = await created.json();
  const asked = await fetch(`${url}/api/v1/s/${token}/servers/shop-mcp/elicitations`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({
      mode: "form",
      message: "Deploy the passkey release?",
      requestedSchema: { type: "object", properties: { ok: { type: "boolean" } }, required: ["ok"] },
      _meta: { "com.pulsemcp/request-id": randomUUID(), "com.pulsemcp/session-id": id },
    }),
  });
  expect(asked.status).toBe(201);
  return `/sessions/${id}`;
}

test("a person adds a passkey, signs in with it from a notification's link, and removes it", async ({ browser }) => {
  const context = await browser.newContext();
  const page = await context.newPage();
  await withAuthenticator(context, page);

  await page.goto(`${url}/login?next=%2Fprofile`);
  await page.getByLabel("Username").fill("pat");
  await page.getByLabel("Password").fill(PASSWORD);
  await page.getByRole("button", { name: "Sign in", exact: true }).click();
  await expect(page).toHaveURL(`${url}/profile`);
  await page.getByLabel("Name").fill("Pat's phone");
  await page.getByRole("button", { name: "Add a passkey" }).click();
  const passkeys = page.getByTestId("passkeys");
  await expect(passkeys).toContainText("Pat's phone");
  await accessible(page);

  // Signed out, the phone opens a push notification's link to the question: sign-in first, with the passkey.
  await page.getByTestId("sign-ins").getByRole("button", { name: "Sign out" }).click();
  await expect(page).toHaveURL(/\/login/);
  const path = await question();
  await page.goto(`${url}${path}`);
  await expect(page).toHaveURL(/\/login\?next=/);
  await accessible(page);
  await page.getByRole("button", { name: "Sign in with a passkey" }).click();
  await expect(page).toHaveURL(`${url}${path}`);
  await expect(page.getByText("Deploy the passkey release?").first()).toBeVisible();

  // Removed, the passkey signs no one in.
  await page.goto(`${url}/profile`);
  await expect(passkeys).toContainText("last used");
  await passkeys.getByRole("button", { name: "Remove" }).click();
  await expect(page).toHaveURL(`${url}/profile`);
  await expect(page.getByTestId("passkeys")).not.toContainText("Pat's phone");
  await context.clearCookies();
  await page.goto(`${url}/login`);
  await page.getByRole("button", { name: "Sign in with a passkey" }).click();
  await expect(page.locator("#passkey-status")).toContainText("not known here");
  await context.close();
});

test("a browser that cannot use passkeys is not offered them", async ({ browser }) => {
  const context = await browser.newContext();
  await context.addInitScript(() => {
    delete (window as { PublicKeyCredential?: unknown }).PublicKeyCredential;
  });
  const page = await context.newPage();
  await page.goto(`${url}/login`);
  await expect(page.getByRole("button", { name: "Sign in", exact: true })).toBeVisible();
  await expect(page.getByRole("button", { name: "Sign in with a passkey" })).toBeHidden();
  await context.close();
});
