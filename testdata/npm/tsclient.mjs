// The differential tests' TypeScript client (internal/testkit/difftest): the official
// MCP TypeScript SDK, pinned in package-lock.json, as a host uses it.
//
//   node tsclient.mjs '<config JSON>'    one session, one line on stdout
//   node tsclient.mjs --serve            many sessions, one process
//
// (sessions.mjs says how --serve reads and answers.)
//
// config: {command, args, call?: {name, arguments}, pipeline?: bool,
// afterCall?: {name, arguments}, resources?: bool, timeoutMs, settleMs}, or
// {url, ...} for a Streamable HTTP server (resources: list the static
// resources too, and print them as resources). It spawns command through
// StdioClientTransport (or speaks to url through
// StreamableHTTPClientTransport), connects, reads getInstructions(), lists
// every page of tools, prompts and resource templates (following
// nextCursor), optionally calls a tool (with pipeline: a tools/list and the
// call at once), re-lists on every list_changed, optionally makes one more
// call once things settled, and prints ONE JSON line of what it holds:
// {instructions, tools, prompts, resourceTemplates, calls:[{name, ok,
// errorCode}], errors:[{method, code, message}], hung:[method], exitCode,
// stderr}. Definitions are the raw objects of the answers the SDK accepted
// (its typed schemas drop unknown members). Every request has a hard
// timeout: one that runs out is listed in hung.
import { runSessions } from './sessions.mjs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CallToolResultSchema,
  ListPromptsResultSchema,
  ListResourceTemplatesResultSchema,
  ListResourcesResultSchema,
  ListToolsResultSchema,
  PromptListChangedNotificationSchema,
  ResourceListChangedNotificationSchema,
  ToolListChangedNotificationSchema,
  isJSONRPCResultResponse,
  isJSONRPCErrorResponse,
} from '@modelcontextprotocol/sdk/types.js';

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// session runs one client session as cfg says and returns what it holds.
async function session(cfg) {
  const timeoutMs = cfg.timeoutMs ?? 3000;
  const settleMs = cfg.settleMs ?? 300;
  const out = {
    instructions: null,
    tools: null,
    prompts: null,
    resourceTemplates: null,
    resources: null,
    calls: [],
    errors: [],
    hung: [],
    exitCode: null,
    stderr: '',
  };

  // With cfg.url instead of command and args: a Streamable HTTP server,
  // through StreamableHTTPClientTransport (exitCode stays null).
  const transport = cfg.url
    ? new StreamableHTTPClientTransport(new URL(cfg.url))
    : new StdioClientTransport({
      command: cfg.command,
      args: cfg.args,
      env: process.env,
      stderr: 'pipe',
    });
  let exited;
  const exitedPromise = new Promise((resolve) => { exited = resolve; });
  const start = transport.start.bind(transport);
  transport.start = async () => {
    await start();
    if (cfg.url) {
      exited();
      return;
    }
    transport._process.on('exit', (code, signal) => {
      out.exitCode = code ?? signal;
      exited();
    });
  };
  transport.stderr?.on('data', (d) => {
    out.stderr = (out.stderr + d.toString()).slice(-4000);
  });

  const client = new Client({ name: 'mcpsign-difftest-ts', version: '0' }, { capabilities: {} });
  const HUNG = Symbol('hung');

  // withTimeout runs one request under the hard timeout.
  async function withTimeout(method, promise) {
    let timer;
    const t = new Promise((resolve) => { timer = setTimeout(() => resolve(HUNG), timeoutMs); });
    try {
      const r = await Promise.race([promise, t]);
      if (r === HUNG) {
        out.hung.push(method);
        return { hung: true };
      }
      return { value: r };
    } catch (e) {
      out.errors.push({ method, code: typeof e?.code === 'number' ? e.code : null, message: String(e?.message ?? e) });
      return { error: e };
    } finally {
      clearTimeout(timer);
    }
  }

  // The raw answer the SDK accepted for each of its request ids, matched as
  // Protocol._onresponse matches them: Number(id), first answer wins.
  const raw = new Map();
  function hookTransport() {
    const prev = transport.onmessage;
    transport.onmessage = (m, extra) => {
      if (isJSONRPCResultResponse(m) || isJSONRPCErrorResponse(m)) {
        const id = Number(m.id);
        if (!raw.has(id)) raw.set(id, m);
      }
      prev?.(m, extra);
    };
  }

  // request sends one request through the SDK and returns its result and the
  // raw answer it was resolved with.
  async function request(method, params, schema) {
    const id = client._requestMessageId;
    const r = await withTimeout(method, client.request({ method, params }, schema, { timeout: timeoutMs * 3 }));
    if (!('value' in r)) return null;
    return { value: r.value, raw: raw.get(id)?.result };
  }

  const kinds = {
    tools: { method: 'tools/list', member: 'tools', schema: ListToolsResultSchema, key: 'name' },
    prompts: { method: 'prompts/list', member: 'prompts', schema: ListPromptsResultSchema, key: 'name' },
    resourceTemplates: { method: 'resources/templates/list', member: 'resourceTemplates', schema: ListResourceTemplatesResultSchema, key: 'uriTemplate' },
    resources: { method: 'resources/list', member: 'resources', schema: ListResourcesResultSchema, key: 'uri' },
  };

  // listKind reads every page of one kind; what the client holds changes only
  // when the whole listing succeeded.
  async function listKind(kind) {
    const k = kinds[kind];
    const items = [];
    const seen = new Set();
    let cursor;
    for (let page = 0; page < 100; page++) {
      const r = await request(k.method, cursor === undefined ? {} : { cursor }, k.schema);
      if (r === null) return;
      const keys = new Set(r.value[k.member].map((d) => d[k.key]));
      for (const d of r.raw?.[k.member] ?? []) {
        if (keys.has(d?.[k.key])) items.push(d);
      }
      cursor = r.value.nextCursor;
      if (cursor === undefined) {
        out[kind] = items;
        return;
      }
      if (seen.has(cursor)) {
        out.errors.push({ method: k.method, code: null, message: 'repeated cursor' });
        return;
      }
      seen.add(cursor);
    }
  }

  async function listAll() {
    const caps = client.getServerCapabilities() ?? {};
    if (caps.tools) await listKind('tools');
    if (caps.prompts) await listKind('prompts');
    if (caps.resources) await listKind('resourceTemplates');
    if (caps.resources && cfg.resources) await listKind('resources');
  }

  async function call(c) {
    const r = await withTimeout('tools/call', client.request({ method: 'tools/call', params: { name: c.name, arguments: c.arguments ?? {} } }, CallToolResultSchema, { timeout: timeoutMs * 3 }));
    if ('value' in r) out.calls.push({ name: c.name, ok: true, errorCode: null });
    else if (r.hung) out.calls.push({ name: c.name, ok: false, errorCode: null, hung: true });
    else out.calls.push({ name: c.name, ok: false, errorCode: typeof r.error?.code === 'number' ? r.error.code : null });
  }

  const relists = new Set();
  function onChanged(kind) {
    return async () => {
      const p = listKind(kind);
      relists.add(p);
      await p;
      relists.delete(p);
    };
  }
  client.setNotificationHandler(ToolListChangedNotificationSchema, onChanged('tools'));
  client.setNotificationHandler(PromptListChangedNotificationSchema, onChanged('prompts'));
  const onTemplatesChanged = onChanged('resourceTemplates');
  const onResourcesChanged = onChanged('resources');
  client.setNotificationHandler(ResourceListChangedNotificationSchema, async () => {
    await Promise.all([onTemplatesChanged(), cfg.resources ? onResourcesChanged() : null]);
  });

  async function settle() {
    await sleep(settleMs);
    for (let i = 0; i < 50 && relists.size > 0; i++) {
      await withTimeout('list_changed re-listing', Promise.all([...relists]));
    }
  }

  async function main() {
    const c = await withTimeout('initialize', client.connect(transport, { timeout: timeoutMs * 3 }));
    if ('value' in c) {
      hookTransport();
      out.instructions = client.getInstructions() ?? null;
      await listAll();
      if (cfg.pipeline && cfg.call) {
        await Promise.all([listKind('tools'), call(cfg.call)]);
      } else if (cfg.call) {
        await call(cfg.call);
      }
      await settle();
      if (cfg.afterCall) {
        await call(cfg.afterCall);
        await settle();
      }
    }
    await Promise.race([client.close(), sleep(6000)]);
    await Promise.race([exitedPromise, sleep(3000)]);
  }

  try {
    await main();
  } catch (e) {
    out.errors.push({ method: 'client', code: null, message: String(e?.stack ?? e) });
  }
  return out;
}

await runSessions(session);
