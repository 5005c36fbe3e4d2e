/**
 * The measuring side of bench/sdk/memory.bench.ts: a child process (run with --expose-gc) that
 * holds nothing but what it measures, so its heap figures are the SDK's and not the server's.
 *
 *   → {type: 'measure', file, baseUrl, syncUrl, full: {sdkKey, environmentId, flags}, empty: {sdkKey, environmentId}}
 *   ← {type: 'measured', rows: [{name, flags, bytes}]}   heap used after − before, each after gc()
 */
import { readFileSync } from 'node:fs';
import { SwitchyardClient, silentLogger, type Flag, type SwitchyardOptions } from '@switchyard/sdk';

interface Command {
  type: 'measure';
  file: string;
  baseUrl: string;
  syncUrl: string;
  full: { sdkKey: string; environmentId: string; flags: number };
  empty: { sdkKey: string; environmentId: string };
}

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with --expose-gc');
const settledHeap = async (): Promise<number> => {
  // Two rounds with a turn of the event loop between: finalizers and weak references settle.
  for (let i = 0; i < 3; i++) {
    gc();
    await new Promise((resolve) => setImmediate(resolve));
  }
  return process.memoryUsage().heapUsed;
};

/** Heap held by what `build` returns, kept alive until measured, then released by `release`. */
async function held<T>(build: () => Promise<T>, release: (value: T) => Promise<void>): Promise<number> {
  const before = await settledHeap();
  const value = await build();
  const after = await settledHeap();
  await release(value);
  await settledHeap();
  return after - before;
}

/** A port nothing listens on: a bootstrap client's stream keeps failing quietly (backoff up to 30 s). */
const NOWHERE = '127.0.0.1:9';

async function measure(command: Command): Promise<void> {
  const text = (): string => readFileSync(command.file, 'utf8');
  const options = (extra: Partial<SwitchyardOptions>): SwitchyardOptions => ({ baseUrl: command.baseUrl, logger: silentLogger, events: { enabled: false }, sdkKey: 'none', syncUrl: NOWHERE, ...extra });
  const bootstrapClient = async (flags: Flag[]): Promise<SwitchyardClient> => {
    const client = new SwitchyardClient(options({ bootstrap: { flags, projectId: 'p', environmentId: command.full.environmentId } }));
    await client.waitForReady({ timeoutMs: 1_000 });
    return client;
  };
  const syncClient = async (target: { sdkKey: string; environmentId: string }, flagCount: number): Promise<SwitchyardClient> => {
    const client = new SwitchyardClient(options({ sdkKey: target.sdkKey, environmentId: target.environmentId, syncUrl: command.syncUrl }));
    await client.waitForReady({ timeoutMs: 60_000 });
    const { state, flagCount: got } = client.diagnostics();
    if (state !== 'ready' || got !== flagCount) throw new Error(`sync client: state ${state}, ${got} flags (expected ${flagCount})`);
    return client;
  };
  const close = (client: SwitchyardClient): Promise<void> => client.close();

  // Warm-up: module loading, the sync client class, JSON.parse and the store's code paths.
  const small = (JSON.parse(text()) as Flag[]).slice(0, 10);
  await close(await bootstrapClient(small));
  await close(await syncClient(command.empty, 0));
  await settledHeap();

  const n = command.full.flags;
  const rows: Array<{ name: string; flags: number; bytes: number }> = [];
  rows.push({ name: 'baseline: parsed JSON array', flags: n, bytes: await held(async () => JSON.parse(text()) as Flag[], async () => {}) });
  rows.push({ name: 'SDK client, bootstrap, no flags', flags: 0, bytes: await held(() => bootstrapClient([]), close) });
  rows.push({ name: 'SDK client, bootstrap', flags: n, bytes: await held(() => bootstrapClient(JSON.parse(text()) as Flag[]), close) });
  rows.push({ name: 'SDK client, sync stream, no flags', flags: 0, bytes: await held(() => syncClient(command.empty, 0), close) });
  rows.push({ name: 'SDK client, sync stream', flags: n, bytes: await held(() => syncClient(command.full, n), close) });
  process.send?.({ type: 'measured', rows });
}

process.on('message', (command: Command) => {
  measure(command).catch((error: unknown) => process.send?.({ type: 'error', message: String((error as Error)?.stack ?? error) }));
});
process.on('disconnect', () => process.exit(0));
