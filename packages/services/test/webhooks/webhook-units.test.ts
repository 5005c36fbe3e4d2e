import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { describe, test } from 'node:test';
import { Webhook } from 'standardwebhooks';
import {
  consoleLinkOf,
  DEFAULT_RETRY_SCHEDULE,
  endpointWants,
  globMatches,
  newWebhookSecret,
  retryAfterMs,
  retryDelayMs,
  signWebhook,
  slackMessage,
  webhookHeaders,
} from '../../src/index.ts';

describe('event type globs', () => {
  test('`*` is any run of characters, dots included; everything else is literal', () => {
    const cases: Array<[string, string, boolean]> = [
      ['flag.*', 'flag.update', true],
      ['flag.*', 'flag.rules.replace', true],
      ['flag.*', 'flag', false],
      ['flag.*', 'segment.update', false],
      ['*', 'anything.at.all', true],
      ['*.delete', 'flag.delete', true],
      ['*.delete', 'flag.deleted', false],
      ['flag.update', 'flag.update', true],
      ['flag.update', 'flag.updatex', false],
      ['f*g.*e', 'flag.update', true],
      ['**', '', true],
      ['a*a*a*a*a*a*b', 'a'.repeat(100), false],
    ];
    for (const [glob, action, expected] of cases) assert.equal(globMatches(glob, action), expected, `${glob} ~ ${action}`);
  });

  test('filters: empty lists pass everything; a list needs the entry to name one of its ids', () => {
    const entry = { action: 'flag.update', projectId: 'p1', environmentId: 'e1' };
    assert.equal(endpointWants({ eventTypes: ['flag.*'], projectIds: [], environmentIds: [] }, entry), true);
    assert.equal(endpointWants({ eventTypes: ['flag.*'], projectIds: ['p2'], environmentIds: [] }, entry), false);
    assert.equal(endpointWants({ eventTypes: ['flag.*'], projectIds: [], environmentIds: ['e1'] }, entry), true);
    assert.equal(endpointWants({ eventTypes: ['flag.*'], projectIds: [], environmentIds: ['e1'] }, { ...entry, environmentId: null }), false);
  });
});

describe('the retry schedule', () => {
  test('the default: 30 s doubling to a 12 h cap, 17 attempts, about 3.2 days in all (hand-derived: 61,410 s + 5 × 12 h)', () => {
    const waits = Array.from({ length: DEFAULT_RETRY_SCHEDULE.maxAttempts - 1 }, (_, i) => retryDelayMs(DEFAULT_RETRY_SCHEDULE, i + 1, () => 0.5));
    assert.deepEqual(waits.slice(0, 4), [30_000, 60_000, 120_000, 240_000]);
    assert.equal(waits[10], 30_720_000);
    assert.deepEqual(waits.slice(11), Array(5).fill(43_200_000));
    assert.equal(waits.reduce((sum, wait) => sum + wait, 0), 61_410_000 + 5 * 43_200_000);
    // Jitter: ±20 % at the ends of the random range.
    assert.equal(retryDelayMs(DEFAULT_RETRY_SCHEDULE, 1, () => 0), 24_000);
    assert.equal(retryDelayMs(DEFAULT_RETRY_SCHEDULE, 1, () => 0.999_999_999), 36_000);
  });

  test('Retry-After: delta seconds or an HTTP date, at least 1 s, at most the cap; garbage is ignored', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    assert.equal(retryAfterMs('120', now, 43_200_000), 120_000);
    assert.equal(retryAfterMs('0', now, 43_200_000), 1_000);
    assert.equal(retryAfterMs('999999999', now, 43_200_000), 43_200_000);
    assert.equal(retryAfterMs('Thu, 01 Jan 2026 00:10:00 GMT', now, 43_200_000), 600_000);
    assert.equal(retryAfterMs('soon', now, 43_200_000), null);
    assert.equal(retryAfterMs(null, now, 43_200_000), null);
  });
});

describe('signatures', () => {
  test('verified by the standardwebhooks package (an independent implementation), with each secret of a rotation', () => {
    const current = newWebhookSecret();
    const previous = newWebhookSecret();
    const body = JSON.stringify({ type: 'flag.update', timestamp: '2026-01-01T00:00:00.000Z', data: { id: 'e1' } });
    const timestamp = Math.floor(Date.now() / 1000);
    const headers = webhookHeaders([current, previous], 'msg_1', timestamp, body);
    assert.deepEqual(new Webhook(current).verify(body, headers), JSON.parse(body));
    assert.deepEqual(new Webhook(previous).verify(body, headers), JSON.parse(body));
    assert.throws(() => new Webhook(newWebhookSecret()).verify(body, headers));
    assert.throws(() => new Webhook(current).verify(`${body} `, headers), 'a changed body does not verify');
  });

  test('the MAC is HMAC-SHA256 over "id.timestamp.body" keyed with the base64-decoded secret (hand-built)', () => {
    const key = Buffer.alloc(32, 7);
    const secret = `whsec_${key.toString('base64')}`;
    const expected = createHmac('sha256', key).update('msg_2.1700000000.{}').digest('base64');
    assert.equal(signWebhook(secret, 'msg_2', 1_700_000_000, '{}'), `v1,${expected}`);
  });
});

describe('slack messages', () => {
  const entry = {
    id: 'e1',
    at_ms: 0,
    actor: { type: 'user' as const, id: 'u1', email: 'ann@example.com' },
    action: 'flag.update',
    resource_type: 'flag',
    resource_id: 'new-checkout',
    project_id: 'p1',
    environment_id: 'env 1',
    comment: 'ship <it> & see',
  };
  test('a flag entry links to its history tab in the console; others to the org history', () => {
    assert.equal(consoleLinkOf(entry, 'https://flags.example.com/'), 'https://flags.example.com/#/env/env%201/flags/new-checkout/history');
    assert.equal(consoleLinkOf({ ...entry, resource_type: 'segment' }, 'https://flags.example.com'), 'https://flags.example.com/#/history');
  });
  test('text and blocks say who did what, escaped for mrkdwn', () => {
    const message = slackMessage({ type: 'flag.update', timestamp: '1970-01-01T00:00:00.000Z', data: entry }, 'https://flags.example.com');
    assert.equal(message.text, 'ann@example.com: flag.update on flag new-checkout');
    const text = JSON.stringify(message.blocks);
    assert.ok(text.includes('ship &lt;it&gt; &amp; see'));
    assert.ok(text.includes('<https://flags.example.com/#/env/env%201/flags/new-checkout/history|View the history in Switchyard>'));
  });
});
