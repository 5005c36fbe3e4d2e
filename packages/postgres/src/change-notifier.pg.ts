import type { ChangeNotifier } from '@switchyard/core';
import type { Sql } from './connect.ts';

/** NAMEDATALEN - 1: LISTEN silently truncates a longer name while pg_notify rejects it, so they would never meet. */
const MAX_CHANNEL_BYTES = 63;
/** pg_notify's payload limit (shorter than 8000 bytes). */
const MAX_PAYLOAD_BYTES = 7999;

function checkNotification(channel: string, payload = ''): void {
  const channelBytes = Buffer.byteLength(channel);
  if (channelBytes === 0 || channelBytes > MAX_CHANNEL_BYTES) throw new RangeError(`channel names must be 1 to ${MAX_CHANNEL_BYTES} bytes`);
  if (Buffer.byteLength(payload) > MAX_PAYLOAD_BYTES) throw new RangeError(`payloads must be at most ${MAX_PAYLOAD_BYTES} bytes`);
}

/**
 * ChangeNotifier on PostgreSQL LISTEN/NOTIFY: a publish on any instance reaches the subscribers
 * of every instance connected to the same database. postgres.js keeps one dedicated listening
 * connection per pool and, when it drops, reconnects and listens again — which is when
 * onReconnect runs, because notifications sent meanwhile are lost.
 */
export class PgChangeNotifier implements ChangeNotifier {
  constructor(private readonly sql: Sql) {}

  async publish(channel: string, payload: string): Promise<void> {
    checkNotification(channel, payload);
    await this.sql.notify(channel, payload);
  }

  async subscribe(
    channel: string,
    onMessage: (payload: string) => void,
    onReconnect?: () => void,
  ): Promise<{ unsubscribe(): Promise<void> }> {
    checkNotification(channel);
    // After a reconnect postgres.js re-registers the callbacks as a new listener, which the
    // original handle's unlisten() no longer removes; this flag is what really ends delivery.
    let active = true;
    let listens = 0;
    // Callbacks run on a later microtask, never inside postgres.js's socket handler: a throwing
    // subscriber then surfaces like a throwing event listener instead of breaking the connection.
    const handle = await this.sql.listen(
      channel,
      (payload) => {
        queueMicrotask(() => {
          if (active) onMessage(payload);
        });
      },
      () => {
        listens += 1;
        // postgres.js calls this on the first LISTEN and again after every reconnect.
        if (listens > 1 && onReconnect) {
          queueMicrotask(() => {
            if (active) onReconnect();
          });
        }
      },
    );
    return {
      async unsubscribe() {
        if (!active) return;
        active = false;
        await handle.unlisten();
      },
    };
  }
}
