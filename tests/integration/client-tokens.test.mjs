// Client tokens and upstream credentials (issue 8, point 3): with "clients"
// configured every MCP request needs a known bearer token (401 otherwise,
// with a WWW-Authenticate challenge); the client's token stays at the proxy
// and the upstream gets the credentials configured for it instead (a value
// filled from the environment). Secrets never reach the log.

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { freePort } from './lib/ports.mjs';
import { startWarden, stopAll } from './lib/procs.mjs';
import { postJson, request } from './lib/http.mjs';
import { writeConfig } from './lib/conf.mjs';
import { startScriptedPeer } from './peers/scripted.mjs';
import { waitFor } from './lib/util.mjs';

const T = { timeout: 20000 };
const CI_TOKEN = 'ci-token-0123456789abcdef';
const AGENT_TOKEN = 'agent-token-from-env-0123';
const UPSTREAM_SECRET = 'upstream-secret-value-42';
const ping = (id) => ({ jsonrpc: '2.0', id, method: 'ping' });

describe('client tokens and upstream credentials', () => {
  let peer;
  let warden;
  let base;

  before(async () => {
    peer = await startScriptedPeer({ mode: 'json', name: 'tok' });
    const wp = await freePort();
    const conf = writeConfig({
      listen: `127.0.0.1:${wp}`,
      upstreams: [{
        name: 'staging', path: '/mcp', url: peer.url,
        headers: { Authorization: 'Bearer ${MW_TEST_UPSTREAM}', 'X-Team': 'qa' },
      }],
      clients: [
        { name: 'ci', token: CI_TOKEN },
        { name: 'agent', token_env: 'MW_TEST_AGENT' },
      ],
    });
    warden = await startWarden(wp, ['-c', conf],
      { env: { MW_TEST_UPSTREAM: UPSTREAM_SECRET, MW_TEST_AGENT: AGENT_TOKEN } });
    base = `http://127.0.0.1:${wp}/mcp`;
  }, T);

  after(async () => {
    await stopAll();
    await peer?.close();
  });

  test('no token: 401 with a Bearer challenge, nothing forwarded', T, async () => {
    const before = peer.received.length;
    const res = await postJson(base, ping(1));
    assert.equal(res.status, 401);
    assert.match(res.headers['www-authenticate'], /^Bearer realm="mcpwarden"/);
    assert.equal(JSON.parse(res.body).error.code, -32600);
    assert.equal(peer.received.length, before);
  });

  test('a wrong token, or one in the wrong scheme, is refused', T, async () => {
    for (const auth of ['Bearer nope-nope-nope-nope', `Basic ${CI_TOKEN}`, `Bearer ${CI_TOKEN}x`,
      `Bearer ${CI_TOKEN.slice(0, -1)}`]) {
      const res = await postJson(base, ping(2), { headers: { Authorization: auth } });
      assert.equal(res.status, 401, auth);
      assert.equal(JSON.parse(res.body).error.message, 'invalid client token');
    }
  });

  test('a literal token and one from the environment both pass; the upstream gets its own credentials', T, async () => {
    for (const [tok, id] of [[CI_TOKEN, 3], [AGENT_TOKEN, 4]]) {
      const res = await postJson(base, ping(id), { headers: { Authorization: `Bearer ${tok}` } });
      assert.equal(res.status, 200);
      assert.equal(JSON.parse(res.body).id, id);
      const rec = peer.last((r) => r.body && JSON.parse(r.body).id === id);
      assert.equal(rec.headers.authorization, `Bearer ${UPSTREAM_SECRET}`);
      assert.equal(rec.headers['x-team'], 'qa');
      assert.ok(!JSON.stringify(rec.rawHeaders).includes(tok), 'client token passed upstream');
    }
  });

  test('the log names the client, never a token or the upstream secret', T, async () => {
    // ping 3 already logged " as=ci ": wait for ping 5's own access line,
    // which is written as its exchange ends, a moment after the reply.
    const ciLines = () => (warden.proc.stderr.match(/ as=ci /g) ?? []).length;
    const seen = ciLines();
    await postJson(base, ping(5), { headers: { Authorization: `Bearer ${CI_TOKEN}` } });
    await waitFor(() => ciLines() > seen, { timeout: 5000, what: 'the access line of ping 5' });
    const log = warden.proc.stderr;
    for (const secret of [CI_TOKEN, AGENT_TOKEN, UPSTREAM_SECRET])
      assert.ok(!log.includes(secret), `log leaks ${secret}`);
  });

  test('OAuth metadata stays public', T, async () => {
    const res = await request(base.replace('/mcp', '/.well-known/oauth-protected-resource/mcp'));
    assert.notEqual(res.status, 401);
  });
});

describe('client token configuration errors', () => {
  test('a token_env that is not set, and a short token, are config errors', T, async () => {
    const { runWarden } = await import('./lib/procs.mjs');
    const conf = writeConfig({
      upstreams: [{ url: 'http://127.0.0.1:1/mcp' }],
      clients: [{ name: 'a', token_env: 'MW_TEST_UNSET_VAR' }, { name: 'b', token: 'short' }],
    });
    const r = await runWarden(['--check-config', '-c', conf]);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /\$\.clients\[0\]\.token_env: environment variable MW_TEST_UNSET_VAR is not set/);
    assert.match(r.stderr, /\$\.clients\[1\]: the token must be at least 16 characters/);
  });
});
