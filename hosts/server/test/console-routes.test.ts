import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { buildConsole } from '../../../scripts/build-console.ts';
import { startTestServer, type TestServer } from './support/test-server.ts';

// What the REST host serves to browsers (docs/console.md): the console's page and its two files,
// with their security headers, and nothing else of the file system. No browser needed.

let ts: TestServer;

before(async () => {
  await buildConsole();
  ts = await startTestServer({}, { share: true });
});
after(() => ts?.stop());

describe('the web console routes', () => {
  test('/ is the console page, with a policy allowing this origin only and no framing', async () => {
    const response = await fetch(`${ts.base}/`);
    assert.equal(response.status, 200);
    assert.match(response.headers.get('content-type') ?? '', /^text\/html/);
    const policy = response.headers.get('content-security-policy') ?? '';
    for (const directive of ["default-src 'self'", "script-src 'self'", "frame-ancestors 'none'", "base-uri 'none'"]) assert.ok(policy.includes(directive), `${directive} in ${policy}`);
    assert.equal(response.headers.get('x-frame-options'), 'DENY');
    assert.match(await response.text(), /<script type="module" src="\/console\/app\.js"><\/script>/);
  });

  test('the script and the style sheet are served with their types', async () => {
    const script = await fetch(`${ts.base}/console/app.js`);
    assert.equal(script.status, 200);
    assert.match(script.headers.get('content-type') ?? '', /^text\/javascript/);
    assert.equal(script.headers.get('x-content-type-options'), 'nosniff');
    assert.ok((await script.text()).length > 1000);
    const style = await fetch(`${ts.base}/console/app.css`);
    assert.equal(style.status, 200);
    assert.match(style.headers.get('content-type') ?? '', /^text\/css/);
  });

  test('nothing else is reachable through /console/: traversal and unknown names answer 404 {error, code}', async () => {
    for (const path of ['/console/index.html', '/console/..%2Fpackage.json', '/console/%2e%2e%2f%2e%2e%2fpackage.json', '/console/../package.json', '/console/app.js.map', '/console/']) {
      const response = await fetch(`${ts.base}${path}`);
      assert.equal(response.status, 404, path);
      const body = (await response.json()) as { code?: string };
      assert.equal(body.code, 'NOT_FOUND', path);
    }
  });

  test('/docs serves the interactive API reference from this server', async () => {
    const response = await fetch(`${ts.base}/docs/`, { redirect: 'follow' });
    assert.equal(response.status, 200);
    const html = await response.text();
    assert.match(html, /swagger-ui/i);
    assert.doesNotMatch(html, /https?:\/\/(?!127\.0\.0\.1|localhost)[a-z0-9.-]+\//i, 'no asset from another origin');
    const policy = response.headers.get('content-security-policy') ?? '';
    assert.ok(!policy.includes('validator.swagger.io') && !policy.includes('upgrade-insecure-requests'), policy);
    // The page carries the project's name, and reads the document at the address the README gives.
    assert.match(html, /<title>Switchyard API<\/title>/);
    const initializer = await (await fetch(`${ts.base}/docs/static/swagger-initializer.js`)).text();
    assert.match(initializer, /"urls":\[\{"url":"\/v1\/openapi\.json"/);
  });
});
