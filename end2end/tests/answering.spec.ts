import { expect, test } from "./server";
import { ask, createSession, deploySchema, live, poll, signIn, waitForAnswer } from "./support";

test("a question appears live on the queue and the session page, and the answer reaches the producer", async ({
  page,
  request,
}) => {
  const session = await createSession(request, "Ship the web shop");
  await signIn(page, "rita");
  await live(page);

  // Its own words: an identical question still open from another test would be merged with it into one card.
  const requestId = await ask(request, session, `Which environment should I deploy to? (${session.id})`, deploySchema);
  // No reload: the event stream brings it.
  const item = page.locator(`.queue-item[data-session-id="${session.id}"]`);
  await expect(item).toBeVisible({ timeout: 2_000 });
  await expect(item).toContainText("Which environment should I deploy to?");
  await expect(item).toContainText("shop-mcp · tool deploy");
  await expect(item.getByTestId("countdown")).toContainText(/expires in (59|60) min/);
  await expect(page).toHaveTitle(/^\(\d+\) Anteroom$/);

  await item.getByRole("link").click();
  await expect(page).toHaveURL(new RegExp(`/sessions/${session.id}$`));
  await live(page);
  const banner = page.locator(".banner");
  await expect(banner).toHaveCount(1);
  await expect(banner).toContainText("shop-mcp · tool deploy asks");

  // A second question arrives on the open session page without a reload.
  const second = await ask(request, session, "Also purge the CDN cache?", {
    type: "object",
    properties: { purge: { type: "boolean", title: "Purge", default: false } },
  });
  await expect(banner).toHaveCount(2, { timeout: 2_000 });

  const first = page.locator(".banner", { hasText: "Which environment" });
  await first.getByRole("radio", { name: "production" }).check();
  await first.getByLabel("Replicas").fill("3");
  await first.getByRole("button", { name: "Accept" }).click();
  await expect(page.getByTestId("answer-notice")).toContainText("Your answer was recorded");
  await expect(page.locator(".banner")).toHaveCount(1);

  const answer = await waitForAnswer(request, session, requestId);
  expect(answer.action).toBe("accept");
  expect(answer.content).toEqual({ env: "production", replicas: 3 });
  expect((await poll(request, session, second)).action).toBe("pending");

  const history = page.locator(".history-entry").filter({ hasText: "Which environment" });
  await expect(history).toContainText("Accepted");
  await expect(history).toContainText("by rita");
  // The answer as the person gave it: the form's labels and the choice's words, with the JSON one click away.
  const answered = history.locator(".history-answer dl");
  await expect(answered.locator("dt", { hasText: "Replicas" })).toBeVisible();
  await expect(answered.locator("dd", { hasText: /^3$/ })).toBeVisible();
  await expect(history.locator(".history-answer details code")).not.toBeVisible();
  await history.getByText("Show JSON").click();
  await expect(history.locator(".history-answer details code")).toContainText('"replicas":3');
});

test("decline and dismiss reach the producer as decline and cancel, with no content", async ({ page, request }) => {
  const session = await createSession(request, "Delete old branches");
  const toDecline = await ask(request, session, "Delete 40 stale branches?", deploySchema);
  const toDismiss = await ask(request, session, "And the tags too?", deploySchema);
  await signIn(page, "rita", `/sessions/${session.id}`);
  await live(page);

  await page.locator(".banner", { hasText: "stale branches" }).getByRole("button", { name: "Decline" }).click();
  await expect(page.getByTestId("answer-notice")).toContainText("You declined");
  await page.locator(".banner", { hasText: "tags too" }).getByRole("button", { name: "Dismiss" }).click();
  await expect(page.getByTestId("answer-notice")).toContainText("You dismissed");
  await expect(page.locator(".banner")).toHaveCount(0);

  const declined = await waitForAnswer(request, session, toDecline);
  expect(declined.action).toBe("decline");
  expect(declined.content).toBeNull();
  const dismissed = await waitForAnswer(request, session, toDismiss);
  expect(dismissed.action).toBe("cancel");
  expect(dismissed.content).toBeNull();
});

test("an answer in one browser removes the banner in another; a late second answer shows the winner", async ({
  browser,
  request,
}) => {
  const session = await createSession(request, "Rotate the API keys");
  const requestId = await ask(request, session, "Rotate the production keys now?", deploySchema);
  const path = `/sessions/${session.id}`;

  // Three browsers, closed at the end so their pages do not keep running (and reconnecting) in later tests.
  const contexts = await Promise.all([0, 1, 2].map(() => browser.newContext()));
  try {
    const [rita, bob, late] = await Promise.all(contexts.map((context) => context.newPage()));
    // This browser hears nothing live, so its banner stays up after the answer.
    await late.route("**/fn/live", (route) => route.abort());
    await signIn(rita, "rita", path);
    await signIn(bob, "bob", path);
    await signIn(late, "bob", path);
    await live(rita);
    await live(bob);
    await expect(bob.locator(".banner")).toHaveCount(1);
    await expect(late.locator(".banner")).toHaveCount(1);

    await rita.getByRole("radio", { name: "production" }).check();
    await rita.getByRole("button", { name: "Accept" }).click();
    await expect(rita.getByTestId("answer-notice")).toContainText("Your answer was recorded");
    await expect(bob.locator(".banner")).toHaveCount(0, { timeout: 2_000 });
    await expect(bob.locator(".history-entry")).toContainText("by rita");

    await late.getByRole("button", { name: "Decline" }).click();
    await expect(late.getByTestId("answer-notice")).toContainText("Someone answered first: rita chose accept");
    const answer = await waitForAnswer(request, session, requestId);
    expect(answer.action).toBe("accept");
    expect(answer.content).toEqual({ env: "production" });
  } finally {
    await Promise.all(contexts.map((context) => context.close()));
  }
});
