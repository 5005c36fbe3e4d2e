import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';

/**
 * A secret the API answers with once (a new key's raw value, a signing secret): shown with a copy
 * button and a warning that it will not be shown again. "Done" takes it off the page; nothing keeps
 * it after the page is left either (pages showing one are keyed by what they show it for).
 */
export function ShownOnce({ value, testId, copyLabel, children }: { value: string; testId: string; copyLabel: string; children: ComponentChildren }) {
  const [copied, setCopied] = useState('');
  const [hidden, setHidden] = useState(false);
  if (hidden) return null;
  return (
    <div class="notice" role="status">
      {children}
      <p>
        <code data-testid={testId}>{value}</code>{' '}
        <button
          type="button"
          onClick={async () => {
            try {
              await navigator.clipboard.writeText(value);
              setCopied('Copied to the clipboard.');
            } catch {
              setCopied('Your browser did not allow copying: select it and copy it yourself.');
            }
          }}
        >
          {copyLabel}
        </button>{' '}
        <button type="button" onClick={() => setHidden(true)}>
          Done, hide it
        </button>{' '}
        <span>{copied}</span>
      </p>
    </div>
  );
}
