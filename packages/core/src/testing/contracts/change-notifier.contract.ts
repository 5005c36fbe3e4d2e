import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { ChangeNotifier } from '../../ports/session-ports.ts';

/** Two instances on one bus, and a way to break the first one's listening connection. */
export interface ChangeNotifierFixture {
  /** The instance under test. */
  notifier: ChangeNotifier;
  /** Another instance on the same bus (another pool on the same database); an in-process fake passes itself. */
  peer: ChangeNotifier;
  /** Makes `notifier` lose its listening connection, so that it must re-establish it. */
  dropListeningConnection(): Promise<void>;
  close(): Promise<void>;
}

export type MakeChangeNotifiers = () => Promise<ChangeNotifierFixture>;

/** A delivery promised within 1 s (two instances behind one load balancer must agree that fast). */
const DELIVERY_MS = 1_000;
/** Re-establishing a dropped connection includes a reconnect back-off. */
const RECONNECT_MS = 5_000;

/** A fresh channel per test: the suite's instances share one bus. */
const channelName = (): string => `switchyard_test_${randomUUID().replaceAll('-', '').slice(0, 12)}`;

/** Waits for a condition that a notification arriving from the network will make true. */
async function eventually(condition: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) assert.fail(`${what} did not happen within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** Collects what one subscriber hears. */
class Inbox {
  readonly messages: string[] = [];
  reconnects = 0;
  readonly onMessage = (payload: string): void => {
    this.messages.push(payload);
  };
  readonly onReconnect = (): void => {
    this.reconnects += 1;
  };
  received(count: number, timeoutMs = DELIVERY_MS): Promise<void> {
    return eventually(() => this.messages.length >= count, timeoutMs, `receiving ${count} message(s) (got ${JSON.stringify(this.messages)})`);
  }
}

/** The behaviour every ChangeNotifier must show: per-channel fan-out across instances, unsubscribe, reconnect. */
export function changeNotifierContract(name: string, makeNotifiers: MakeChangeNotifiers): void {
  describe(`ChangeNotifier contract: ${name}`, () => {
    let fixture: ChangeNotifierFixture | undefined;
    before(async () => {
      fixture = await makeNotifiers();
    });
    after(async () => {
      await fixture?.close();
    });
    const f = (): ChangeNotifierFixture => {
      if (!fixture) throw new Error('notifiers used before the suite started');
      return fixture;
    };

    test('a subscriber hears what is published on its channel, in order, from either instance, and nothing else', async () => {
      const [mine, other] = [channelName(), channelName()];
      const inbox = new Inbox();
      const neighbour = new Inbox();
      const subscription = await f().notifier.subscribe(mine, inbox.onMessage);
      const neighbourSubscription = await f().notifier.subscribe(other, neighbour.onMessage);
      await f().notifier.publish(other, 'for-the-neighbour');
      await f().notifier.publish(mine, 'from-this-instance');
      await f().peer.publish(mine, 'from-the-peer');
      await inbox.received(2);
      await neighbour.received(1);
      assert.deepEqual(inbox.messages, ['from-this-instance', 'from-the-peer']);
      assert.deepEqual(neighbour.messages, ['for-the-neighbour']);
      await subscription.unsubscribe();
      await neighbourSubscription.unsubscribe();
    });

    test('a publish on one instance reaches a subscriber on the other within 1 s, both ways', async () => {
      const channel = channelName();
      const here = new Inbox();
      const there = new Inbox();
      const subscriptions = [await f().notifier.subscribe(channel, here.onMessage), await f().peer.subscribe(channel, there.onMessage)];
      await f().peer.publish(channel, 'peer-to-notifier');
      await here.received(1);
      await f().notifier.publish(channel, 'notifier-to-peer');
      await there.received(2);
      assert.deepEqual(here.messages.slice(0, 1), ['peer-to-notifier']);
      assert.deepEqual(there.messages, ['peer-to-notifier', 'notifier-to-peer']);
      for (const subscription of subscriptions) await subscription.unsubscribe();
    });

    test('every subscriber of a channel hears each payload', async () => {
      const channel = channelName();
      const inboxes = [new Inbox(), new Inbox()];
      const subscriptions = await Promise.all(inboxes.map((inbox) => f().notifier.subscribe(channel, inbox.onMessage)));
      await f().peer.publish(channel, 'to-everyone');
      for (const inbox of inboxes) {
        await inbox.received(1);
        assert.deepEqual(inbox.messages, ['to-everyone']);
      }
      for (const subscription of subscriptions) await subscription.unsubscribe();
    });

    test('handlers never run inside publish()', async () => {
      const channel = channelName();
      const inbox = new Inbox();
      let publishing = false;
      let heardWhilePublishing = false;
      const subscription = await f().notifier.subscribe(channel, (payload) => {
        heardWhilePublishing ||= publishing;
        inbox.onMessage(payload);
      });
      publishing = true;
      const pending = f().notifier.publish(channel, 'async');
      publishing = false;
      await pending;
      await inbox.received(1);
      assert.equal(heardWhilePublishing, false);
      await subscription.unsubscribe();
    });

    test('unsubscribe stops delivery to that subscriber only; unsubscribing twice is harmless', async () => {
      const channel = channelName();
      const leaving = new Inbox();
      const staying = new Inbox();
      const leavingSubscription = await f().notifier.subscribe(channel, leaving.onMessage);
      const stayingSubscription = await f().notifier.subscribe(channel, staying.onMessage);
      await f().peer.publish(channel, 'before');
      await leaving.received(1);
      await staying.received(1);
      await leavingSubscription.unsubscribe();
      await leavingSubscription.unsubscribe();
      await f().peer.publish(channel, 'after');
      // Both subscribers share the instance, so once `staying` has it, `leaving` would have too.
      await staying.received(2);
      assert.deepEqual(staying.messages, ['before', 'after']);
      assert.deepEqual(leaving.messages, ['before']);
      await stayingSubscription.unsubscribe();
    });

    test('after the listening connection comes back, onReconnect runs and delivery resumes', async () => {
      const channel = channelName();
      const watched = new Inbox();
      const plain = new Inbox();
      const gone = new Inbox();
      const watchedSubscription = await f().notifier.subscribe(channel, watched.onMessage, watched.onReconnect);
      const plainSubscription = await f().notifier.subscribe(channel, plain.onMessage);
      const goneSubscription = await f().notifier.subscribe(channel, gone.onMessage, gone.onReconnect);
      await goneSubscription.unsubscribe();
      await f().peer.publish(channel, 'before');
      await watched.received(1);
      assert.equal(watched.reconnects, 0, 'subscribing is not a reconnect');

      await f().dropListeningConnection();
      await eventually(() => watched.reconnects === 1, RECONNECT_MS, 'onReconnect');
      assert.equal(gone.reconnects, 0, 'an ended subscription is not told');
      await f().peer.publish(channel, 'after');
      await watched.received(2);
      await plain.received(2);
      assert.deepEqual(watched.messages, ['before', 'after']);
      assert.deepEqual(plain.messages, ['before', 'after']);

      // Unsubscribing still works on a subscription that lived through a reconnect.
      await watchedSubscription.unsubscribe();
      await f().peer.publish(channel, 'late');
      await plain.received(3);
      assert.deepEqual(watched.messages, ['before', 'after']);
      assert.deepEqual(gone.messages, []);
      assert.equal(watched.reconnects, 1);
      await plainSubscription.unsubscribe();
    });

    test('channel names and payloads PostgreSQL cannot carry are refused', async () => {
      const refused = (error: unknown): boolean => error instanceof RangeError;
      await assert.rejects(f().notifier.publish('', 'x'), refused);
      await assert.rejects(f().notifier.publish('c'.repeat(64), 'x'), refused);
      await assert.rejects(f().notifier.subscribe('c'.repeat(64), () => {}), refused);
      await assert.rejects(f().notifier.publish(channelName(), 'p'.repeat(8000)), refused);
      // The limits themselves are allowed.
      const channel = `${channelName()}_`.padEnd(63, 'c');
      const inbox = new Inbox();
      const subscription = await f().notifier.subscribe(channel, inbox.onMessage);
      await f().peer.publish(channel, 'p'.repeat(7999));
      await inbox.received(1);
      assert.equal(inbox.messages[0]?.length, 7999);
      await subscription.unsubscribe();
    });
  });
}
