// Push from the person's side: the page links the manifest and registers /sw.js; the profile page saves this
// browser's subscription; a question then reaches a push service on loopback, encrypted for the browser
// (decrypted here with Node's own crypto, independently of the server's Rust), and delivered to the service
// worker through the DevTools protocol it shows the notification with the question's buttons; its "Yes"
// answers the question through the single-use token, and the question's end closes the notification.
import { type Page } from "@playwright/test";
import { expect, test } from "./server";
import { createServer, type Server } from "node:http";
import { createDecipheriv, createECDH, hkdfSync, randomBytes } from "node:crypto";
import { ask, createSession, live, signIn, waitForAnswer } from "./support";

interface PushService {
  url: string;
  bodies: Buffer[];
  server: Server;
}

/** A push service on loopback that keeps every message's body. */
async function pushService(): Promise<PushService> {
  const bodies: Buffer[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      bodies.push(Buffer.concat(chunks));
      response.writeHead(201).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (!address || typeof address === "string") throw new Error("no address");
  return { url: `http://127.0.0.1:${address.port}/push/e2e`, bodies, server };
}

const base64url = (bytes: Buffer) => bytes.toString("base64url");

/** RFC 8291 and RFC 8188 (`aes128gcm`, one record) with the browser's key. */
function decrypt(body: Buffer, browser: ReturnType<typeof createECDH>, auth: Buffer): unknown {
  const salt = body.subarray(0, 16);
  const idLength = body[20];
  const senderKey = body.subarray(21, 21 + idLength);
  const record = body.subarray(21 + idLength);
  const shared = browser.computeSecret(senderKey);
  const keyInfo = Buffer.concat([Buffer.from("WebPush: info\0"), browser.getPublicKey(), senderKey]);
  const ikm = Buffer.from(hkdfSync("sha256", shared, auth, keyInfo, 32));
  const key = Buffer.from(hkdfSync("sha256", ikm, salt, Buffer.from("Content-Encoding: aes128gcm\0"), 16));
  const nonce = Buffer.from(hkdfSync("sha256", ikm, salt, Buffer.from("Content-Encoding: nonce\0"), 12));
  const decipher = createDecipheriv("aes-128-gcm", key, nonce);
  decipher.setAuthTag(record.subarray(record.length - 16));
  const padded = Buffer.concat([decipher.update(record.subarray(0, record.length - 16)), decipher.final()]);
  let end = padded.length - 1;
  while (end > 0 && padded[end] === 0) end--;
  expect(padded[end], "the last record's delimiter").toBe(2);
  return JSON.parse(padded.subarray(0, end).toString("utf8"));
}

async function shownNotifications(page: Page) {
  return page.evaluate(async () => {
    const registration = await navigator.serviceWorker.ready;
    const shown = await registration.getNotifications();
    return shown.map((n) => ({ title: n.title, body: n.body, tag: n.tag, actions: (n.actions ?? []).map((a) => a.title) }));
  });
}

test("a question pushed to this browser is answered from its notification's button", async ({ page, request, context }) => {
  test.setTimeout(60_000);
  const service = await pushService();
  await context.grantPermissions(["notifications"]);
  await signIn(page, "bob", "/profile");
  await expect(page.getByRole("heading", { name: "How questions reach you" })).toBeVisible();
  await expect(page.locator('link[rel="manifest"]')).toHaveAttribute("href", "/manifest.webmanifest");
  const manifest = await (await request.get("/manifest.webmanifest")).json();
  expect(manifest.display).toBe("standalone");
  const scope = await page.evaluate(async () => (await navigator.serviceWorker.ready).scope);
  expect(scope).toBe(new URL("/", page.url()).href);

  // This browser's keys; the page saves the subscription as the signed-in person, with its CSRF token.
  const browser = createECDH("prime256v1");
  browser.generateKeys();
  const auth = randomBytes(16);
  const csrf = await page.locator("#push-on").getAttribute("data-csrf");
  const saved = await page.evaluate(
    async ({ endpoint, p256dh, auth, csrf }) => {
      const response = await fetch("/api/v1/push/subscriptions", {
        method: "POST",
        headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf ?? "" },
        body: JSON.stringify({ endpoint, keys: { p256dh, auth }, device: "Playwright Chromium" }),
      });
      return response.status;
    },
    { endpoint: service.url, p256dh: base64url(browser.getPublicKey()), auth: base64url(auth), csrf },
  );
  expect(saved).toBe(201);
  await page.reload();
  await expect(page.locator(".browsers li")).toContainText("Playwright Chromium");

  const session = await createSession(request, "Pushed release");
  const requestId = await ask(request, session, "Ship the release to production?\nAll checks passed.", {
    type: "object",
    properties: { ok: { type: "boolean", title: "Ship it" } },
  });
  // Every message this browser can read (other tests' questions may close notifications here too).
  type Message = Record<string, unknown> & { actions: { title: string }[] };
  const received = () =>
    service.bodies.flatMap((body) => {
      try {
        return [decrypt(body, browser, auth) as Message];
      } catch {
        return [];
      }
    });
  const question = () => received().find((m) => m.kind === "question" && m.body === "Ship the release to production?");
  await expect.poll(() => question() !== undefined, { timeout: 20_000 }).toBe(true);
  const message = question()!;
  expect(message.kind).toBe("question");
  expect(message.body).toBe("Ship the release to production?");
  expect(message.actions.map((action) => action.title)).toEqual(["Yes", "No"]);

  // The push service hands the message to the service worker.
  const cdp = await context.newCDPSession(page);
  const registrationId = new Promise<string>((resolve) => {
    cdp.on("ServiceWorker.workerRegistrationUpdated", ({ registrations }) => {
      const ours = registrations.find((registration: { scopeURL: string }) => registration.scopeURL === scope);
      if (ours) resolve(ours.registrationId);
    });
  });
  await cdp.send("ServiceWorker.enable");
  const deliver = async (data: unknown) =>
    cdp.send("ServiceWorker.deliverPushMessage", {
      origin: new URL(scope).origin,
      registrationId: await registrationId,
      data: JSON.stringify(data),
    });
  // A delivery through DevTools is now and then not shown at all in a full run (3 times in about 15 runs, never
  // alone; with no error, and not after 20 s either): delivered again, as a push service retries an
  // unacknowledged message, at most three times, and said on the log. None shown after three fails the test.
  let shown: Awaited<ReturnType<typeof shownNotifications>> = [];
  for (let attempt = 1; attempt <= 3 && shown.length === 0; attempt++) {
    if (attempt > 1) console.warn(`reach.spec: the push was not shown; delivering it again (attempt ${attempt})`);
    await deliver(message);
    await expect
      .poll(async () => (await shownNotifications(page)).length, { timeout: 7_000 })
      .toBe(1)
      .catch(() => undefined);
    shown = await shownNotifications(page);
  }
  expect(shown).toEqual([
    { title: "shop-mcp asks (deploy)", body: "Ship the release to production?", tag: message.tag, actions: ["Yes", "No"] },
  ]);

  // The person presses "Yes": the worker's click handler (what its `notificationclick` runs; a test cannot
  // press an operating system's notification) posts the button's token.
  const worker = context.serviceWorkers().find((candidate) => candidate.url().endsWith("/sw.js"));
  expect(worker, "the service worker runs").toBeTruthy();
  await worker!.evaluate(async () => {
    const scope = self as unknown as ServiceWorkerGlobalScope & {
      clicked: (notification: Notification, action: string) => Promise<unknown>;
    };
    const [notification] = await scope.registration.getNotifications();
    await scope.clicked(notification, "answer-0");
  });
  const answer = await waitForAnswer(request, session, requestId);
  expect(answer.action).toBe("accept");
  expect(answer.content).toEqual({ ok: true });
  await expect.poll(async () => (await shownNotifications(page)).map((n) => n.title)).toEqual(["Answered \u201cYes\u201d"]);

  // The question's end closes its notification.
  const closing = () => received().find((m) => m.kind === "close" && m.tag === message.tag);
  await expect.poll(() => closing() !== undefined, { timeout: 20_000 }).toBe(true);
  const close = closing();
  expect(close).toEqual({ kind: "close", tag: message.tag });
  await deliver(close);
  await expect.poll(() => shownNotifications(page)).toEqual([]);

  // Push off again: other tests' questions never reach this closed service.
  await page.reload();
  await live(page);
  await page.locator(".browsers li").getByRole("button", { name: "Remove" }).click();
  await expect(page.getByText("Push is not on in any browser.")).toBeVisible();
  service.server.close();
});
