import type { ClientKeySettingsBody, ContextSigning, SdkKey } from '../records.ts';
import type { DraftUpdate } from './experiment-setup.ts';
import { withChange } from './draft-updates.ts';

/**
 * The settings of a client key as its form holds them (docs/client-side.md "Keys"): origins as
 * typed, one per line, and the expiry as a `datetime-local` value in the browser's time zone
 * ('' for none).
 */
export interface ClientKeyDraft {
  name: string;
  origins: string;
  allowMissingOrigin: boolean;
  contextSigning: ContextSigning;
  includeDisabled: boolean;
  expires: string;
}

export const EMPTY_CLIENT_KEY: ClientKeyDraft = { name: '', origins: '', allowMissingOrigin: false, contextSigning: 'off', includeDisabled: false, expires: '' };

export const SIGNING_MODES: Array<[ContextSigning, string]> = [
  ['off', 'off: any context'],
  ['key', 'key: the targeting key is signed'],
  ['context', 'context: the key and vouched attributes are signed'],
];

const two = (n: number) => String(n).padStart(2, '0');

/** Epoch ms → a `datetime-local` value in the browser's time zone, to the minute. */
export function localInputOf(ms: number | null): string {
  if (ms === null) return '';
  const d = new Date(ms);
  return `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())}T${two(d.getHours())}:${two(d.getMinutes())}`;
}

/** A `datetime-local` value (local time) → epoch ms; '' is no expiry. */
function expiryOf(text: string): number | null {
  if (text === '') return null;
  const ms = new Date(text).getTime();
  if (Number.isNaN(ms)) throw new Error(`"${text}" is not a date and time.`);
  return ms;
}

/** The origins typed one per line, blank lines and surrounding spaces dropped. */
export const originsOf = (text: string): string[] =>
  text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '');

export function draftOf(key: SdkKey): ClientKeyDraft {
  return {
    name: key.name,
    origins: key.allowed_origins.join('\n'),
    allowMissingOrigin: key.allow_missing_origin,
    contextSigning: key.context_signing,
    includeDisabled: key.include_disabled,
    expires: localInputOf(key.expires_at_ms),
  };
}

/** The create body of a client key. */
export function createBodyOf(draft: ClientKeyDraft): ClientKeySettingsBody & { kind: 'client' } {
  const expires = expiryOf(draft.expires);
  return {
    kind: 'client',
    name: draft.name,
    allowed_origins: originsOf(draft.origins),
    allow_missing_origin: draft.allowMissingOrigin,
    context_signing: draft.contextSigning,
    include_disabled: draft.includeDisabled,
    ...(expires === null ? {} : { expires_at_ms: expires }),
  };
}

/** The PATCH body: only the fields the form changed from the key's settings. */
export function changesOf(key: SdkKey, draft: ClientKeyDraft): ClientKeySettingsBody {
  const body: ClientKeySettingsBody = {};
  if (draft.name !== key.name) body.name = draft.name;
  const origins = originsOf(draft.origins);
  if (origins.join('\n') !== key.allowed_origins.join('\n')) body.allowed_origins = origins;
  if (draft.allowMissingOrigin !== key.allow_missing_origin) body.allow_missing_origin = draft.allowMissingOrigin;
  if (draft.contextSigning !== key.context_signing) body.context_signing = draft.contextSigning;
  if (draft.includeDisabled !== key.include_disabled) body.include_disabled = draft.includeDisabled;
  // Compared as shown (to the minute), so an expiry with seconds left untouched is not resent.
  if (draft.expires !== localInputOf(key.expires_at_ms)) body.expires_at_ms = expiryOf(draft.expires);
  return body;
}

/** The fields of a client key's form (inside the caller's form, which names it). */
export function ClientKeyFields({ draft, onChange }: { draft: ClientKeyDraft; onChange: DraftUpdate<ClientKeyDraft> }) {
  // Each change applies to the draft as it is then, not as rendered (see `DraftUpdate`).
  const edit = (change: Partial<ClientKeyDraft>) => onChange(withChange(change));
  return (
    <>
      <label>
        Name
        <input maxLength={200} value={draft.name} onInput={(e) => edit({ name: (e.target as HTMLInputElement).value })} />
      </label>
      <label>
        Allowed origins, one per line
        <textarea
          class="wide"
          rows={3}
          placeholder={'https://app.example.com\nhttps://*.example.com'}
          value={draft.origins}
          onInput={(e) => edit({ origins: (e.target as HTMLTextAreaElement).value })}
        />
      </label>
      <p class="muted">
        The web pages allowed to use the key: <code>scheme://host[:port]</code> exactly, or every subdomain with <code>https://*.example.com</code>. Origins stop other web sites from
        using the key in their visitors' browsers; they do not stop a script outside a browser (signed contexts do).
      </p>
      <label>
        <input type="checkbox" checked={draft.allowMissingOrigin} onChange={(e) => edit({ allowMissingOrigin: (e.target as HTMLInputElement).checked })} />
        Allow requests without an Origin (native apps)
      </label>
      <label>
        <input type="checkbox" checked={draft.includeDisabled} onChange={(e) => edit({ includeDisabled: (e.target as HTMLInputElement).checked })} />
        Include disabled flags in bulk answers
      </label>
      <p class="muted">
        Context signing: with <em>key</em>, the targeting key must be the one in a context token your backend signed (see the signing secrets below); with <em>context</em>, the
        attributes the token vouches for come from the token too, whatever the request says.
      </p>
      <label>
        Context signing
        <select value={draft.contextSigning} onChange={(e) => edit({ contextSigning: (e.target as HTMLSelectElement).value as ContextSigning })}>
          {SIGNING_MODES.map(([mode, label]) => (
            <option value={mode}>{label}</option>
          ))}
        </select>
      </label>
      <label>
        Expires (optional, your local time)
        <input type="datetime-local" value={draft.expires} onInput={(e) => edit({ expires: (e.target as HTMLInputElement).value })} />
      </label>
      {draft.expires !== '' && (
        <button type="button" onClick={() => edit({ expires: '' })}>
          Never expires
        </button>
      )}
    </>
  );
}
