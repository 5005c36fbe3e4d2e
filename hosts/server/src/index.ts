/** The single process's composition root, also run in the `services` role by hosts/services. */
export { startServer, type InProcessServices, type RunningServer, type ServerRole } from './server.ts';
