import { expect, test } from "./server";
import { live, signIn } from "./support";

test("pages need sign-in; the sign-in page renders on the server and hydrates", async ({ page, request }) => {
  const home = await request.get("/", { maxRedirects: 0 });
  expect(home.status()).toBe(303);
  expect(home.headers()["location"]).toBe("/login?next=%2F");

  const html = await (await request.get("/login")).text();
  expect(html).toContain('class="app-header"');
  expect(html).toContain('data-state="offline"');
  expect(html).toContain('action="/login"');

  const problems: string[] = [];
  page.on("console", (message) => {
    if (message.type() === "error" && !message.text().includes("401")) problems.push(message.text());
  });
  page.on("pageerror", (error) => problems.push(error.message));

  await signIn(page, "rita");
  await expect(page).toHaveTitle(/Anteroom$/);
  await live(page);
  const help = page.locator("#shortcut-help");
  await expect(help).toBeHidden();
  await page.getByRole("button", { name: "Keyboard shortcuts" }).click();
  await expect(help).toBeVisible();
  expect(problems).toEqual([]);
});

test("a wrong password is refused without saying which part was wrong", async ({ page }) => {
  await page.goto("/login");
  await page.getByLabel("Username").fill("rita");
  await page.getByLabel("Password").fill("not the password");
  await page.getByRole("button", { name: "Sign in" }).click();
  await expect(page.getByRole("alert")).toHaveText("That username and password do not match.");
});

test("unknown paths answer 404 with a way back", async ({ page }) => {
  await signIn(page, "rita");
  const response = await page.goto("/no-such-page");
  expect(response?.status()).toBe(404);
  await expect(page.getByRole("link", { name: "Back to the attention queue" })).toBeVisible();
  const missing = await page.goto("/sessions/no-such-session");
  expect(missing?.status()).toBe(404);
});

test("signing out ends the browser session", async ({ page }) => {
  await signIn(page, "rita");
  await page.getByRole("button", { name: "Sign out" }).click();
  await expect(page.getByText("You are signed out.")).toBeVisible();
  await page.goto("/");
  await expect(page).toHaveURL(/\/login\?next=%2F$/);
});

test("the webhook delivery log is for admins only", async ({ page }) => {
  await signIn(page, "admin");
  await page.getByRole("link", { name: "Webhooks" }).click();
  await expect(page.getByRole("heading", { name: "Webhook deliveries" })).toBeVisible();
  // Empty, or (after other tests mailed questions) the log's table.
  await expect(page.locator("table.deliveries, .queue-empty")).toBeVisible();

  await page.getByRole("button", { name: "Sign out" }).click();
  await signIn(page, "rita", "/admin/webhooks");
  await expect(page.getByRole("link", { name: "Webhooks" })).toHaveCount(0);
  await expect(page.getByRole("alert")).toContainText("Only admins can read the webhook delivery log.");
});
