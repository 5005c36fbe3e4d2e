/**
 * The SDK side of bench/sdk/propagation.bench.ts, run as child processes so that the clients'
 * decoding never shares the server's event loop. Each process holds `clients` SwitchyardClients
 * (each with its own sync stream; grpc-js shares one HTTP/2 connection per process between
 * clients of the same target and options).
 *
 * Protocol over the IPC channel:
 *   → {type: 'open', clients, sdkKey, environmentId, baseUrl, syncUrl}
 *   ← {type: 'opened', ms, ready}              every client resolved waitForReady (ready: how many are in state ready)
 *   → {type: 'expect', flagKey, value}          a change of flagKey to `value` is about to be made
 *   ← {type: 'expecting'}
 *   ← {type: 'delivered', times}                epoch ms (sub-ms) of each client's `change` event for flagKey
 *   → {type: 'close'}  ← {type: 'closed', reconnects}
 */
import { SwitchyardClient, silentLogger } from '@switchyard/sdk';

type Command =
  | { type: 'open'; clients: number; sdkKey: string; environmentId: string; baseUrl: string; syncUrl: string }
  | { type: 'expect'; flagKey: string; value: boolean }
  | { type: 'close' };

/** The same clock in every process: wall-clock origin plus the monotonic offset. */
const nowMs = (): number => performance.timeOrigin + performance.now();
const send = (message: unknown): void => {
  process.send?.(message);
};
const CONTEXT = { key: 'bench-user' };

let clients: SwitchyardClient[] = [];
let expectation: { flagKey: string; value: boolean; times: number[]; pending: number } | null = null;

function onChange(index: number, flagKeys: string[]): void {
  const waiting = expectation;
  if (!waiting || !Number.isNaN(waiting.times[index]!) || !flagKeys.includes(waiting.flagKey)) return;
  const at = nowMs();
  // The change must be the one announced: the flag now serves the new value.
  if (clients[index]!.boolVariation(waiting.flagKey, CONTEXT, !waiting.value) !== waiting.value) return;
  waiting.times[index] = at;
  waiting.pending -= 1;
  if (waiting.pending === 0) {
    expectation = null;
    send({ type: 'delivered', times: waiting.times });
  }
}

async function open(command: Extract<Command, { type: 'open' }>): Promise<void> {
  const started = nowMs();
  clients = Array.from({ length: command.clients }, (_, index) => {
    const client = new SwitchyardClient({
      sdkKey: command.sdkKey,
      environmentId: command.environmentId,
      baseUrl: command.baseUrl,
      syncUrl: command.syncUrl,
      logger: silentLogger,
      events: { enabled: false },
    });
    client.on('change', ({ flag_keys }) => onChange(index, flag_keys));
    return client;
  });
  await Promise.all(clients.map((client) => client.waitForReady({ timeoutMs: 60_000 })));
  send({ type: 'opened', ms: nowMs() - started, ready: clients.filter((c) => c.state === 'ready').length });
}

async function close(): Promise<void> {
  const reconnects = clients.reduce((sum, c) => sum + c.diagnostics().syncConnectAttempts - 1, 0);
  await Promise.all(clients.map((client) => client.close()));
  clients = [];
  send({ type: 'closed', reconnects });
}

process.on('message', (command: Command) => {
  const fail = (error: unknown): void => send({ type: 'error', message: String((error as Error)?.message ?? error) });
  switch (command.type) {
    case 'open':
      open(command).catch(fail);
      break;
    case 'expect':
      expectation = { flagKey: command.flagKey, value: command.value, times: new Array<number>(clients.length).fill(Number.NaN), pending: clients.length };
      send({ type: 'expecting' });
      break;
    case 'close':
      close().catch(fail);
      break;
  }
});
process.on('disconnect', () => process.exit(0));
