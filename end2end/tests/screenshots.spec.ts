// Not a check: regenerates the README's pictures when ANTEROOM_SCREENSHOTS=1 (skipped otherwise).
import { expect, test } from "./server";
import { ask, createSession, live, signIn, waitForAnswer } from "./support";

test.skip(!process.env.ANTEROOM_SCREENSHOTS, "set ANTEROOM_SCREENSHOTS=1 to regenerate docs/*.png");

test("README pictures: the attention queue, a session page with an open banner, on a phone and in the dark", async ({ page, request }) => {
  await page.setViewportSize({ width: 960, height: 900 });
  const shop = await createSession(request, "Release the web shop");
  const earlier = await ask(request, shop, "Run the database migration now?", {
    type: "object",
    properties: { confirm: { type: "boolean", title: "Yes, migrate", default: true } },
  }, { tool: "migrate_db" });
  await ask(request, shop, "Which environment should I deploy release 4.2 to?", {
    type: "object",
    properties: {
      env: {
        type: "string",
        title: "Environment",
        oneOf: [
          { const: "staging", title: "Staging" },
          { const: "production", title: "Production" },
        ],
        default: "staging",
      },
      replicas: { type: "integer", title: "Replicas", description: "How many instances to start", minimum: 1, maximum: 8, default: 2 },
      window: { type: "string", format: "date-time", title: "Maintenance window start" },
      notify: { type: "array", title: "Tell", items: { type: "string", enum: ["#ops", "#support", "#sales"] }, default: ["#ops"] },
    },
    required: ["env", "replicas"],
  }, { tool: "deploy_release", server: "shop-deployer" });
  const docs = await createSession(request, "Rewrite the onboarding guide");
  await ask(request, docs, "May I delete the three outdated screenshots in /docs/img?", {
    type: "object",
    properties: { confirm: { type: "boolean", title: "Delete them" } },
  }, { tool: "delete_files", server: "filesystem" });

  await signIn(page, "rita", `/sessions/${shop.id}`);
  await live(page);
  await page.locator(".banner", { hasText: "migration" }).getByRole("button", { name: "Accept" }).click();
  await waitForAnswer(request, shop, earlier);
  await expect(page.locator(".banner")).toHaveCount(1);
  await page.getByTestId("answer-notice").evaluate((notice) => notice.remove());
  await page.screenshot({ path: "../docs/session.png", fullPage: true });

  await page.goto("/");
  await live(page);
  await page.screenshot({ path: "../docs/home.png" });

  await page.emulateMedia({ colorScheme: "dark" });
  await page.goto(`/sessions/${shop.id}`);
  await live(page);
  await page.screenshot({ path: "../docs/dark.png" });

  await page.emulateMedia({ colorScheme: "light" });
  await page.setViewportSize({ width: 375, height: 812 });
  await page.goto(`/sessions/${shop.id}`);
  await live(page);
  await page.screenshot({ path: "../docs/phone.png" });
});
