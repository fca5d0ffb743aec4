// A harness stand-in built on the real @modelcontextprotocol/client 2.4: it plays the MCP client an agent's
// harness would be, so `anteroom wrap` can be checked between a real client and a real server.
//
//   node harness.mjs --era legacy|modern --tool NAME --timeout-ms N [--reset-on-progress] -- COMMAND ARGS...
//
// It spawns COMMAND over stdio, declares NO elicitation capability (only the wrapper can answer), pins the era
// (legacy: `initialize` at 2025-11-25; modern: 2026-07-28, the version and capabilities in every request's
// `_meta`), calls the tool with an onprogress callback (so a progressToken is sent), and prints ONE JSON line:
//   {"result": <CallToolResult>, "progress": N}  or  {"error": {"code": ..., "message": ...}, "progress": N}
// Everything else goes to stderr. It exits 0 unless its own command line is wrong (2).
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

function usage(why) {
    console.error(`harness: ${why}`);
    console.error('usage: node harness.mjs --era legacy|modern --tool NAME --timeout-ms N [--reset-on-progress] -- COMMAND ARGS...');
    process.exit(2);
}

function parse(argv) {
    const options = { era: undefined, tool: undefined, timeoutMs: undefined, resetOnProgress: false };
    let index = 0;
    for (; index < argv.length && argv[index] !== '--'; index += 1) {
        const flag = argv[index];
        const value = () => argv[++index] ?? usage(`${flag} needs a value`);
        if (flag === '--era') options.era = value();
        else if (flag === '--tool') options.tool = value();
        else if (flag === '--timeout-ms') options.timeoutMs = Number(value());
        else if (flag === '--reset-on-progress') options.resetOnProgress = true;
        else usage(`unknown option ${flag}`);
    }
    const command = argv.slice(index + 1);
    if (!['legacy', 'modern'].includes(options.era)) usage('--era is legacy or modern');
    if (!options.tool) usage('--tool is required');
    if (!Number.isFinite(options.timeoutMs) || options.timeoutMs <= 0) usage('--timeout-ms is a positive number');
    if (command.length === 0) usage('name the command after --');
    return { ...options, command };
}

const options = parse(process.argv.slice(2));

const client = new Client(
    { name: 'anteroom-sdk-harness', version: '1.0.0' },
    {
        // No elicitation: only the wrapper can answer, so it must declare it for us.
        capabilities: {},
        versionNegotiation: { mode: options.era === 'legacy' ? 'legacy' : { pin: '2026-07-28' } }
    }
);
const transport = new StdioClientTransport({
    command: options.command[0],
    args: options.command.slice(1),
    // The SDK passes only a short list of "safe" variables by default; the wrapper needs ELICITATION_REQUEST_URL.
    env: { ...process.env },
    stderr: 'inherit'
});

let progress = 0;
let output;
try {
    await client.connect(transport);
    console.error(`harness: connected, protocol ${client.getNegotiatedProtocolVersion?.() ?? '?'}`);
    const result = await client.callTool(
        { name: options.tool, arguments: {} },
        {
            timeout: options.timeoutMs,
            resetTimeoutOnProgress: options.resetOnProgress,
            onprogress: (note) => {
                progress += 1;
                console.error(`harness: progress ${JSON.stringify(note)}`);
            }
        }
    );
    output = { result, progress };
} catch (error) {
    console.error('harness: the call failed:', error);
    output = { error: { code: error?.code ?? null, message: String(error?.message ?? error) }, progress };
}
process.stdout.write(`${JSON.stringify(output)}\n`);
try {
    await client.close();
} catch (error) {
    console.error('harness: close failed:', error);
}
process.exit(0);
