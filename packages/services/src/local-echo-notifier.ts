import type { ChangeNotifier } from '@switchyard/core';

type Subscriber = { onMessage: (payload: string) => void; active: boolean };

/**
 * Wraps the cross-instance notifier so that this instance's own subscribers hear a publish
 * synchronously, before publish() returns. PostgreSQL delivers NOTIFY to its own session too, but
 * only later; without this, an evaluate call answered right after a write's 2xx on the same
 * instance could still see the old definitions. The later echo from PostgreSQL arrives as well:
 * every subscriber here treats messages as idempotent invalidations, so twice is harmless.
 */
export class LocalEchoNotifier implements ChangeNotifier {
  private readonly local = new Map<string, Set<Subscriber>>();

  constructor(private readonly inner: ChangeNotifier) {}

  async publish(channel: string, payload: string): Promise<void> {
    for (const subscriber of this.local.get(channel) ?? []) {
      if (subscriber.active) subscriber.onMessage(payload);
    }
    await this.inner.publish(channel, payload);
  }

  async subscribe(channel: string, onMessage: (payload: string) => void, onReconnect?: () => void): Promise<{ unsubscribe(): Promise<void> }> {
    const subscriber: Subscriber = { onMessage, active: true };
    const subscribers = this.local.get(channel) ?? new Set<Subscriber>();
    subscribers.add(subscriber);
    this.local.set(channel, subscribers);
    const inner = await this.inner.subscribe(channel, onMessage, onReconnect);
    return {
      unsubscribe: async () => {
        subscriber.active = false;
        subscribers.delete(subscriber);
        await inner.unsubscribe();
      },
    };
  }
}
