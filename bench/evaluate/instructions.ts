/**
 * Instructions per one-flag evaluate request, counted by valgrind's callgrind: a figure that does
 * not move with the load of a shared machine, to compare the route with its floors (and one
 * version of the code with another) where requests/s on 2 noisy CPUs spread by 10-30%.
 *
 *   valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file=/tmp/evaluate.%p.out \
 *     node --perf-basic-prof --import tsx bench/evaluate/instructions.ts [--requests 10000] [--warmup 20000] [--rewarm 15000]
 *   node --import tsx bench/evaluate/callgrind-parts.ts /tmp/evaluate.<pid>.out   # the table
 *
 * Everything runs in this one process: the real server (over a fresh database, as in
 * evaluate.bench.ts, seeded the same way), the JSON baseline, the no-work Fastify floor and the
 * Fastify floor running the server's evaluation (reference-servers.ts), and a minimal client that
 * writes prepared requests on 16 keep-alive sockets, one in flight per socket. After a warm-up of
 * every target (uninstrumented, so at valgrind's plain speed), each target in turn gets `--rewarm`
 * more requests, then is counted over `--requests` requests between `callgrind_control -i on` and
 * `-i off` and dumped as its own part (callgrind-parts.ts reads them). A `nothing` part counts the
 * switching alone. The targets share this process's JIT, so each one's traffic deoptimises code
 * the previous one had made fast (the route's evaluation ran in baseline code after the
 * evaluating floor's turn): with 2,000 requests of re-warm-up the route's count still held that
 * recompiling, with 15,000 it did not.
 *
 * The counts include V8's own work in that window: garbage collection and optimising compiles
 * (run concurrently outside valgrind, serialised under it), which do not come at the same point
 * of every run. Compare the JavaScript, builtins and native work of the parts (callgrind-parts.ts
 * sets V8's collector and compiler apart) rather than the bare totals. Exits non-zero when not run
 * under callgrind.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { openBenchDatabase } from '../support/bench-database.ts';
import { startBenchServer } from '../support/bench-server.ts';
import { option } from '../support/measure.ts';
import { requestEvaluation, startFastifyServer, startJsonServer } from './reference-servers.ts';
import { evaluateRequests, seedEnvironment } from './seed.ts';

const REQUESTS = option('requests', 10_000);
const WARMUP = option('warmup', 20_000);
/** Requests to a target right before it is counted (its code re-optimised for its own traffic after the others'). */
const REWARM = option('rewarm', 15_000);
const CONNECTIONS = 16;
const ADMIN = { email: 'admin@example.com', password: 'bench-admin-password-1' };

/** Sends `total` of `requests` (in turn) over CONNECTIONS sockets, one in flight per socket; resolves when all are answered. */
function drive(port: number, requests: readonly Buffer[], total: number): Promise<void> {
  return new Promise((resolve, reject) => {
    let sent = 0;
    let answered = 0;
    for (let c = 0; c < CONNECTIONS; c++) {
      const socket = net.connect(port, '127.0.0.1');
      socket.setNoDelay(true);
      let next = c;
      const sendOne = (): void => {
        if (sent === total) {
          socket.end();
          return;
        }
        sent++;
        socket.write(requests[next % requests.length]!);
        next += CONNECTIONS;
      };
      socket.on('connect', sendOne);
      socket.on('error', reject);
      socket.on('data', (chunk: Buffer) => {
        // Each answer starts with its status line; a chunk may hold more than one.
        for (let at = chunk.indexOf('HTTP/1.1 '); at !== -1; at = chunk.indexOf('HTTP/1.1 ', at + 1)) {
          if (++answered === total) resolve();
          sendOne();
        }
      });
    }
  });
}

/**
 * Runs `callgrind_control` on this process. Callgrind reads its commands only while the program
 * runs, so a timer keeps the event loop turning until the command has been taken.
 */
function callgrind(...args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const keepRunning = setInterval(() => {}, 1);
    execFile('callgrind_control', [...args, String(process.pid)], (error, stdout, stderr) => {
      clearInterval(keepRunning);
      // callgrind_control exits 0 even when no callgrind runs this process; it says OK when it did.
      const said = `${stdout}${stderr}`;
      if (error || !said.includes('OK.')) reject(new Error(`callgrind_control ${args.join(' ')}: ${error?.message ?? said.trim()} (run this under valgrind --tool=callgrind)`));
      else resolve();
    });
  });
}

async function main(): Promise<void> {
  const database = await openBenchDatabase();
  const dataDir = mkdtempSync(path.join(tmpdir(), 'switchyard-instructions-'));
  const { server, logging } = await startBenchServer({ databaseUrl: database.url, dataDir, admin: ADMIN, jwtSecret: 'evaluate-bench-secret-of-at-least-32-bytes' });
  const closers: Array<() => Promise<void>> = [];
  try {
    const seeded = await seedEnvironment(server, ADMIN);
    // The rotation of evaluate.bench.ts: every user, and every flag in a stride.
    const oneFlag = evaluateRequests(seeded, 'rotate');
    const requests = oneFlag.map(({ path, body }) =>
      Buffer.from(`POST ${path} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\nx-sdk-key: ${seeded.sdkKey}\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`),
    );
    const sample = await fetch(`http://127.0.0.1:${server.httpPort}${oneFlag[0]!.path}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-sdk-key': seeded.sdkKey }, body: oneFlag[0]!.body });
    const answer = await sample.text();
    if (sample.status !== 200) throw new Error(`the sample request answered ${sample.status}: ${answer}`);
    const json = await startJsonServer(JSON.parse(answer) as object, sample.headers, 5_000);
    closers.push(json.close);
    const fastify = await startFastifyServer(answer, logging.forModule('http'), 5_000);
    closers.push(fastify.close);
    const { evaluation, verifier } = server.services;
    const evaluate = requestEvaluation(evaluation, await verifier.verifySdkKey(seeded.sdkKey), seeded.environmentId, 'evaluate');
    const fastifyEvaluating = await startFastifyServer(answer, logging.forModule('http'), 5_000, { evaluate });
    closers.push(fastifyEvaluating.close);
    const targets: Array<[string, number]> = [
      ['baseline', Number(new URL(json.url).port)],
      ['fastify-floor', Number(new URL(fastify.url).port)],
      ['fastify-evaluating', Number(new URL(fastifyEvaluating.url).port)],
      ['route', server.httpPort],
    ];
    for (const [, port] of targets) await drive(port, requests, WARMUP);
    for (const [name, port] of [['nothing', 0] as [string, number], ...targets]) {
      if (port !== 0) await drive(port, requests, REWARM);
      await callgrind('-z');
      await callgrind('-i', 'on');
      if (port !== 0) await drive(port, requests, REQUESTS);
      await callgrind('-i', 'off');
      await callgrind('-d', name);
      console.log(`counted ${name}: ${port === 0 ? 0 : REQUESTS} requests`);
    }
  } finally {
    for (const close of closers) await close();
    await server.stop();
    await database.drop();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

await main().catch((error: unknown) => {
  console.error(`instructions: ${(error as Error).message}`);
  process.exitCode = 1;
});
