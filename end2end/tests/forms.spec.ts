import { expect, test } from "./server";
import { ask, createSession, everyField, live, poll, signIn, waitForAnswer } from "./support";

test("every field type renders as a native control with its default", async ({ page, request }) => {
  const session = await createSession(request, "Every field");
  await ask(request, session, "Fill in everything", everyField);
  await signIn(page, "rita", `/sessions/${session.id}`);
  const banner = page.locator(".banner");

  await expect(banner.getByLabel("Name")).toHaveValue("Ada");
  await expect(banner.getByLabel("Name")).toHaveAttribute("required", "");
  await expect(banner.getByLabel("Email")).toHaveAttribute("type", "email");
  await expect(banner.getByLabel("Email")).toHaveValue("ada@example.com");
  await expect(banner.getByLabel("Website")).toHaveAttribute("type", "url");
  await expect(banner.getByLabel("Day")).toHaveAttribute("type", "date");
  await expect(banner.getByLabel("Day")).toHaveValue("2026-03-01");
  await expect(banner.getByLabel("When (UTC)")).toHaveAttribute("type", "datetime-local");
  await expect(banner.getByLabel("When (UTC)")).toHaveValue("2026-03-01T09:30");
  await expect(banner.getByLabel("Age")).toHaveAttribute("type", "number");
  await expect(banner.getByLabel("Age")).toHaveAttribute("step", "1");
  await expect(banner.getByLabel("Age")).toHaveValue("30");
  await expect(banner.getByLabel("Ratio")).toHaveValue("0.5");
  await expect(banner.getByRole("checkbox", { name: "I agree" })).toBeChecked();
  await expect(banner.getByRole("radio", { name: "Production" })).toBeChecked();
  await expect(banner.getByLabel("Size")).toHaveValue("m");
  await expect(banner.getByRole("checkbox", { name: "green" })).toBeChecked();
  await expect(banner.getByRole("checkbox", { name: "red" })).not.toBeChecked();
  await expect(banner.getByLabel("Extra (JSON)")).toHaveValue(/"k": 1/);
  // Required fields are marked for sighted readers (the attribute serves screen readers).
  await expect(banner.locator(".field", { has: page.getByLabel("Age") }).locator(".required")).toBeVisible();
});

test("invalid input is flagged as it is typed and the submit is blocked", async ({ page, request }) => {
  const session = await createSession(request, "Validation");
  const requestId = await ask(request, session, "Fill in everything", everyField);
  await signIn(page, "rita", `/sessions/${session.id}`);
  await live(page);
  const banner = page.locator(".banner");

  await banner.getByLabel("Age").fill("12");
  await expect(banner.getByText("must be at least 18")).toBeVisible();
  await expect(banner.getByLabel("Age")).toHaveAttribute("aria-invalid", "true");
  await banner.getByLabel("Email").fill("not-an-address");
  await expect(banner.getByText("must be an email address")).toBeVisible();

  await banner.getByRole("button", { name: "Accept" }).click();
  await expect(banner.getByRole("alert").filter({ hasText: "need another look" })).toBeVisible();
  // Focus goes to the first field that needs another look.
  await expect(banner.getByLabel("Email")).toBeFocused();
  expect((await poll(request, session, requestId)).action).toBe("pending");

  await banner.getByLabel("Age").fill("40");
  await expect(banner.getByText("must be at least 18")).toBeHidden();
});

test("a forged submission that skips the browser's checks is refused by the server, per field", async ({
  page,
  request,
}) => {
  const session = await createSession(request, "Forgery");
  const requestId = await ask(request, session, "Fill in everything", everyField);
  await signIn(page, "rita", `/sessions/${session.id}`);
  await live(page);

  // Rewrite the answer on its way out, after the browser checked it.
  await page.route("**/fn/answer", async (route) => {
    const body = JSON.parse(route.request().postData() ?? "{}");
    body.post.values = body.post.values.map(([name, value]: [string, string]) =>
      name.endsWith("/age") ? [name, "7"] : [name, value],
    );
    await route.continue({ postData: JSON.stringify(body) });
  });
  const banner = page.locator(".banner");
  await banner.getByRole("button", { name: "Accept" }).click();
  await expect(banner.locator(".field", { has: page.getByLabel("Age") }).locator(".field-error")).toHaveText(
    "must be at least 18",
  );
  expect((await poll(request, session, requestId)).action).toBe("pending");

  await page.unroute("**/fn/answer");
  await banner.getByRole("button", { name: "Accept" }).click();
  const answer = await waitForAnswer(request, session, requestId);
  expect(answer.action).toBe("accept");
  expect(answer.content).toMatchObject({
    name: "Ada",
    age: 30,
    ratio: 0.5,
    agree: true,
    env: "prod",
    size: "m",
    tags: ["green"],
    at: "2026-03-01T09:30:00Z",
    extra: { k: 1 },
  });
});

test("a producer's backtracking pattern cannot freeze the page; the server refuses the near miss", async ({
  page,
  request,
}) => {
  const session = await createSession(request, "ReDoS");
  const nearMiss = `${"a".repeat(32)}!`;
  const requestId = await ask(request, session, "Code?", {
    type: "object",
    properties: { code: { type: "string", title: "Code", pattern: "^(a+)+$", default: nearMiss } },
    required: ["code"],
  });
  await signIn(page, "rita", `/sessions/${session.id}`);
  await live(page);
  const banner = page.locator(".banner");
  await banner.getByLabel("Code").fill(`${"a".repeat(40)}!`);
  // `RegExp("^(a+)+$")` on this value would block the page for minutes; the page stays responsive.
  const blocked = await page.evaluate(async () => {
    const started = performance.now();
    await new Promise((resolve) => setTimeout(resolve, 0));
    return performance.now() - started;
  });
  expect(blocked).toBeLessThan(100);
  await banner.getByRole("button", { name: "Accept" }).click();
  await expect(banner.locator(".field", { has: page.getByLabel("Code") }).locator(".field-error")).toContainText(
    "pattern",
  );
  expect((await poll(request, session, requestId)).action).toBe("pending");
});
