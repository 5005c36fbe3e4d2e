/** A failure the command reports and exits on: its message is for the person at the terminal or the CI log. */
export class CommandError extends Error {
  constructor(
    message: string,
    readonly exitCode: number,
  ) {
    super(message);
  }
}

/** Exit codes (docs/flags-as-code.md "Exit codes"), for CI scripts. */
export const EXIT = Object.freeze({
  ok: 0,
  /** `diff`: the document differs from the server. */
  differs: 1,
  /** An import or diff the server refused (some change cannot be made): nothing was written. */
  refused: 2,
  /** A wrong command line or an unreadable file. */
  usage: 64,
  /** The server could not be reached, refused the credentials, or answered an error. */
  failed: 69,
});

export interface ApiAnswer {
  status: number;
  body: unknown;
}

/**
 * The REST API of one server with one credential: an API token (`swy_...`, docs/access.md "API
 * tokens") or a user's bearer token, both sent as `Authorization: Bearer`.
 */
export class ApiClient {
  constructor(
    private readonly baseUrl: string,
    private readonly token: string,
    private readonly fetchImpl: typeof fetch = fetch,
  ) {}

  async request(method: 'GET' | 'POST', path: string, body?: unknown): Promise<ApiAnswer> {
    let response: Response;
    try {
      response = await this.fetchImpl(new URL(path, this.baseUrl), {
        method,
        headers: { authorization: `Bearer ${this.token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
    } catch (error) {
      throw new CommandError(`cannot reach ${this.baseUrl}: ${(error as Error).cause instanceof Error ? ((error as Error).cause as Error).message : (error as Error).message}`, EXIT.failed);
    }
    const text = await response.text();
    let parsed: unknown = text;
    try {
      parsed = text === '' ? null : JSON.parse(text);
    } catch {
      // Not JSON (a proxy's error page): kept as text for the message.
    }
    return { status: response.status, body: parsed };
  }

  /** The answer's body, or a CommandError with the server's `{error, code}` for any status but `accept`. */
  async expect(method: 'GET' | 'POST', path: string, accept: readonly number[], body?: unknown): Promise<ApiAnswer> {
    const answer = await this.request(method, path, body);
    if (accept.includes(answer.status)) return answer;
    const error = answer.body as { error?: unknown; code?: unknown } | null;
    const detail = typeof error?.error === 'string' ? `${error.error}${typeof error.code === 'string' ? ` (${error.code})` : ''}` : String(answer.body).slice(0, 200);
    throw new CommandError(`${method} ${path}: ${answer.status} ${detail}`, EXIT.failed);
  }
}
