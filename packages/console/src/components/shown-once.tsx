import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';

/**
 * A secret the API answers with once (a new key's raw value, a signing secret): shown with a copy
 * button and a warning that it will not be shown again. Nothing keeps it after the page is left.
 */
export function ShownOnce({ value, testId, copyLabel, children }: { value: string; testId: string; copyLabel: string; children: ComponentChildren }) {
  const [copied, setCopied] = useState('');
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
        <span>{copied}</span>
      </p>
    </div>
  );
}
