import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parse, stringify } from 'yaml';
import { CommandError, EXIT } from './api-client.ts';

export type DocumentFormat = 'yaml' | 'json';

/** The format a file name asks for: `.json` is JSON, anything else YAML (the format people review). */
export const formatOf = (file: string | undefined): DocumentFormat => (file !== undefined && /\.json$/i.test(file) ? 'json' : 'yaml');

/** A document file, JSON or YAML (YAML 1.2 reads JSON too). `-` reads standard input. */
export async function readDocument(file: string, cwd: string, stdin: () => Promise<string>): Promise<unknown> {
  let text: string;
  try {
    text = file === '-' ? await stdin() : await readFile(path.resolve(cwd, file), 'utf8');
  } catch (error) {
    throw new CommandError(`cannot read ${file}: ${(error as Error).message}`, EXIT.usage);
  }
  try {
    // maxAliasCount bounds YAML's alias expansion ("billion laughs").
    return parse(text, { maxAliasCount: 100 });
  } catch (error) {
    throw new CommandError(`${file} is neither JSON nor YAML: ${(error as Error).message}`, EXIT.usage);
  }
}

export function renderDocument(document: unknown, format: DocumentFormat): string {
  return format === 'json' ? `${JSON.stringify(document, null, 2)}\n` : stringify(document, { lineWidth: 0 });
}

export async function writeDocument(file: string, cwd: string, text: string): Promise<void> {
  try {
    await writeFile(path.resolve(cwd, file), text);
  } catch (error) {
    throw new CommandError(`cannot write ${file}: ${(error as Error).message}`, EXIT.usage);
  }
}
