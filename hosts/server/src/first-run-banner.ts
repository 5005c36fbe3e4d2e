import type { FirstRunResult } from './first-run.ts';

/** Where this server listens, as the banner prints it. */
export interface BannerAddresses {
  httpPort: number;
  syncGrpcPort: number;
}

/**
 * The lines `npm start` prints about the first run (docs/first-run.md shows them): on the start
 * that made it, the two logins with their passwords, the environment ids and the SDK key, each
 * shown once; on later starts, where the passwords and the key are kept.
 */
export function firstRunBanner(result: FirstRunResult, at: BannerAddresses): string[] {
  const rest = `http://localhost:${at.httpPort}`;
  const sync = `localhost:${at.syncGrpcPort}`;
  if (result.kind === 'legacy') {
    return [
      `Sign in as ${result.admin.email}, this data directory's system administrator (password in ${result.admin.passwordFile}).`,
      '  It predates the first run: it creates orgs on the Admin page. For a ready-made org, project and SDK key start once on an empty DATA_DIR.',
    ];
  }
  if (result.kind === 'administered') {
    return ['The system organisation already has administrators: the first run makes nothing (docs/first-run.md). Sign in with their accounts.'];
  }
  if (result.kind === 'existing') {
    const lines = [`Sign in to the console as ${result.admin.email} (password in ${result.admin.passwordFile}).`];
    if (result.systemAdmin) lines.push(`System administrator (creates orgs): ${result.systemAdmin.email} (password in ${result.systemAdmin.passwordFile}).`);
    if (result.sdkKeyFile) lines.push(`The server SDK key made at the first run is in ${result.sdkKeyFile}; SDK settings: baseUrl ${rest}  syncUrl ${sync}`);
    return lines;
  }
  const width = Math.max(...result.environments.map((environment) => environment.name.length));
  return [
    `First run: created the org "${result.org.name}" with the project "${result.project.name}" (environments ${result.environments.map((environment) => environment.name).join(', ')}).`,
    `  Sign in to the console:  ${result.admin.email} / ${result.admin.password}   (shown once; also kept in ${result.admin.passwordFile})`,
    `  System administrator:    ${result.systemAdmin.email} / ${result.systemAdmin.password}   (creates orgs; shown once; also kept in ${result.systemAdmin.passwordFile})`,
    'SDK settings:',
    `  baseUrl (REST):          ${rest}`,
    `  syncUrl (gRPC sync):     ${sync}`,
    ...result.environments.map((environment) => `  environmentId ${environment.name.padEnd(width)}  ${environment.id}`),
    `  sdkKey (${result.sdkKey.environmentName}, server): ${result.sdkKey.rawKey}   (shown once; also kept in ${result.sdkKey.file})`,
  ];
}
