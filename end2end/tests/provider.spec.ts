// Sign-in through a real OpenID Connect provider (npm oidc-provider, wrap/tests/sdk/oidc_provider.mjs) in
// Chromium: the sign-in page's "Sign in with Acme SSO", the provider's own login form, and back in Anteroom with
// the role and groups the provider's groups map to; moved out of the group at the provider, the person's next
// sign-in takes the group and the right to answer away. This spec starts its own Anteroom (the provider's issuer
// must be known when it starts) beside the worker's.
import { expect, test, workerPorts } from "./server";
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";

const binary = resolve(__dirname, "../../target/debug/anteroom");
const sdk = resolve(__dirname, "../../wrap/tests/sdk");
const CLIENT_ID = "anteroom-e2e";
const CLIENT_SECRET = "an-e2e-client-secret-long-enough";

const accounts = {
  alice: { email: "alice@example.com", email_verified: true, preferred_username: "alice", groups: ["sre"] },
};

let provider: ChildProcess;
let issuer: string;
let anteroom: ChildProcess;
let dir: string;
let env: NodeJS.ProcessEnv;
const url = `http://127.0.0.1:${workerPorts().http + 2}`;

function groups(): string {
  const listed = spawnSync(binary, ["group", "list"], { env, encoding: "utf8" });
  expect(listed.status).toBe(0);
  return listed.stdout;
}

async function putAtProvider(path: string, body: unknown) {
  const reply = await fetch(`${issuer}${path}`, { method: "PUT", body: JSON.stringify(body) });
  expect(reply.status).toBe(204);
}

test.beforeAll(async () => {
  provider = spawn(process.execPath, [join(sdk, "oidc_provider.mjs")], {
    cwd: sdk,
    env: { ...process.env, OIDC_TEST_ACCOUNTS: JSON.stringify(accounts) },
    stdio: ["ignore", "pipe", "ignore"],
  });
  const firstLine = await new Promise<string>((done) => createInterface({ input: provider.stdout! }).once("line", done));
  issuer = JSON.parse(firstLine).issuer;
  dir = mkdtempSync(join(tmpdir(), "anteroom-e2e-oidc-"));
  env = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    ANTEROOM_ADDR: url.replace("http://", ""),
    ANTEROOM_SITE_ROOT: resolve(__dirname, "../../target/site"),
    ANTEROOM_DEVELOPMENT: "true",
    DATABASE_URL: `sqlite://${join(dir, "anteroom.sqlite3")}`,
    ANTEROOM_OIDC_ISSUER: issuer,
    ANTEROOM_OIDC_CLIENT_ID: CLIENT_ID,
    ANTEROOM_OIDC_CLIENT_SECRET: CLIENT_SECRET,
    ANTEROOM_OIDC_GROUPS: "sre=responder:sre",
    // This provider ties the groups claim to a `groups` scope, as Okta can.
    ANTEROOM_OIDC_SCOPES: "openid email profile groups",
    ANTEROOM_OIDC_NAME: "Acme SSO",
    RUST_LOG: "warn",
  };
  anteroom = spawn(binary, ["serve"], { env, stdio: "ignore" });
  await putAtProvider("/test/client", {
    client_id: CLIENT_ID,
    client_secret: CLIENT_SECRET,
    redirect_uri: `${url}/auth/oidc/callback`,
  });
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    try {
      if ((await fetch(`${url}/healthz`)).ok) return;
    } catch {
      // Not listening yet.
    }
    await new Promise((done) => setTimeout(done, 100));
  }
  throw new Error("anteroom serve (with the provider) did not become healthy within 30 s");
});

test.afterAll(async () => {
  anteroom?.kill("SIGTERM");
  provider?.kill("SIGTERM");
  await new Promise((done) => (anteroom.exitCode !== null ? done(null) : anteroom.once("exit", done)));
  rmSync(dir, { recursive: true, force: true });
});

async function signInAtProvider(page: import("@playwright/test").Page) {
  await page.goto(`${url}/`);
  await expect(page).toHaveURL(/\/login\?next=/);
  await page.getByRole("link", { name: "Sign in with Acme SSO" }).click();
  // The provider's own development login form: any password for a known account.
  await page.locator('input[name="login"]').fill("alice");
  await page.locator('input[name="password"]').fill("anything");
  await page.getByRole("button", { name: "Sign-in" }).click();
  await expect(page).toHaveURL(`${url}/`);
  await expect(page.getByTestId("signed-in-as")).toContainText("alice");
}

test("a person signs in through the provider, and their provider groups decide what they may do", async ({ browser }) => {
  const context = await browser.newContext();
  const page = await context.newPage();
  await signInAtProvider(page);
  await expect(page.getByTestId("signed-in-as")).toContainText("responder");
  expect(groups()).toContain("sre: alice");
  await context.close();

  // Out of the sre group at the provider: the next sign-in takes the group and the responder role away.
  await putAtProvider("/test/accounts/alice", { ...accounts.alice, groups: [] });
  const again = await browser.newContext();
  const next = await again.newPage();
  await signInAtProvider(next);
  await expect(next.getByTestId("signed-in-as")).toContainText("viewer");
  expect(groups()).not.toContain("alice");
  await again.close();
});
