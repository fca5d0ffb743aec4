"""A stdio MCP server built on the real Python SDK (`mcp` 2.3), for checking `anteroom wrap` end to end. One
server speaks both eras; the SDK picks the era from the client's opening (`initialize`, or 2026-07-28 requests).

  deploy  legacy era: `ctx.elicit` sends `elicitation/create` (form: "Which environment?" {env: string,
          required}) and the tool answers with the ElicitResult it got, as JSON text.
  release legacy era, a plain JSON Schema form ("Which version?" {version: string, required}, no `title`: Codex
          0.171's app server parses only `type`, `properties` and `required` at the top and cancels anything else);
          answers with the ElicitResult it got, as JSON text.
  plan    2026-07-28 era (MRTR): the first call returns an `InputRequiredResult` with two elicitations (`env`
          {env: string} and `notify` {channel: string}) and a request state; the retry answers with the text JSON
          {"inputResponses": ..., "requestState": ...} of what it received. (The SDK seals the request state on
          the wire and hands the tool its plain value back only when the client echoed it byte for byte.)
"""

import json

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import (
    CallToolResult,
    ElicitRequest,
    ElicitRequestFormParams,
    InputRequiredResult,
    TextContent,
)
from pydantic import BaseModel

STATE = "plan-state-1+/=opaque"

server = MCPServer("python-sdk-fixture")


class Environment(BaseModel):
    env: str


def text(value: object) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=json.dumps(value, separators=(",", ":")))])


@server.tool(description="Asks which environment to deploy to (legacy form elicitation).")
async def deploy(ctx: Context) -> CallToolResult:
    # No timeout by default: the question waits as long as the person takes.
    outcome = await ctx.elicit("Which environment?", Environment)
    result = {"action": outcome.action}
    if outcome.action == "accept":
        result["content"] = outcome.data.model_dump()
    return text(result)


@server.tool(description="Asks which version to release (legacy form elicitation, a plain JSON Schema).")
async def release(ctx: Context) -> CallToolResult:
    schema = {"type": "object", "properties": {"version": {"type": "string"}}, "required": ["version"]}
    outcome = await ctx.request_context.session.elicit_form("Which version?", schema, ctx.request_id)
    return text(outcome.model_dump(mode="json", by_alias=True, exclude_none=True))


def ask(message: str, field: str, required: bool) -> ElicitRequest:
    schema = {"type": "object", "properties": {field: {"type": "string"}}}
    if required:
        schema["required"] = [field]
    return ElicitRequest(params=ElicitRequestFormParams(message=message, requested_schema=schema))


@server.tool(description="Asks two questions at once (2026-07-28 multi-round-trip).")
async def plan(ctx: Context) -> CallToolResult | InputRequiredResult:
    responses = ctx.input_responses
    if responses is None:
        return InputRequiredResult(
            input_requests={
                "env": ask("Which environment?", "env", required=True),
                "notify": ask("Tell the team?", "channel", required=False),
            },
            request_state=STATE,
        )
    received = {key: response.model_dump(mode="json", by_alias=True, exclude_none=True)
                for key, response in responses.items()}
    return text({"inputResponses": received, "requestState": ctx.request_state})


if __name__ == "__main__":
    server.run("stdio")
