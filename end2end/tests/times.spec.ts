import { expect, test } from "./server";
import { ask, createSession, deploySchema, live, signIn, waitForAnswer } from "./support";

/** What `at` reads as in `zone`, as the pages write it: "2026-03-01 18:30 Asia/Tokyo". */
function inZone(at: Date, zone: string): string {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat("en-US", {
      timeZone: zone,
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
      hour: "2-digit",
      minute: "2-digit",
      hourCycle: "h23",
    })
      .formatToParts(at)
      .map((part) => [part.type, part.value]),
  );
  return `${parts.year}-${parts.month}-${parts.day} ${parts.hour}:${parts.minute} ${zone}`;
}

test("times read as 'just now' and move on without a reload; the chosen zone is in each title, from the server on", async ({
  page,
  request,
}) => {
  // The page's clock is Playwright's, so two minutes can pass in a moment.
  await page.clock.install();
  const session = await createSession(request, "Times");
  const requestId = await ask(request, session, "Which environment should I deploy to?", deploySchema);

  await signIn(page, "bob", "/profile");
  await live(page);
  await page.locator('input[name="time_zone"]').fill("Asia/Tokyo");
  await page.getByRole("button", { name: "Save time zone and quiet hours" }).click();
  await expect(page.getByRole("status").filter({ hasText: "Time zone and quiet hours saved." })).toBeVisible();

  await page.goto(`/sessions/${session.id}`);
  await live(page);
  await page.locator(".banner").getByRole("radio", { name: "production" }).check();
  await page.locator(".banner").getByRole("button", { name: "Accept" }).click();
  expect((await waitForAnswer(request, session, requestId)).action).toBe("accept");

  const entry = page.locator(".history-entry").filter({ hasText: "Which environment" });
  const asked = entry.locator("p.muted time.moment");
  await expect(asked).toHaveText("just now");
  const at = new Date((await asked.getAttribute("datetime")) ?? "");
  await expect(asked).toHaveAttribute("title", inZone(at, "Asia/Tokyo"));
  await expect(entry.locator(".history-by time.moment")).toHaveText("just now");

  // Relative times follow the clock while the page stays open.
  await page.clock.fastForward("02:05");
  await expect(asked).toHaveText("2 min ago");
  await expect(entry.locator(".history-by time.moment")).toHaveText("2 min ago");

  // The server writes the saved zone into the page itself, so hydration changes nothing.
  const html = await (await page.context().request.get(`/sessions/${session.id}`)).text();
  expect(html).toContain(`title="${inZone(at, "Asia/Tokyo")}"`);

  // Cleared, the zone is the browser's own once the page is live (the server, not knowing it, wrote UTC).
  await page.goto("/profile");
  await live(page);
  await page.locator('input[name="time_zone"]').fill("");
  await page.getByRole("button", { name: "Save time zone and quiet hours" }).click();
  await expect(page.getByRole("status").filter({ hasText: "Time zone and quiet hours saved." })).toBeVisible();
  const plain = await (await page.context().request.get(`/sessions/${session.id}`)).text();
  expect(plain).toContain(`title="${inZone(at, "UTC").replace(" UTC", "")} UTC"`);
  await page.goto(`/sessions/${session.id}`);
  await live(page);
  const own = await page.evaluate(() => Intl.DateTimeFormat().resolvedOptions().timeZone);
  await expect(entry.locator("p.muted time.moment")).toHaveAttribute("title", inZone(at, own));
});
