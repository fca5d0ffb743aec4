// A 2026-07-28-era stdio MCP server built on the real @modelcontextprotocol/server 2.4, for checking
// `anteroom wrap` end to end with multi-round-trip requests (MRTR): the tool does not send a request of its own,
// it returns an `input_required` result and reads the answers from the retried call.
//
//   plan     first call: input_required with two elicitations (`env` {env: string}, `notify` {channel: string})
//            and a requestState; the retry: text JSON {"inputResponses": ..., "requestState": ...} as received.
//   sign_in  the same with one URL-mode elicitation (`login`: https://auth.example.com/login). On this era a URL
//            request has no `elicitationId`: correlation is the server's own, inside requestState.
//
// serveStdio serves both eras from one factory: a 2025-era client (`initialize`) gets the same tool, but the
// input_required result is 2026-07-28 vocabulary, so only a modern client should call these tools.
import { McpServer, inputRequired } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';

const STATE = 'plan-state-1+/=opaque';

// What the retry carried, as the tool's text.
function received(ctx) {
    const seen = { inputResponses: ctx.mcpReq.inputResponses, requestState: ctx.mcpReq.requestState() ?? null };
    return { content: [{ type: 'text', text: JSON.stringify(seen) }] };
}

serveStdio(() => {
    const server = new McpServer({ name: 'mrtr-sdk-fixture', version: '1.0.0' }, { capabilities: { tools: {} } });
    server.registerTool('plan', { description: 'Asks two questions at once (multi-round-trip).' }, async (ctx) => {
        const inputResponses = ctx.mcpReq.inputResponses;
        if (inputResponses === undefined) {
            return inputRequired({
                inputRequests: {
                    env: inputRequired.elicit({
                        message: 'Which environment?',
                        requestedSchema: { type: 'object', properties: { env: { type: 'string' } }, required: ['env'] }
                    }),
                    notify: inputRequired.elicit({
                        message: 'Tell the team?',
                        requestedSchema: { type: 'object', properties: { channel: { type: 'string' } } }
                    })
                },
                requestState: STATE
            });
        }
        return received(ctx);
    });
    server.registerTool('sign_in', { description: 'Asks the person to sign in at a URL (multi-round-trip).' }, async (ctx) => {
        if (ctx.mcpReq.inputResponses === undefined) {
            return inputRequired({
                inputRequests: {
                    login: inputRequired.elicitUrl({ message: 'Sign in to the deployer', url: 'https://auth.example.com/login' })
                },
                requestState: 'sign-in-state-1'
            });
        }
        return received(ctx);
    });
    return server;
});
