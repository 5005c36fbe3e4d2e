/**
 * `npm run start:gateway`: a gateway process (docs/architecture.md). It serves REST (HTTP_PORT,
 * 8080) and the public sync port (SYNC_GRPC_PORT, 50050) and calls the services process at
 * SERVICES_URL (127.0.0.1:9090); it holds no database connection. Run as many as needed.
 */
import { loadGatewayConfig } from '@switchyard/transport/config.ts';
import { runHost } from '@switchyard/transport/process-lifecycle.ts';
import { startGateway } from './gateway.ts';

void runHost({
  loadConfig: () => loadGatewayConfig(),
  start: (config, logging) => startGateway(config, logging),
  started: (_config, gateway) => process.stdout.write(`\nSwitchyard gateway is up: REST http://localhost:${gateway.httpPort}  gRPC sync :${gateway.syncGrpcPort}\n\n`),
});
