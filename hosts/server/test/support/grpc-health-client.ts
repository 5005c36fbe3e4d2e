import * as grpc from '@grpc/grpc-js';
import { HealthService } from '@switchyard/transport/grpc/health-service.ts';

/**
 * Asks grpc.health.v1.Health/Check on a real connection; resolves with the status name.
 * Plaintext unless `credentials` say otherwise (TLS tests pass their own).
 */
export function checkHealth(port: number, service = '', credentials: grpc.ChannelCredentials = grpc.credentials.createInsecure(), options: grpc.ChannelOptions = {}): Promise<string> {
  const client = new HealthService(`127.0.0.1:${port}`, credentials, { 'grpc.use_local_subchannel_pool': 1, ...options }) as unknown as grpc.Client & {
    check(request: { service: string }, options: grpc.CallOptions, callback: (error: grpc.ServiceError | null, response?: { status: string }) => void): void;
  };
  return new Promise((resolve, reject) => {
    // A refused handshake makes grpc-js retry the connection until the deadline: keep it bounded.
    client.check({ service }, { deadline: Date.now() + 10_000 }, (error, response) => {
      client.close();
      if (error) reject(error);
      else resolve(response?.status ?? 'UNKNOWN');
    });
  });
}
