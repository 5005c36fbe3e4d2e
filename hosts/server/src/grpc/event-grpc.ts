import type * as grpc from '@grpc/grpc-js';
import type { GatewayServices } from '../http/routes/gateway-services.ts';
import type { Logger } from '../logging.ts';

/** TODO(issue 6): being written. */
export function addEventGrpcServices(_server: grpc.Server, _deps: { services: GatewayServices; logger: Logger }): void {}
