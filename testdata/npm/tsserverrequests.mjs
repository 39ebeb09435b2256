// What the official TypeScript clients receive of a server's own requests
// and notifications (sampling/createMessage, elicitation/create, roots/list,
// notifications/message) through mcpsign (internal/testkit/difftest,
// TestServerRequestsReachOnlyWhatTheClientAsked).
//
//   node tsserverrequests.mjs '<config JSON>'
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
const cfg = JSON.parse(process.argv[2]);
let Client;
let StdioClientTransport;
if (cfg.sdk === 'v2') {
  ({ Client } = await import('@modelcontextprotocol/client'));
  ({ StdioClientTransport } = await import('@modelcontextprotocol/client/stdio'));
} else {
  ({ Client } = await import('@modelcontextprotocol/sdk/client/index.js'));
  ({ StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js'));
}
const out = { received: [], call: null, error: null };
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
const answers = {
  'sampling/createMessage': { role: 'assistant', content: { type: 'text', text: 'ok' }, model: 'none' },
  'elicitation/create': { action: 'decline' },
  'roots/list': { roots: [] },
};
client.fallbackRequestHandler = async (req) => answers[req.method] ?? {};
client.fallbackNotificationHandler = async () => {};
const timeoutMs = cfg.timeoutMs ?? 5000;
const timeout = (p) => Promise.race([p, new Promise((_, reject) => setTimeout(() => reject(new Error('timeout')), timeoutMs))]);
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
process.stdout.write(JSON.stringify(out) + '\n');
await client.close().catch(() => {});
process.exit(0);
