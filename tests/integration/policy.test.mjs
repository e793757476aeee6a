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
import { startEverything, startWarden, stopAll, reloadWarden, waitForStderrSince, REPO_ROOT } from './lib/procs.mjs';
import { connectClient, CALL_TIMEOUT } from './lib/mcp.mjs';
import { postJson } from './lib/http.mjs';
import { writeConfig } from './lib/conf.mjs';
import { withTimeout, waitFor } from './lib/util.mjs';
import { startAdminWarden, adminGet, metricValue, waitForCalls } from './lib/admin-util.mjs';
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
  let r;
  try {
    r = await call(s, name, args);
  } catch (e) {
    err = e;
  }
  if (!err) assert.fail(`${name} should have been refused by "${rule}", got ${JSON.stringify(r)}`);
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
    // Each listing after the reload's log line is judged by the new policy.
    const hup = async () => {
      const r = await reloadWarden(warden.proc);
      assert.ok(r.ok, r.text);
    };
    // Twice: the second listing is decided from what the first kept.
    assert.deepEqual(await names(), VISIBLE.slice().sort());
    assert.deepEqual(await names(), VISIBLE.slice().sort());

    writeFileSync(file, JSON.stringify({ default: 'allow' }));
    await hup();
    const all = TOOLS.map((t) => t.name).sort();
    assert.deepEqual(await names(), all, 'every tool listed once no rule hides');

    // Only the name rule now: the destructive tools come back.
    writeFileSync(file, JSON.stringify({ rules: [HIDE_POLICY.rules[1]] }));
    await hup();
    const noAdmin = all.filter((n) => !n.startsWith('admin.'));
    assert.deepEqual(await names(), noAdmin, 'only admin.* hidden');

    writeFileSync(file, JSON.stringify(HIDE_POLICY));
    await hup();
    assert.deepEqual(await names(), VISIBLE.slice().sort(), 'both hide rules again');
  });
});

// ---- dry run ----------------------------------------------------------------------------

// What a dry run must do, each seen where it happens: the call reaches
// the upstream (the fixture's own record of what it received), the client
// gets the upstream's real result, the decision is counted (the admin
// endpoint's mcpwarden_policy_decisions_total, rule "dry-run:<rule>",
// verdict forward) and logged. A dry run that refused, or forwarded
// without counting, fails here whatever its log line says.

const DECISIONS = 'mcpwarden_policy_decisions_total';

async function scrapeMetrics(w) {
  const r = await adminGet(w.admin, '/metrics');
  assert.equal(r.status, 200, r.text);
  return r.text;
}

/** Wait until `name{labels}` on /metrics is `want` (it is counted once the
 * exchange is recorded, which may follow the reply); then it must stay
 * there through one more scrape. */
async function metricReaches(w, name, labels, want) {
  let last;
  await waitFor(async () => {
    last = metricValue(await scrapeMetrics(w), name, labels) ?? 0;
    return last >= want;
  }, { timeout: 5000, what: `${name}${JSON.stringify(labels)} to reach ${want}` })
    .catch((e) => { throw new Error(`${e.message}; it stayed at ${last}`); });
  assert.equal(metricValue(await scrapeMetrics(w), name, labels) ?? 0, want,
    `${name}${JSON.stringify(labels)}`);
}

/** The tools/call requests the fixture received for `name`. */
const received = (peer, name) =>
  peer.received.filter((m) => m.method === 'tools/call' && m.params?.name === name);

describe('dry run: refusals are forwarded, answered by the upstream, counted and logged', () => {
  let peer;
  let warden;
  let s;

  before(async () => {
    peer = await startPolicyPeer({ json: true });
    const policy = presetWith({
      dry_run: true,
      rules: [
        { name: 'hide-admin', match: { tool: 'admin.*' }, action: 'hide' },
        ...presetWith({}).rules,
      ],
    });
    warden = await startAdminWarden({ upstreams: peer.url, extra: { policy } });
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

  test('a destructive call reaches the upstream, its result the client, the count moves', T, async () => {
    const labels = { rule: 'dry-run:not-read-only', verdict: 'forward' };
    const before = metricValue(await scrapeMetrics(warden), DECISIONS, labels) ?? 0;
    const r = await call(s, 'delete_file', { path: '/tmp/x' });
    // The upstream's own answer, not an error made up on the way.
    assert.notEqual(r.isError, true, JSON.stringify(r));
    assert.deepEqual(r.content, [{ type: 'text', text: 'delete_file ran with {"path":"/tmp/x"}' }]);
    // Received once, with the client's arguments.
    const got = received(peer, 'delete_file');
    assert.equal(got.length, 1, JSON.stringify(got));
    assert.deepEqual(got[0].params.arguments, { path: '/tmp/x' });
    await metricReaches(warden, DECISIONS, labels, before + 1);
    await metricReaches(warden, 'mcpwarden_tool_calls_total', { tool: 'delete_file', outcome: 'ok' }, 1);
    const rec = await waitForCalls(warden.admin, (calls) => calls.find((c) => c.tool === 'delete_file'));
    assert.equal(rec.outcome, 'ok', JSON.stringify(rec));
    assert.equal(rec.http_status, 200, JSON.stringify(rec));
    await warden.proc.waitForStderr(/policy: dry run, forwarded: would deny tools\/call "delete_file" \(rule not-read-only, client -, upstream default\)/);
  });

  test('a call of a would-be hidden tool reaches the upstream and is counted under its rule', T, async () => {
    const labels = { rule: 'dry-run:hide-admin', verdict: 'forward' };
    const before = metricValue(await scrapeMetrics(warden), DECISIONS, labels) ?? 0;
    const r = await call(s, 'admin.rotate_keys');
    assert.notEqual(r.isError, true, JSON.stringify(r));
    assert.match(r.content?.[0]?.text ?? '', /^admin\.rotate_keys ran with /, JSON.stringify(r));
    assert.equal(received(peer, 'admin.rotate_keys').length, 1);
    await metricReaches(warden, DECISIONS, labels, before + 1);
    await warden.proc.waitForStderr(/would hide tools\/call "admin\.rotate_keys" \(rule hide-admin/);
  });
});

describe('dry run on one rule: that rule only logs, the others still refuse', () => {
  let peer;
  let warden;
  let s;

  before(async () => {
    peer = await startPolicyPeer({ json: false });
    const policy = {
      default: 'allow',
      rules: [
        { name: 'try-no-delete', match: { tool: 'delete_file' }, action: 'deny', dry_run: true },
        { name: 'no-drop', match: { tool: 'drop_table' }, action: 'deny' },
      ],
    };
    warden = await startAdminWarden({ upstreams: peer.url, extra: { policy } });
    s = await connectClient(warden.url, { name: 'dry-rule' });
    await withTimeout(s.client.listTools(), CALL_TIMEOUT, 'tools/list');
  }, T);

  after(async () => {
    await s?.close();
    await stopAll();
    await peer?.close();
  });

  test('delete_file is forwarded and answered; drop_table is refused and never sent', T, async () => {
    const r = await call(s, 'delete_file', { path: '/tmp/y' });
    assert.deepEqual(r.content, [{ type: 'text', text: 'delete_file ran with {"path":"/tmp/y"}' }]);
    assert.deepEqual(received(peer, 'delete_file').map((m) => m.params.arguments), [{ path: '/tmp/y' }]);
    await refused(s, 'drop_table', {}, 'no-drop');
    assert.equal(received(peer, 'drop_table').length, 0);
    await metricReaches(warden, DECISIONS, { rule: 'dry-run:try-no-delete', verdict: 'forward' }, 1);
    await warden.proc.waitForStderr(/policy: dry run, forwarded: would deny tools\/call "delete_file" \(rule try-no-delete,/);
    await warden.proc.waitForStderr(/policy: deny tools\/call "drop_table" \(rule no-drop,/);
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

// Starts from the read-only preset, which refuses delete_file. A failed
// reload that dropped the policy (no policy: everything passes) would then
// let it through, so "the old policy is kept" is checked by a call the old
// policy refuses, and the upstream's count. Policy B differs from the
// preset both ways (it allows append_log, refuses get_weather) and refuses
// destructive tools by a rule of its own name, so each answer says which
// policy decided it: B, the preset, or none.
const POLICY_B = {
  default: 'allow',
  rules: [
    { name: 'no-destructive', match: { annotations: { destructiveHint: true } }, action: 'deny' },
    { name: 'no-weather', match: { tool: 'get_weather' }, action: 'deny' },
  ],
};

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

  test('preset -> B applies; two bad files keep B (its deny holds); back to the preset', T, async () => {
    // Load: a second session calls a tool both policies allow, back to
    // back (each call awaits its answer), all through the reloads.
    const busy = await connectClient(warden.url, { name: 'busy' });
    await withTimeout(busy.client.listTools(), CALL_TIMEOUT, 'tools/list');
    const load = { calls: 0, failures: [], running: true };
    const loop = (async () => {
      while (load.running) {
        try { await call(busy, 'search_docs'); load.calls++; } catch (e) { load.failures.push(e.message); }
      }
    })();
    // reloadWarden waits for the reload's own log line and fails the test
    // if the process exits (a binary that dies on SIGHUP).
    const reload = async (content, wantOk) => {
      writeFileSync(file, content);
      const r = await reloadWarden(warden.proc);
      assert.equal(r.ok, wantOk, `reload of ${content.slice(0, 60)}: ${r.text}`);
      assert.equal(warden.proc.exitStatus, null, 'still running');
      return r;
    };
    let weather = 0;
    let appended = 0;
    const when = async (what, fn) => {
      try { await fn(); } catch (e) { e.message = `${what}: ${e.message}`; throw e; }
    };
    const underPreset = (what) => when(what, async () => {
      await refused(s, 'delete_file', {}, 'not-read-only');
      await refused(s, 'append_log', {}, 'not-read-only');
      const r = await call(s, 'get_weather');
      assert.match(r.content[0].text, /^get_weather ran/);
      weather++;
    });
    const underB = (what) => when(what, async () => {
      await refused(s, 'delete_file', {}, 'no-destructive');
      await refused(s, 'get_weather', {}, 'no-weather');
      const r = await call(s, 'append_log');
      assert.match(r.content[0].text, /^append_log ran/);
      appended++;
    });
    const upstreamSaw = (when) => {
      assert.equal(peer.calls('delete_file'), 0, `${when}: delete_file reached the upstream`);
      assert.equal(peer.calls('get_weather'), weather, `${when}: get_weather calls upstream`);
      assert.equal(peer.calls('append_log'), appended, `${when}: append_log calls upstream`);
    };
    try {
      await underPreset('at start');
      upstreamSaw('at start');

      await reload(JSON.stringify(POLICY_B), true);
      await underB('after the reload to B');
      upstreamSaw('after the reload to B');

      // Not JSON, then JSON that is not a policy: each reload says it
      // failed and why, and B stays in force (not the preset, not none).
      let r = await reload('{ not json', false);
      assert.match(r.text, /SIGHUP: the new configuration has errors; still running the old one/, r.text);
      await underB('after a reload of a file that is not JSON');
      upstreamSaw('after a reload of a file that is not JSON');

      r = await reload(JSON.stringify({ default: 'block', rules: 'none' }), false);
      await waitForStderrSince(warden.proc, r.since, /\$\.policy\.default: must be one of/);
      await underB('after a reload of a policy with errors');
      upstreamSaw('after a reload of a policy with errors');

      await reload(JSON.stringify(presetWith({})), true);
      await underPreset('after the reload back to the preset');
      upstreamSaw('after the reload back to the preset');
      assert.ok(load.calls > 0, 'the busy session made calls');
    } finally {
      load.running = false;
      await withTimeout(loop, CALL_TIMEOUT + 2000, 'busy loop to stop');
      await busy.close();
    }
    assert.deepEqual(load.failures, [], 'the busy session never failed');
    assert.equal(peer.calls('search_docs'), load.calls, 'every busy call reached the upstream once');
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
