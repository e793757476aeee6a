// Metrics across replicas (issue 23, item 3): a real Prometheus (Debian
// package prometheus) scrapes three ./mcpwarden replicas' admin endpoints
// every second with the shipped rules loaded (conf/prometheus/), and its
// HTTP API answers the fleet's tool calls per tool and outcome, the
// contract state per upstream across the replicas, the recording rules'
// series and the alerts. Traffic: the official SDK client, different tools
// and counts per replica; one replica's "billing" upstream (the contract
// peer) lists a tool that fails its contract, another replica's "billing"
// passes. The shipped rule files are also checked by promtool here
// (`check rules`, the unit tests of `test rules`), so `make test` covers
// them.
//
// Every wait is on an answer: Prometheus's /-/ready and /api/v1/targets,
// the replicas' own /metrics, the scrape timestamps, the rules' series and
// /api/v1/alerts, each polled with a bound.

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from './lib/ports.mjs';
import { startEverything, spawnTracked, stop, stopAll, REPO_ROOT } from './lib/procs.mjs';
import { connectClient, CALL_TIMEOUT } from './lib/mcp.mjs';
import { request } from './lib/http.mjs';
import { waitFor, withTimeout } from './lib/util.mjs';
import { startAdminWarden, adminGet, metricValue } from './lib/admin-util.mjs';
import { startContractPeer } from './peers/contract-peer.mjs';

const T = { timeout: 60000 };
const RULES_DIR = path.join(REPO_ROOT, 'conf/prometheus');
const RULES = path.join(RULES_DIR, 'mcpwarden-rules.yml');
const RULES_TEST = path.join(RULES_DIR, 'tests/mcpwarden-rules.test.yml');
const TOKEN = 'prom-scrape-token-7f3a9c21';
const AUTH = { authorization: `Bearer ${TOKEN}` };

const tmp = mkdtempSync(path.join(os.tmpdir(), 'mcpwarden-prom-'));
process.once('exit', () => rmSync(tmp, { recursive: true, force: true }));

/** Run a command to completion: {code, stdout, stderr}. */
function run(cmd, args, ms = 20000) {
  return withTimeout(new Promise((resolve, reject) => {
    const p = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d) => { stdout += d; });
    p.stderr.on('data', (d) => { stderr += d; });
    p.on('error', (e) => reject(new Error(`${cmd} not runnable (Debian package prometheus): ${e.message}`)));
    p.on('close', (code) => resolve({ code, stdout, stderr }));
  }), ms, `${cmd} ${args.join(' ')}`);
}

/** A Prometheus scraping `targets` (admin host:port) every second. */
async function startPrometheus(targets) {
  const port = await freePort();
  const dir = mkdtempSync(path.join(tmp, 'prom-'));
  const tokenFile = path.join(dir, 'token');
  writeFileSync(tokenFile, TOKEN, { mode: 0o600 });
  const conf = path.join(dir, 'prometheus.yml');
  // YAML is a superset of JSON: the config is written as JSON.
  writeFileSync(conf, JSON.stringify({
    global: { scrape_interval: '1s', scrape_timeout: '1s', evaluation_interval: '1s' },
    rule_files: [RULES],
    scrape_configs: [{
      job_name: 'mcpwarden',
      metrics_path: '/metrics',
      authorization: { type: 'Bearer', credentials_file: tokenFile },
      static_configs: [{ targets }],
    }],
  }, null, 2));
  const proc = spawnTracked(`prometheus:${port}`, 'prometheus', [
    `--config.file=${conf}`,
    `--storage.tsdb.path=${path.join(dir, 'data')}`,
    `--web.listen-address=127.0.0.1:${port}`,
    '--log.level=warn',
  ]);
  const base = `http://127.0.0.1:${port}`;
  await waitFor(async () => {
    if (proc.exitStatus) throw new Error(`prometheus exited ${JSON.stringify(proc.exitStatus)}\n${proc.stderr}`);
    return (await request(`${base}/-/ready`, { timeout: 1000 }).catch(() => ({ status: 0 }))).status === 200;
  }, { timeout: 30000, interval: 100, what: 'prometheus /-/ready' });
  return { proc, port, base };
}

/** GET an /api/v1 path on Prometheus; returns `data` of a success answer. */
async function api(prom, p, params = {}) {
  const q = new URLSearchParams(params).toString();
  const r = await request(`${prom.base}/api/v1/${p}${q ? '?' + q : ''}`, { timeout: 5000 });
  assert.equal(r.status, 200, `${p}?${q}: ${r.status} ${r.text}`);
  const j = r.json();
  assert.equal(j.status, 'success', r.text);
  return j.data;
}

/** An instant query's vector as [{metric, value (number)}]. */
async function query(prom, expr) {
  const d = await api(prom, 'query', { query: expr });
  assert.equal(d.resultType, 'vector', `${expr}: ${d.resultType}`);
  return d.result.map((s) => ({ metric: s.metric, value: Number(s.value[1]) }));
}

/** Poll `expr` until pred(vector) holds; returns the vector. */
async function waitQuery(prom, expr, pred, what, ms = 20000) {
  let last = null;
  try {
    return await waitFor(async () => {
      last = await query(prom, expr);
      return pred(last) ? last : null;
    }, { timeout: ms, interval: 200, what: `${what} (${expr})` });
  } catch (e) {
    e.message += `; last answer: ${JSON.stringify(last)}`;
    throw e;
  }
}

/** A vector as {"k1=v1,k2=v2": value} over `keys`, sorted for deepEqual. */
function byLabels(vec, keys) {
  const out = {};
  for (const s of vec) out[keys.map((k) => `${k}=${s.metric[k] ?? ''}`).join(',')] = s.value;
  return Object.fromEntries(Object.entries(out).sort());
}

/**
 * Wait until every rule group of ours was evaluated after `t` (Unix
 * seconds): the recorded series and alerts then reflect the data
 * Prometheus held at t.
 */
function waitRulesAfter(prom, t) {
  return waitFor(async () => {
    const groups = (await api(prom, 'rules')).groups.filter((g) => g.name.startsWith('mcpwarden.'));
    return groups.length === 2 && groups.every((g) => Date.parse(g.lastEvaluation) / 1000 > t);
  }, { timeout: 20000, interval: 200, what: `both rule groups evaluated after ${t}` });
}

/** Sum of a family's samples on one replica's /metrics. */
async function replicaSum(w, name) {
  const r = await adminGet(w.admin, '/metrics', { headers: AUTH });
  assert.equal(r.status, 200, r.text);
  let n = 0;
  for (const line of r.text.split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{.*\})? (\S+)$/.exec(line);
    if (m && m[1] === name) n += Number(m[2]);
  }
  return { n, text: r.text };
}

describe('promtool: the shipped rules', () => {
  test('promtool check rules: clean', T, async () => {
    const r = await run('promtool', ['check', 'rules', '--lint=all', '--lint-fatal', RULES]);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /SUCCESS: \d+ rules found/);
    assert.doesNotMatch(r.stdout + r.stderr, /WARNING|FAILED/);
  });

  test('promtool test rules: every alert firing and quiet, every recording rule', T, async () => {
    const r = await run('promtool', ['test', 'rules', RULES_TEST]);
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /SUCCESS/);
  });

  test('the example scrape config is valid Prometheus syntax', T, async () => {
    const r = await run('promtool', ['check', 'config', '--syntax-only', path.join(RULES_DIR, 'prometheus.yml')]);
    assert.equal(r.code, 0, r.stdout + r.stderr);
  });
});

describe('Prometheus scraping three replicas', () => {
  let se;
  let peer;
  let prom;
  const reps = {}; // a, b, c
  const inst = {}; // name -> "127.0.0.1:adminPort" (Prometheus's instance label)
  let scrapedAt = Infinity; // when every replica's post-traffic scrape was in

  // Calls per replica: [path, tool, arguments, count, outcome]. The contract
  // peer answers tools/call with JSON-RPC -32601 (outcome rpc_error); the
  // call without its required "q" is also a live-contract finding.
  const PLAN = {
    a: [['/mcp', 'echo', { message: 'a' }, 3, 'ok'], ['/mcp', 'get-sum', { a: 1, b: 2 }, 1, 'ok']],
    b: [['/mcp', 'echo', { message: 'b' }, 1, 'ok'], ['/mcp', 'get-sum', { a: 2, b: 3 }, 2, 'ok']],
    c: [['/mcp', 'echo', { message: 'c' }, 2, 'ok'],
      ['/billing/mcp', 'search', { q: 'invoices' }, 1, 'rpc_error'],
      ['/billing/mcp', 'search', {}, 1, 'rpc_error']],
  };
  // Each replica lists the tools of every upstream it has (the contract
  // check reads those listings): "everything" passes, billing passes on a
  // (listing "clean") and fails on c (listing "ghost").
  const LISTS = { a: ['/mcp', '/billing/mcp'], b: ['/mcp'], c: ['/mcp', '/billing/mcp'] };
  /** The expected fleet view: {"tool=T,outcome=O": n}. */
  function expectedFleet(by = ['tool', 'outcome']) {
    const out = {};
    for (const [name, calls] of Object.entries(PLAN)) {
      for (const [, tool, , count, outcome] of calls) {
        const l = { instance: inst[name], tool, outcome };
        const k = by.map((x) => `${x}=${l[x]}`).join(',');
        out[k] = (out[k] ?? 0) + count;
      }
    }
    return Object.fromEntries(Object.entries(out).sort());
  }

  before(async () => {
    se = await startEverything(await freePort());
    peer = await startContractPeer();
    const billing = (listing) => ({ name: 'billing', path: '/billing/mcp', url: peer.url(listing, 'json'), contract: { mode: 'report' } });
    const ups = {
      a: [{ name: 'everything', path: '/mcp', url: se.url }, billing('clean')],
      b: [{ name: 'everything', path: '/mcp', url: se.url }],
      // "ghost" lists a tool whose required parameter is not a property
      c: [{ name: 'everything', path: '/mcp', url: se.url }, billing('ghost')],
    };
    for (const name of ['a', 'b', 'c']) {
      reps[name] = await startAdminWarden({ upstreams: ups[name], admin: { token: TOKEN } });
      inst[name] = `127.0.0.1:${reps[name].adminPort}`;
    }
    prom = await startPrometheus(Object.values(inst));
  }, { timeout: 90000 });

  after(async () => {
    await peer?.close();
    await stopAll();
  });

  test('every replica is a target, up, scraped with the token', T, async () => {
    const d = await waitFor(async () => {
      const t = await api(prom, 'targets', { state: 'active' });
      return t.activeTargets.length === 3 && t.activeTargets.every((x) => x.health === 'up') ? t : null;
    }, { timeout: 20000, interval: 200, what: 'three targets up' });
    assert.deepEqual(d.activeTargets.map((x) => x.labels.instance).sort(), Object.values(inst).sort());
    assert.ok(d.activeTargets.every((x) => x.labels.job === 'mcpwarden'));
    const up = await query(prom, 'up{job="mcpwarden"}');
    assert.deepEqual(up.map((s) => s.value), [1, 1, 1]);
  });

  test('SDK traffic: different tools and counts on each replica', T, async () => {
    for (const [name, calls] of Object.entries(PLAN)) {
      const sessions = {};
      let made = 0;
      for (const p of LISTS[name]) {
        sessions[p] = await connectClient(reps[name].base + p, { name: `prom-${name}` });
        // the listing: the contract check, and the live contract's schemas
        await withTimeout(sessions[p].client.listTools(), CALL_TIMEOUT, `tools/list on ${name}${p}`);
      }
      for (const [p, tool, args, count] of calls) {
        for (let i = 0; i < count; i++) {
          await withTimeout(sessions[p].client.callTool({ name: tool, arguments: args }).catch((e) => e),
            CALL_TIMEOUT, `${tool} on ${name}`);
          made++;
        }
      }
      for (const s of Object.values(sessions)) await s.close();
      // the replica counted every call before Prometheus is asked
      await waitFor(async () => (await replicaSum(reps[name], 'mcpwarden_tool_calls_total')).n === made,
        { timeout: 5000, what: `${made} tool calls on replica ${name}'s /metrics` });
    }
  });

  test('the fleet\'s tool calls per tool and outcome: sum over the replicas equals the calls made', T, async () => {
    // Synchronise on a scrape of every replica after the traffic.
    const after = Date.now() / 1000;
    await waitQuery(prom, 'min(timestamp(up{job="mcpwarden"}))', (v) => v.length === 1 && v[0].value > after,
      'a scrape of every replica after the traffic');
    scrapedAt = Date.now() / 1000;
    const fleet = await query(prom, 'sum by (tool, outcome) (mcpwarden_tool_calls_total{job="mcpwarden"})');
    assert.deepEqual(byLabels(fleet, ['tool', 'outcome']), expectedFleet());
    // the same data, replica by replica
    const per = await query(prom, 'sum by (instance, tool, outcome) (mcpwarden_tool_calls_total{job="mcpwarden"})');
    assert.deepEqual(byLabels(per, ['instance', 'tool', 'outcome']), expectedFleet(['instance', 'tool', 'outcome']));
    // and the replica's own /metrics agrees with what Prometheus stored
    const own = await replicaSum(reps.c, 'mcpwarden_tool_calls_total');
    assert.equal(metricValue(own.text, 'mcpwarden_tool_calls_total', { tool: 'search', outcome: 'rpc_error' }), 2);
  });

  test('the contract state per upstream across the replicas: billing fails on one', T, async () => {
    const want = {};
    for (const [name, paths] of Object.entries(LISTS)) {
      for (const p of paths) {
        want[`instance=${inst[name]},upstream=${p === '/mcp' ? 'everything' : 'billing'}`] = name === 'c' && p !== '/mcp' ? 0 : 1;
      }
    }
    await waitRulesAfter(prom, scrapedAt);
    const passed = await waitQuery(prom, 'mcpwarden_contract_passed{job="mcpwarden"}',
      (v) => v.length === Object.keys(want).length, 'every replica\'s contract state per upstream');
    assert.deepEqual(byLabels(passed, ['instance', 'upstream']), Object.fromEntries(Object.entries(want).sort()));
    const min = await waitQuery(prom, 'job:mcpwarden_contract_passed:min', (v) => v.length === 2, 'the recorded fleet contract state');
    assert.deepEqual(byLabels(min, ['job', 'upstream']), { 'job=mcpwarden,upstream=billing': 0, 'job=mcpwarden,upstream=everything': 1 });
    const failing = await waitQuery(prom, 'job:mcpwarden_contract_failing_replicas:count', (v) => v.length === 1, 'the failing-replica count');
    assert.equal(failing[0].metric.upstream, 'billing');
    assert.equal(failing[0].value, 1);
    const problems = await waitQuery(prom, 'job:mcpwarden_contract_problems:max{upstream="billing"}', (v) => v.length === 1, 'the most problems');
    assert.ok(problems[0].value >= 1, JSON.stringify(problems));
  });

  test('the recording rules\' series exist', T, async () => {
    await waitRulesAfter(prom, scrapedAt);
    const calls = await waitQuery(prom, 'job:mcpwarden_tool_calls:rate5m',
      (v) => v.length === Object.keys(expectedFleet()).length, 'a fleet call rate per tool and outcome');
    assert.deepEqual(Object.keys(byLabels(calls, ['tool', 'outcome'])), Object.keys(expectedFleet()));
    assert.ok(calls.every((s) => s.metric.job === 'mcpwarden' && !('instance' in s.metric) && s.value >= 0));
    const reqs = await waitQuery(prom, 'job:mcpwarden_requests:rate5m{method="tools/call"}', (v) => v.length >= 2, 'the request rate');
    assert.ok(reqs.every((s) => !('instance' in s.metric)));
    const findings = await waitQuery(prom, 'job:mcpwarden_validation_findings:rate5m', (v) => v.length >= 1, 'the findings rate');
    assert.deepEqual(findings.map((s) => [s.metric.upstream, s.metric.tool, s.metric.code]), [['billing', 'search', 'arguments-invalid']]);
    const ratio = await waitQuery(prom, 'instance:mcpwarden_upstream_errors:ratio_rate5m', (v) => v.length === 3, 'each replica\'s upstream error ratio');
    assert.ok(ratio.every((s) => s.value === 0), JSON.stringify(ratio));
    const fleetRatio = await waitQuery(prom, 'job:mcpwarden_upstream_errors:ratio_rate5m', (v) => v.length === 1, 'the fleet\'s upstream error ratio');
    assert.equal(fleetRatio[0].value, 0);
  });

  test('the contract alert is pending for billing; no other alert of ours is', T, async () => {
    const alerts = await waitFor(async () => {
      const a = (await api(prom, 'alerts')).alerts;
      return a.find((x) => x.labels.alertname === 'McpwardenContractFailing') ? a : null;
    }, { timeout: 20000, interval: 200, what: 'McpwardenContractFailing on /api/v1/alerts' });
    const cf = alerts.filter((x) => x.labels.alertname === 'McpwardenContractFailing');
    assert.equal(cf.length, 1);
    assert.equal(cf[0].labels.upstream, 'billing');
    assert.equal(cf[0].labels.severity, 'warning');
    assert.equal(cf[0].state, 'pending'); // for: 5m, the test does not wait for firing
    assert.match(cf[0].annotations.summary, /billing fails its tool-list contract/);
    assert.match(cf[0].annotations.description, /on 1 replica\(s\) of mcpwarden/);
    assert.equal(cf[0].annotations.runbook_url, 'docs/metrics.md#mcpwardencontractfailing');
    const pending = await query(prom, 'ALERTS{alertname="McpwardenContractFailing",alertstate="pending"}');
    assert.equal(pending.length, 1);
    const others = alerts.filter((x) => x.labels.alertname !== 'McpwardenContractFailing' &&
      x.labels.alertname !== 'McpwardenValidationFindingsRising');
    assert.deepEqual(others.map((x) => x.labels.alertname), []);
  });

  test('docs/metrics.md names every family a replica exports; the rules use only exported families', T, async () => {
    const docs = readFileSync(path.join(REPO_ROOT, 'docs/metrics.md'), 'utf8');
    const exported = new Set();
    for (const name of ['a', 'c']) {
      const { text } = await replicaSum(reps[name], 'mcpwarden_tool_calls_total');
      for (const m of text.matchAll(/^# TYPE (\S+) /gm)) exported.add(m[1]);
    }
    assert.ok(exported.size > 40, `only ${exported.size} families`);
    const undocumented = [...exported].filter((n) => !docs.includes(`\`${n}\``));
    assert.deepEqual(undocumented, [], 'families missing from docs/metrics.md');
    // Families the rules read but these replicas do not show: capture (off
    // here) and the OpenTelemetry exporter's (off here).
    const conditional = /^mcpwarden_(capture|otel)_/;
    const used = new Set(readFileSync(RULES, 'utf8').match(/(?<![\w:])mcpwarden_[a-z_]+/g));
    const unknown = [...used].filter((n) => !exported.has(n) && !conditional.test(n));
    assert.deepEqual(unknown, [], 'rules naming families no replica exports');
    for (const n of used) assert.ok(docs.includes(`\`${n}\``), `${n} (used by the rules) missing from docs/metrics.md`);
  });

  test('a replica stopped: its target goes down and McpwardenReplicaDown is pending for it', T, async () => {
    await stop(reps.b.proc);
    const a = await waitFor(async () => {
      const all = (await api(prom, 'alerts')).alerts;
      return all.find((x) => x.labels.alertname === 'McpwardenReplicaDown' && x.labels.instance === inst.b);
    }, { timeout: 20000, interval: 200, what: 'McpwardenReplicaDown on /api/v1/alerts' });
    assert.equal(a.labels.job, 'mcpwarden');
    assert.equal(a.labels.severity, 'critical');
    assert.equal(a.state, 'pending');
    const up = await query(prom, 'up{job="mcpwarden"}');
    assert.deepEqual(byLabels(up, ['instance']), Object.fromEntries(
      ['a', 'b', 'c'].map((n) => [`instance=${inst[n]}`, n === 'b' ? 0 : 1]).sort()));
  });
});
