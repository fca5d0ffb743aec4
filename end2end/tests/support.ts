// What every browser test needs: its own session and questions through the real producer API, people
// signing in through the real form, and a producer's poll.
import { expect, type APIRequestContext, type Page } from "@playwright/test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { randomUUID } from "node:crypto";

import { PASSWORD } from "./server";

export { PASSWORD };

export function adminKey(): string {
  const dir = process.env.ANTEROOM_E2E_DIR;
  if (!dir) throw new Error("ANTEROOM_E2E_DIR is not set (run through playwright.config.ts)");
  return readFileSync(join(dir, "admin.key"), "utf8").trim();
}

export interface TestSession {
  id: string;
  token: string;
}

/** Registers a session of the test's own, as an orchestrator would. */
export async function createSession(request: APIRequestContext, title: string): Promise<TestSession> {
  const id = `e2e-${randomUUID().slice(0, 8)}`;
  const response = await request.post("/api/v1/sessions", {
    headers: { Authorization: `Bearer ${adminKey()}` },
    data: { id, title, agent: "claude-code" },
  });
  expect(response.status(), await response.text()).toBe(201);
  const body = await response.json();
  return { id, token: body.producer_token };
}

/** Posts a question exactly as the pulsemcp client does; returns its request id. */
export async function ask(
  request: APIRequestContext,
  session: TestSession,
  message: string,
  requestedSchema: object,
  options: { tool?: string; server?: string; expiresAt?: string } = {},
): Promise<string> {
  const requestId = randomUUID();
  const meta: Record<string, string> = {
    "com.pulsemcp/request-id": requestId,
    "com.pulsemcp/session-id": session.id,
    "com.pulsemcp/tool-name": options.tool ?? "deploy",
  };
  if (options.expiresAt) meta["com.pulsemcp/expires-at"] = options.expiresAt;
  const server = options.server ?? "shop-mcp";
  const response = await request.post(`/api/v1/s/${session.token}/servers/${server}/elicitations`, {
    data: { mode: "form", message, requestedSchema, _meta: meta },
  });
  expect(response.status(), await response.text()).toBe(201);
  return requestId;
}

/** One poll, as the producer's next poll would see it. */
export async function poll(request: APIRequestContext, session: TestSession, requestId: string) {
  const response = await request.get(`/api/v1/s/${session.token}/elicitations/${requestId}`);
  expect(response.status()).toBe(200);
  return response.json();
}

/** Polls until the answer is no longer pending, like a waiting MCP server. */
export async function waitForAnswer(request: APIRequestContext, session: TestSession, requestId: string) {
  let answer = await poll(request, session, requestId);
  for (let i = 0; i < 50 && answer.action === "pending"; i++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    answer = await poll(request, session, requestId);
  }
  return answer;
}

/** Signs in through the real form (it works with and without JavaScript). */
export async function signIn(page: Page, username: string, next = "/") {
  await page.goto(`/login?next=${encodeURIComponent(next)}`);
  await page.getByLabel("Username").fill(username);
  await page.getByLabel("Password").fill(PASSWORD);
  await page.getByRole("button", { name: "Sign in" }).click();
  await expect(page.getByTestId("signed-in-as")).toContainText(username);
}

/** Waits until the page is hydrated and its event stream is connected. */
export async function live(page: Page) {
  await expect(page.locator(".live-status")).toHaveAttribute("data-state", "live");
}

export const deploySchema = {
  type: "object",
  properties: {
    env: { type: "string", title: "Environment", enum: ["staging", "production"], default: "staging" },
    replicas: { type: "integer", title: "Replicas", minimum: 1, maximum: 5 },
  },
  required: ["env"],
};

/** A form with every field type the renderer knows, each with a default. */
export const everyField = {
  type: "object",
  properties: {
    name: { type: "string", title: "Name", minLength: 2, maxLength: 40, default: "Ada" },
    email: { type: "string", format: "email", title: "Email", default: "ada@example.com" },
    site: { type: "string", format: "uri", title: "Website", default: "https://example.com" },
    day: { type: "string", format: "date", title: "Day", default: "2026-03-01" },
    at: { type: "string", format: "date-time", title: "When", default: "2026-03-01T09:30:00Z" },
    age: { type: "integer", title: "Age", minimum: 18, maximum: 99, default: 30 },
    ratio: { type: "number", title: "Ratio", default: 0.5 },
    agree: { type: "boolean", title: "I agree", default: true },
    env: {
      type: "string",
      title: "Environment",
      enum: ["dev", "prod"],
      enumNames: ["Development", "Production"],
      default: "prod",
    },
    size: {
      type: "string",
      title: "Size",
      oneOf: [
        { const: "s", title: "Small" },
        { const: "m", title: "Medium" },
        { const: "l", title: "Large" },
        { const: "xl", title: "Extra large" },
        { const: "xxl", title: "Huge" },
      ],
      default: "m",
    },
    tags: { type: "array", title: "Tags", items: { type: "string", enum: ["red", "green", "blue"] }, default: ["green"] },
    extra: { type: "object", title: "Extra", default: { k: 1 } },
  },
  required: ["name", "age"],
};

/** Calls the management API as the admin key (groups, settings, assignments). */
export async function adminApi(
  request: APIRequestContext,
  method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE",
  path: string,
  data?: object,
) {
  const response = await request.fetch(path, {
    method,
    headers: { Authorization: `Bearer ${adminKey()}` },
    data,
  });
  expect(response.status(), `${method} ${path}: ${await response.text()}`).toBeLessThan(300);
  return response.status() === 204 ? null : response.json();
}
