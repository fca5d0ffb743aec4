// The one-file binary (`cargo xtask dist`; `cargo xtask test` packs the debug build the same way): copied into
// an empty folder and started there with nothing but its database URL and an address, it serves the pages and
// the browser bundle from inside itself, a person creates the first admin from the link it logs, the page
// hydrates, and a producer's question is answered on it.
// Its own server, not the worker's: the plain `test`.
import { expect, request as requestContext, test } from "@playwright/test";
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { copyFileSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomUUID } from "node:crypto";
import { deploySchema, live } from "./support";

const packed = process.env.ANTEROOM_ONEFILE_BINARY;
const port = Number(process.env.ANTEROOM_ONEFILE_PORT ?? 3139);
const baseURL = `http://127.0.0.1:${port}`;

test.describe("the one-file binary", () => {
  test.skip(!packed, "SKIPPED: ANTEROOM_ONEFILE_BINARY is not set (cargo xtask test packs one and sets it)");

  let folder = "";
  let server: ChildProcess | undefined;
  let setupLink: Promise<string>;
  const environment = () => ({
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    DATABASE_URL: "sqlite://anteroom.sqlite3",
    ANTEROOM_ADDR: `127.0.0.1:${port}`,
  });

  test.beforeAll(async () => {
    folder = mkdtempSync(join(tmpdir(), "anteroom-onefile-"));
    copyFileSync(packed!, join(folder, "anteroom"));
    spawnSync("chmod", ["755", join(folder, "anteroom")]);
    expect(readdirSync(folder)).toEqual(["anteroom"]);
    server = spawn("./anteroom", ["serve"], { cwd: folder, env: environment(), stdio: ["ignore", "ignore", "pipe"] });
    let log = "";
    setupLink = new Promise((resolve, reject) => {
      server!.stderr!.on("data", (chunk: Buffer) => {
        log += chunk.toString();
        const link = log.match(/(http:\/\/\S+\/setup\?token=\S+)/);
        if (link) resolve(link[1]);
      });
      server!.on("exit", (code) => reject(new Error(`the binary exited (${code}):\n${log}`)));
    });
    await setupLink;
  });

  test.afterAll(async () => {
    server?.kill("SIGTERM");
    if (folder) rmSync(folder, { recursive: true, force: true });
  });

  test("serves its own bundle from an empty folder, hydrates, and answers a producer", async ({ page }) => {
    const api = await requestContext.newContext({ baseURL });
    const ready = await (await api.get("/readyz")).json();
    expect(ready).toMatchObject({ status: "ready", database: "sqlite" });
    expect(ready.version).toMatch(/^\d+\.\d+\.\d+/);
    expect(ready.migration).toBeGreaterThan(0);

    // The bundle comes out of the binary, compressed, with its long cache life.
    const wasm: string[] = [];
    page.on("response", (response) => {
      if (response.url().endsWith("_bg.wasm") && response.status() === 200) {
        wasm.push(`${response.headers()["content-encoding"]} ${response.headers()["cache-control"]}`);
      }
    });

    await page.goto(await setupLink);
    await page.getByLabel("Username").fill("owner");
    await page.getByLabel("Password (at least 8 characters)").fill("onefile-password-1");
    await page.getByRole("button", { name: "Create and sign in" }).click();
    await expect(page.getByTestId("signed-in-as")).toContainText("owner");
    await live(page);
    expect(wasm.length).toBeGreaterThan(0);
    expect(new Set(wasm)).toEqual(new Set(["br public, max-age=31536000, immutable"]));

    // An API key from the same file, on the same database, while it serves.
    const key = spawnSync("./anteroom", ["apikey", "create", "--name", "onefile", "--role", "admin"], {
      cwd: folder,
      env: environment(),
      encoding: "utf8",
    });
    expect(key.status, key.stderr).toBe(0);
    const sessionId = `onefile-${randomUUID().slice(0, 8)}`;
    const created = await api.post("/api/v1/sessions", {
      headers: { Authorization: `Bearer ${key.stdout.trim()}` },
      data: { id: sessionId, title: "One file", agent: "claude-code" },
    });
    expect(created.status(), await created.text()).toBe(201);
    const token = (await created.json()).producer_token;
    const requestId = randomUUID();
    const asked = await api.post(`/api/v1/s/${token}/servers/shop-mcp/elicitations`, {
      data: {
        mode: "form",
        message: "Deploy from the one-file binary?",
        requestedSchema: deploySchema,
        _meta: { "com.pulsemcp/request-id": requestId, "com.pulsemcp/session-id": sessionId },
      },
    });
    expect(asked.status(), await asked.text()).toBe(201);

    const item = page.locator(`.queue-item[data-session-id="${sessionId}"]`);
    await expect(item).toBeVisible();
    await item.getByRole("link").click();
    await live(page);
    const banner = page.locator(".banner", { hasText: "Deploy from the one-file binary?" });
    await banner.getByRole("radio", { name: "production" }).check();
    await banner.getByLabel("Replicas").fill("2");
    await banner.getByRole("button", { name: "Accept" }).click();
    await expect(page.getByTestId("answer-notice")).toContainText("Your answer was recorded");

    const answer = await (await api.get(`/api/v1/s/${token}/elicitations/${requestId}`)).json();
    expect(answer.action).toBe("accept");
    expect(answer.content).toEqual({ env: "production", replicas: 2 });
    await api.dispose();
  });
});
