/** The single process's composition root, also run in the `services` role by hosts/services. */
export { startServer, type InProcessServices, type RunningServer, type ServerRole, type StartOptions } from './server.ts';
export { firstRun, FIRST_RUN, FIRST_RUN_FILES, type FirstRunResult, type FirstRunLogin } from './first-run.ts';
export { firstRunBanner } from './first-run-banner.ts';
