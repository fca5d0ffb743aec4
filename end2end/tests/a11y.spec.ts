// Accessibility: axe-core over every page a person meets, at a desk (1280 px) and on a phone (375 px), in the
// light and the dark colour scheme (the colour rules only, in the dark); no violation of impact serious or
// critical is allowed. Three tests that may run on both workers at once; the first runs first on its worker (the
// file's name sorts first), so that worker's queue is still empty for the empty-queue page.
import AxeBuilder from "@axe-core/playwright";
import { type Page } from "@playwright/test";
import { expect, test } from "./server";
import { ask, createSession, deploySchema, everyField, live, signIn, waitForAnswer } from "./support";

const viewports = [
  { name: "desk", width: 1280, height: 900 },
  { name: "phone", width: 375, height: 740 },
] as const;
const schemes = ["light", "dark"] as const;
/** axe's rules whose outcome depends on colours. */
const colourRules = ["color-contrast", "link-in-text-block"];

/** Runs axe on the page as it is now in every viewport and scheme; returns what failed, one line each. */
async function serious(page: Page, what: string): Promise<string[]> {
  const found: string[] = [];
  for (const viewport of viewports) {
    await page.setViewportSize({ width: viewport.width, height: viewport.height });
    for (const colorScheme of schemes) {
      await page.emulateMedia({ colorScheme });
      // The dark scheme changes colours and nothing else, so only the rules about colour run again in it
      // (the whole set runs in the light scheme at both sizes): a third of the file's time.
      const axe = new AxeBuilder({ page });
      const results = await (colorScheme === "dark" ? axe.withRules(colourRules) : axe).analyze();
      for (const violation of results.violations) {
        if (violation.impact !== "serious" && violation.impact !== "critical") continue;
        const where = violation.nodes.map((node) => node.target.join(" ")).slice(0, 3).join(", ");
        found.push(`${what} (${viewport.name}, ${colorScheme}): ${violation.id} [${violation.impact}] at ${where}`);
      }
    }
  }
  await page.setViewportSize({ width: 1280, height: 900 });
  await page.emulateMedia({ colorScheme: "light" });
  return found;
}

test.describe.configure({ mode: "parallel" });

test("sign-in, setup and the queue have no serious or critical accessibility violation", async ({ page, request }) => {
  test.setTimeout(90_000);
  const problems: string[] = [];

  await page.goto("/login");
  problems.push(...(await serious(page, "sign-in")));
  await page.goto("/setup");
  problems.push(...(await serious(page, "setup")));

  await signIn(page, "admin", "/");
  await live(page);
  await expect(page.getByTestId("queue-empty")).toBeVisible();
  problems.push(...(await serious(page, "queue, empty")));

  const session = await createSession(request, "Accessibility");
  const other = await createSession(request, "Accessibility, second agent");
  await ask(request, session, "Fill in everything", everyField);
  await ask(request, other, "Which environment should I deploy to?", deploySchema);
  await page.goto("/");
  await live(page);
  await expect(page.locator(`[data-session-id="${other.id}"]`)).toBeVisible();
  problems.push(...(await serious(page, "queue, with questions")));

  await page.getByRole("button", { name: "Keyboard shortcuts" }).click();
  await expect(page.locator("#shortcut-help")).toBeVisible();
  problems.push(...(await serious(page, "keyboard help")));
  await page.keyboard.press("Escape");
  expect(problems, problems.join("\n")).toEqual([]);
});

test("a session page, its form, its errors and its history have no serious or critical accessibility violation", async ({
  page,
  request,
}) => {
  test.setTimeout(90_000);
  const problems: string[] = [];
  await signIn(page, "admin", "/");
  const session = await createSession(request, "Accessibility of a session");
  const other = await createSession(request, "Accessibility of a history");
  await ask(request, session, "Fill in everything", everyField);
  const deploy = await ask(request, other, "Which environment should I deploy to?", deploySchema);

  await page.goto(`/sessions/${session.id}`);
  await live(page);
  const banner = page.locator(".banner");
  await expect(banner.getByLabel("Name")).toBeVisible();
  problems.push(...(await serious(page, "session page, a form of every field type")));

  // The form's errors: a name too short and an age out of range, refused by the browser's checks.
  await banner.getByLabel("Name").fill("A");
  await banner.getByLabel("Age").fill("7");
  await banner.getByRole("button", { name: "Accept" }).click();
  await expect(banner.locator("[aria-invalid=true]").first()).toBeVisible();
  problems.push(...(await serious(page, "session page, a form with errors")));

  await page.goto(`/sessions/${other.id}`);
  await live(page);
  await page.locator(".banner").getByRole("radio", { name: "production" }).check();
  await page.locator(".banner").getByRole("button", { name: "Accept" }).click();
  expect((await waitForAnswer(request, other, deploy)).action).toBe("accept");
  await page.goto(`/sessions/${other.id}`);
  await expect(page.locator(".history")).toContainText("production");
  problems.push(...(await serious(page, "session page, history")));
  expect(problems, problems.join("\n")).toEqual([]);
});

test("the webhook log and the profile have no serious or critical accessibility violation", async ({ page }) => {
  test.setTimeout(90_000);
  const problems: string[] = [];
  await signIn(page, "admin", "/");
  await page.goto("/admin/webhooks");
  problems.push(...(await serious(page, "webhook log")));
  await page.goto("/profile");
  problems.push(...(await serious(page, "profile")));

  expect(problems, problems.join("\n")).toEqual([]);
});
