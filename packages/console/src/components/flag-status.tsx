import type { FlagStatus, LifecycleStage } from '../records.ts';
import { formatTime } from './common.tsx';
import { relativeTime, STATUS_WORDS } from './insights-reading.ts';
import { STAGE_WORDS } from './lifecycle-reading.ts';

/** A flag's status in an environment as a badge: its word, never its colour alone; the meaning in the title. */
export function StatusBadge({ status }: { status: FlagStatus | undefined }) {
  if (status === undefined) return <span class="muted">—</span>;
  const { word, meaning } = STATUS_WORDS[status];
  return (
    <span class={`badge status-${status}`} title={meaning} data-status={status}>
      {word}
    </span>
  );
}

/** A flag's lifecycle stage as a badge (its words, its meaning in the title). */
export function StageBadge({ stage }: { stage: LifecycleStage }) {
  const { word, meaning } = STAGE_WORDS[stage];
  return (
    <span class={`badge stage-${stage}`} title={meaning} data-stage={stage}>
      {word}
    </span>
  );
}

/** "Last evaluated" in words ("3 hours ago", "never"), the exact time in the title. */
export function LastEvaluated({ at }: { at: number | null | undefined }) {
  if (at === null || at === undefined) return <span class="muted">never</span>;
  return (
    <time dateTime={new Date(at).toISOString()} title={formatTime(at)}>
      {relativeTime(at, Date.now())}
    </time>
  );
}
