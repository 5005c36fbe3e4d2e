import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { after, before, describe, test } from 'node:test';
import { startTestServer, TEST_ADMIN, type TestServer } from '../hosts/server/test/support/test-server.ts';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../', import.meta.url));

/** The examples are documentation: they must keep running against the code as it is. */
describe('examples', () => {
  test('evaluate-locally.ts evaluates with the pure core', async () => {
    const { stdout } = await run(process.execPath, ['--import', 'tsx', 'examples/evaluate-locally.ts'], { cwd: ROOT });
    assert.deepEqual(stdout.trim().split('\n'), ['u-1: on (TARGETING_MATCH)', 'u-2: on (SPLIT, bucket 11170)', 'u-3: off (DEFAULT)']);
  });

  describe('admin-quickstart.sh against a running server', () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer();
    });
    after(() => server.stop());

    test('creates an org, its admin, a project, an environment and a working SDK key', async () => {
      const { stdout } = await run('bash', ['examples/admin-quickstart.sh'], {
        cwd: ROOT,
        env: { ...process.env, BASE: server.base, ADMIN_EMAIL: TEST_ADMIN.email, ADMIN_PASSWORD: TEST_ADMIN.password },
      });
      const key = /SDK key \(store it now, it is not shown again\): (sdk_\S+)/.exec(stdout)?.[1];
      assert.ok(key, stdout);
      const principal = await server.server.services.verifier.verifySdkKey(key);
      assert.equal(principal.kind, 'sdk_key');
      const environment = /environment (\S+)/.exec(stdout)?.[1];
      assert.equal(principal.kind === 'sdk_key' ? principal.environmentId : '', environment);
    });
  });
});
