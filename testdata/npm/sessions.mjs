// How the tests' TypeScript clients (tsclient.mjs, tsclient2.mjs,
// tsserverrequests.mjs) are run: one session per process, or many in one.
//
//   node CLIENT.mjs '<config JSON>'    one session, one line on stdout
//   node CLIENT.mjs --serve            many sessions, one process
//
// With --serve it reads requests from stdin, one JSON line each,
// {"id": N, "config": {...}}, runs each as its own session (its own Client
// and transport, concurrently with the others) and writes one line per
// request, {"id": N, "out": {...}}, in the order they end; it exits once
// stdin is closed and the sessions it holds have ended. This saves a Node.js
// start and the SDK's load (about 0.3 s of CPU) per session
// (internal/testkit/fixtures, TSClientSession).
import { createInterface } from 'node:readline';

// runSessions runs session(config), an async function returning the JSON
// value a session prints, as the command line asks.
export async function runSessions(session) {
  if (process.argv[2] !== '--serve') {
    const out = await session(JSON.parse(process.argv[2]));
    // Exit once the line is written: a large one is still in flight.
    process.stdout.write(JSON.stringify(out) + '\n', () => process.exit(0));
    return;
  }
  const running = new Set();
  let closed = false;
  const exitWhenDone = () => {
    if (closed && running.size === 0) process.stdout.write('', () => process.exit(0));
  };
  const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
  lines.on('line', (line) => {
    if (line.trim() === '') return;
    const req = JSON.parse(line);
    // A session that throws answers its own request with the error: it
    // must not take down the process and the other sessions with it.
    const p = Promise.resolve()
      .then(() => session(req.config))
      .catch((e) => ({ error: `session threw: ${e?.message ?? e}` }))
      .then((out) => {
        process.stdout.write(JSON.stringify({ id: req.id, out }) + '\n');
        running.delete(p);
        exitWhenDone();
      });
    running.add(p);
  });
  lines.on('close', () => {
    closed = true;
    exitWhenDone();
  });
}
