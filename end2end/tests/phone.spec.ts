import { expect, test } from "./server";
import { ask, createSession, deploySchema, live, signIn } from "./support";

test.use({ viewport: { width: 375, height: 740 } });

test("on a phone the header is one row with a menu, nothing runs off the screen, and the form can be answered", async ({
  page,
  request,
}) => {
  const session = await createSession(request, "Phone check");
  await ask(request, session, "Which environment should I deploy to, from the train?", deploySchema);
  await signIn(page, "rita", `/sessions/${session.id}`);
  await live(page);

  const header = page.locator(".app-header");
  const height = (await header.boundingBox())?.height ?? 0;
  expect(height, "the header is one row").toBeLessThanOrEqual(64);
  await expect(page.getByRole("link", { name: "Profile" })).toBeHidden();
  const menu = page.getByRole("button", { name: "Menu" });
  await expect(menu).toHaveAttribute("aria-expanded", "false");
  await menu.click();
  await expect(menu).toHaveAttribute("aria-expanded", "true");
  await expect(page.getByRole("link", { name: "Profile" })).toBeVisible();
  await expect(page.getByRole("button", { name: "Sign out" })).toBeVisible();
  await menu.click();
  await expect(page.getByRole("link", { name: "Profile" })).toBeHidden();

  // Nothing is wider than the screen, and the banner's countdown wraps instead of being cut off.
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  expect(overflow, "no horizontal scrolling").toBeLessThanOrEqual(0);
  const countdown = page.locator(".banner").getByTestId("countdown");
  const box = await countdown.boundingBox();
  expect(box, "the countdown is laid out").not.toBeNull();
  expect((box?.x ?? 0) + (box?.width ?? 0)).toBeLessThanOrEqual(375);

  // Thumb-sized: the form's buttons are at least 44 px tall, and Accept answers.
  const accept = page.locator(".banner").getByRole("button", { name: "Accept" });
  expect((await accept.boundingBox())?.height ?? 0).toBeGreaterThanOrEqual(44);
  await page.locator(".banner").getByRole("radio", { name: "production" }).check();
  await page.locator(".banner").getByLabel("Replicas").fill("2");
  await accept.click();
  await expect(page.getByTestId("answer-notice")).toContainText("Your answer was recorded");
});
