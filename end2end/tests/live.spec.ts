import { expect, test } from "./server";
import { ask, createSession, deploySchema, live, poll, signIn } from "./support";

test("a question nobody answers expires honestly and the session page says what was lost", async ({
  page,
  request,
}) => {
  test.setTimeout(60_000);
  const session = await createSession(request, "Expiry");
  // The asking server stops waiting in six seconds: the question ends for people then too.
  const requestId = await ask(request, session, "Approve the database migration?", deploySchema, {
    tool: "migrate_db",
    expiresAt: new Date(Date.now() + 6_000).toISOString(),
  });
  await signIn(page, "rita", `/sessions/${session.id}`);
  await live(page);
  await expect(page.locator(".banner")).toHaveCount(1);
  await expect(page.locator(".banner").getByTestId("countdown")).toContainText("the asking server stops waiting in");

  const lost = page.getByTestId("lost-banner");
  await expect(lost).toBeVisible({ timeout: 20_000 });
  await expect(page.locator(".banner")).toHaveCount(0);
  await expect(lost).toHaveAttribute("data-reason", "asker_stopped");
  await expect(lost).toContainText("The asking server stopped waiting");
  await expect(lost.getByTestId("lost-detail")).toContainText("nobody had answered by then");
  await expect(lost.locator(".lost-summary")).toHaveText("migrate_db: Approve the database migration?");
  await expect(page.locator(".history-entry")).toContainText("Expired unanswered");
  expect((await poll(request, session, requestId)).action).toBe("expired");

  await page.goto("/");
  await expect(page.locator(`[data-section="lost"] [data-session-id="${session.id}"]`)).toBeVisible();
});

test("keyboard: j and k move through the queue, Enter opens, Ctrl+Enter accepts, Esc leaves a field", async ({
  page,
  request,
}) => {
  const first = await createSession(request, "Keyboard one");
  await ask(request, first, "First question", deploySchema);
  const second = await createSession(request, "Keyboard two");
  const requestId = await ask(request, second, "Second question", {
    type: "object",
    properties: { reason: { type: "string", title: "Reason" } },
  });
  await signIn(page, "rita");
  await live(page);

  const links = page.locator("[data-queue-link]");
  await page.keyboard.press("j");
  await expect(links.first()).toBeFocused();
  const waiting = page.locator('[data-section="waiting"] [data-queue-link]');
  const count = await waiting.count();
  for (let i = 1; i < count; i++) await page.keyboard.press("j");
  await expect(page.locator(`[data-session-id="${second.id}"] a`)).toBeFocused();
  await page.keyboard.press("k");
  await page.keyboard.press("j");
  await page.keyboard.press("Enter");
  await expect(page).toHaveURL(new RegExp(`/sessions/${second.id}$`));
  await live(page);

  const reason = page.getByLabel("Reason");
  await reason.fill("looks right");
  await page.keyboard.press("Escape");
  await expect(reason).not.toBeFocused();
  await reason.focus();
  await page.keyboard.press("Control+Enter");
  await expect(page.getByTestId("answer-notice")).toContainText("Your answer was recorded");
  expect((await poll(request, second, requestId)).content).toEqual({ reason: "looks right" });
});

test("a new question in a background tab raises a notification that opens its session", async ({
  browser,
  request,
}) => {
  // Closed at the end, so its page does not keep running in later tests.
  const context = await browser.newContext();
  try {
    await context.grantPermissions(["notifications"]);
    const page = await context.newPage();
    // Record notifications instead of showing them, and let the page believe it is in the background.
    await page.addInitScript(() => {
      const shown: { title: string; body: string; click: () => void }[] = [];
      (window as any).__notifications = shown;
      class RecordingNotification {
        static permission = "granted";
        static requestPermission = async () => "granted";
        onclick: (() => void) | null = null;
        constructor(title: string, options: { body: string }) {
          shown.push({ title, body: options.body, click: () => this.onclick?.() });
        }
      }
      (window as any).Notification = RecordingNotification;
      Object.defineProperty(document, "hidden", { get: () => true });
    });
    await signIn(page, "rita");
    await live(page);

    const session = await createSession(request, "Background");
    await ask(request, session, "Are you there?", deploySchema);
    await expect
      .poll(() => page.evaluate(() => (window as any).__notifications.map((n: any) => n.body)), { timeout: 3_000 })
      .toContain(`Session ${session.id} has a new question.`);
    await page.evaluate(() => (window as any).__notifications.at(-1).click());
    await expect(page).toHaveURL(new RegExp(`/sessions/${session.id}$`));
  } finally {
    await context.close();
  }
});

test("a form being filled in survives live updates of its page", async ({ page, request }) => {
  const session = await createSession(request, "Typing");
  await ask(request, session, "What should the release be called?", {
    type: "object",
    properties: { name: { type: "string", title: "Release name" } },
  });
  await signIn(page, "rita", `/sessions/${session.id}`);
  await live(page);
  const field = page.getByLabel("Release name");
  await field.fill("Half-typed");
  await page.evaluate(() => {
    (window as any).__field = document.activeElement;
  });

  // Another question in this session and one elsewhere: the page updates around the form.
  await ask(request, session, "And the version number?", deploySchema);
  await expect(page.locator(".banner")).toHaveCount(2, { timeout: 2_000 });
  const other = await createSession(request, "Elsewhere");
  await ask(request, other, "Unrelated", deploySchema);
  await page.waitForTimeout(500);

  await expect(field).toHaveValue("Half-typed");
  expect(await page.evaluate(() => (window as any).__field.isConnected)).toBe(true);
});

test("the queue comes with the event stream, and a session page fetches again only for its own session", async ({
  page,
  request,
}) => {
  const watched = await createSession(request, "The watched session");
  const elsewhere = await createSession(request, "Another session");
  const fetched = { queue: 0, session: 0 };
  page.on("request", (sent) => {
    if (sent.url().includes("/fn/queue")) fetched.queue += 1;
    if (sent.url().includes("/fn/session")) fetched.session += 1;
  });

  await signIn(page, "rita");
  await live(page);
  await ask(request, elsewhere, "A question for the queue", deploySchema);
  await expect(page.locator(`.queue-item[data-session-id="${elsewhere.id}"]`)).toContainText(
    "A question for the queue",
  );
  // At most the one read after connecting: the new question came as the queue itself, not as a refetch.
  expect(fetched.queue).toBeLessThanOrEqual(1);

  await ask(request, watched, "Is this the watched question?", deploySchema);
  // The page reads its session again once its stream connects; count from after that read.
  const connected = page.waitForResponse((reply) => reply.url().includes("/fn/session"));
  await page.goto(`/sessions/${watched.id}`);
  await live(page);
  await connected;
  const before = fetched.session;
  // Events arrive in order: by the time the watched session's second banner shows, the other session's two
  // events (asked, session changed) have been heard. Only the watched session's two may fetch.
  await ask(request, elsewhere, "Another question elsewhere", deploySchema);
  await ask(request, watched, "And a second watched question?", deploySchema);
  await expect(page.locator(".banner")).toHaveCount(2);
  expect(fetched.session - before).toBeGreaterThanOrEqual(1);
  expect(fetched.session - before).toBeLessThanOrEqual(2);
});

test("a page opened in a background tab goes live without being shown, so it can notify", async ({ page }) => {
  // A hidden tab paints nothing and runs no animation frame until someone looks at it.
  await page.addInitScript(() => {
    Object.defineProperty(document, "visibilityState", { get: () => "hidden" });
    window.requestAnimationFrame = () => 0;
  });
  await signIn(page, "rita");
  await live(page);
});
