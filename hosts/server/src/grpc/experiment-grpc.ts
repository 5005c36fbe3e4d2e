import type * as grpc from '@grpc/grpc-js';
import type { GatewayServices } from '../http/routes/gateway-services.ts';
import type { Logger } from '../logging.ts';

/** TODO(issue 7): svc.experiments.v1.ExperimentationService and svc.stats.v1.StatsService; being written. */
export function addExperimentGrpcServices(_server: grpc.Server, _deps: { services: GatewayServices; logger: Logger }): void {}
