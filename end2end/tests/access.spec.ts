import { expect, test } from "./server";
import { ask, createSession, deploySchema, live, poll, signIn, waitForAnswer } from "./support";

test("a viewer sees the question but cannot answer it, even by a hand-made request", async ({ page, request }) => {
  const session = await createSession(request, "Viewer");
  const requestId = await ask(request, session, "Approve the refund?", deploySchema);
  await signIn(page, "vic", `/sessions/${session.id}`);
  await live(page);

  const banner = page.locator(".banner");
  await expect(banner).toContainText("Approve the refund?");
  await expect(banner.getByRole("button", { name: "Accept" })).toBeDisabled();
  await expect(banner).toContainText("You have the viewer role");

  const refusal = await page.evaluate(async (sessionId) => {
    const form = document.querySelector("form.banner-form") as HTMLFormElement;
    const read = (name: string) => (form.querySelector(`[name=${name}]`) as HTMLInputElement).value;
    const response = await fetch("/fn/answer", {
      method: "POST",
      headers: { "Content-Type": "application/json", Accept: "application/json" },
      body: JSON.stringify({
        post: {
          session_id: sessionId,
          round_id: read("round"),
          action: "accept",
          csrf: read("csrf"),
          attempt: "forged",
          values: [],
        },
      }),
    });
    return response.json();
  }, session.id);
  expect(refusal.closed.message).toContain("viewer role");
  expect((await poll(request, session, requestId)).action).toBe("pending");
});

test("answering works with JavaScript disabled, and the server's checks are shown", async ({ browser, request }) => {
  const session = await createSession(request, "No JavaScript");
  const requestId = await ask(request, session, "Which environment should I deploy to?", deploySchema);
  const context = await browser.newContext({ javaScriptEnabled: false });
  const page = await context.newPage();
  await signIn(page, "rita", `/sessions/${session.id}`);
  await expect(page.locator(".live-status")).toHaveAttribute("data-state", "offline");

  const banner = page.locator(".banner");
  await banner.getByRole("radio", { name: "production" }).check();
  // The browser's own checks would stop 9 (max 5): remove them, as an old browser would not have them.
  await banner.getByLabel("Replicas").fill("9");
  await page.locator("form.banner-form").evaluate((form) => form.setAttribute("novalidate", ""));
  await banner.getByRole("button", { name: "Accept" }).click();
  const replicas = page.locator(".field", { has: page.getByLabel("Replicas") });
  await expect(replicas.locator(".field-error")).toHaveText("must be at most 5");
  // The re-rendered form keeps what was posted.
  await expect(page.getByLabel("Replicas")).toHaveValue("9");
  await expect(page.getByRole("radio", { name: "production" })).toBeChecked();
  expect((await poll(request, session, requestId)).action).toBe("pending");

  await page.getByLabel("Replicas").fill("2");
  await page.getByRole("button", { name: "Accept" }).click();
  await expect(page.getByTestId("answer-notice")).toContainText("Your answer was recorded");
  const answer = await waitForAnswer(request, session, requestId);
  expect(answer.content).toEqual({ env: "production", replicas: 2 });
  await context.close();
});

test("at 375 px wide the whole form fits without sideways scrolling", async ({ page, request }) => {
  const session = await createSession(request, "A rather long session title that has to wrap on a small phone screen");
  await ask(request, session, "Where should the parcel go? Please give the full delivery address.", {
    type: "object",
    properties: {
      street: { type: "string", title: "Street and number", description: "As printed on the door" },
      city: { type: "string", title: "City" },
      when: { type: "string", format: "date-time", title: "Delivery time" },
      size: {
        type: "string",
        title: "Parcel size",
        oneOf: ["XS", "S", "M", "L", "XL"].map((v) => ({ const: v, title: `Size ${v}` })),
      },
      notes: { type: "object", title: "Courier notes" },
    },
    required: ["street", "city"],
  });
  await page.setViewportSize({ width: 375, height: 740 });
  await signIn(page, "rita", `/sessions/${session.id}`);
  await expect(page.locator(".banner")).toBeVisible();
  for (const path of [`/sessions/${session.id}`, "/"]) {
    await page.goto(path);
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
    expect(overflow, `sideways scroll on ${path}`).toBeLessThanOrEqual(0);
  }
  await page.goto(`/sessions/${session.id}`);
  await live(page);
  const accept = page.getByRole("button", { name: "Accept" });
  await accept.scrollIntoViewIfNeeded();
  const box = await accept.boundingBox();
  expect(box && box.x + box.width).toBeLessThanOrEqual(375);
});

test("URL-mode questions ask for consent, show the host, and never open by themselves", async ({ page, request }) => {
  const session = await createSession(request, "Consent");
  const response = await request.post(`/api/v1/s/${session.token}/rounds`, {
    data: {
      logical_operation_id: "op-1",
      operation_kind: "tool",
      operation_name: "connect_github",
      server: "github-mcp",
      requests: {
        auth: {
          mode: "url",
          message: "Sign in to GitHub to continue",
          url: "https://xn--gthub-n4a.example/login/oauth?state=1",
          elicitationId: "e-1",
        },
      },
    },
  });
  expect(response.status(), await response.text()).toBe(201);
  await signIn(page, "rita", `/sessions/${session.id}`);
  const banner = page.locator(".banner");
  await expect(banner.locator(".url-host")).toHaveText("xn--gthub-n4a.example");
  await expect(banner.getByRole("note")).toContainText("punycode");
  const open = banner.getByRole("link", { name: "Open" });
  await expect(open).toHaveAttribute("target", "_blank");
  await expect(open).toHaveAttribute("rel", "noopener noreferrer");
  await live(page);
  await banner.getByRole("button", { name: "Accept" }).click();
  await expect(page.getByTestId("answer-notice")).toContainText("recorded");
});
