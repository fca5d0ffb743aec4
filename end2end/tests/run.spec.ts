// `anteroom run` seen from the browser: a real run of a small agent, whose state and output tail update live on
// its session's page, and whose Stop (behind its confirmation) reaches the agent and says who stopped it.
import AxeBuilder from "@axe-core/playwright";
import { expect, test } from "./server";
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { adminKey, live, signIn } from "./support";

const binary = "../target/debug/anteroom";

test("a run's state and output update live, and Stop ends the agent as the person who pressed it", async ({
  page,
  baseURL,
}) => {
  const session = `e2e-run-${randomUUID().slice(0, 8)}`;
  const agent = spawn(
    binary,
    ["run", "--session", session, "--title", "Nightly upgrade", "--", "sh", "-c",
      "echo 'first line <b>not bold</b>'; sleep 2; echo 'second line'; exec sleep 600"],
    {
      env: { ...process.env, ANTEROOM_URL: baseURL!, ANTEROOM_API_KEY: adminKey() },
      stdio: ["ignore", "ignore", "pipe"],
    },
  );
  let said = "";
  agent.stderr.on("data", (chunk: Buffer) => (said += chunk.toString()));
  const exited = new Promise<number | null>((done) => agent.once("exit", (code) => done(code)));
  try {
    await expect.poll(() => said, { timeout: 15_000 }).toContain(`session ${session}`);
    await signIn(page, "rita", `/sessions/${session}`);
    await live(page);
    const state = page.getByTestId("run-state");
    const output = page.getByTestId("run-output");
    await expect(state).toHaveText("running");
    // Text, never markup: the agent's angle brackets are shown as printed.
    await expect(output).toContainText("first line <b>not bold</b>");
    await expect(output.locator("b")).toHaveCount(0);
    // The second line arrives while the page stays open.
    await expect(output).toContainText("second line", { timeout: 10_000 });

    // Stop sits behind a confirmation.
    const confirm = page.getByRole("button", { name: "Stop it now" });
    await expect(confirm).toBeHidden();
    await page.getByText("Stop the agent…").click();
    // The panel with its confirmation open, in both colour schemes: no serious or critical violation.
    for (const colorScheme of ["light", "dark"] as const) {
      await page.emulateMedia({ colorScheme });
      const results = await new AxeBuilder({ page }).include(".run").analyze();
      const serious = results.violations.filter((v) => v.impact === "serious" || v.impact === "critical");
      expect(serious.map((v) => `${colorScheme}: ${v.id} at ${v.nodes[0]?.target.join(" ")}`)).toEqual([]);
    }
    await confirm.click();
    await expect(state).toHaveText("stopped by rita", { timeout: 15_000 });
    expect(await exited).toBe(130);
    await expect(page.getByText("Stop the agent…")).toHaveCount(0);
    // The queue says so too.
    await page.goto("/");
    await expect(page.locator(`[data-session-id="${session}"]`)).toContainText("run stopped");
  } finally {
    agent.kill("SIGKILL");
  }
});
