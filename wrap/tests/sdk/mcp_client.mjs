// An agent's MCP client for Anteroom's own `/mcp` endpoint, on the real @modelcontextprotocol/client 2.4 over
// Streamable HTTP with an API key:
//
//   node mcp_client.mjs URL API_KEY legacy|modern 'CALLS'
//
// CALLS is a JSON array of {"tool": NAME, "arguments": {...}}. It prints one JSON line with the tool names
// (`{"tools": [...]}`), then one line per call, in order: `{"result": <CallToolResult>, "progress": N}` or
// `{"error": {"code", "message"}}`. A connection it cannot make prints `{"error": ...}` and exits 1.
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

const [url, key, era, calls] = process.argv.slice(2);
const print = (value) => process.stdout.write(`${JSON.stringify(value)}\n`);

const client = new Client(
    { name: 'anteroom-mcp-test-client', version: '1.0.0' },
    { capabilities: {}, versionNegotiation: { mode: era === 'modern' ? { pin: '2026-07-28' } : 'legacy' } }
);
const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${key}` } }
});
try {
    await client.connect(transport);
    const { tools } = await client.listTools();
    print({ tools: tools.map((tool) => tool.name) });
    for (const call of JSON.parse(calls)) {
        let progress = 0;
        try {
            const result = await client.callTool(
                { name: call.tool, arguments: call.arguments ?? {} },
                { timeout: 120_000, resetTimeoutOnProgress: true, onprogress: () => (progress += 1) }
            );
            print({ result, progress });
        } catch (error) {
            print({ error: { code: error.code ?? null, message: String(error.message ?? error) }, progress });
        }
    }
    await client.close();
} catch (error) {
    print({ error: { code: error.code ?? null, message: String(error.message ?? error) } });
    process.exit(1);
}
