// What the official TypeScript clients receive of a server's own requests
// and notifications (sampling/createMessage, elicitation/create, roots/list,
// notifications/message) through mcpsign (internal/testkit/difftest,
// TestServerRequestsReachOnlyWhatTheClientAsked).
//
//   node tsserverrequests.mjs '<config JSON>'    one session, one line on stdout
//   node tsserverrequests.mjs --serve            many sessions, one process
//
// (sessions.mjs says how --serve reads and answers.)
//
// config: {sdk: "v1" | "v2", command, args, env, capabilities, call: {name,
// arguments}, timeoutMs, settleMs}. sdk v1 is @modelcontextprotocol/sdk, v2
// the v2 client @modelcontextprotocol/client. It spawns command through the
// SDK's StdioClientTransport, connects announcing capabilities, calls the
// tool, waits settleMs and prints ONE JSON line: {received: [{method,
// params}], call: {ok, error}, error}. received are the server's requests
// and notifications as they arrived on the client's transport (before the
// SDK's own capability checks), in order; notifications/* list_changed and
// progress are left out.
import { runSessions } from './sessions.mjs';

// sdks loads each SDK's client once, when a session first asks for it.
const sdks = {
  v1: async () => ({
    Client: (await import('@modelcontextprotocol/sdk/client/index.js')).Client,
    StdioClientTransport: (await import('@modelcontextprotocol/sdk/client/stdio.js')).StdioClientTransport,
  }),
  v2: async () => ({
    Client: (await import('@modelcontextprotocol/client')).Client,
    StdioClientTransport: (await import('@modelcontextprotocol/client/stdio')).StdioClientTransport,
  }),
};

const answers = {
  'sampling/createMessage': { role: 'assistant', content: { type: 'text', text: 'ok' }, model: 'none' },
  'elicitation/create': { action: 'decline' },
  'roots/list': { roots: [] },
};

// session runs one client session as cfg says and returns what it received.
async function session(cfg) {
  const out = { received: [], call: null, error: null };
  const { Client, StdioClientTransport } = await sdks[cfg.sdk === 'v2' ? 'v2' : 'v1']();
  const transport = new StdioClientTransport({
    command: cfg.command,
    args: cfg.args ?? [],
    env: { ...process.env, ...(cfg.env ?? {}) },
    stderr: 'inherit',
  });
  const start = transport.start.bind(transport);
  transport.start = async () => {
    const prev = transport.onmessage;
    transport.onmessage = (m, extra) => {
      if (typeof m?.method === 'string' && !m.method.endsWith('/list_changed') && m.method !== 'notifications/progress') {
        out.received.push({ method: m.method, params: m.params ?? null });
      }
      prev?.(m, extra);
    };
    await start();
  };
  const client = new Client({ name: 'mcpsign-serverrequests', version: '0' }, { capabilities: cfg.capabilities ?? {} });
  client.fallbackRequestHandler = async (req) => answers[req.method] ?? {};
  client.fallbackNotificationHandler = async () => {};
  const timeoutMs = cfg.timeoutMs ?? 5000;
  const timeout = (p) => {
    let timer;
    const expired = new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error('timeout')), timeoutMs);
    });
    return Promise.race([p, expired]).finally(() => clearTimeout(timer));
  };
  try {
    await timeout(client.connect(transport));
    try {
      await timeout(client.callTool(cfg.call));
      out.call = { ok: true };
    } catch (e) {
      out.call = { ok: false, error: String(e?.message ?? e) };
    }
    await new Promise((resolve) => setTimeout(resolve, cfg.settleMs ?? 300));
  } catch (e) {
    out.error = String(e?.message ?? e);
  }
  // The answer does not wait for the close (the server's exit); in one
  // process per session, the process exits once the answer is written.
  client.close().catch(() => {});
  return out;
}

await runSessions(session);
