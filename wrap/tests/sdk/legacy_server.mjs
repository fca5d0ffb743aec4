// A legacy-era (2025-11-25) stdio MCP server built on the real @modelcontextprotocol/sdk 1.32, for checking
// `anteroom wrap` end to end: its tools ask with `elicitInput` (a server-to-client `elicitation/create`) and
// answer with exactly the ElicitResult they got back.
//
//   deploy   form mode: "Which environment?" {env: string, required}
//   sign_in  URL mode: https://auth.example.com/login (then sends the URL's completion notice)
//
// Both tools are always listed, but the SDK's `elicitInput` refuses when the client did not declare the mode:
// the wrapper must add elicitation to the harness's `initialize`.
import { randomUUID } from 'node:crypto';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';

const server = new McpServer({ name: 'legacy-sdk-fixture', version: '1.0.0' });

// The server times its own question: 60 s by default. A person may take longer, so the question waits up to
// an hour, and any progress the wrapper sends on it restarts that clock. When the harness cancels the call, the
// question is withdrawn too (the SDK sends `notifications/cancelled` for it).
function waitingOptions(extra) {
    let heard = 0;
    return {
        timeout: 60 * 60 * 1000,
        resetTimeoutOnProgress: true,
        onprogress: (progress) => {
            heard += 1;
            console.error(`legacy_server: progress on our question #${heard}: ${JSON.stringify(progress)}`);
        },
        signal: extra.signal,
        relatedRequestId: extra.requestId
    };
}

const text = (value) => ({ content: [{ type: 'text', text: JSON.stringify(value) }] });

server.registerTool('deploy', { description: 'Asks which environment to deploy to (form elicitation).' }, async (extra) => {
    const result = await server.server.elicitInput(
        {
            mode: 'form',
            message: 'Which environment?',
            requestedSchema: { type: 'object', properties: { env: { type: 'string' } }, required: ['env'] }
        },
        waitingOptions(extra)
    );
    return text(result);
});

server.registerTool('sign_in', { description: 'Asks the person to sign in at a URL (URL elicitation).' }, async (extra) => {
    const elicitationId = randomUUID();
    const result = await server.server.elicitInput(
        { mode: 'url', message: 'Sign in to the deployer', url: 'https://auth.example.com/login', elicitationId },
        waitingOptions(extra)
    );
    if (result.action === 'accept') {
        // What a real server does once the out-of-band step is done; the wrapper consumes it.
        await server.server.createElicitationCompletionNotifier(elicitationId)();
    }
    return text(result);
});

await server.connect(new StdioServerTransport());
