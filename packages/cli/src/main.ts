import { parseArgs } from 'node:util';
import { launchDarklyDocument } from '@switchyard/services/import/launchdarkly';
import { ApiClient, CommandError, EXIT } from './api-client.ts';
import { formatOf, readDocument, renderDocument, writeDocument, type DocumentFormat } from './document-files.ts';
import { describeOutcome, type Outcome } from './outcome-text.ts';

export const USAGE = `switchyard — flags as code for a Switchyard server (docs/flags-as-code.md)

Usage:
  switchyard export   --project <id> [--environment <id>]... [--include-versions] [--output <file>] [--format yaml|json]
  switchyard import   <file> --project <id> [--dry-run] [--prune] [--json] [LaunchDarkly options]
  switchyard diff     <file> --project <id> [--prune] [--json] [LaunchDarkly options]
  switchyard copy-env --from <environment id> --to <environment id> [--flag <key>]... [--include rules,enabled,prerequisites,segments] [--json]
  switchyard convert-launchdarkly <flags.json> [--output <file>] [--format yaml|json] [LaunchDarkly options]

LaunchDarkly options (the file is then a LaunchDarkly flags export: GET /api/v2/flags/{project}?summary=0):
  --from launchdarkly                  read <file> as a LaunchDarkly export
  --ld-segments <ld env>=<file>        that environment's segments export (GET /api/v2/segments/{project}/{env}); repeatable
  --ld-environment <ld env>=<name>     import that LaunchDarkly environment as this Switchyard environment; repeatable
                                       (none given: every LaunchDarkly environment under its own key)

Server and credential: --url <base> (or SWITCHYARD_URL; default http://localhost:8080) and
--token <API token or bearer token> (or SWITCHYARD_TOKEN).

Exit codes: 0 done (diff: no difference), 1 diff found differences, 2 the server refused a change
(nothing was written), 64 a wrong command line or file, 69 the server failed or was unreachable.
`;

export interface CommandIo {
  env: NodeJS.ProcessEnv;
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown };
  cwd: string;
  /** Standard input, for `-` as the file. */
  stdin?: () => Promise<string>;
  fetch?: typeof fetch;
}

const OPTIONS = {
  url: { type: 'string' },
  token: { type: 'string' },
  project: { type: 'string' },
  environment: { type: 'string', multiple: true },
  'include-versions': { type: 'boolean' },
  output: { type: 'string' },
  format: { type: 'string' },
  'dry-run': { type: 'boolean' },
  prune: { type: 'boolean' },
  json: { type: 'boolean' },
  from: { type: 'string' },
  to: { type: 'string' },
  flag: { type: 'string', multiple: true },
  include: { type: 'string' },
  'ld-segments': { type: 'string', multiple: true },
  'ld-environment': { type: 'string', multiple: true },
  help: { type: 'boolean', short: 'h' },
} as const;

type Values = ReturnType<typeof parseArgs<{ options: typeof OPTIONS; allowPositionals: true }>>['values'];

/** Runs one command line; resolves to its exit code (it never calls process.exit). */
export async function main(argv: readonly string[], io: CommandIo): Promise<number> {
  try {
    let parsed;
    try {
      parsed = parseArgs({ args: [...argv], options: OPTIONS, allowPositionals: true, strict: true });
    } catch (error) {
      throw new CommandError(`${(error as Error).message}\n\n${USAGE}`, EXIT.usage);
    }
    const { values, positionals } = parsed;
    const [command, ...rest] = positionals;
    if (values.help || command === undefined || command === 'help') {
      io.stdout.write(USAGE);
      return command === undefined && !values.help ? EXIT.usage : EXIT.ok;
    }
    switch (command) {
      case 'export':
        return await exportCommand(values, rest, io);
      case 'import':
        return await importCommand(values, rest, io, values['dry-run'] === true ? 'dry-run' : 'apply');
      case 'diff':
        return await importCommand(values, rest, io, 'diff');
      case 'copy-env':
        return await copyEnvironmentCommand(values, rest, io);
      case 'convert-launchdarkly':
        return await convertCommand(values, rest, io);
      default:
        throw new CommandError(`unknown command '${command}'\n\n${USAGE}`, EXIT.usage);
    }
  } catch (error) {
    if (error instanceof CommandError) {
      io.stderr.write(`switchyard: ${error.message}\n`);
      return error.exitCode;
    }
    throw error;
  }
}

function clientFor(values: Values, io: CommandIo): ApiClient {
  const url = values.url ?? io.env.SWITCHYARD_URL ?? 'http://localhost:8080';
  const token = values.token ?? io.env.SWITCHYARD_TOKEN;
  if (!token) throw new CommandError('a credential is needed: --token <API token> or SWITCHYARD_TOKEN', EXIT.usage);
  try {
    new URL(url);
  } catch {
    throw new CommandError(`--url ${url} is not a URL`, EXIT.usage);
  }
  return new ApiClient(url, token, io.fetch ?? fetch);
}

function required(value: string | undefined, name: string): string {
  if (value === undefined || value === '') throw new CommandError(`--${name} is required`, EXIT.usage);
  return value;
}

function documentFormat(values: Values): DocumentFormat {
  if (values.format === undefined) return formatOf(values.output);
  if (values.format !== 'yaml' && values.format !== 'json') throw new CommandError('--format is yaml or json', EXIT.usage);
  return values.format;
}

function onePositional(rest: readonly string[], what: string): string {
  if (rest.length !== 1) throw new CommandError(`expected one ${what}, got ${rest.length === 0 ? 'none' : rest.join(' ')}`, EXIT.usage);
  return rest[0]!;
}

async function emit(values: Values, io: CommandIo, document: unknown): Promise<void> {
  const text = renderDocument(document, documentFormat(values));
  if (values.output === undefined || values.output === '-') io.stdout.write(text);
  else await writeDocument(values.output, io.cwd, text);
}

const readStdin = async (): Promise<string> => {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
};

async function exportCommand(values: Values, rest: readonly string[], io: CommandIo): Promise<number> {
  if (rest.length > 0) throw new CommandError(`export takes no file (use --output): ${rest.join(' ')}`, EXIT.usage);
  const project = required(values.project, 'project');
  const query = new URLSearchParams();
  if (values.environment && values.environment.length > 0) query.set('environment_ids', values.environment.join(','));
  if (values['include-versions']) query.set('include_versions', 'true');
  const search = query.size > 0 ? `?${query}` : '';
  const { body } = await clientFor(values, io).expect('GET', `/v1/projects/${encodeURIComponent(project)}/export${search}`, [200]);
  await emit(values, io, body);
  return EXIT.ok;
}

/** `<ld env>=<value>` pairs of a repeatable option. */
function pairs(list: readonly string[] | undefined, option: string): Array<[string, string]> {
  return (list ?? []).map((entry) => {
    const at = entry.indexOf('=');
    if (at <= 0 || at === entry.length - 1) throw new CommandError(`--${option} takes <LaunchDarkly environment>=<value>, got '${entry}'`, EXIT.usage);
    return [entry.slice(0, at), entry.slice(at + 1)];
  });
}

/** The document of the file: as it is, or converted from a LaunchDarkly export (the report goes to stderr). */
async function documentOf(file: string, values: Values, io: CommandIo, launchDarkly: boolean): Promise<unknown> {
  const input = await readDocument(file, io.cwd, io.stdin ?? readStdin);
  if (!launchDarkly) {
    if (values['ld-segments'] || values['ld-environment']) throw new CommandError('--ld-segments and --ld-environment go with --from launchdarkly', EXIT.usage);
    return input;
  }
  const segments: Record<string, unknown> = {};
  for (const [environment, segmentsFile] of pairs(values['ld-segments'], 'ld-segments')) segments[environment] = await readDocument(segmentsFile, io.cwd, io.stdin ?? readStdin);
  const environments = pairs(values['ld-environment'], 'ld-environment');
  const { document, report } = launchDarklyDocument(
    { flags: input as never, segments: segments as never },
    environments.length > 0 ? { environments: Object.fromEntries(environments) } : {},
  );
  for (const entry of report) {
    const where = [entry.environment, entry.flag_key ?? entry.segment_key].filter(Boolean).join('/');
    io.stderr.write(`launchdarkly ${entry.severity}${where ? ` ${where}` : ''}: ${entry.message}\n`);
  }
  return document;
}

function launchDarklySource(values: Values): boolean {
  if (values.from === undefined) return false;
  if (values.from !== 'launchdarkly') throw new CommandError(`--from ${values.from}: the only other source read is launchdarkly`, EXIT.usage);
  return true;
}

async function importCommand(values: Values, rest: readonly string[], io: CommandIo, mode: 'apply' | 'dry-run' | 'diff'): Promise<number> {
  const file = onePositional(rest, 'document file');
  const project = required(values.project, 'project');
  const document = await documentOf(file, values, io, launchDarklySource(values));
  const query = new URLSearchParams();
  if (mode !== 'apply') query.set('dry_run', 'true');
  if (values.prune) query.set('prune', 'true');
  const search = query.size > 0 ? `?${query}` : '';
  const { body } = await clientFor(values, io).expect('POST', `/v1/projects/${encodeURIComponent(project)}/import${search}`, [200, 409], document);
  const outcome = body as Outcome;
  io.stdout.write(values.json ? `${JSON.stringify(outcome, null, 2)}\n` : describeOutcome(outcome));
  if (outcome.refused.length > 0) return EXIT.refused;
  if (mode === 'diff' && outcome.created.length + outcome.changed.length + outcome.deleted.length > 0) return EXIT.differs;
  return EXIT.ok;
}

const COPY_PARTS = ['rules', 'enabled', 'prerequisites', 'segments'];

async function copyEnvironmentCommand(values: Values, rest: readonly string[], io: CommandIo): Promise<number> {
  if (rest.length > 0) throw new CommandError(`copy-env takes no file: ${rest.join(' ')}`, EXIT.usage);
  const from = required(values.from, 'from');
  const to = required(values.to, 'to');
  const include = (values.include ?? 'rules,enabled,prerequisites').split(',').map((part) => part.trim()).filter((part) => part !== '');
  const unknown = include.filter((part) => !COPY_PARTS.includes(part));
  if (unknown.length > 0) throw new CommandError(`--include takes ${COPY_PARTS.join(', ')}; not ${unknown.join(', ')}`, EXIT.usage);
  const client = clientFor(values, io);
  let flagKeys = values.flag ?? [];
  if (flagKeys.length === 0) {
    // Every flag that differs: the server's comparison of the two environments names them.
    const { body } = await client.expect('GET', `/v1/environments/${encodeURIComponent(to)}/compare?from_environment_id=${encodeURIComponent(from)}`, [200]);
    flagKeys = differingFlagKeys(body);
    if (flagKeys.length === 0) {
      io.stdout.write('the environments do not differ: nothing to copy\n');
      return EXIT.ok;
    }
  }
  const answer = await client.request('POST', `/v1/environments/${encodeURIComponent(to)}/copy`, { from_environment_id: from, flag_keys: flagKeys, include });
  if (answer.status !== 200) {
    const error = answer.body as { error?: string; code?: string } | null;
    const refused = answer.status === 409 || answer.status === 400;
    throw new CommandError(`copy refused: ${error?.error ?? answer.status}${error?.code ? ` (${error.code})` : ''}`, refused ? EXIT.refused : EXIT.failed);
  }
  io.stdout.write(values.json ? `${JSON.stringify(answer.body, null, 2)}\n` : `copied ${flagKeys.length} flag(s) (${include.join(', ')}): ${flagKeys.join(', ')}\n`);
  return EXIT.ok;
}

/**
 * The flag keys whose configuration differs in a comparison's answer (docs/contract.md
 * "Environment compare and copy"): entries with differing `fields` (a flag written in one
 * environment only but configured alike is not copied).
 */
function differingFlagKeys(body: unknown): string[] {
  const answer = body as { flags?: Array<{ flag_key?: unknown; fields?: unknown[] }> } | null;
  return (answer?.flags ?? [])
    .filter((entry) => Array.isArray(entry.fields) && entry.fields.length > 0)
    .map((entry) => entry.flag_key)
    .filter((key): key is string => typeof key === 'string');
}

async function convertCommand(values: Values, rest: readonly string[], io: CommandIo): Promise<number> {
  const file = onePositional(rest, 'LaunchDarkly flags export');
  if (values.from !== undefined && values.from !== 'launchdarkly') throw new CommandError('convert-launchdarkly reads LaunchDarkly exports only', EXIT.usage);
  await emit(values, io, await documentOf(file, values, io, true));
  return EXIT.ok;
}
