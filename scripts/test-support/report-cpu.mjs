// Preloaded into every test file's process by scripts/run-tests.ts: when the process exits, one
// line with the CPU it used, its own and its reaped children's (a split topology's gateway,
// Chromium), from /proc/self/stat (Linux; elsewhere nothing is printed). The runner sums these
// lines into the run's CPU time: on a machine with N cores, CPU ÷ N is the least wall time any
// scheduling of these files can reach.
import { readFileSync } from 'node:fs';

process.on('exit', () => {
  try {
    const stat = readFileSync('/proc/self/stat', 'utf8');
    // Fields after the command name (which may hold spaces, inside parentheses).
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // utime, stime, cutime, cstime: fields 14-17 of proc(5), 12-15 here.
    const ticks = Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14]);
    process.stderr.write(`\n# test-file-cpu-ms ${Math.round((ticks * 1000) / 100)}\n`);
  } catch {
    // No /proc: no figure.
  }
});
