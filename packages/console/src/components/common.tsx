import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { describeError } from '../api.ts';

export interface Loaded<T> {
  data: T | undefined;
  error: unknown;
  loading: boolean;
  reload: () => void;
  /**
   * Installs data the page already has, such as the record a write answered with, at once (or
   * computes it from the data shown); a load still under way (started before that write) is
   * dropped, so it cannot bring back an older copy.
   */
  set: (next: T | ((previous: T | undefined) => T)) => void;
}

/** Runs `load` when `deps` change (and on reload()); keeps the last data while reloading. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): Loaded<T> {
  const [state, setState] = useState<{ data?: T; error?: unknown; loading: boolean }>({ loading: true });
  const [round, setRound] = useState(0);
  // The number of the newest load or set(): only its answer may land.
  const latest = useRef(0);
  useEffect(() => {
    const mine = ++latest.current;
    setState((previous) => ({ data: previous.data, loading: true }));
    load().then(
      (data) => latest.current === mine && setState({ data, loading: false }),
      (error: unknown) => latest.current === mine && setState({ error, loading: false }),
    );
    return () => {
      if (latest.current === mine) latest.current++;
    };
  }, [...deps, round]);
  const reload = useCallback(() => setRound((n) => n + 1), []);
  const set = useCallback((next: T | ((previous: T | undefined) => T)) => {
    latest.current++;
    setState((previous) => ({ data: typeof next === 'function' ? (next as (previous: T | undefined) => T)(previous.data) : next, loading: false }));
  }, []);
  return { data: state.data, error: state.error, loading: state.loading, reload, set };
}

/** An error shown where it happened, in plain words, announced to screen readers. */
export function ErrorMessage({ error }: { error: unknown }) {
  if (error === undefined || error === null) return null;
  return (
    <p class="error" role="alert">
      {describeError(error)}
    </p>
  );
}

export function Loading({ what }: { what: string }) {
  return <p aria-busy="true">Loading {what}…</p>;
}

/** A form that runs an async submit, disables itself meanwhile and shows the error in place. */
export function ActionForm({ onSubmit, children, label, class: className }: { onSubmit: () => Promise<void>; children: ComponentChildren; label: string; class?: string }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(undefined);
  return (
    <form
      class={className}
      aria-label={label}
      onSubmit={async (event) => {
        event.preventDefault();
        setBusy(true);
        setError(undefined);
        try {
          await onSubmit();
        } catch (caught) {
          setError(caught);
        } finally {
          setBusy(false);
        }
      }}
    >
      <fieldset disabled={busy}>{children}</fieldset>
      <ErrorMessage error={error} />
    </form>
  );
}

export function formatTime(ms: number | string): string {
  const date = new Date(ms);
  return Number.isNaN(date.getTime()) ? '—' : date.toLocaleString();
}

/**
 * The "are you sure?" of a destructive action: the question, a danger button that runs `onConfirm`
 * (its failure is shown here and the dialog stays), and "Keep it". Render it with a `key` naming
 * what it asks about, so each question starts without the last one's error.
 */
export function ConfirmDialog(props: { titleId: string; question: ComponentChildren; confirmLabel: string; onConfirm: () => Promise<void>; onCancel: () => void }) {
  const [error, setError] = useState<unknown>(undefined);
  return (
    <div class="confirm" role="alertdialog" aria-labelledby={props.titleId}>
      <p id={props.titleId}>{props.question}</p>
      <button
        type="button"
        class="danger"
        onClick={async () => {
          setError(undefined);
          try {
            await props.onConfirm();
          } catch (failure) {
            setError(failure);
          }
        }}
      >
        {props.confirmLabel}
      </button>{' '}
      <button type="button" onClick={props.onCancel}>
        Keep it
      </button>
      <ErrorMessage error={error} />
    </div>
  );
}
