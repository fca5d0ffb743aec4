// `anteroom wrap` seen from the browser: a real wrapper process runs the raw-wire fixture server, and the
// person answers its questions in the page while the wrapper waits.
import { expect, test } from "./server";
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { createInterface } from "node:readline";
import { createSession, live, signIn, type TestSession } from "./support";

const binary = "../target/debug/anteroom";
const fixture = "../wrap/tests/fixtures/eliciting_server.py";

/** A wrapper as a harness runs it, with the lines it writes to the harness. */
function wrap(baseURL: string, session: TestSession) {
  const wrapper: ChildProcessWithoutNullStreams = spawn(
    binary,
    ["wrap", "--server", "deployer", "--", "python3", fixture],
    { env: { ...process.env, ELICITATION_REQUEST_URL: `${baseURL}/api/v1/s/${session.token}/elicitations` } },
  );
  const lines: unknown[] = [];
  createInterface({ input: wrapper.stdout }).on("line", (line) => lines.push(JSON.parse(line)));
  const send = (message: object) => wrapper.stdin.write(`${JSON.stringify(message)}\n`);
  /** The harness's response to call `id`, once it arrives. */
  const response = async (id: number) => {
    await expect.poll(() => lines.find((line: any) => line.id === id), { timeout: 15_000 }).toBeTruthy();
    return lines.find((line: any) => line.id === id) as any;
  };
  return { wrapper, send, response, lines };
}

test("a wrapped server's question appears live with its server and tool, and the answer reaches the tool", async ({
  page,
  request,
  baseURL,
}) => {
  const session = await createSession(request, "Wrapped deploy");
  await signIn(page, "rita", `/sessions/${session.id}`);
  await live(page);
  const harness = wrap(baseURL!, session);
  try {
    harness.send({ jsonrpc: "2.0", id: 0, method: "initialize", params: {
      protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "e2e", version: "1" } } });
    harness.send({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "deploy", arguments: {} } });

    const banner = page.locator(".banner");
    await expect(banner).toHaveCount(1);
    await expect(banner.locator(".banner-asker")).toContainText("deployer · tool deploy");
    await expect(banner.locator(".banner-message")).toHaveText("Which environment?");
    await banner.locator('input[name="answer/env"]').fill("production");
    await banner.getByRole("button", { name: "Accept" }).click();
    await expect(banner).toHaveCount(0);

    const result = await harness.response(1);
    const reply = JSON.parse(result.result.content[0].text);
    expect(reply.result).toEqual({ action: "accept", content: { env: "production" } });
    expect(harness.lines.some((line: any) => line.method === "elicitation/create")).toBe(false);
  } finally {
    harness.wrapper.kill();
  }
});

test("a round of two requests is answered with a different action for each", async ({ page, request, baseURL }) => {
  const session = await createSession(request, "Wrapped plan");
  await signIn(page, "rita", `/sessions/${session.id}`);
  await live(page);
  const harness = wrap(baseURL!, session);
  try {
    // 2026-07-28: no initialize; the server answers `input_required` with two questions at once.
    harness.send({ jsonrpc: "2.0", id: 7, method: "tools/call", params: { name: "plan", arguments: {},
      _meta: { "io.modelcontextprotocol/protocolVersion": "2026-07-28" } } });

    const banner = page.locator(".banner");
    await expect(banner).toHaveCount(1);
    await expect(banner.locator(".banner-asker")).toContainText("deployer · tool plan");
    await expect(banner.locator(".request")).toHaveCount(2);
    await expect(banner.locator(".banner-message")).toHaveText(["Which environment?", "Tell the team?"]);

    const env = banner.locator('[data-request-key="env"]');
    const notify = banner.locator('[data-request-key="notify"]');
    await env.locator('input[name="env/env"]').fill("staging");
    await notify.getByLabel("Decline").check();
    await banner.getByRole("button", { name: "Send answers" }).click();
    await expect(banner).toHaveCount(0);
    await expect(page.getByTestId("answer-notice")).toContainText("each as you chose");

    const result = await harness.response(7);
    const report = JSON.parse(result.result.content[0].text);
    expect(report.inputResponses).toEqual({
      env: { action: "accept", content: { env: "staging" } },
      notify: { action: "decline" },
    });
    expect(report.requestState).toBe("state-1+/=opaque");
    expect(harness.lines.some((line: any) => line.result?.resultType === "input_required")).toBe(false);
    await expect(page.locator(".history-entry").first()).toContainText("Accepted, Declined");
  } finally {
    harness.wrapper.kill();
  }
});
