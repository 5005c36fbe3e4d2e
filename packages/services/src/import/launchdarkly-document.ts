import { FLAGS_DOCUMENT_FORMAT, type DocumentEnvironment, type DocumentFlag, type FlagsDocument } from '@switchyard/core';
import { convertLaunchDarkly, type ImportReportEntry, type LaunchDarklyExport, type LaunchDarklyImportOptions } from './launchdarkly.ts';

/**
 * A LaunchDarkly export as a flags-as-code document (docs/flags-as-code.md "From LaunchDarkly"),
 * with the converter's report: the import itself is then the same as any document's, with its
 * dry run, its exact difference and its one transaction.
 */
export function launchDarklyDocument(input: LaunchDarklyExport, options: LaunchDarklyImportOptions = {}): { document: FlagsDocument; report: ImportReportEntry[] } {
  const converted = convertLaunchDarkly(input, options);
  const environments: Record<string, DocumentEnvironment> = {};
  const section = (name: string): DocumentEnvironment => (environments[name] ??= { flags: {}, segments: [], event_definitions: [] });
  const flags: DocumentFlag[] = [];
  for (const flag of converted.flags) {
    flags.push({ ...flag.definition });
    for (const [name, config] of Object.entries(flag.environments)) section(name).flags[flag.definition.key] = { ...config };
  }
  for (const [name, segments] of Object.entries(converted.segments)) section(name).segments.push(...segments.map((segment) => ({ ...segment })));
  return { document: { format: FLAGS_DOCUMENT_FORMAT, flags, environments }, report: converted.report };
}
