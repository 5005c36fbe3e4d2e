import * as grpc from '@grpc/grpc-js';
import { DEFAULT_GRPC_LIMITS, type GrpcLimits, type GrpcTls } from '../config.ts';
import type { Logger } from '../logging.ts';
import { HealthStatus } from './health-service.ts';
import { refuseUnstorableStrings } from './request-strings.ts';

export interface RunningGrpcServer {
  server: grpc.Server;
  port: number;
  health: HealthStatus;
  /** NOT_SERVING, then a graceful shutdown; calls still open after `graceMs` are cancelled. */
  stop(graceMs: number): Promise<void>;
}

/**
 * The grpc-js options of every server of this process (docs/security.md).
 * - Keepalive pings from the server every 30 s (10 s to answer) keep idle long-lived streams
 *   alive through proxies and NATs and end connections whose peer vanished. grpc-js servers ping
 *   every connection, with or without calls (`keepalive_permit_without_calls` is read by grpc-js
 *   clients only), and enforce no minimum interval on the client's pings: grpc-js has no
 *   `grpc.http2.min_ping_interval_without_data_ms`; node's HTTP/2 layer drops a connection
 *   whose unanswered control frames pile up (nghttp2 flood protection).
 * - `max_concurrent_streams` caps the calls one connection may have open; further streams wait
 *   in the client until one ends (HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS).
 * - `max_connection_idle_ms` closes a connection without any call; a connection carrying a sync
 *   stream is never idle, so healthy streams are not cut.
 * There is deliberately no `max_connection_age_ms`: it would end every sync stream periodically.
 */
export function grpcServerOptions(limits: GrpcLimits): grpc.ServerOptions {
  return {
    'grpc.keepalive_time_ms': 30_000,
    'grpc.keepalive_timeout_ms': 10_000,
    'grpc.max_receive_message_length': 4 * 1024 * 1024,
    'grpc.max_concurrent_streams': limits.maxConcurrentStreams,
    'grpc.max_connection_idle_ms': limits.maxConnectionIdleMs,
  };
}

/** Plaintext, TLS, or TLS requiring a client certificate signed by `tls.ca` (mutual TLS). */
export function serverCredentials(tls: GrpcTls | null | undefined): grpc.ServerCredentials {
  if (!tls) return grpc.ServerCredentials.createInsecure();
  return grpc.ServerCredentials.createSsl(tls.ca, [{ private_key: tls.key, cert_chain: tls.cert }], tls.ca !== null);
}

/**
 * A grpc-js server with the health service, bound to `host:port` (port 0: any free port),
 * plaintext or TLS. Every request message is checked for strings that cannot be stored
 * (request-strings.ts) before its handler runs.
 */
export async function startGrpcServer(options: {
  name: string;
  host: string;
  port: number;
  logger: Logger;
  tls?: GrpcTls | null;
  limits?: GrpcLimits;
  register?: (server: grpc.Server, health: HealthStatus) => void;
  /** Observes every call of every service added to the server (health included). */
  metrics?: { instrumentGrpc(server: grpc.Server): void };
}): Promise<RunningGrpcServer> {
  const server = new grpc.Server(grpcServerOptions(options.limits ?? DEFAULT_GRPC_LIMITS));
  options.metrics?.instrumentGrpc(server);
  // After the metrics: the guard wraps each handler first, so its refusals are counted too.
  refuseUnstorableStrings(server);
  const health = new HealthStatus();
  health.addTo(server);
  options.register?.(server, health);

  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync(`${bindHost(options.host)}:${options.port}`, serverCredentials(options.tls), (error, bound) =>
      error ? reject(error) : resolve(bound),
    );
  });
  health.setAll('SERVING');
  options.logger.info({ host: options.host, port, tls: options.tls ? (options.tls.ca ? 'mutual' : 'server') : 'off' }, `${options.name} gRPC listening`);

  return {
    server,
    port,
    health,
    async stop(graceMs: number) {
      health.setAll('NOT_SERVING');
      health.endWatchers();
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, graceMs);
        server.tryShutdown(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    },
  };
}

/** An IPv6 address goes in brackets in a `host:port` target. */
function bindHost(host: string): string {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
}
