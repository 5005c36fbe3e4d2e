import type { KeyUsageRecorder, SyncHub } from '@switchyard/services';
import type { Config } from './config.ts';
import { startGrpcServer, type RunningGrpcServer } from './grpc/grpc-server.ts';
import { FLAG_SYNC_SERVICE_NAME, addFlagSyncService } from './domains/sync/grpc.ts';
import { addReflection } from './grpc/reflection.ts';
import type { CallerVerifier } from './gateway-services.ts';
import type { Logger } from './logging.ts';
import type { ServerMetrics } from './metrics.ts';

/**
 * The public gRPC port (SYNC_GRPC_*): FlagSyncService over a sync hub, gRPC health and reflection
 * of these two only. The single process and a gateway serve it the same way, each over its own hub.
 */
export function startPublicSyncServer(options: {
  config: Pick<Config, 'syncGrpcHost' | 'syncGrpcPort' | 'syncGrpcTls' | 'grpcLimits'>;
  sync: SyncHub;
  verifier: CallerVerifier;
  /** Told the key of every stream opened (docs/contract.md "Last use of a key": `last_used_at_ms`). */
  keyUses: Pick<KeyUsageRecorder, 'used'>;
  metrics: ServerMetrics;
  logger: Logger;
}): Promise<RunningGrpcServer> {
  const { config, sync, verifier, keyUses, metrics, logger } = options;
  return startGrpcServer({
    name: 'sync',
    host: config.syncGrpcHost,
    port: config.syncGrpcPort,
    tls: config.syncGrpcTls,
    limits: config.grpcLimits,
    logger,
    metrics,
    register: (server, health) => {
      addFlagSyncService(server, { sync, verifier, keyUses, logger, onMessage: metrics.syncMessageSent });
      health.set(FLAG_SYNC_SERVICE_NAME, 'NOT_SERVING');
      addReflection(server, (service) => service === FLAG_SYNC_SERVICE_NAME || service === 'grpc.health.v1.Health');
    },
  });
}
