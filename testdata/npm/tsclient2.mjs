// A host built on the official TypeScript SDK v2 client
// (@modelcontextprotocol/client, pinned in package-lock.json), announcing
// the client capabilities it is given, over stdio.
//
//   node tsclient2.mjs '<config JSON>'    one session, one line on stdout
//   node tsclient2.mjs --serve            many sessions, one process
//
// (sessions.mjs says how --serve reads and answers.)
//
// config: {command, args, capabilities, mode?, timeoutMs?}, or {url, ...}
// for a Streamable HTTP server (StreamableHTTPClientTransport). mode is the
// client's versionNegotiation mode: 'legacy' (its default, as the MCP
// Inspector's), 'auto' (server/discover first) or {pin: VERSION}. It
// connects, reads getInstructions(), lists every page of tools, prompts and
// resource templates, and prints ONE JSON line of what it holds:
// {protocolVersion, instructions, tools, prompts, resourceTemplates, error}
// (definitions are the raw objects the SDK accepted; error is the message of
// the first failure, null when none). It answers roots/list with no roots.
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { runSessions } from './sessions.mjs';

// session runs one client session as cfg says and returns what it holds.
async function session(cfg) {
  const out = { protocolVersion: null, instructions: null, tools: null, prompts: null, resourceTemplates: null, error: null };
  const client = new Client(
    { name: 'tsclient2', version: '0.0.0' },
    { capabilities: cfg.capabilities ?? {}, versionNegotiation: { mode: cfg.mode ?? 'legacy' } },
  );
  if (cfg.capabilities?.roots) {
    client.setRequestHandler('roots/list', async () => ({ roots: [] }));
  }
  const transport = cfg.url
    ? new StreamableHTTPClientTransport(new URL(cfg.url))
    : new StdioClientTransport({ command: cfg.command, args: cfg.args ?? [], env: process.env, stderr: 'pipe' });
  transport.stderr?.resume();
  const timeout = cfg.timeoutMs ?? 10000;
  async function all(list, member) {
    const items = [];
    let cursor;
    do {
      const page = await list(cursor === undefined ? {} : { cursor }, { timeout });
      items.push(...page[member]);
      cursor = page.nextCursor;
    } while (cursor !== undefined);
    return items;
  }
  try {
    await client.connect(transport, { timeout });
    out.protocolVersion = client.getNegotiatedProtocolVersion?.() ?? null;
    out.instructions = client.getInstructions() ?? null;
    const caps = client.getServerCapabilities() ?? {};
    if (caps.tools) out.tools = await all((p, o) => client.listTools(p, o), 'tools');
    if (caps.prompts) out.prompts = await all((p, o) => client.listPrompts(p, o), 'prompts');
    if (caps.resources) out.resourceTemplates = await all((p, o) => client.listResourceTemplates(p, o), 'resourceTemplates');
  } catch (e) {
    out.error = String(e?.message ?? e);
  }
  // The answer does not wait for the close (the server's exit); in one
  // process per session, the process exits once the answer is written.
  client.close().catch(() => {});
  return out;
}

await runSessions(session);
