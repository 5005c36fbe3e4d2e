/**
 * `npm start`: the whole platform in one process. Configuration from environment variables only
 * (see README); a bad value stops the process with one clear line and exit code 2.
 */
import { loadConfig, type Config } from '@switchyard/transport/config.ts';
import { DEV_ADMIN_EMAIL } from './bootstrap.ts';
import { writeDevAdminPassword } from './dev-secrets.ts';
import { runHost } from '@switchyard/transport/process-lifecycle.ts';
import { startServer, type RunningServer } from './server.ts';

function printLoginHelp(config: Config, server: RunningServer): void {
  const admin = server.bootstrap.createdAdmin;
  const lines = [
    '',
    `Switchyard is up: REST http://localhost:${server.httpPort}  gRPC sync :${server.syncGrpcPort}  internal gRPC :${server.grpcPort}`,
    `Web console: http://localhost:${server.httpPort}/  (sign in as the administrator below)   API docs: http://localhost:${server.httpPort}/docs`,
  ];
  if (admin?.generatedPassword) {
    const file = writeDevAdminPassword(config.dataDir, admin.generatedPassword);
    lines.push(
      `Created the first administrator: ${admin.email} / ${admin.generatedPassword}  (shown once; also kept in ${file})`,
    );
  }
  if (server.database.embedded && !config.bootstrapAdmin) {
    lines.push(
      `Log in:  curl -s -X POST localhost:${server.httpPort}/v1/auth/login -H 'content-type: application/json' \\`,
      `           -d '{"email":"${DEV_ADMIN_EMAIL}","password":"'"$(cat ${config.dataDir}/admin-password)"'"}'`,
    );
  } else if (config.bootstrapAdmin) {
    lines.push(`Log in with POST /v1/auth/login as ${config.bootstrapAdmin.email} (BOOTSTRAP_ADMIN_PASSWORD).`);
  }
  process.stdout.write(`${lines.join('\n')}\n\n`);
}

void runHost({ loadConfig: () => loadConfig(), start: (config, logging) => startServer(config, logging), started: printLoginHelp });
