// Delivery truth in the browser: the banner names whose deadline it counts down to, shows when the asking
// server last checked for its answer, warns when an answer may come too late, and an answer the asker never
// picked up is shown as not delivered.
import { expect, test } from "./server";
import { ask, createSession, deploySchema, live, poll, signIn } from "./support";

test("the banner counts down to the asker's deadline, shows its polls and warns in the last interval", async ({
  page,
  request,
}) => {
  test.setTimeout(60_000);
  const session = await createSession(request, "Presence");
  const requestId = await ask(request, session, "Deploy now?", deploySchema, {
    expiresAt: new Date(Date.now() + 16_000).toISOString(),
  });
  // The asking server polls at once and again five seconds later, as the pulsemcp client does.
  expect((await poll(request, session, requestId)).action).toBe("pending");
  await new Promise((resolve) => setTimeout(resolve, 5_000));
  expect((await poll(request, session, requestId)).action).toBe("pending");

  await signIn(page, "rita", `/sessions/${session.id}`);
  await live(page);
  const banner = page.locator(".banner");
  await expect(banner.getByTestId("countdown")).toContainText("the asking server stops waiting in");
  const checked = banner.getByTestId("asker-checked");
  await expect(checked).toContainText(/checked \d+ s ago · every ~5 s/);
  const first = await checked.textContent();
  await expect.poll(async () => checked.textContent(), { timeout: 5_000 }).not.toBe(first);

  // Less than one poll interval left: an answer now may arrive too late.
  await expect(banner.getByTestId("too-late-warning")).toBeVisible({ timeout: 15_000 });
  await expect(banner.getByTestId("too-late-warning")).toContainText("may arrive too late");
});

test("an answer the asker never picks up is shown as not delivered", async ({ page, request }) => {
  test.setTimeout(60_000);
  const session = await createSession(request, "Undelivered");
  const requestId = await ask(request, session, "Scale the cluster?", deploySchema, {
    tool: "scale",
    expiresAt: new Date(Date.now() + 8_000).toISOString(),
  });
  expect((await poll(request, session, requestId)).action).toBe("pending");

  await signIn(page, "rita", `/sessions/${session.id}`);
  await live(page);
  await page.locator(".banner").getByRole("button", { name: "Accept" }).click();
  await expect(page.getByTestId("answer-notice")).toBeVisible();

  // The asking server never polls again; once its deadline passes, the page says what happened.
  const lost = page.getByTestId("lost-banner");
  await expect(lost).toBeVisible({ timeout: 20_000 });
  await expect(lost).toHaveAttribute("data-reason", "undelivered");
  await expect(lost).toContainText("An answer never reached the agent");
  await expect(lost.getByTestId("lost-detail")).toContainText("rita answered at");
  await expect(lost.getByTestId("lost-detail")).toContainText("the agent never received this answer");
  const entry = page.locator(".history-entry", { hasText: "Scale the cluster?" });
  await expect(entry).toContainText("Answered — not delivered");
  await expect(entry).toHaveAttribute("data-outcome", "undelivered");

  const late = await poll(request, session, requestId);
  expect(late.action).toBe("expired");
  expect(late._meta["anteroom/failure"]).toBe("undelivered");
});
