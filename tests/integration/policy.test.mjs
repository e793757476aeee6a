// Policy (issue 8): the real ./mcpwarden with --policy (or a config file's
// "policy") between the official SDK client and the counting fixture
// (lib/policy-peer.mjs) or server-everything. A refused call must be
// answered by the proxy with a clear JSON-RPC error and must never reach
// the upstream: the fixture records every message it receives.

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { freePort } from './lib/ports.mjs';
import { startEverything, startWarden, stopAll, REPO_ROOT } from './lib/procs.mjs';
import { connectClient, CALL_TIMEOUT } from './lib/mcp.mjs';
import { postJson } from './lib/http.mjs';
import { writeConfig } from './lib/conf.mjs';
import { withTimeout, waitFor, sleep } from './lib/util.mjs';
import { startPolicyPeer, TOOLS, READ_ONLY } from './lib/policy-peer.mjs';

const T = { timeout: 30000 };
const PRESET = path.join(REPO_ROOT, 'conf/policy-read-only.json');
const POLICY_CODE = -32001;

const call = (s, name, args = {}) =>
  withTimeout(s.client.callTool({ name, arguments: args }, undefined, { timeout: CALL_TIMEOUT }),
    CALL_TIMEOUT + 1000, `tools/call ${name}`);

/** The call must be refused by `rule`; returns the SDK's McpError. */
async function refused(s, name, args, rule, action = 'deny') {
  let err;
  try {
    const r = await call(s, name, args);
    assert.fail(`${name} should have been refused, got ${JSON.stringify(r)}`);
  } catch (e) {
    err = e;
  }
  assert.equal(err.code, POLICY_CODE, `${name}: ${err.message}`);
  assert.match(err.message, /mcpwarden policy/);
  assert.ok(err.message.includes(`"${rule}"`), `message names the rule: ${err.message}`);
  assert.ok(err.message.includes(`"${name}"`), `message names the tool: ${err.message}`);
  assert.equal(err.data?.rule, rule);
  assert.equal(err.data?.action, action);
  assert.equal(err.data?.tool, name);
  assert.equal(err.data?.method, 'tools/call');
  assert.equal(typeof err.data?.reason, 'string');
  return err;
}

/** Every page of tools/list, following nextCursor. */
async function listAll(s) {
  const names = [];
  let cursor;
  let pages = 0;
  do {
    const r = await withTimeout(s.client.listTools(cursor ? { cursor } : undefined), CALL_TIMEOUT, 'tools/list');
    names.push(...r.tools.map((t) => t.name));
    cursor = r.nextCursor;
    pages++;
  } while (cursor && pages < 50);
  return { names, pages };
}

function policyFile(obj) {
  return writeConfig(obj);
}

function presetWith(changes) {
  return { ...JSON.parse(readFileSync(PRESET, 'utf8')), ...changes };
}

const NOT_READ_ONLY = TOOLS.map((t) => t.name).filter((n) => !READ_ONLY.includes(n));

// ---- the read-only preset, SSE and JSON replies --------------------------------

for (const json of [false, true]) {
  describe(`read-only preset in front of the counting fixture (${json ? 'JSON' : 'SSE'} replies)`, () => {
    let peer;
    let warden;
    let s;

    before(async () => {
      peer = await startPolicyPeer({ json });
      const wp = await freePort();
      warden = await startWarden(wp, ['--listen', `127.0.0.1:${wp}`, '--upstream', peer.url, '--policy', PRESET]);
      s = await connectClient(warden.url, { name: 'preset' });
    }, T);

    after(async () => {
      await s?.close();
      await stopAll();
      await peer?.close();
    });

    test('a call before any tools/list is refused as an unknown tool, upstream untouched', T, async () => {
      await refused(s, 'get_weather', {}, 'unknown-tool');
      assert.equal(peer.calls('get_weather'), 0);
    });

    test('tools/list shows every tool (deny does not hide)', T, async () => {
      const { names } = await listAll(s);
      assert.deepEqual(names.sort(), TOOLS.map((t) => t.name).sort());
    });

    test('read-only tools are called through', T, async () => {
      for (const name of READ_ONLY) {
        const args = name === 'run_query' ? { sql: 'select 1' } : {};
        const r = await call(s, name, args);
        assert.match(r.content[0].text, new RegExp(`^${name.replace('.', '\\.')} ran`));
        assert.equal(peer.calls(name), 1, `${name} reached the upstream once`);
      }
    });

    test('every other call is refused with a clear error and never reaches the upstream', T, async () => {
      for (const name of NOT_READ_ONLY) {
        const e = await refused(s, name, {}, 'not-read-only');
        assert.match(e.data.reason, /read-only/);
        assert.equal(peer.calls(name), 0, `${name} reached the upstream`);
      }
      // One log line per refusal, naming tool and rule.
      await warden.proc.waitForStderr(/policy: deny tools\/call "delete_file" \(rule not-read-only/);
      await warden.proc.waitForStderr(/policy: deny tools\/call "mystery" \(rule not-read-only/);
    });

    test('a tool the server never listed is refused (unknown-tool)', T, async () => {
      await refused(s, 'never_listed', {}, 'unknown-tool');
      assert.equal(peer.calls('never_listed'), 0);
    });

    test('a batch with an allowed and a refused call gets both answers', T, async () => {
      const headers = {
        'mcp-session-id': s.transport.sessionId,
        'mcp-protocol-version': '2025-03-26',
      };
      const before = peer.calls('search_docs');
      const res = await postJson(warden.url, [
        { jsonrpc: '2.0', id: 'ok', method: 'tools/call', params: { name: 'search_docs', arguments: {} } },
        { jsonrpc: '2.0', id: 'no', method: 'tools/call', params: { name: 'drop_table', arguments: {} } },
      ], { headers });
      assert.equal(res.status, 200, res.text);
      let msgs;
      if ((res.headers['content-type'] ?? '').startsWith('text/event-stream')) {
        msgs = res.text.split('\n').filter((l) => l.startsWith('data: {')).map((l) => JSON.parse(l.slice(6)));
      } else {
        msgs = [res.json()].flat();
      }
      const ok = msgs.find((m) => m.id === 'ok');
      const no = msgs.find((m) => m.id === 'no');
      assert.ok(ok?.result, `allowed call answered: ${res.text}`);
      assert.equal(no?.error?.code, POLICY_CODE, res.text);
      assert.equal(no.error.data.rule, 'not-read-only');
      assert.equal(peer.calls('search_docs'), before + 1);
      assert.equal(peer.calls('drop_table'), 0);
    });

    test('a tool that appears through tools/list_changed is judged once listed', T, async () => {
      const since = s.notifications.length;
      peer.addTool(`late_reader_${json ? 'j' : 's'}`, { readOnlyHint: true });
      peer.addTool(`late_writer_${json ? 'j' : 's'}`, { readOnlyHint: false });
      await s.waitNotification((n) => n.method === 'notifications/tools/list_changed', 5000, since);
      const { names } = await listAll(s);
      assert.ok(names.includes(`late_reader_${json ? 'j' : 's'}`));
      const r = await call(s, `late_reader_${json ? 'j' : 's'}`);
      assert.match(r.content[0].text, /late_reader/);
      await refused(s, `late_writer_${json ? 'j' : 's'}`, {}, 'not-read-only');
      assert.equal(peer.calls(`late_writer_${json ? 'j' : 's'}`), 0);
    });
  });
}

// ---- the preset against a real server -------------------------------------------

describe('read-only preset in front of server-everything', () => {
  let se;
  let warden;
  let s;

  before(async () => {
    se = await startEverything(await freePort());
    const wp = await freePort();
    warden = await startWarden(wp, ['--listen', `127.0.0.1:${wp}`, '--upstream', se.url, '--policy', PRESET]);
    s = await connectClient(warden.url, { name: 'everything' });
    await withTimeout(s.client.listTools(), CALL_TIMEOUT, 'tools/list');
  }, T);

  after(async () => {
    await s?.close();
    await stopAll();
  });

  test('read-only tools work; writing ones and "trigger-" names are refused', T, async () => {
    const r = await call(s, 'echo', { message: 'through the policy' });
    assert.equal(r.content[0].text, 'Echo: through the policy');
    const sum = await call(s, 'get-sum', { a: 2, b: 3 });
    assert.match(sum.content[0].text, /5/);
    await refused(s, 'toggle-simulated-logging', {}, 'not-read-only');
    await refused(s, 'gzip-file-as-resource', { name: 'x', data: 'data:,x' }, 'not-read-only');
    // Annotated read-only, but its name says it triggers something.
    await refused(s, 'trigger-long-running-operation', { duration: 1, steps: 1 }, 'not-read-only');
  });
});

// ---- hide ---------------------------------------------------------------------------

const HIDE_POLICY = {
  rules: [
    { name: 'hide-destructive', match: { annotations: { destructiveHint: true } }, action: 'hide' },
    { name: 'hide-admin', match: { tool: 'admin.*' }, action: 'hide' },
  ],
};
// destructiveHint true by annotation or by default (unannotated, or writing
// without saying): delete_file, drop_table, mystery; admin.* by name.
const HIDDEN = ['delete_file', 'drop_table', 'mystery', 'admin.stats', 'admin.rotate_keys'];
const VISIBLE = TOOLS.map((t) => t.name).filter((n) => !HIDDEN.includes(n));

for (const json of [false, true]) {
  describe(`hide: paginated tools/list, ${json ? 'JSON' : 'SSE'}-framed replies`, () => {
    let peer;
    let warden;
    let s;

    before(async () => {
      peer = await startPolicyPeer({ json, pageSize: 3 });
      const wp = await freePort();
      warden = await startWarden(wp, ['--listen', `127.0.0.1:${wp}`, '--upstream', peer.url,
        '--policy', policyFile(HIDE_POLICY)]);
      s = await connectClient(warden.url, { name: 'hide' });
    }, T);

    after(async () => {
      await s?.close();
      await stopAll();
      await peer?.close();
    });

    test('hidden tools are gone from every page; paging stays intact', T, async () => {
      const { names, pages } = await listAll(s);
      assert.deepEqual(names.sort(), VISIBLE.sort());
      assert.equal(pages, Math.ceil(TOOLS.length / 3), 'every page was fetched through nextCursor');
      assert.equal(peer.pagesServed, pages);
      const lists = s.fetchLog.filter((f) => f.method === 'POST').slice(2);
      const want = json ? /^application\/json/ : /^text\/event-stream/;
      assert.ok(lists.length >= pages);
      for (const f of lists.slice(0, pages)) assert.match(f.contentType ?? '', want);
    });

    test('a hidden tool called anyway is refused and never reaches the upstream', T, async () => {
      await refused(s, 'delete_file', {}, 'hide-destructive', 'hide');
      await refused(s, 'admin.stats', {}, 'hide-admin', 'hide');
      assert.equal(peer.calls('delete_file'), 0);
      assert.equal(peer.calls('admin.stats'), 0);
      const r = await call(s, 'append_log');
      assert.match(r.content[0].text, /^append_log ran/);
    });
  });
}

describe('hide: each listing is judged by the policy in force (what a tool decides is kept per policy)', () => {
  let peer;
  let warden;
  let s;
  let file;

  before(async () => {
    peer = await startPolicyPeer({ json: true, pageSize: 100 });
    file = policyFile(HIDE_POLICY);
    const wp = await freePort();
    warden = await startWarden(wp, ['--listen', `127.0.0.1:${wp}`, '--upstream', peer.url, '--policy', file]);
    s = await connectClient(warden.url, { name: 'hide-reload' });
  }, T);

  after(async () => {
    await s?.close();
    await stopAll();
    await peer?.close();
  });

  test('the same listing again, then after reloads that drop and restore the hide rules', T, async () => {
    const names = async () => (await listAll(s)).names.sort();
    const hup = async () => { warden.proc.child.kill('SIGHUP'); await sleep(200); };
    // Twice: the second listing is decided from what the first kept.
    assert.deepEqual(await names(), VISIBLE.slice().sort());
    assert.deepEqual(await names(), VISIBLE.slice().sort());

    writeFileSync(file, JSON.stringify({ default: 'allow' }));
    await hup();
    const all = TOOLS.map((t) => t.name).sort();
    await waitFor(async () => JSON.stringify(await names()) === JSON.stringify(all),
      { timeout: 5000, what: 'every tool listed once no rule hides' });
    assert.deepEqual(await names(), all);

    // Only the name rule now: the destructive tools come back.
    writeFileSync(file, JSON.stringify({ rules: [HIDE_POLICY.rules[1]] }));
    await hup();
    const noAdmin = all.filter((n) => !n.startsWith('admin.'));
    await waitFor(async () => JSON.stringify(await names()) === JSON.stringify(noAdmin),
      { timeout: 5000, what: 'only admin.* hidden' });

    writeFileSync(file, JSON.stringify(HIDE_POLICY));
    await hup();
    await waitFor(async () => JSON.stringify(await names()) === JSON.stringify(VISIBLE.slice().sort()),
      { timeout: 5000, what: 'both hide rules again' });
  });
});

// ---- dry run ----------------------------------------------------------------------------

describe('dry run: refusals are forwarded and logged', () => {
  let peer;
  let warden;
  let s;

  before(async () => {
    peer = await startPolicyPeer({ json: true });
    const wp = await freePort();
    const policy = presetWith({
      dry_run: true,
      rules: [
        { name: 'hide-admin', match: { tool: 'admin.*' }, action: 'hide' },
        ...presetWith({}).rules,
      ],
    });
    warden = await startWarden(wp, ['--listen', `127.0.0.1:${wp}`, '--upstream', peer.url,
      '--policy', policyFile(policy)]);
    s = await connectClient(warden.url, { name: 'dry' });
  }, T);

  after(async () => {
    await s?.close();
    await stopAll();
    await peer?.close();
  });

  test('startup says the policy is a dry run', T, async () => {
    await warden.proc.waitForStderr(/policy: 3 rules, default deny, unknown tools denied, DRY RUN/);
  });

  test('nothing is hidden, and the log says what would have been', T, async () => {
    const { names } = await listAll(s);
    assert.deepEqual(names.sort(), TOOLS.map((t) => t.name).sort());
    await warden.proc.waitForStderr(/policy: dry run, forwarded: would hide 2 tools from tools\/list \(upstream default\): admin\.\S+, admin\./);
  });

  test('a destructive call goes through, and the log line says it would have been denied', T, async () => {
    const r = await call(s, 'delete_file', { path: '/tmp/x' });
    assert.match(r.content[0].text, /^delete_file ran/);
    assert.equal(peer.calls('delete_file'), 1);
    await warden.proc.waitForStderr(/policy: dry run, forwarded: would deny tools\/call "delete_file" \(rule not-read-only, client -, upstream default\)/);
    await call(s, 'admin.rotate_keys');
    await warden.proc.waitForStderr(/would hide tools\/call "admin\.rotate_keys" \(rule hide-admin/);
    assert.equal(peer.calls('admin.rotate_keys'), 1);
  });
});

// ---- arguments ---------------------------------------------------------------------------

describe('deny by argument regex', () => {
  let peer;
  let warden;
  let s;

  before(async () => {
    peer = await startPolicyPeer({ json: false });
    const wp = await freePort();
    const policy = {
      rules: [{
        name: 'no-sql-writes',
        match: { tool: 'run_query', args: [{ pointer: '/sql', matches: '(?i)^\\s*(drop|delete|update)' }] },
        action: 'deny',
        message: 'only read queries through the proxy',
      }],
    };
    warden = await startWarden(wp, ['--listen', `127.0.0.1:${wp}`, '--upstream', peer.url,
      '--policy', policyFile(policy)]);
    s = await connectClient(warden.url, { name: 'args' });
    await withTimeout(s.client.listTools(), CALL_TIMEOUT, 'tools/list');
  }, T);

  after(async () => {
    await s?.close();
    await stopAll();
    await peer?.close();
  });

  test('a SELECT goes through; DROP/delete/UPDATE in any case are refused', T, async () => {
    const r = await call(s, 'run_query', { sql: 'SELECT * FROM drops' });
    assert.match(r.content[0].text, /^run_query ran/);
    for (const sql of ['  DROP TABLE users', 'delete from t', 'Update t set x = 1']) {
      const e = await refused(s, 'run_query', { sql }, 'no-sql-writes');
      assert.equal(e.data.reason, 'only read queries through the proxy');
    }
    assert.equal(peer.calls('run_query'), 1);
    // Everything else is allowed by the default.
    await call(s, 'delete_file');
    assert.equal(peer.calls('delete_file'), 1);
  });
});

// ---- clients, from a config file with an embedded policy -----------------------------------

describe('rules per client (config file with clients and an embedded policy)', () => {
  let peer;
  let warden;
  const CI = 'ci-token-policy-0123456789';
  const AGENT = 'agent-token-policy-0123456789';

  before(async () => {
    peer = await startPolicyPeer({ json: true });
    const wp = await freePort();
    const preset = presetWith({});
    const conf = writeConfig({
      listen: `127.0.0.1:${wp}`,
      upstreams: [{ name: 'staging', path: '/mcp', url: peer.url }],
      clients: [{ name: 'ci', token: CI }, { name: 'agent', token: AGENT }],
      policy: {
        ...preset,
        rules: [{ name: 'ci-may-write', match: { client: 'ci', upstream: 'staging' }, action: 'allow' }, ...preset.rules],
      },
    });
    warden = await startWarden(wp, ['-c', conf]);
  }, T);

  after(async () => {
    await stopAll();
    await peer?.close();
  });

  test('the CI client may call what the agent may not', T, async () => {
    const ci = await connectClient(warden.url, { name: 'ci', headers: { authorization: `Bearer ${CI}` } });
    const agent = await connectClient(warden.url, { name: 'agent', headers: { authorization: `Bearer ${AGENT}` } });
    try {
      await withTimeout(agent.client.listTools(), CALL_TIMEOUT, 'tools/list');
      await refused(agent, 'drop_table', {}, 'not-read-only');
      assert.equal(peer.calls('drop_table'), 0);
      await warden.proc.waitForStderr(/policy: deny tools\/call "drop_table" \(rule not-read-only, client agent, upstream staging\)/);
      const r = await call(ci, 'drop_table');
      assert.match(r.content[0].text, /^drop_table ran/);
      assert.equal(peer.calls('drop_table'), 1);
      const ok = await call(agent, 'get_weather');
      assert.match(ok.content[0].text, /^get_weather ran/);
    } finally {
      await ci.close();
      await agent.close();
    }
  });
});

// ---- reload -----------------------------------------------------------------------------------

describe('SIGHUP reload under load: a good policy applies, a bad one keeps the old', () => {
  let peer;
  let warden;
  let s;
  let file;

  before(async () => {
    peer = await startPolicyPeer({ json: false });
    file = policyFile(presetWith({}));
    const wp = await freePort();
    warden = await startWarden(wp, ['--listen', `127.0.0.1:${wp}`, '--upstream', peer.url, '--policy', file]);
    s = await connectClient(warden.url, { name: 'reload' });
    await withTimeout(s.client.listTools(), CALL_TIMEOUT, 'tools/list');
  }, T);

  after(async () => {
    await s?.close();
    await stopAll();
    await peer?.close();
  });

  test('reloads while another session keeps calling', T, async (t) => {
    // Load: a second session calls an always-allowed tool in a loop.
    const busy = await connectClient(warden.url, { name: 'busy' });
    await withTimeout(busy.client.listTools(), CALL_TIMEOUT, 'tools/list');
    const load = { calls: 0, failures: [], running: true };
    const loop = (async () => {
      while (load.running) {
        try { await call(busy, 'get_weather'); load.calls++; } catch (e) { load.failures.push(e.message); }
        await sleep(5);
      }
    })();
    const hup = async () => {
      warden.proc.child.kill('SIGHUP');
      await sleep(200);
      return warden.proc.exitStatus;
    };
    const deleteWorks = async () => {
      try { await call(s, 'delete_file'); return true; } catch (e) {
        if (e.code !== POLICY_CODE) throw e;
        return false;
      }
    };
    try {
      assert.equal(await deleteWorks(), false, 'the preset refuses delete_file');

      writeFileSync(file, JSON.stringify({ default: 'allow' }));
      if ((await hup())?.signal === 'SIGHUP') {
        t.skip('this binary does not handle SIGHUP yet');
        return;
      }
      await waitFor(deleteWorks, { timeout: 5000, what: 'the reloaded policy to allow delete_file' });

      // Not JSON, then JSON that is not a policy: the running one stays.
      for (const bad of ['{ not json', JSON.stringify({ default: 'block', rules: 'none' })]) {
        writeFileSync(file, bad);
        assert.equal(await hup(), null, 'still running after a bad reload');
        assert.equal(await deleteWorks(), true, `old policy kept after ${bad}`);
      }

      writeFileSync(file, JSON.stringify(presetWith({})));
      await hup();
      await waitFor(async () => !(await deleteWorks()), { timeout: 5000, what: 'the preset again' });
      assert.ok(load.calls > 0, 'the busy session made calls');
    } finally {
      load.running = false;
      await withTimeout(loop, CALL_TIMEOUT + 2000, 'busy loop to stop');
      await busy.close();
    }
    assert.deepEqual(load.failures, [], 'the busy session never failed');
  });
});

// ---- errors -----------------------------------------------------------------------------------

describe('a bad policy stops the start, with the location of each error', () => {
  test('--policy FILE with mistakes', T, async () => {
    const { runWarden } = await import('./lib/procs.mjs');
    const bad = policyFile({
      default: 'block',
      rules: [{ name: 'x', match: { tool: 7 }, action: 'deny' }, { name: 'y', action: 'deny', colour: 'red' }],
    });
    const wp = await freePort();
    const r = await runWarden(['--listen', `127.0.0.1:${wp}`, '--upstream', 'http://127.0.0.1:9/mcp', '--policy', bad]);
    assert.notEqual(r.code, 0);
    assert.match(r.stderr, /\$\.policy\.default: must be one of "allow", "deny", "hide", "log"/);
    assert.match(r.stderr, /\$\.policy\.rules\[0\]\.match\.tool: must be a string or an array of strings/);
    assert.match(r.stderr, /\$\.policy\.rules\[1\]\.colour: unknown key/);
  });
});
