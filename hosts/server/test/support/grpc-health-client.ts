import * as grpc from '@grpc/grpc-js';
import { HealthService } from '../../src/grpc/health-service.ts';

/** Asks grpc.health.v1.Health/Check on a real connection; resolves with the status name. */
export function checkHealth(port: number, service = ''): Promise<string> {
  const client = new HealthService(`127.0.0.1:${port}`, grpc.credentials.createInsecure()) as unknown as grpc.Client & {
    check(request: { service: string }, callback: (error: grpc.ServiceError | null, response?: { status: string }) => void): void;
  };
  return new Promise((resolve, reject) => {
    client.check({ service }, (error, response) => {
      client.close();
      if (error) reject(error);
      else resolve(response?.status ?? 'UNKNOWN');
    });
  });
}
