import { useEffect, useRef, useState } from 'preact/hooks';
import type { Api } from '../api.ts';
import { headerComment, type ProtectedWrite, type WriteAnswer } from '../protected-writes.ts';

interface Pending {
  id: number;
  write: ProtectedWrite;
  resolve: (answer: WriteAnswer) => void;
}

/**
 * The question before a write in a protected environment (docs/console.md "Protected
 * environments"): type the environment's name (critical) and say why (require_comment). Installed
 * once as the Api's write guard; writes asked about together are asked one after the other.
 */
export function ProtectedWriteDialog({ api }: { api: Api }) {
  const [queue, setQueue] = useState<Pending[]>([]);
  const asked = useRef(0);
  useEffect(() => {
    api.setWriteGuard((write) => new Promise<WriteAnswer>((resolve) => setQueue((previous) => [...previous, { id: ++asked.current, write, resolve }])));
    return () => api.setWriteGuard(undefined);
  }, [api]);
  const current = queue[0];
  if (!current) return null;
  const answer = (value: WriteAnswer) => {
    current.resolve(value);
    setQueue((previous) => previous.slice(1));
  };
  return <Question key={current.id} write={current.write} onAnswer={answer} />;
}

function Question({ write, onAnswer }: { write: ProtectedWrite; onAnswer: (answer: WriteAnswer) => void }) {
  const name = write.environment.environment_name;
  const [typed, setTyped] = useState('');
  const [comment, setComment] = useState('');
  const [error, setError] = useState('');
  const first = useRef<HTMLInputElement & HTMLTextAreaElement>(null);
  useEffect(() => first.current?.focus(), []);
  const nameMatches = !write.confirm || typed.trim() === name;
  return (
    <div class="modal-backdrop">
      <form
        class="confirm modal"
        role="dialog"
        aria-modal="true"
        aria-labelledby="protected-write-title"
        onKeyDown={(event) => event.key === 'Escape' && onAnswer(null)}
        onSubmit={(event) => {
          event.preventDefault();
          if (!nameMatches) return setError(`Type ${name} exactly to confirm.`);
          if (!write.comment) return onAnswer({});
          const checked = headerComment(comment);
          if ('error' in checked) return setError(checked.error);
          onAnswer({ comment: checked.value });
        }}
      >
        <h2 id="protected-write-title">{write.confirm ? `Change ${name}? It is a critical environment` : `Say why you change ${name}`}</h2>
        {write.confirm && (
          <label>
            {`Type ${name} to confirm`}
            <input ref={write.confirm ? first : undefined} autoComplete="off" spellcheck={false} value={typed} onInput={(e) => (setError(''), setTyped((e.target as HTMLInputElement).value))} />
          </label>
        )}
        {write.comment && (
          <label>
            Comment (kept in the change history)
            <textarea ref={write.confirm ? undefined : first} rows={3} value={comment} onInput={(e) => (setError(''), setComment((e.target as HTMLTextAreaElement).value))} />
          </label>
        )}
        {error && (
          <p class="error" role="alert">
            {error}
          </p>
        )}
        <div class="row">
          <button type="submit" class="danger" disabled={!nameMatches}>
            Make the change
          </button>
          <button type="button" onClick={() => onAnswer(null)}>
            Cancel
          </button>
        </div>
      </form>
    </div>
  );
}
