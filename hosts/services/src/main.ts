/**
 * `npm run start:services`: the services process behind gateways (docs/architecture.md). It holds
 * the database, serves the internal gRPC services (GRPC_PORT, 9090; loopback unless GRPC_HOST says
 * otherwise) and /healthz, /readyz and /metrics on HTTP_PORT (9091 by default here, so a gateway
 * can keep 8080 on the same machine), and runs the stats worker and the pruner.
 */
import { startServer } from '@switchyard/server';
import { loadConfig } from '@switchyard/transport/config.ts';
import { runHost } from '@switchyard/transport/process-lifecycle.ts';

void runHost({
  loadConfig: () => loadConfig(process.env, { httpPort: 9091 }),
  start: (config, logging) => startServer(config, logging, 'services'),
  started: (_config, server) => process.stdout.write(`\nSwitchyard services are up: internal gRPC :${server.grpcPort}  operations http://localhost:${server.httpPort}/readyz\n\n`),
});
