import * as grpc from '@grpc/grpc-js';
import { loadProto, lookup } from './proto.ts';

type ServingStatus = 'SERVING' | 'NOT_SERVING';

interface HealthCheckRequest {
  service: string;
}
interface HealthCheckResponse {
  status: ServingStatus | 'SERVICE_UNKNOWN';
}

const healthProto = loadProto('grpc/health/v1/health.proto');
const HealthService = lookup<grpc.ServiceClientConstructor>(healthProto, 'grpc.health.v1.Health');

/**
 * grpc.health.v1.Health for one gRPC server. "" is the whole server; each registered service
 * name has its own status. Shutdown flips everything to NOT_SERVING first, so probes stop
 * routing traffic here before connections close.
 */
export class HealthStatus {
  private readonly statuses = new Map<string, ServingStatus>([['', 'NOT_SERVING']]);
  private readonly watchers = new Set<{ service: string; call: grpc.ServerWritableStream<HealthCheckRequest, HealthCheckResponse> }>();

  set(service: string, status: ServingStatus): void {
    this.statuses.set(service, status);
    for (const watcher of this.watchers) {
      if (watcher.service === service) watcher.call.write({ status });
    }
  }

  /** Every known service (and the server as a whole) to one status. */
  setAll(status: ServingStatus): void {
    for (const service of [...this.statuses.keys()]) this.set(service, status);
  }

  /** Ends open Watch streams (at shutdown, after the NOT_SERVING update went out). */
  endWatchers(): void {
    for (const watcher of this.watchers) watcher.call.end();
    this.watchers.clear();
  }

  addTo(server: grpc.Server): void {
    server.addService(HealthService.service, {
      check: (call: grpc.ServerUnaryCall<HealthCheckRequest, HealthCheckResponse>, callback: grpc.sendUnaryData<HealthCheckResponse>) => {
        const status = this.statuses.get(call.request.service);
        if (status === undefined) callback({ code: grpc.status.NOT_FOUND, details: `unknown service ${call.request.service}` });
        else callback(null, { status });
      },
      watch: (call: grpc.ServerWritableStream<HealthCheckRequest, HealthCheckResponse>) => {
        const watcher = { service: call.request.service, call };
        this.watchers.add(watcher);
        call.write({ status: this.statuses.get(call.request.service) ?? 'SERVICE_UNKNOWN' });
        call.on('cancelled', () => this.watchers.delete(watcher));
      },
    });
  }
}

export { HealthService };
