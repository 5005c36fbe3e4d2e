import { randomUUID } from 'node:crypto';
import { isDomainError, type DrainedCounts } from '@switchyard/core';
import { PartialWriteError } from './evaluation-count-flusher.ts';
import { reportsOf } from './insights-service.ts';

/** One report a gateway sends to InsightsGatewayService.RecordCounts: at most MAX_COUNTS_PER_REPORT counts and a random id. */
export interface CountReport extends Pick<DrainedCounts, 'counts' | 'lastEvaluated'> {
  /** Made once per report and kept with it across its retries (the services apply an id once). */
  reportId: string;
}

export interface CountReportSenderOptions {
  /** Told of a report the services refused as malformed (INVALID_ARGUMENT): sending it again cannot succeed, so it is dropped. */
  onRefused?: (report: CountReport, error: unknown) => void;
  /** Makes report ids (tests pass their own). */
  newId?: () => string;
}

/**
 * A gateway's side of its evaluation counts (docs/insights.md "Exactness"): the `write` of its
 * EvaluationCountFlusher. Each drain is split into reports (reportsOf), each given a random id, and
 * sent in order. A report whose call fails may have been written by the services all the same (an
 * answer lost after the commit), so it is kept as it is, id and all, and sent first at the next
 * flush: the services apply its id once, so it counts once either way. The reports after it were
 * never sent, so they go back into the counter (PartialWriteError) and merge with what comes next.
 * At most one report (5,000 counts) is held besides the counter's own bound.
 */
export class CountReportSender {
  private inDoubt: CountReport | null = null;
  private readonly newId: () => string;

  constructor(
    private readonly send: (report: CountReport) => Promise<unknown>,
    private readonly options: CountReportSenderOptions = {},
  ) {
    this.newId = options.newId ?? randomUUID;
  }

  /** Whether a report whose call failed waits to be sent again (the flusher then writes even when nothing new was counted). */
  get holdsUnsent(): boolean {
    return this.inDoubt !== null;
  }

  /**
   * Sends the report held from a failed call, then the drain's reports.
   * @throws PartialWriteError with the reports never sent, when a call fails (the failed report is held).
   */
  async write(drained: Pick<DrainedCounts, 'counts' | 'lastEvaluated'>): Promise<void> {
    const fresh = reportsOf(drained)
      .filter((report) => report.counts.length > 0 || report.lastEvaluated.length > 0)
      .map((report): CountReport => ({ reportId: this.newId(), counts: report.counts, lastEvaluated: report.lastEvaluated }));
    const queue = this.inDoubt === null ? fresh : [this.inDoubt, ...fresh];
    this.inDoubt = null;
    for (let i = 0; i < queue.length; i++) {
      const report = queue[i]!;
      try {
        await this.send(report);
      } catch (error) {
        if (isDomainError(error) && error.code === 'INVALID_ARGUMENT') {
          this.options.onRefused?.(report, error);
          continue;
        }
        this.inDoubt = report;
        const unsent = queue.slice(i + 1);
        throw new PartialWriteError({ counts: unsent.flatMap((r) => r.counts), lastEvaluated: unsent.flatMap((r) => r.lastEvaluated) }, error);
      }
    }
  }
}
