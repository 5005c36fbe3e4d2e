/** One REST call of a benchmark's setup (as an operator would make it); throws on anything but 2xx. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function call(base: string, method: string, route: string, token: string | undefined, body?: unknown): Promise<any> {
  const headers: Record<string, string> = {};
  if (token) headers.authorization = `Bearer ${token}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const response = await fetch(base + route, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  const text = await response.text();
  if (response.status >= 300) throw new Error(`${method} ${route}: ${response.status} ${text}`);
  return text === '' ? undefined : JSON.parse(text);
}

/** The p-th percentile (0-100) of ascending samples, nearest rank. */
export const percentile = (sorted: number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? Number.NaN;
