import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, test } from 'node:test';

/**
 * The layout of packages/transport/src (docs/architecture.md "packages/transport — the transports"): each
 * domain's transport code lives in domains/<domain>/, shared plumbing in http/ (REST) and grpc/
 * (gRPC), and nothing reaches across. gRPC code (grpc/, and a domain's files other than its REST
 * ones: grpc.ts, messages.ts, ...) imports nothing of REST's; REST code (http/, and a domain's
 * rest-*.ts / *-rest-routes.ts) imports nothing of gRPC's. What both use lives outside either
 * (gateway-services.ts, auth/, remote/).
 */

const SRC = fileURLToPath(new URL('../src/', import.meta.url));

/** Every .ts file under src, as a POSIX path relative to it. */
function sourceFiles(): string[] {
  return (readdirSync(SRC, { recursive: true }) as string[])
    .map((entry) => entry.split(path.sep).join('/'))
    .filter((entry) => entry.endsWith('.ts'))
    .sort();
}

/** Static imports and re-exports (type-only ones included), side-effect imports and dynamic import(). */
const IMPORT = /(?:^|[\s;])(?:import|export)\b[^'"`;]*?\bfrom\s*['"]([^'"]+)['"]|(?:^|[\s;])import\s*['"]([^'"]+)['"]|\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)/gm;

/** The files of src that `file` imports by relative path, as paths relative to src. */
function importsOf(file: string): string[] {
  const text = readFileSync(path.join(SRC, file), 'utf8');
  const targets: string[] = [];
  for (const match of text.matchAll(IMPORT)) {
    const specifier = match[1] ?? match[2] ?? match[3]!;
    if (!specifier.startsWith('.')) continue;
    targets.push(path.posix.normalize(path.posix.join(path.posix.dirname(file), specifier)));
  }
  return targets;
}

const isDomainFile = (file: string): boolean => /^domains\/[^/]+\/[^/]+\.ts$/.test(file);
const isDomainRest = (file: string): boolean => isDomainFile(file) && path.posix.basename(file).includes('rest');
const isRest = (file: string): boolean => file.startsWith('http/') || isDomainRest(file);
const isGrpc = (file: string): boolean => file.startsWith('grpc/') || (isDomainFile(file) && !isDomainRest(file));

describe('packages/transport/src layout', () => {
  const files = sourceFiles();

  test('the files of each side are found', () => {
    for (const file of ['http/app.ts', 'http/rest-routes.ts', 'grpc/proto.ts', 'grpc/grpc-errors.ts', 'domains/flags/grpc.ts', 'domains/flags/messages.ts', 'domains/flags/rest-routes.ts']) {
      assert.ok(files.includes(file), `${file} exists`);
    }
    assert.ok(files.filter(isRest).length >= 20, 'REST files found');
    assert.ok(files.filter(isGrpc).length >= 15, 'gRPC files found');
    // The reader of imports sees single-line, multi-line and type-only imports.
    assert.ok(importsOf('domains/flags/grpc.ts').includes('grpc/proto.ts'));
    assert.ok(importsOf('domains/flags/grpc.ts').includes('gateway-services.ts'));
    assert.ok(importsOf('domains/segments/rest-routes.ts').includes('domains/segments/rest-schemas.ts'));
  });

  test('every domain folder holds transport code only: REST files and gRPC files', () => {
    const stray = files.filter((file) => file.startsWith('domains/') && !isDomainFile(file));
    assert.deepEqual(stray, [], 'domains/ holds one level of folders, one per domain');
  });

  test('no gRPC file (grpc/, domains/*/grpc.ts, messages.ts, ...) imports REST code (http/, domains/*/rest-*)', () => {
    const offenders = files
      .filter(isGrpc)
      .flatMap((file) => importsOf(file).filter(isRest).map((target) => `${file} imports ${target}`));
    assert.deepEqual(offenders, []);
  });

  test('no REST file (http/, domains/*/rest-*) imports gRPC code (grpc/, domains/*/grpc.ts, messages.ts, ...)', () => {
    const offenders = files
      .filter(isRest)
      .flatMap((file) => importsOf(file).filter(isGrpc).map((target) => `${file} imports ${target}`));
    assert.deepEqual(offenders, []);
  });
});
