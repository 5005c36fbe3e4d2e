/**
 * `npm start`: the whole platform in one process. Configuration from environment variables only
 * (docs/configuration.md); a bad value stops the process with one clear line and exit code 2.
 */
import { loadConfig, type Config } from '@switchyard/transport/config.ts';
import { firstRunBanner } from './first-run-banner.ts';
import { runHost } from '@switchyard/transport/process-lifecycle.ts';
import { startServer, type RunningServer } from './server.ts';

function printLoginHelp(config: Config, server: RunningServer): void {
  const lines = [
    '',
    `Switchyard is up: REST http://localhost:${server.httpPort}  gRPC sync :${server.syncGrpcPort}  internal gRPC :${server.grpcPort}`,
    `Web console: http://localhost:${server.httpPort}/  (sign in as the administrator below)   API docs: http://localhost:${server.httpPort}/docs`,
  ];
  const firstRun = server.bootstrap.firstRun;
  if (firstRun) {
    lines.push(...firstRunBanner(firstRun, server));
    if (firstRun.kind !== 'administered') {
      const login = firstRun.admin;
      lines.push(
        `Log in (REST):  curl -s -X POST localhost:${server.httpPort}/v1/auth/login -H 'content-type: application/json' \\`,
        `                  -d '{"email":"${login.email}","password":"'"$(cat ${login.passwordFile})"'"}'`,
      );
    }
  } else if (config.bootstrapAdmin) {
    lines.push(`Log in with POST /v1/auth/login as ${config.bootstrapAdmin.email} (BOOTSTRAP_ADMIN_PASSWORD).`);
  }
  process.stdout.write(`${lines.join('\n')}\n\n`);
}

void runHost({ loadConfig: () => loadConfig(), start: (config, logging) => startServer(config, logging), started: printLoginHelp });
