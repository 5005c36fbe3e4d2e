import { readFileSync, readdirSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { buildConsole } from '../../../scripts/build-console.ts';
import { launchChromium, signInToConsole } from './support/browser.ts';
import { api, loginAdmin, seedTenant, type Tenant } from './support/rest-client.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';
// topologies: single
// test-batch: alone

function chromiumCpu(): number {
  let total = 0;
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      if (!cmd.includes('chrom')) continue;
      const s = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
      total += Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]);
    } catch {}
  }
  return total * 10;
}
const own = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1000; };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('idle cost', () => {
  let ts: TestServer; let tenant: Tenant; let browser: Browser;
  before(async () => {
    await buildConsole();
    ts = await startTestServer();
    const client = api(ts.base);
    const root = await loginAdmin(client);
    tenant = await seedTenant(client, root.token, 'idle');
    browser = await launchChromium();
  });
  after(async () => { await browser?.close(); await ts?.stop(); });
  for (const round of [1, 2]) {
    test(`round ${round}`, async () => {
      for (const where of ['flags', 'segments', 'blank']) {
        const page = await signInToConsole(browser, ts.base, tenant.admin, { hash: where === 'blank' ? undefined : `#/env/${tenant.environmentId}/${where}` });
        if (where === 'blank') await page.goto('about:blank');
        await sleep(1000);
        const c0 = chromiumCpu(); const o0 = own();
        await sleep(20_000);
        console.log(`IDLE ${where}: chromium ${chromiumCpu() - c0} ms, test process ${Math.round(own() - o0)} ms per 20 s`);
        await page.context().close();
      }
    });
  }
});
