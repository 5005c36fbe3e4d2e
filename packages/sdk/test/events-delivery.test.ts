import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { after, afterEach, before, describe, test } from 'node:test';
import { EventDelivery, type EventDeliveryOptions } from '../src/events/event-delivery.ts';
import type { SdkLogger } from '../src/logger.ts';

const SDK_KEY = 'sdk-secret-key-that-must-never-be-logged';
const ENV = '7d0c2f7e-1f0b-4a5e-9f61-0c8f8a1e2b3c';

interface Received {
  url: string;
  headers: IncomingHttpHeaders;
  body: any;
  bytes: number;
  at: number;
}

interface Answer {
  status: number;
  headers?: Record<string, string>;
  body?: unknown;
  delayMs?: number;
}

/** A local ingest server: records every request and answers with `respond` (202 with everything accepted by default). */
class FakeIngest {
  readonly received: Received[] = [];
  respond: (request: Received, index: number) => Answer = (request) => ({ status: 202, body: { accepted_count: entriesOf(request).length, rejected_keys: [] } });
  private server!: Server;
  base = '';

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const raw = Buffer.concat(chunks);
        const request: Received = { url: req.url ?? '', headers: req.headers, body: JSON.parse(raw.toString('utf8')), bytes: raw.length, at: Date.now() };
        const index = this.received.push(request) - 1;
        const answer = this.respond(request, index);
        setTimeout(() => {
          res.writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers });
          res.end(answer.body === undefined ? '' : JSON.stringify(answer.body));
        }, answer.delayMs ?? 0);
      });
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.base = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  reset(): void {
    this.received.length = 0;
    this.respond = (request) => ({ status: 202, body: { accepted_count: entriesOf(request).length, rejected_keys: [] } });
  }

  stop(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}

const entriesOf = (request: Received): any[] => request.body.events ?? request.body.exposures;

/** Every log call, to check what is said and that no secret is in it. */
function recordingLogger(): SdkLogger & { lines: { level: string; message: string; fields?: Record<string, unknown> }[] } {
  const lines: { level: string; message: string; fields?: Record<string, unknown> }[] = [];
  const at = (level: string) => (message: string, fields?: Record<string, unknown>) => void lines.push({ level, message, ...(fields ? { fields } : {}) });
  return { lines, debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
}

const ingest = new FakeIngest();
const open: EventDelivery[] = [];
let logger: ReturnType<typeof recordingLogger>;

function delivery(options: Partial<EventDeliveryOptions> = {}): EventDelivery {
  logger = recordingLogger();
  const created = new EventDelivery({
    baseUrl: ingest.base,
    sdkKey: SDK_KEY,
    environmentId: () => ENV,
    flushIntervalMs: 3_600_000,
    logger,
    retry: { baseDelayMs: 10, maxDelayMs: 2_000, maxAttempts: 3 },
    ...options,
  });
  open.push(created);
  return created;
}

const event = (i: number, extra: Record<string, unknown> = {}) => ({ metric_key: 'purchase', context_type: 'user', context_key: `user-${i}`, value: i, timestamp_ms: 1_767_225_600_000 + i, ...extra });
const exposure = (contextKey: string, variant = 'treatment', flag = 'checkout') => ({ flag_key: flag, variant_key: variant, context_type: 'user', context_key: contextKey, timestamp_ms: 1_767_225_600_000 });

/** Waits (bounded) until `check` holds; the bound only keeps a broken test from hanging. */
async function eventually(check: () => boolean, what: string, boundMs = 10_000): Promise<void> {
  const until = Date.now() + boundMs;
  while (!check()) {
    if (Date.now() > until) assert.fail(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

function assertNothingSecretLogged(): void {
  const text = JSON.stringify(logger.lines);
  assert.ok(!text.includes(SDK_KEY), 'the SDK key appears in a log line');
  assert.ok(!text.includes('user-'), 'a context key appears in a log line');
}

before(() => ingest.start());
afterEach(async () => {
  assertNothingSecretLogged();
  for (const created of open.splice(0)) await created.close();
  ingest.reset();
});
after(() => ingest.stop());

describe('EventDelivery: metric events', () => {
  test('flush sends one batch to events/batch with the SDK key and an Idempotency-Key; 202 counts as sent', async () => {
    const events = delivery();
    for (let i = 0; i < 3; i++) events.track(event(i));
    events.track({ metric_key: 'signup', context_type: 'user', context_key: 'user-9', timestamp_ms: 5 });
    assert.equal(ingest.received.length, 0, 'nothing is sent before a flush, the interval or a full batch');
    await events.flush();

    assert.equal(ingest.received.length, 1);
    const [request] = ingest.received;
    assert.equal(request!.url, `/v1/environments/${ENV}/events/batch`);
    assert.equal(request!.headers['x-sdk-key'], SDK_KEY);
    assert.equal(request!.headers['content-type'], 'application/json');
    assert.match(String(request!.headers['idempotency-key']), /^[0-9a-f-]{36}$/);
    assert.deepEqual(request!.body, { events: [event(0), event(1), event(2), { metric_key: 'signup', context_type: 'user', context_key: 'user-9', timestamp_ms: 5 }] });
    assert.deepEqual(events.stats(), { queuedEvents: 0, queuedExposures: 0, droppedEvents: 0, droppedExposures: 0, sentEvents: 4, sentExposures: 0, failedAttempts: 0 });

    events.track(event(3));
    await events.flush();
    assert.equal(ingest.received.length, 2);
    assert.notEqual(ingest.received[1]!.headers['idempotency-key'], request!.headers['idempotency-key'], 'each batch has its own key');
  });

  test('500 then 202: the retry carries the same Idempotency-Key and flush waits for it', async () => {
    ingest.respond = (request, index) => (index === 0 ? { status: 500, body: { error: 'boom', code: 'INTERNAL' } } : { status: 202, body: { accepted_count: entriesOf(request).length, rejected_keys: [] } });
    const events = delivery();
    events.track(event(1));
    events.track(event(2));
    await events.flush();
    assert.equal(ingest.received.length, 2);
    assert.equal(ingest.received[0]!.headers['idempotency-key'], ingest.received[1]!.headers['idempotency-key']);
    assert.deepEqual(ingest.received[1]!.body, ingest.received[0]!.body);
    const stats = events.stats();
    assert.equal(stats.sentEvents, 2);
    assert.equal(stats.failedAttempts, 1);
    assert.equal(stats.droppedEvents, 0);
  });

  test('429 with Retry-After: 1 waits about a second (not the 10 ms backoff), then delivers', async () => {
    ingest.respond = (request, index) => (index === 0 ? { status: 429, headers: { 'retry-after': '1' }, body: { error: 'slow down', code: 'RESOURCE_EXHAUSTED' } } : { status: 202, body: { accepted_count: entriesOf(request).length, rejected_keys: [] } });
    const events = delivery();
    events.track(event(1));
    await events.flush();
    assert.equal(ingest.received.length, 2);
    const waited = ingest.received[1]!.at - ingest.received[0]!.at;
    assert.ok(waited >= 900, `the retry came after ${waited} ms`);
    assert.equal(ingest.received[0]!.headers['idempotency-key'], ingest.received[1]!.headers['idempotency-key']);
    assert.equal(events.stats().sentEvents, 1);
  });

  test('network errors (a closed port) are retried up to maxAttempts, then the batch is dropped and counted', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));

    const events = delivery({ baseUrl: `http://127.0.0.1:${port}` });
    events.track(event(1));
    events.track(event(2));
    await events.flush();
    assert.deepEqual(events.stats(), { queuedEvents: 0, queuedExposures: 0, droppedEvents: 2, droppedExposures: 0, sentEvents: 0, sentExposures: 0, failedAttempts: 3 });
    const gaveUp = logger.lines.filter((line) => line.level === 'warn' && line.message.startsWith('gave up'));
    assert.equal(gaveUp.length, 1);
    assert.match(gaveUp[0]!.message, /2 events after 3 attempt\(s\): ECONNREFUSED/);
  });

  test('400 is not retried: one request, the batch dropped, a warning with the error code', async () => {
    ingest.respond = () => ({ status: 400, body: { error: 'events[0].metric_key is required', code: 'INVALID_ARGUMENT' } });
    const events = delivery();
    events.track(event(1));
    await events.flush();
    assert.equal(ingest.received.length, 1);
    const stats = events.stats();
    assert.equal(stats.droppedEvents, 1);
    assert.equal(stats.failedAttempts, 1);
    const warning = logger.lines.find((line) => line.level === 'warn' && line.message.startsWith('gave up'));
    assert.equal(warning?.fields?.code, 'INVALID_ARGUMENT');
    assert.equal(warning?.fields?.status, 400);
  });

  test('a 202 with rejected_keys only (a server older than `rejected`) counts those entries as dropped and warns once per key', async () => {
    ingest.respond = (request) => {
      const entries = entriesOf(request);
      const rejected = entries.filter((entry) => entry.metric_key === 'unknown-metric');
      return { status: 202, body: { accepted_count: entries.length - rejected.length, rejected_keys: rejected.length > 0 ? ['unknown-metric'] : [] } };
    };
    const events = delivery();
    events.track(event(1));
    events.track(event(2, { metric_key: 'unknown-metric' }));
    await events.flush();
    events.track(event(3, { metric_key: 'unknown-metric' }));
    await events.flush();
    const stats = events.stats();
    assert.equal(stats.sentEvents, 1);
    assert.equal(stats.droppedEvents, 2);
    const warnings = logger.lines.filter((line) => line.level === 'warn' && line.message.includes('rejected'));
    assert.equal(warnings.length, 1, 'the same rejected key is logged once');
    assert.deepEqual(warnings[0]!.fields, { rejected_keys: ['unknown-metric'], rejected: [{ key: 'unknown-metric' }] });
  });

  test('a 202 with `rejected` logs each key with its reason (and field) once; a new reason for the same key is logged again', async () => {
    // The fake server judges like the real one would: "unknown-metric" is not defined, "clicks" wants an int.
    ingest.respond = (request) => {
      const rejected: object[] = [];
      entriesOf(request).forEach((entry, index) => {
        if (entry.metric_key === 'unknown-metric') rejected.push({ index, key: 'unknown-metric', reason: 'unknown_metric' });
        else if (entry.metric_key === 'clicks' && entry.value === undefined) rejected.push({ index, key: 'clicks', reason: 'missing_field', field: 'value' });
        else if (entry.metric_key === 'clicks' && !Number.isInteger(entry.value)) rejected.push({ index, key: 'clicks', reason: 'wrong_value_type' });
      });
      const keys = [...new Set(rejected.map((entry) => (entry as { key: string }).key))];
      return { status: 202, body: { accepted_count: entriesOf(request).length - rejected.length, rejected_keys: keys, rejected } };
    };
    const events = delivery();
    events.track(event(1, { metric_key: 'unknown-metric' }));
    events.track(event(2, { metric_key: 'clicks', value: 1.5 }));
    events.track(event(3, { metric_key: 'unknown-metric' }));
    events.track(event(4, { metric_key: 'clicks', value: 2 }));
    await events.flush();
    events.track(event(5, { metric_key: 'clicks', value: 2.5 }));
    events.track(event(6, { metric_key: 'unknown-metric' }));
    await events.flush();
    events.track(event(7, { metric_key: 'clicks', value: undefined }));
    await events.flush();
    assert.equal(events.stats().sentEvents, 1, 'event 4 only');
    assert.equal(events.stats().droppedEvents, 6);
    const warnings = logger.lines.filter((line) => line.level === 'warn' && line.message.includes('rejected'));
    assert.deepEqual(
      warnings.map((line) => line.fields),
      [
        {
          rejected_keys: ['unknown-metric', 'clicks'],
          rejected: [
            { key: 'unknown-metric', reason: 'unknown_metric' },
            { key: 'clicks', reason: 'wrong_value_type' },
          ],
        },
        { rejected_keys: ['clicks'], rejected: [{ key: 'clicks', reason: 'missing_field', field: 'value' }] },
      ],
      'the second batch repeats known (key, reason) pairs only: no warning',
    );
  });

  test('the queue is bounded: beyond maxQueueSize new events are dropped and counted; the queued ones wait for the environment', async () => {
    let environmentId: string | undefined;
    const events = delivery({ maxQueueSize: 5, maxBatchSize: 2, environmentId: () => environmentId });
    for (let i = 0; i < 8; i++) events.track(event(i));
    await events.flush();
    assert.equal(ingest.received.length, 0, 'nothing is sent while the environment is unknown');
    assert.deepEqual(events.stats(), { queuedEvents: 5, queuedExposures: 0, droppedEvents: 3, droppedExposures: 0, sentEvents: 0, sentExposures: 0, failedAttempts: 0 });
    assert.equal(logger.lines.filter((line) => line.message.includes('queue full')).length, 1, 'one warning per overflow');

    environmentId = ENV;
    await events.flush();
    assert.deepEqual(
      ingest.received.map((request) => entriesOf(request).map((entry) => entry.context_key)),
      [['user-0', 'user-1'], ['user-2', 'user-3'], ['user-4']],
      'the first five, in order, in batches of maxBatchSize',
    );
    assert.equal(events.stats().sentEvents, 5);
  });

  test('a full batch (maxBatchSize) is sent without a flush; the remainder waits', async () => {
    const events = delivery({ maxBatchSize: 10 });
    for (let i = 0; i < 25; i++) events.track(event(i));
    await eventually(() => ingest.received.length === 2 && events.stats().sentEvents === 20, 'two full batches');
    assert.deepEqual(ingest.received.map((request) => entriesOf(request).length), [10, 10]);
    assert.equal(events.stats().queuedEvents, 5);
    await events.flush();
    assert.deepEqual(ingest.received.map((request) => entriesOf(request).length), [10, 10, 5]);
  });

  test('batches stay under the 1 MiB body limit however large maxBatchSize is', async () => {
    const events = delivery({ maxBatchSize: 10_000 });
    const bigKey = 'k'.repeat(500);
    for (let i = 0; i < 3_000; i++) events.track(event(i, { context_key: `user-${bigKey}-${i}` }));
    await events.flush();
    assert.ok(ingest.received.length >= 2, `${ingest.received.length} requests`);
    for (const request of ingest.received) assert.ok(request.bytes < 1_048_576, `a body of ${request.bytes} bytes`);
    assert.equal(ingest.received.reduce((sum, request) => sum + entriesOf(request).length, 0), 3_000);
    assert.equal(events.stats().sentEvents, 3_000);
  });

  test('the interval flushes without a call', async () => {
    const events = delivery({ flushIntervalMs: 50 });
    events.track(event(1));
    events.recordExposure(exposure('user-1'));
    await eventually(() => ingest.received.length === 2, 'the interval flush');
    assert.deepEqual(ingest.received.map((request) => request.url).sort(), [`/v1/environments/${ENV}/events/batch`, `/v1/environments/${ENV}/exposures`]);
  });

  test('flush resolves only after the server answered for everything queued before it', async () => {
    ingest.respond = (request) => ({ status: 202, body: { accepted_count: entriesOf(request).length, rejected_keys: [] }, delayMs: 150 });
    const events = delivery({ maxBatchSize: 2 });
    for (let i = 0; i < 5; i++) events.track(event(i));
    await events.flush();
    assert.equal(events.stats().sentEvents, 5);
    assert.equal(events.stats().queuedEvents, 0);
  });

  test('close flushes, then drops (and counts) later calls; it is idempotent', async () => {
    const events = delivery();
    events.track(event(1));
    events.recordExposure(exposure('user-1'));
    const closing = events.close();
    events.track(event(2));
    events.recordExposure(exposure('user-2'));
    await closing;
    await events.close();
    events.track(event(3));
    assert.equal(ingest.received.length, 2);
    assert.deepEqual(events.stats(), { queuedEvents: 0, queuedExposures: 0, droppedEvents: 2, droppedExposures: 1, sentEvents: 1, sentExposures: 1, failedAttempts: 0 });
  });

  test('close with the environment still unknown drops what is queued and says so', async () => {
    const events = delivery({ environmentId: () => undefined });
    events.track(event(1));
    events.recordExposure(exposure('user-1'));
    await events.close();
    assert.equal(ingest.received.length, 0);
    const stats = events.stats();
    assert.equal(stats.droppedEvents, 1);
    assert.equal(stats.droppedExposures, 1);
    assert.equal(stats.queuedEvents, 0);
    assert.ok(logger.lines.some((line) => line.level === 'warn' && line.message.includes('environment not known')));
  });

  test('track and recordExposure never throw, whatever they are given', async () => {
    const events = delivery();
    const bad: unknown[] = [null, undefined, 42, {}, { metric_key: '' }, { metric_key: 7 }];
    for (const value of bad) assert.doesNotThrow(() => events.track(value as never));
    for (const value of bad) assert.doesNotThrow(() => events.recordExposure(value as never));
    assert.doesNotThrow(() => events.track(event(1, { value: 10n })), 'a value JSON cannot carry');
    const throwing = delivery({
      environmentId: () => {
        throw new Error('not yet');
      },
    });
    assert.doesNotThrow(() => throwing.track(event(1)));
    await throwing.flush();
    await events.flush();
    assert.equal(ingest.received.length, 0);
    assert.equal(events.stats().droppedEvents, bad.length + 1);
    assert.equal(events.stats().droppedExposures, bad.length);
  });
  test('a batch that cannot even be sent (an environment id no URL can hold) settles: flush resolves, the events count as dropped', async () => {
    const events = delivery({ environmentId: () => '\uD800' });
    events.track(event(1));
    await events.flush();
    assert.equal(ingest.received.length, 0);
    assert.equal(events.stats().droppedEvents, 1);
    assert.equal(events.stats().queuedEvents, 0);
    assert.ok(logger.lines.some((line) => line.level === 'error' && line.message.startsWith('could not send 1 events')));
  });
});

describe('EventDelivery: exposures', () => {
  test('the same (flag, context, variant) is sent once; other variants, contexts and flags are not deduplicated', async () => {
    const exposures = delivery();
    for (let i = 0; i < 100; i++) exposures.recordExposure(exposure('user-1'));
    exposures.recordExposure(exposure('user-1', 'control'));
    exposures.recordExposure(exposure('user-2'));
    exposures.recordExposure(exposure('user-1', 'treatment', 'banner'));
    exposures.recordExposure({ ...exposure('user-1'), context_type: 'device' });
    await exposures.flush();
    assert.equal(ingest.received.length, 1);
    const [request] = ingest.received;
    assert.equal(request!.url, `/v1/environments/${ENV}/exposures`);
    assert.equal(request!.headers['x-sdk-key'], SDK_KEY);
    assert.match(String(request!.headers['idempotency-key']), /^[0-9a-f-]{36}$/);
    assert.equal(request!.body.exposures.length, 5);
    assert.deepEqual(request!.body.exposures[0], exposure('user-1'));
    assert.equal(exposures.stats().sentExposures, 5);
    assert.equal(exposures.stats().droppedExposures, 0, 'a deduplicated exposure is not a dropped one');
  });

  test('the rule is part of an exposure: the same variant served by a targeting rule, then by an allocation, is sent twice, with its rule_id', async () => {
    const exposures = delivery();
    exposures.recordExposure({ ...exposure('user-1'), rule_id: '' });
    exposures.recordExposure({ ...exposure('user-1'), rule_id: '' });
    exposures.recordExposure({ ...exposure('user-1'), rule_id: 'split' });
    exposures.recordExposure({ ...exposure('user-1'), rule_id: 'split' });
    await exposures.flush();
    assert.deepEqual(ingest.received[0]!.body.exposures.map((sent: { rule_id?: string }) => sent.rule_id), ['', 'split']);
  });

  test('dedup entries expire after the TTL and the least recently seen go first when full', async () => {
    let now = 1_000_000;
    const exposures = delivery({ now: () => now, exposureDedup: { maxEntries: 2, ttlMs: 60_000 } });
    exposures.recordExposure(exposure('user-1'));
    exposures.recordExposure(exposure('user-2'));
    exposures.recordExposure(exposure('user-1')); // deduplicated, and now the most recent
    exposures.recordExposure(exposure('user-3')); // evicts user-2
    exposures.recordExposure(exposure('user-1')); // still remembered
    exposures.recordExposure(exposure('user-2')); // forgotten: recorded again
    now += 60_001;
    exposures.recordExposure(exposure('user-2')); // expired: recorded again
    exposures.recordExposure(exposure('user-3')); // expired: recorded again
    await exposures.flush();
    assert.deepEqual(ingest.received.flatMap((request) => entriesOf(request).map((entry) => entry.context_key)), ['user-1', 'user-2', 'user-3', 'user-2', 'user-2', 'user-3']);
  });

  test('an exposure whose delivery was given up is recorded again by the next evaluation', async () => {
    ingest.respond = (request, index) => (index === 0 ? { status: 403, body: { error: 'no', code: 'PERMISSION_DENIED' } } : { status: 202, body: { accepted_count: entriesOf(request).length, rejected_keys: [] } });
    const exposures = delivery();
    exposures.recordExposure(exposure('user-1'));
    await exposures.flush();
    exposures.recordExposure(exposure('user-1'));
    await exposures.flush();
    assert.equal(ingest.received.length, 2);
    assert.deepEqual(exposures.stats(), { queuedEvents: 0, queuedExposures: 0, droppedEvents: 0, droppedExposures: 1, sentEvents: 0, sentExposures: 1, failedAttempts: 1 });
  });

  test('500 then 202 on exposures: the same Idempotency-Key on the retry', async () => {
    ingest.respond = (request, index) => (index === 0 ? { status: 503, body: { error: 'down', code: 'UNAVAILABLE' } } : { status: 202, body: { accepted_count: entriesOf(request).length, rejected_keys: [] } });
    const exposures = delivery();
    exposures.recordExposure(exposure('user-1'));
    await exposures.flush();
    assert.equal(ingest.received.length, 2);
    assert.equal(ingest.received[0]!.headers['idempotency-key'], ingest.received[1]!.headers['idempotency-key']);
    assert.equal(exposures.stats().sentExposures, 1);
  });
});

// The interval is a minute, far longer than the child's start (which took 4.8 s on a loaded
// machine, past the 5 s default this test used to wait out): a timer that kept the process alive
// would hold it until spawnSync's timeout kills it, which fails on the exit status.
test('the flush timer does not keep the process alive', () => {
  const module = fileURLToPath(new URL('../src/events/event-delivery.ts', import.meta.url));
  const script = `
    const { EventDelivery } = await import(${JSON.stringify(module)});
    const delivery = new EventDelivery({ baseUrl: 'http://127.0.0.1:9', sdkKey: 'k', environmentId: () => undefined, flushIntervalMs: 60_000, logger: { debug() {}, info() {}, warn() {}, error() {} } });
    delivery.track({ metric_key: 'm', context_type: 'user', context_key: 'u', timestamp_ms: 1 });
    console.log('queued', delivery.stats().queuedEvents);`;
  const started = Date.now();
  const child = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8', timeout: 45_000 });
  assert.equal(child.status, 0, `exited by itself (signal ${child.signal}): ${child.stderr}`);
  assert.equal(child.stdout.trim(), 'queued 1');
  assert.ok(Date.now() - started < 45_000, 'exited before the 60 s interval fired');
});
