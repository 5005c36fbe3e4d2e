/**
 * What a split-topology test server needs to run a gateway inside the test's process
 * (test-server.ts): the gateway's composition root, its configuration and its logger.
 *
 * `npm test` compiles this file apart from the test files, with the workspace's packages bundled
 * into it (scripts/compile-tests.ts, compileInProcessGateway): the gateway then has its own copy
 * of every Switchyard module, as a gateway process has, and shares no module-level state with the
 * services running beside it. Packages from node_modules (fastify, grpc-js, ...) are shared with
 * the test's process, loaded and compiled once for all its servers.
 */
export { startGateway, type RunningGateway } from '../../../gateway/src/gateway.ts';
export { loadGatewayConfig } from '@switchyard/transport/config.ts';
export { createLogger } from '@switchyard/transport/logging.ts';
