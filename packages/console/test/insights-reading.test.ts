import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { chartData, countScale, DAY_MS, HOUR_MS, insightsRange, linePoints, pointsAttribute, relativeTime, type InsightsRange } from '../src/components/insights-reading.ts';

// The Insights tab's readings (components/insights-reading.ts); every expected value worked out by hand.

describe('the period the Insights tab asks for', () => {
  // Saturday 28 November 2026, 14:37 UTC.
  const now = Date.UTC(2026, 10, 28, 14, 37);

  test('hourly: 168 hours, the current one last, from on the hour 167 hours before it', () => {
    // Current hour 14:00 on the 28th; 167 hours earlier is 15:00 on the 21st.
    assert.deepEqual(insightsRange('hour', now), { granularity: 'hour', from: Date.UTC(2026, 10, 21, 15), to: now, stepMs: HOUR_MS, slots: 168 });
  });

  test('daily: 90 UTC days, today last, from at midnight UTC 89 days before today', () => {
    // 28 November − 89 days: 30 back is 29 October, 60 back is 29 September, 89 back is 31 August.
    assert.deepEqual(insightsRange('day', now), { granularity: 'day', from: Date.UTC(2026, 7, 31), to: now, stepMs: DAY_MS, slots: 90 });
  });
});

describe('series on the chart', () => {
  // Four hours from 10:00 (in hours since the epoch): 10, 11, 12, 13.
  const range: InsightsRange = { granularity: 'hour', from: 10 * HOUR_MS, to: 14 * HOUR_MS, stepMs: HOUR_MS, slots: 4 };

  test('every slot gets a count (0 without a point); variants in the flag order, then the others; points off the slots are left out', () => {
    const data = chartData(
      [
        { at_ms: 10 * HOUR_MS, variants: { on: 2, off: 1 } },
        { at_ms: 12 * HOUR_MS, variants: { on: 5, '': 1 } },
        // Half past 13: not a slot's start.
        { at_ms: 13.5 * HOUR_MS, variants: { on: 100 } },
        // After the range.
        { at_ms: 20 * HOUR_MS, variants: { on: 7 } },
      ],
      range,
      ['off', 'on', 'unused'],
    );
    assert.deepEqual(data.slots, [10 * HOUR_MS, 11 * HOUR_MS, 12 * HOUR_MS, 13 * HOUR_MS]);
    assert.deepEqual(data.lines, [
      { variant: 'off', counts: [1, 0, 0, 0], total: 1 },
      { variant: 'on', counts: [2, 0, 5, 0], total: 7 },
      { variant: '', counts: [0, 0, 1, 0], total: 1 },
    ]);
    assert.equal(data.max, 5);
    assert.equal(data.total, 9);
  });

  test('no points: no lines, max 0', () => {
    assert.deepEqual(chartData([], range, ['on']), { slots: [10 * HOUR_MS, 11 * HOUR_MS, 12 * HOUR_MS, 13 * HOUR_MS], lines: [], max: 0, total: 0 });
  });

  test('the count axis: whole numbers up to 4, then round steps with the top at or above the largest count', () => {
    assert.deepEqual(countScale(0), { top: 1, ticks: [0, 1] });
    assert.deepEqual(countScale(3), { top: 3, ticks: [0, 1, 2, 3] });
    // 5 / 4 = 1.25 → step 2: 0, 2, 4, and the top 6 above 5.
    assert.deepEqual(countScale(5), { top: 6, ticks: [0, 2, 4, 6] });
    // 40 / 4 = 10 → step 10, 40 itself the top.
    assert.deepEqual(countScale(40), { top: 40, ticks: [0, 10, 20, 30, 40] });
    // 41 / 4 = 10.25 → step 20: 0, 20, 40, top 60.
    assert.deepEqual(countScale(41), { top: 60, ticks: [0, 20, 40, 60] });
  });

  test('points: slots spread evenly from left to right, counts from the bottom (0) to the top', () => {
    const box = { left: 40, right: 440, top: 10, bottom: 210 };
    // x: 40, 40 + 400/2, 440; y: 210 − c/6 × 200.
    assert.deepEqual(linePoints([0, 3, 6], 6, box), [
      { x: 40, y: 210 },
      { x: 240, y: 110 },
      { x: 440, y: 10 },
    ]);
    // One slot: at the left; 2 of 4 is half way up.
    assert.deepEqual(linePoints([2], 4, box), [{ x: 40, y: 110 }]);
    assert.equal(pointsAttribute([{ x: 1.26, y: 2 }, { x: 100 / 3, y: 0.04 }]), '1.3,2 33.3,0');
  });
});

describe('last evaluated, in words', () => {
  const now = Date.UTC(2026, 10, 28, 14, 37);
  const MINUTE = 60_000;

  test('never, just now, then whole minutes, hours, days rounded down', () => {
    assert.equal(relativeTime(null, now), 'never');
    assert.equal(relativeTime(undefined, now), 'never');
    assert.equal(relativeTime(now - 59_999, now), 'just now');
    assert.equal(relativeTime(now + 5_000, now), 'just now', 'a clock a little ahead');
    assert.equal(relativeTime(now - MINUTE, now), '1 minute ago');
    assert.equal(relativeTime(now - 59 * MINUTE - 59_000, now), '59 minutes ago');
    assert.equal(relativeTime(now - HOUR_MS, now), '1 hour ago');
    assert.equal(relativeTime(now - 23 * HOUR_MS - 59 * MINUTE, now), '23 hours ago');
    assert.equal(relativeTime(now - DAY_MS, now), '1 day ago');
    assert.equal(relativeTime(now - 45 * DAY_MS - HOUR_MS, now), '45 days ago');
  });
});
