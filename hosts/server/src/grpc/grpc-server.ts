import * as grpc from '@grpc/grpc-js';
import type { Logger } from '../logging.ts';
import { HealthStatus } from './health-service.ts';

export interface RunningGrpcServer {
  server: grpc.Server;
  port: number;
  health: HealthStatus;
  /** NOT_SERVING, then a graceful shutdown; calls still open after `graceMs` are cancelled. */
  stop(graceMs: number): Promise<void>;
}

/**
 * A grpc-js server with the health service, bound to `port` (0: any free port). Keepalive pings
 * from the server keep idle long-lived streams alive through proxies and NATs.
 */
export async function startGrpcServer(options: {
  name: string;
  host: string;
  port: number;
  logger: Logger;
  register?: (server: grpc.Server, health: HealthStatus) => void;
}): Promise<RunningGrpcServer> {
  const server = new grpc.Server({
    'grpc.keepalive_time_ms': 30_000,
    'grpc.keepalive_timeout_ms': 10_000,
    'grpc.keepalive_permit_without_calls': 1,
    'grpc.max_receive_message_length': 4 * 1024 * 1024,
  });
  const health = new HealthStatus();
  health.addTo(server);
  options.register?.(server, health);

  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync(`${options.host}:${options.port}`, grpc.ServerCredentials.createInsecure(), (error, bound) =>
      error ? reject(error) : resolve(bound),
    );
  });
  health.setAll('SERVING');
  options.logger.info({ port }, `${options.name} gRPC listening`);

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
