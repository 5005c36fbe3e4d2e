import type { ChangeNotifier } from '../ports/session-ports.ts';

interface Subscriber {
  channel: string;
  onMessage: (payload: string) => void;
  onReconnect: (() => void) | undefined;
}

/** PostgreSQL's limits (NAMEDATALEN - 1 and NOTIFY's payload limit), enforced here too so a fake never accepts what production refuses. */
const MAX_CHANNEL_BYTES = 63;
const MAX_PAYLOAD_BYTES = 7999;
const byteLength = (text: string): number => new TextEncoder().encode(text).length;

function checkNotification(channel: string, payload = ''): void {
  const channelBytes = byteLength(channel);
  if (channelBytes === 0 || channelBytes > MAX_CHANNEL_BYTES) throw new RangeError(`channel names must be 1 to ${MAX_CHANNEL_BYTES} bytes`);
  if (byteLength(payload) > MAX_PAYLOAD_BYTES) throw new RangeError(`payloads must be at most ${MAX_PAYLOAD_BYTES} bytes`);
}

/**
 * ChangeNotifier within one process: every subscriber of this instance hears every publish on
 * its channel. Delivery is asynchronous, as a real notification arriving from the network is, so
 * a handler never runs inside publish() — code that works here does not rely on re-entrancy.
 */
export class InMemoryChangeNotifier implements ChangeNotifier {
  private readonly subscribers = new Set<Subscriber>();

  async publish(channel: string, payload: string): Promise<void> {
    checkNotification(channel, payload);
    // The audience is fixed when the message is sent, as with NOTIFY: a later subscriber misses it.
    for (const subscriber of this.subscribers) {
      if (subscriber.channel !== channel) continue;
      queueMicrotask(() => {
        if (this.subscribers.has(subscriber)) subscriber.onMessage(payload);
      });
    }
  }

  async subscribe(
    channel: string,
    onMessage: (payload: string) => void,
    onReconnect?: () => void,
  ): Promise<{ unsubscribe(): Promise<void> }> {
    checkNotification(channel);
    const subscriber: Subscriber = { channel, onMessage, onReconnect };
    this.subscribers.add(subscriber);
    return {
      unsubscribe: async () => {
        this.subscribers.delete(subscriber);
      },
    };
  }

  /** For tests: acts as if the listening connection dropped and came back (calls every onReconnect). */
  simulateReconnect(): void {
    for (const subscriber of [...this.subscribers]) subscriber.onReconnect?.();
  }
}
