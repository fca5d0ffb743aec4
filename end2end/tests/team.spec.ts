// A team's queue in the browser: Mine and All, a question handed to someone from its banner, more time, a
// standing answer made with its options, identical questions answered at once, batch triage by keyboard and
// Shift-click, and the response-times page on a phone.
import { expect, test } from "./server";
import { randomUUID } from "node:crypto";
import { adminApi, ask, createSession, deploySchema, live, poll, signIn, waitForAnswer } from "./support";

test("Mine leaves out a question for another group; All shows whose it is; an admin hands it to rita", async ({
  browser,
  page,
  request,
}) => {
  const group = `g-${randomUUID().slice(0, 6)}`;
  await adminApi(request, "POST", "/api/v1/groups", { name: group });
  const session = await createSession(request, "Owned by a group");
  await adminApi(request, "PUT", `/api/v1/sessions/${session.id}/settings`, { responders: [`group:${group}`] });
  await ask(request, session, "Rotate the database password?", deploySchema);

  await signIn(page, "rita");
  await live(page);
  const entry = page.locator(`.queue-item[data-session-id="${session.id}"]`);
  await expect(entry).toHaveCount(0);
  await expect(page.getByTestId("queue-others")).toContainText(/waits? for others/);
  await page.getByRole("link", { name: "All", exact: true }).click();
  await expect(entry).toHaveCount(1);
  await expect(entry).toContainText(`for ${group}`);

  const admin = await (await browser.newContext()).newPage();
  await signIn(admin, "admin", `/sessions/${session.id}`);
  await live(admin);
  const banner = admin.locator(".banner");
  await banner.getByLabel("Hand to").fill("user:rita");
  await banner.getByRole("button", { name: "Hand on" }).click();
  // The banner is drawn again for its new responders.
  await expect(banner.locator(".banner-for")).toContainText("rita");

  await page.getByRole("link", { name: "Mine", exact: true }).click();
  await expect(entry).toHaveCount(1);
  await admin.context().close();
});

test("+1 hour gives a question an hour more", async ({ page, request }) => {
  const session = await createSession(request, "Needs more time");
  await ask(request, session, "Approve the migration window?", deploySchema);
  await signIn(page, "rita", `/sessions/${session.id}`);
  await live(page);
  const banner = page.locator(".banner");
  const roundId = await banner.getAttribute("data-round-id");
  const before = (await adminApi(request, "GET", `/api/v1/rounds/${roundId}`)).deadline;
  await banner.getByRole("button", { name: "+1 hour" }).click();
  await expect
    .poll(async () => (await adminApi(request, "GET", `/api/v1/rounds/${roundId}`)).deadline)
    .not.toBe(before);
  const after = (await adminApi(request, "GET", `/api/v1/rounds/${roundId}`)).deadline;
  expect(Date.parse(after) - Date.parse(before)).toBe(3_600_000);
  await expect(page.locator(".banner")).toHaveCount(1);
});

test("a standing answer made with its options answers the next identical question live, and pauses", async ({
  page,
  request,
}) => {
  const session = await createSession(request, "Standing with options");
  const message = `Restart worker ${randomUUID().slice(0, 6)}?`;
  const first = await ask(request, session, message, deploySchema);
  await signIn(page, "rita", `/sessions/${session.id}`);
  await live(page);
  const banner = page.locator(".banner");
  await banner.getByLabel("Answer questions like this the same way").check();
  await banner.locator('select[name="standing_minutes"]').selectOption("480");
  await banner.locator('input[name="standing_limit"]').fill("2");
  await banner.getByRole("button", { name: "Accept" }).click();
  expect((await waitForAnswer(request, session, first)).action).toBe("accept");

  const second = await ask(request, session, message, deploySchema);
  expect((await waitForAnswer(request, session, second)).action).toBe("accept");
  await page.reload();
  await live(page);
  const rule = page.locator(".standing-rule");
  await expect(rule).toContainText("answered 1 time of at most 2");
  await rule.getByRole("button", { name: "Pause" }).click();
  await expect(rule).toContainText("paused");
  const third = await ask(request, session, message, deploySchema);
  await page.waitForTimeout(500);
  expect((await poll(request, session, third)).action).toBe("pending");
});

test("identical questions from three agents are one card, and one answer answers them all", async ({
  page,
  request,
}) => {
  const message = `Ship build ${randomUUID().slice(0, 6)} to staging?`;
  const sessions = [];
  const ids = [];
  for (const title of ["Agent one", "Agent two", "Agent three"]) {
    const session = await createSession(request, title);
    sessions.push(session);
    ids.push(await ask(request, session, message, deploySchema));
  }
  await signIn(page, "rita");
  await live(page);
  const card = page.locator(`.queue-item[data-session-id="${sessions[0].id}"]`);
  await expect(card.locator(".queue-alike summary")).toHaveText("asked by 3 agents");
  await expect(page.locator(`.queue-item[data-session-id="${sessions[1].id}"]`)).toHaveCount(0);

  await page.goto(`/sessions/${sessions[0].id}`);
  await live(page);
  const banner = page.locator(".banner");
  await banner.getByLabel("Answer the 2 identical questions waiting elsewhere the same way").check();
  await banner.getByRole("radio", { name: "production" }).check();
  await banner.getByRole("button", { name: "Accept" }).click();
  await expect(page.getByTestId("answer-notice")).toContainText("2 identical questions were answered the same way.");
  for (const [index, session] of sessions.entries()) {
    const answer = await waitForAnswer(request, session, ids[index]);
    expect(answer.action).toBe("accept");
    expect(answer.content.env).toBe("production");
  }
});

test("x selects, Shift-click selects a range, and Decline selected says how each fared", async ({ page, request }) => {
  const sessions = [];
  const ids = [];
  for (const title of ["Batch one", "Batch two", "Batch three"]) {
    const session = await createSession(request, title);
    sessions.push(session);
    ids.push(await ask(request, session, `${title}: go ahead ${randomUUID().slice(0, 6)}?`, deploySchema));
  }
  await signIn(page, "rita");
  await live(page);
  const item = (index: number) => page.locator(`.queue-item[data-session-id="${sessions[index].id}"]`);
  await item(0).locator(".queue-link").focus();
  await page.keyboard.press("x");
  await expect(page.locator(".queue-triage")).toContainText("1 selected");
  await item(2).locator(".queue-select").click({ modifiers: ["Shift"] });
  await expect(page.locator(".queue-triage")).toContainText("3 selected");
  // Meanwhile someone answers the second elsewhere.
  await adminApi(request, "PATCH", `/api/v1/elicitations/${ids[1]}/respond`, { action_type: "accept", content: { env: "staging" } });
  await page.getByRole("button", { name: "Decline selected" }).click();
  await expect(page.getByTestId("triage-result")).toHaveText("2 answered; 1 answered elsewhere meanwhile.");
  expect((await poll(request, sessions[0], ids[0])).action).toBe("decline");
  expect((await poll(request, sessions[1], ids[1])).action).toBe("accept");
  expect((await poll(request, sessions[2], ids[2])).action).toBe("decline");
});

test("the response-times page draws its charts on a phone without a script", async ({ browser }) => {
  const context = await browser.newContext({ viewport: { width: 375, height: 800 }, javaScriptEnabled: false });
  const page = await context.newPage();
  await page.goto("/login?next=/admin/response-times");
  await page.getByLabel("Username").fill("admin");
  await page.getByLabel("Password").fill("e2e-password-1");
  await page.getByRole("button", { name: "Sign in" }).click();
  await expect(page.getByRole("heading", { name: "Response times" })).toBeVisible();
  const chart = page.getByRole("img", { name: "Time to answer per day" });
  await expect(chart).toBeVisible();
  const box = await chart.boundingBox();
  expect(box?.width ?? 0).toBeLessThanOrEqual(375);
  await expect(page.getByRole("img", { name: "Questions lost per day" })).toBeVisible();
  await expect(page.getByRole("heading", { name: "By person" })).toBeVisible();
  await expect(page.getByRole("link", { name: "7 days" })).toHaveAttribute("href", "/admin/response-times?days=7");
  await page.goto("/admin/response-times?days=7");
  await expect(page.getByRole("link", { name: "7 days" })).toHaveAttribute("aria-current", "page");
  const scrollWidth = await page.evaluate(() => document.documentElement.scrollWidth);
  expect(scrollWidth).toBeLessThanOrEqual(375);
  await context.close();
});
