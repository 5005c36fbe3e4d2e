/** What the host entry points compose (hosts/gateway, hosts/services, and this package's main.ts). */
export { loadConfig, loadGatewayConfig, type Config, type GatewayConfig } from './config.ts';
export { runHost } from './process-lifecycle.ts';
export { startServer, type RunningServer, type ServerRole } from './server.ts';
export { startGateway, type RunningGateway } from './gateway.ts';
