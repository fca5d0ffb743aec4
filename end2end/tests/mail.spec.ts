// Questions by e-mail from the person's side: bob gives his address and asks for every question on the profile
// page; a question then reaches a real SMTP server on loopback (this test's), and its answer link, followed in
// the browser, only asks to confirm; the confirmation answers once, and the same link again records nothing.
import { expect, test, workerPorts } from "./server";
import { createServer, type Server, type Socket } from "node:net";
import { ask, createSession, live, poll, signIn } from "./support";

export const SMTP_PORT = workerPorts().smtp;

/** A plain SMTP server that keeps each message's data (dot-unstuffed). */
function smtpSink(): Promise<{ mails: string[]; server: Server }> {
  const mails: string[] = [];
  const server = createServer((socket: Socket) => {
    let buffer = "";
    let data: string[] | null = null;
    socket.write("220 e2e sink\r\n");
    socket.on("data", (chunk) => {
      buffer += chunk.toString("utf8");
      let end: number;
      while ((end = buffer.indexOf("\r\n")) >= 0) {
        const line = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        if (data) {
          if (line === ".") {
            mails.push(data.join("\r\n"));
            data = null;
            socket.write("250 queued\r\n");
          } else {
            data.push(line.startsWith(".") ? line.slice(1) : line);
          }
          continue;
        }
        const command = line.toUpperCase();
        if (command.startsWith("EHLO") || command.startsWith("HELO")) socket.write("250-e2e\r\n250 8BITMIME\r\n");
        else if (command === "DATA") {
          data = [];
          socket.write("354 go on\r\n");
        } else if (command === "QUIT") socket.end("221 bye\r\n");
        else socket.write("250 OK\r\n");
      }
    });
  });
  return new Promise((resolve) => server.listen(SMTP_PORT, "127.0.0.1", () => resolve({ mails, server })));
}

/** A mail's body as text (quoted-printable decoded when so encoded). */
function text(mail: string): string {
  const [head, ...rest] = mail.split("\r\n\r\n");
  const body = rest.join("\r\n\r\n");
  if (!/content-transfer-encoding:\s*quoted-printable/i.test(head)) return body;
  const joined = body.replace(/=\r\n/g, "");
  return Buffer.from(
    joined.replace(/=([0-9A-F]{2})/g, (_, hex) => String.fromCharCode(parseInt(hex, 16))),
    "latin1",
  ).toString("utf8");
}

test("a mailed question's link asks to confirm, answers once, and refuses a second time", async ({ page, request }) => {
  test.setTimeout(60_000);
  const sink = await smtpSink();
  try {
    await signIn(page, "bob", "/profile");
    // The form saves in place once the page is hydrated (without JavaScript it posts and reloads).
    await live(page);
    await page.getByLabel("Your e-mail").fill("bob@example.com");
    await page.getByLabel("Mail me").selectOption("all");
    await page.getByRole("button", { name: "Save", exact: true }).click();
    await expect(page.getByRole("status").filter({ hasText: "Saved." })).toBeVisible();

    const session = await createSession(request, "Mailed release");
    const requestId = await ask(request, session, "Which region gets the canary?", {
      type: "object",
      properties: { region: { type: "string", enum: ["eu", "us", "ap"] } },
    });
    await expect.poll(() => sink.mails.length, { timeout: 20_000 }).toBeGreaterThan(0);
    const body = text(sink.mails[0]);
    expect(body).toContain("> Which region gets the canary?");
    const link = body.match(/^ {2}us: (\S+)$/m)?.[1];
    expect(link, body).toBeTruthy();

    await page.goto(link!);
    await expect(page.getByRole("heading", { name: "Answer \u201cus\u201d?" })).toBeVisible();
    expect((await poll(request, session, requestId)).action, "following the link changes nothing").toBe("pending");
    await page.getByRole("button", { name: "Answer \u201cus\u201d" }).click();
    await expect(page.getByRole("heading", { name: "Answered \u201cus\u201d" })).toBeVisible();
    const answer = await poll(request, session, requestId);
    expect(answer.action).toBe("accept");
    expect(answer.content).toEqual({ region: "us" });

    await page.goto(link!);
    await expect(page.getByRole("heading", { name: "This link was already used" })).toBeVisible();
    const again = await request.post(link!, { headers: { Accept: "application/json" } });
    expect(again.status()).toBe(409);
    expect((await again.json()).code).toBe("used");

    // Quiet hours: the browser's time zone is filled in, a zone the server does not know is refused.
    await page.goto("/profile");
    await live(page);
    const zone = page.locator('input[name="time_zone"]');
    await expect(zone).not.toHaveValue("");
    await page.locator('input[name="quiet_from"]').fill("22:00");
    await page.locator('input[name="quiet_until"]').fill("07:00");
    await zone.fill("Mars/Olympus_Mons");
    await page.getByRole("button", { name: "Save time zone and quiet hours" }).click();
    await expect(page.getByRole("alert")).toContainText("does not know the time zone Mars/Olympus_Mons");
    await zone.fill("Europe/Paris");
    await page.getByRole("button", { name: "Save time zone and quiet hours" }).click();
    await expect(page.getByRole("status").filter({ hasText: "Time zone and quiet hours saved." })).toBeVisible();
    await page.reload();
    await expect(page.locator('input[name="quiet_from"]')).toHaveValue("22:00");
    await expect(zone).toHaveValue("Europe/Paris");
    await live(page);
    await page.locator('input[name="quiet_from"]').fill("");
    await page.locator('input[name="quiet_until"]').fill("");
    await page.getByRole("button", { name: "Save time zone and quiet hours" }).click();
    await expect(page.getByRole("status").filter({ hasText: "Time zone and quiet hours saved." })).toBeVisible();

    // The digest count: kept, and one past its bound refused.
    const digest = page.locator('input[name="digest_after"]');
    await expect(digest).toHaveValue("5");
    await digest.fill("2");
    await page.getByRole("button", { name: "Save digest" }).click();
    await expect(page.getByRole("status").filter({ hasText: "Digest saved." })).toBeVisible();
    await page.reload();
    await expect(digest).toHaveValue("2");
    await live(page);
    await digest.fill("5");
    await page.getByRole("button", { name: "Save digest" }).click();
    await expect(page.getByRole("status").filter({ hasText: "Digest saved." })).toBeVisible();
  } finally {
    // Mail off again, so other tests' questions are not mailed to a closed server.
    await page.goto("/profile");
    await live(page);
    await page.getByLabel("Mail me").selectOption("off");
    await page.getByRole("button", { name: "Save", exact: true }).click();
    await expect(page.getByRole("status").filter({ hasText: "Saved." })).toBeVisible();
    sink.server.close();
  }
});
