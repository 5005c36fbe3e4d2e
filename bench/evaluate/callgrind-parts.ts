/**
 * Reads the parts instructions.ts dumped (one callgrind part per target) and prints instructions
 * per request for each, V8's garbage collector and optimising compiler set apart (their work falls
 * into whichever window V8 runs it in), then the functions that differ most between two parts.
 *
 *   node --import tsx bench/evaluate/callgrind-parts.ts /tmp/evaluate.<pid>.out [--diff route,fastify-evaluating] [--top 30] [--event Ir]
 *
 * `--event` picks another of the recorded events (with valgrind's `--cache-sim=yes`: D1mr, DLmr and
 * the like, simulated cache misses) in place of instructions (Ir).
 *
 * Each part's name is its dump trigger (`callgrind_control -d NAME`); the request count per part is
 * read from the command line callgrind recorded (`--requests`, 10,000 when absent). JIT code has no
 * symbols: run instructions.ts under `node --perf-basic-prof` and `/tmp/perf-<pid>.map` names it
 * (else it is counted as "JIT code").
 */
import { existsSync, readFileSync } from 'node:fs';

/** V8's own work beside the program's: collecting garbage and compiling optimised code. */
const V8_BACKGROUND =
  /compiler::|Maglev|maglev|Turbofan|Pipeline|GraphReducer|Reducer|RegisterAllocat|LiveRange|InstructionSelector|SourcePosition|Zone::|Marking|Sweeper|Scavenge|Evacuat|MarkCompact|ConcurrentMarking|BodyDescriptor|SizeFromMap|RememberedSet|SlotSet|MemoryChunk|Heap::|heap::|GCTracer|popcount/;

interface Part {
  name: string;
  requests: number;
  /** Self instructions by function name. */
  self: Map<string, number>;
}

/** The JIT code map node writes with --perf-basic-prof: [start, size, name], sorted by start. */
function perfMap(pid: string): Array<[number, number, string]> {
  const file = `/tmp/perf-${pid}.map`;
  if (!existsSync(file)) return [];
  const entries: Array<[number, number, string]> = [];
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const match = /^([0-9a-f]+) ([0-9a-f]+) (.*)$/.exec(line);
    if (match) entries.push([parseInt(match[1]!, 16), parseInt(match[2]!, 16), match[3]!]);
  }
  return entries.sort((a, b) => a[0] - b[0]);
}

function jitName(map: Array<[number, number, string]>, address: number): string {
  let low = 0;
  let high = map.length - 1;
  let found = -1;
  while (low <= high) {
    const mid = (low + high) >> 1;
    if (map[mid]![0] <= address) {
      found = mid;
      low = mid + 1;
    } else high = mid - 1;
  }
  return found >= 0 && address < map[found]![0] + map[found]![1] ? map[found]![2] : 'JIT code';
}

/**
 * One part's self cost per function. The format (callgrind's, positions compressed): `fn=(id) name`
 * starts a function's lines, `(id)` alone refers back to a name; after `calls=` the next cost line
 * is the call's inclusive cost, which belongs to the callee, not to this function.
 */
function readPart(file: string, map: Array<[number, number, string]>, event: string): Part {
  const names = new Map<string, string>();
  const nameOf = (reference: string): string => {
    const match = /^\((\d+)\)(?: (.*))?$/.exec(reference);
    if (!match) return reference;
    if (match[2] !== undefined) names.set(match[1]!, match[2]);
    return names.get(match[1]!) ?? reference;
  };
  const text = readFileSync(file, 'utf8');
  const events = (/^events: (.*)$/m.exec(text)?.[1] ?? 'Ir').trim().split(/\s+/);
  const column = events.indexOf(event);
  if (column < 0) throw new Error(`${file} has no event ${event} (it has ${events.join(', ')})`);
  const self = new Map<string, number>();
  let fn = '';
  let callCost = false;
  for (const line of text.split('\n')) {
    if (line.startsWith('fn=')) {
      const name = nameOf(line.slice(3));
      const address = /^0x([0-9a-f]+)$/.exec(name);
      fn = address ? jitName(map, parseInt(address[1]!, 16)) : name;
      callCost = false;
    } else if (line.startsWith('cfn=')) nameOf(line.slice(4));
    else if (line.startsWith('calls=')) callCost = true;
    else if (/^[+\-*\d]/.test(line)) {
      if (callCost) callCost = false;
      else self.set(fn, (self.get(fn) ?? 0) + Number(line.trim().split(/\s+/)[column + 1] ?? 0));
    }
  }
  const trigger = /^desc: Trigger: dump (.*)$/m.exec(text)?.[1] ?? file;
  const requests = Number(/--requests (\d+)/.exec(/^cmd: (.*)$/m.exec(text)?.[1] ?? '')?.[1] ?? 10_000);
  return { name: trigger, requests: trigger === 'nothing' ? 1 : requests, self };
}

const sum = (part: Part, background: boolean): number => {
  let total = 0;
  for (const [name, cost] of part.self) if (V8_BACKGROUND.test(name) === background) total += cost;
  return total;
};

function main(): void {
  const base = process.argv[2];
  if (!base) throw new Error('usage: callgrind-parts.ts /tmp/evaluate.<pid>.out [--diff A,B] [--top N]');
  const pid = /^pid: (\d+)$/m.exec(readFileSync(`${base}.1`, 'utf8'))?.[1] ?? '';
  const map = perfMap(pid);
  const event = process.argv.includes('--event') ? process.argv[process.argv.indexOf('--event') + 1]! : 'Ir';
  const parts: Part[] = [];
  for (let i = 1; existsSync(`${base}.${i}`); i++) parts.push(readPart(`${base}.${i}`, map, event));
  const perRequest = (part: Part, n: number): string => Math.round(n / part.requests).toLocaleString('en-US');
  console.log(`part                 ${`${event}/request`.padStart(20)}   of which GC + compiler   the rest`);
  for (const part of parts) {
    const program = sum(part, false);
    const background = sum(part, true);
    console.log(`${part.name.padEnd(20)} ${perRequest(part, program + background).padStart(20)} ${perRequest(part, background).padStart(24)} ${perRequest(part, program).padStart(10)}`);
  }
  const at = process.argv.indexOf('--diff');
  const top = process.argv.includes('--top') ? Number(process.argv[process.argv.indexOf('--top') + 1]) : 30;
  if (at < 0) return;
  const [from, to] = process.argv[at + 1]!.split(',').map((name) => parts.find((part) => part.name === name));
  if (!from || !to) throw new Error(`--diff names two parts of: ${parts.map((part) => part.name).join(', ')}`);
  const rows: Array<[string, number, number]> = [];
  for (const name of new Set([...from.self.keys(), ...to.self.keys()])) {
    if (V8_BACKGROUND.test(name)) continue;
    rows.push([name, (from.self.get(name) ?? 0) / from.requests, (to.self.get(name) ?? 0) / to.requests]);
  }
  rows.sort((a, b) => Math.abs(b[2] - b[1]) - Math.abs(a[2] - a[1]));
  console.log(`\nper request, ${from.name} -> ${to.name} (GC and compiler left out): difference, ${from.name}, ${to.name}, function`);
  for (const [name, a, b] of rows.slice(0, top)) console.log(`${Math.round(b - a).toString().padStart(7)} ${Math.round(a).toString().padStart(7)} ${Math.round(b).toString().padStart(7)}  ${name.slice(0, 140)}`);
}

main();
