// Claude Code's hooks seen from the browser: a tool call posted as Claude Code posts it waits in the page, its
// input shown as code, and the person's Accept or Decline is the reply the held request gets.
import { type APIRequestContext } from "@playwright/test";
import { expect, test } from "./server";
import { createSession, live, signIn, type TestSession } from "./support";

/** Posts a `PreToolUse` event as Claude Code's HTTP hook does; the reply arrives once a person decides. */
function preToolUse(request: APIRequestContext, session: TestSession, tool: string, input: object) {
  return request.post("/hooks/claude/pre-tool-use?timeout=120", {
    headers: { Authorization: `Bearer ${session.token}` },
    data: {
      session_id: "4f2a9c1e-8d7b-4c1a-9e2f-0123456789ab",
      transcript_path: "/home/rita/.claude/projects/shop/4f2a9c1e.jsonl",
      cwd: "/home/rita/shop",
      permission_mode: "default",
      hook_event_name: "PreToolUse",
      tool_name: tool,
      tool_input: input,
      tool_use_id: "toolu_01ABC",
    },
    timeout: 60_000,
  });
}

test("a command Claude Code wants to run shows as code, and Allow with a note allows it", async ({ page, request }) => {
  const session = await createSession(request, "Hooked release");
  await signIn(page, "rita", `/sessions/${session.id}`);
  await live(page);
  const reply = preToolUse(request, session, "Bash", { command: "terraform apply -auto-approve" });

  const banner = page.locator(".banner");
  await expect(banner).toHaveCount(1);
  await expect(banner.locator(".banner-asker")).toContainText("claude-code · tool Bash");
  await expect(banner.locator(".message-text").first()).toContainText("Claude Code run 4f2a9c1e in /home/rita/shop");
  await expect(banner.locator(".message-code")).toHaveText("$ terraform apply -auto-approve");
  await banner.locator('input[name="permission/reason"]').fill("staging only");
  await banner.getByRole("button", { name: "Allow" }).click();
  await expect(banner).toHaveCount(0);

  const answered = await reply;
  expect(answered.status()).toBe(200);
  expect(await answered.json()).toEqual({
    hookSpecificOutput: {
      hookEventName: "PreToolUse",
      permissionDecision: "allow",
      permissionDecisionReason: "Allowed by rita in Anteroom: staging only",
    },
  });
});

test("an edit shows as a diff, and Deny with a reason denies it saying why", async ({ page, request }) => {
  const session = await createSession(request, "Hooked edit");
  await signIn(page, "rita", `/sessions/${session.id}`);
  await live(page);
  const reply = preToolUse(request, session, "Edit", {
    file_path: "prod.env",
    old_string: "DB=staging",
    new_string: "DB=prod",
  });

  const banner = page.locator(".banner");
  await expect(banner).toHaveCount(1);
  await expect(banner.locator(".message-code .diff-removed")).toHaveText("- DB=staging");
  await expect(banner.locator(".message-code .diff-added")).toHaveText("+ DB=prod");
  await banner.locator('input[name="permission/reason"]').fill("touches the prod database");
  await banner.getByRole("button", { name: "Deny" }).click();
  await expect(banner).toHaveCount(0);

  const answered = await reply;
  const decision = (await answered.json()).hookSpecificOutput;
  expect(decision.permissionDecision).toBe("deny");
  expect(decision.permissionDecisionReason).toBe("Denied by rita in Anteroom: touches the prod database");
});

test("'the same way for the next hour' answers the same call again at once, until it is revoked", async ({
  page,
  request,
}) => {
  const session = await createSession(request, "Hooked tests");
  await signIn(page, "rita", `/sessions/${session.id}`);
  await live(page);
  const npmTest = { command: "npm test" };
  const first = preToolUse(request, session, "Bash", npmTest);
  const banner = page.locator(".banner");
  await expect(banner).toHaveCount(1);
  await banner.getByLabel("Answer questions like this the same way").check();
  await banner.getByRole("button", { name: "Allow" }).click();
  await expect(banner).toHaveCount(0);
  expect((await (await first).json()).hookSpecificOutput.permissionDecision).toBe("allow");

  // The same call again is answered by the rule, with no banner, and the session page lists the rule.
  const again = await preToolUse(request, session, "Bash", npmTest);
  const decision = (await again.json()).hookSpecificOutput;
  expect(decision.permissionDecision).toBe("allow");
  expect(decision.permissionDecisionReason).toMatch(/^Allowed by rule #\d+ \(rita\) in Anteroom\.$/);
  await page.reload();
  const rule = page.locator(".standing-rule");
  await expect(rule).toHaveCount(1);
  await expect(rule).toContainText("accept");
  await expect(rule).toContainText("by rita");
  await expect(rule).toContainText("answered 1 time");
  await expect(rule.locator(".standing-message")).toContainText("$ npm test");

  // Revoked, it answers nothing: the next call waits for a person again.
  await live(page);
  await rule.getByRole("button", { name: "Revoke" }).click();
  await expect(rule).toHaveCount(0);
  const third = preToolUse(request, session, "Bash", npmTest);
  await expect(banner).toHaveCount(1);
  await banner.getByRole("button", { name: "Deny" }).click();
  expect((await (await third).json()).hookSpecificOutput.permissionDecision).toBe("deny");
});
