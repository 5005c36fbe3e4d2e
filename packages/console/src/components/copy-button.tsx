import { useState } from 'preact/hooks';

/** A button copying `value` to the clipboard, saying whether it did (some browsers refuse). */
export function CopyButton({ value, label }: { value: string; label: string }) {
  const [said, setSaid] = useState('');
  return (
    <>
      <button
        type="button"
        onClick={async () => {
          try {
            await navigator.clipboard.writeText(value);
            setSaid('Copied.');
          } catch {
            setSaid('Your browser did not allow copying: select it and copy it yourself.');
          }
        }}
      >
        {label}
      </button>{' '}
      <span role="status">{said}</span>
    </>
  );
}
