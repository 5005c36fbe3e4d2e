import type * as grpc from '@grpc/grpc-js';

/**
 * The options of every gateway connection to the services, in one place:
 * - reconnection backs off from 100 ms to 2 s instead of grpc-js's default (up to 2 minutes), so a
 *   restarted services process is found again within seconds (meanwhile calls fail at once: 503);
 * - pings every 10 s (5 s to answer) notice a services host that vanished without closing the
 *   connection within ~15 s: until then streams would hold definitions and credentials nobody updates;
 * - answers up to 64 MiB: a project's flags-as-code export is one reply (docs/flags-as-code.md "Limits").
 */
export const SERVICES_CHANNEL_OPTIONS: grpc.ChannelOptions = {
  'grpc.initial_reconnect_backoff_ms': 100,
  'grpc.max_reconnect_backoff_ms': 2_000,
  'grpc.keepalive_time_ms': 10_000,
  'grpc.keepalive_timeout_ms': 5_000,
  'grpc.max_receive_message_length': 64 * 1024 * 1024,
};
