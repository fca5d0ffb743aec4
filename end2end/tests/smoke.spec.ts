import { expect, test } from "@playwright/test";

test("home page renders on the server, then hydrates without console errors", async ({ page, request }) => {
  // Server-side rendering: the raw HTML already holds the frame and the empty queue.
  const html = await (await request.get("/")).text();
  expect(html).toContain('class="app-header"');
  expect(html).toContain("Attention queue");
  expect(html).toContain('data-state="offline"');

  const problems: string[] = [];
  page.on("console", (message) => {
    if (message.type() === "error") problems.push(message.text());
  });
  page.on("pageerror", (error) => problems.push(error.message));

  await page.goto("/");
  await expect(page).toHaveTitle("Anteroom");
  await expect(page.getByTestId("queue-empty")).toBeVisible();

  // Only the hydrated app flips the indicator and opens the shortcut panel.
  await expect(page.locator(".live-status")).toHaveAttribute("data-state", "live");
  const help = page.locator("#shortcut-help");
  await expect(help).toBeHidden();
  await page.getByRole("button", { name: "Keyboard shortcuts" }).click();
  await expect(help).toBeVisible();
  await expect(page.getByRole("button", { name: "Keyboard shortcuts" })).toHaveAttribute("aria-expanded", "true");

  expect(problems).toEqual([]);
});

test("unknown paths answer 404 with a way back", async ({ page }) => {
  const response = await page.goto("/no-such-page");
  expect(response?.status()).toBe(404);
  await expect(page.getByRole("link", { name: "Back to the attention queue" })).toBeVisible();
});
