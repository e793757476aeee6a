// The live contract where people look (issue 19, item 5): the real
// ./mcpwarden (validation in its default, report) in front of
// server-everything; the official SDK client (1.x) lists the tools, then
// calls them with arguments off their inputSchema, a tool that is not
// listed, and valid calls. Asserted: each finding on its record and the
// ?finding= filter of /calls; the per upstream x tool x code series and the
// process counters on /metrics (checked by promtool); /contract's "live"
// member per tool; and the admin page in headless Chromium showing a call's
// findings when it is opened and the tools with the most violations.
// A second suite puts an SDK server of our own (the low-level Server, which
// does not check its own results) behind it, one tool answering on its
// outputSchema, off it, or without structuredContent: the result findings
// on records, /metrics and /contract.

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { ListToolsRequestSchema, CallToolRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { freePort } from './lib/ports.mjs';
import { startEverything, stopAll } from './lib/procs.mjs';
import { connectClient, CALL_TIMEOUT } from './lib/mcp.mjs';
import { withTimeout } from './lib/util.mjs';
import {
  startAdminWarden, adminGet, getCalls, waitForCalls, promtoolCheck, metricValue,
} from './lib/admin-util.mjs';

const T = { timeout: 60000 };
const CHROMIUM = '/usr/bin/chromium';
const UP = 'everything';

const call = (s, name, args) =>
  withTimeout(s.client.callTool({ name, arguments: args }), CALL_TIMEOUT, name).catch((e) => ({ error: e }));
const codes = (r) => (r.findings ?? []).map((f) => f.code).sort();

describe('live contract on the admin endpoint: records, /metrics, /contract, the page', () => {
  let se;
  let w;
  let s;

  before(async () => {
    se = await startEverything(await freePort());
    w = await startAdminWarden({ upstreams: [{ name: UP, url: se.url }] });
    s = await connectClient(w.url, { name: 'admin-validate-it' });
    // the hook validates against what the upstream last listed
    await withTimeout(s.client.listTools(), CALL_TIMEOUT, 'tools/list');
    await call(s, 'get-sum', { a: 'two', b: 3 });               // a: not a number
    await call(s, 'echo', {});                                  // message: required
    await call(s, 'get-structured-content', { location: 'Paris' }); // not in the enum
    await call(s, 'echo', { message: 'a valid call' });
    await call(s, 'get-structured-content', { location: 'Chicago' }); // result checked
    await call(s, 'no-such-tool', {});                          // not listed
    await waitForCalls(w.admin, (calls) => calls.filter((r) => r.method === 'tools/call').length >= 6,
      { what: 'the six tools/call records' });
  }, T);

  after(async () => {
    await s?.close();
    await stopAll();
  });

  test('each finding is on its call record, with pointers and a message', T, async () => {
    const calls = (await getCalls(w.admin, 'method=tools/call&limit=100')).calls;
    const sum = calls.find((r) => r.tool === 'get-sum');
    assert.deepEqual(codes(sum), ['arguments-invalid']);
    const f = sum.findings[0];
    assert.equal(f.kind, 'arguments');
    assert.equal(f.instance, '/a');
    assert.match(f.schema, /^\/properties\/a/);
    assert.equal(f.keyword, 'type');
    assert.equal(typeof f.message, 'string');
    const bare = calls.find((r) => r.tool === 'echo' && !/a valid call/.test(r.arguments ?? ''));
    assert.deepEqual(codes(bare), ['arguments-invalid']);
    assert.equal(bare.findings[0].keyword, 'required');
    const valid = calls.find((r) => r.tool === 'echo' && /a valid call/.test(r.arguments ?? ''));
    assert.deepEqual(codes(valid), []);
    const chicago = calls.find((r) => r.tool === 'get-structured-content' && /Chicago/.test(r.arguments ?? ''));
    assert.deepEqual(codes(chicago), []);
    assert.deepEqual(codes(calls.find((r) => r.tool === 'no-such-tool')), ['tool-unknown']);
  });

  test('/calls?finding= keeps the records holding that code, and refuses what is no code', T, async () => {
    const inv = (await getCalls(w.admin, 'finding=arguments-invalid')).calls;
    assert.deepEqual(inv.map((r) => r.tool).sort(), ['echo', 'get-structured-content', 'get-sum']);
    assert.ok(inv.every((r) => codes(r).includes('arguments-invalid')));
    const unknown = (await getCalls(w.admin, 'finding=tool-unknown&tool=no-such-tool')).calls;
    assert.equal(unknown.length, 1);
    assert.equal((await getCalls(w.admin, 'finding=result-invalid')).count, 0);
    const bad = await adminGet(w.admin, '/calls?finding=%22x%22');
    assert.equal(bad.status, 400);
    assert.match(bad.json().error, /^finding:/);
    // the stream takes no finding filter (its records are matched on keys)
    assert.equal((await adminGet(w.admin, '/calls/stream?finding=tool-unknown')).status, 400);
  });

  test('/metrics: findings per upstream x tool x code and the process counters, valid for promtool', T, async () => {
    const text = (await adminGet(w.admin, '/metrics')).text;
    const pc = await promtoolCheck(text);
    assert.equal(pc.code, 0, pc.stdout + pc.stderr);
    const F = 'mcpwarden_validation_findings_total';
    assert.equal(metricValue(text, F, { upstream: UP, tool: 'get-sum', code: 'arguments-invalid' }), 1);
    assert.equal(metricValue(text, F, { upstream: UP, tool: 'echo', code: 'arguments-invalid' }), 1);
    assert.equal(metricValue(text, F, { upstream: UP, tool: 'get-structured-content', code: 'arguments-invalid' }), 1);
    assert.equal(metricValue(text, F, { upstream: UP, tool: 'no-such-tool', code: 'tool-unknown' }), 1);
    assert.equal(metricValue(text, F, { upstream: UP, tool: 'echo', code: 'tool-unknown' }), undefined);
    assert.ok(metricValue(text, 'mcpwarden_validation_calls_checked_total') >= 5);
    assert.ok(metricValue(text, 'mcpwarden_validation_results_checked_total') >= 1);
    assert.ok(metricValue(text, 'mcpwarden_validation_schemas_compiled_total') >= 1);
    assert.equal(metricValue(text, 'mcpwarden_validation_schema_compile_failures_total'), 0);
    assert.notEqual(metricValue(text, 'mcpwarden_validation_log_lines_suppressed_total'), undefined);
    assert.equal(metricValue(text, 'mcpwarden_validation_counts_left_out'), 0);
  });

  test('/contract: the per-tool "live" summary beside the report', T, async () => {
    const j = (await adminGet(w.admin, '/contract')).json();
    const u = j.upstreams.find((x) => x.upstream === UP);
    assert.ok('report' in u);
    const live = u.live;
    assert.equal(typeof live, 'object');
    assert.equal(live['get-sum'].calls, 1);
    assert.equal(live['get-sum'].arguments_invalid, 1);
    assert.equal(live['get-sum'].last.code, 'arguments-invalid');
    assert.equal(live['get-sum'].last.instance, '/a');
    assert.equal(live.echo.calls, 2);
    assert.equal(live.echo.arguments_invalid, 1);
    const gsc = live['get-structured-content'];
    assert.equal(gsc.calls, 2);
    assert.ok(gsc.results >= 1);
    assert.equal(gsc.results_invalid, 0);
  });

  test('the page: a call\'s findings when opened, the tools with the most violations', T, async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'mcpwarden-chromium-'));
    const ctx = await chromium.launchPersistentContext(dir, {
      executablePath: CHROMIUM,
      headless: true,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run',
        '--disable-background-networking', '--disable-component-update', '--disable-sync'],
      viewport: { width: 1400, height: 900 },
    });
    try {
      const page = await ctx.newPage();
      const errors = [];
      page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
      page.on('pageerror', (e) => errors.push(e.message));
      await page.goto(`${w.admin}/`);
      await page.waitForSelector('#live.on', { timeout: 5000 });
      const row = page.locator('#calls tbody tr', { hasText: '"two"' });
      await row.waitFor({ timeout: 3000 });
      assert.equal(await row.locator('td.fcount').textContent(), '1');
      await row.click();
      await page.waitForSelector('#detail.open');
      const frow = page.locator('#detail-findings tbody tr');
      assert.equal(await frow.count(), 1);
      const cells = await frow.locator('td').allTextContents();
      assert.equal(cells[0], 'arguments-invalid');
      assert.equal(cells[1], 'arguments');
      assert.equal(cells[2], '/a');
      assert.equal(cells[4], 'type');
      // a valid call opens without a findings table
      await page.locator('#calls tbody tr', { hasText: 'a valid call' }).click();
      await page.waitForFunction(() => /a valid call/.test(document.querySelector('#detail-args')?.textContent ?? ''));
      assert.equal(await page.locator('#detail-findings').count(), 0);
      // the finding filter: only the calls holding that code
      await page.click('#detail-close');
      await page.selectOption('#filter-finding', 'tool-unknown');
      const only = await page.locator('#calls tbody tr td:nth-child(5)').allTextContents();
      assert.deepEqual(only, ['no-such-tool']);
      await page.click('#filter-clear');
      // worst first, from /contract's live member
      await page.waitForSelector('#violations tbody tr', { timeout: 7000 });
      const tools = await page.locator('#violations tbody tr').evaluateAll((trs) => trs.map((t) => t.dataset.tool));
      for (const t of ['echo', 'get-structured-content', 'get-sum']) assert.ok(tools.includes(t), JSON.stringify(tools));
      // the three with invalid arguments come before the unknown tool (no invalid count)
      if (tools.includes('no-such-tool')) assert.equal(tools.indexOf('no-such-tool'), 3, JSON.stringify(tools));
      const sumRow = await page.locator('#violations tbody tr[data-tool="get-sum"] td').allTextContents();
      assert.equal(sumRow[0], UP);
      assert.equal(sumRow[3], '1');
      assert.match(sumRow[6], /arguments-invalid/);
      // the findings card (from /metrics)
      await page.waitForFunction(() => Number(document.querySelector('[data-counter="findings"] .v')?.textContent) >= 4,
        null, { timeout: 5000 });
      // no stray text above a record without findings
      assert.equal(await page.locator('#detail-body > h3').first().textContent(), 'arguments');
      await row.click();
      await page.waitForSelector('#detail-findings');
      await page.screenshot({ path: '/tmp/admin-validate-page.png' });
      assert.deepEqual(errors, []);
    } finally {
      await ctx.close().catch(() => {});
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

// ---- results off their outputSchema ---------------------------------------

const FORECAST = {
  name: 'forecast',
  description: 'Temperature of a city; city "drift" answers off the schema, "none" without structuredContent.',
  inputSchema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  outputSchema: {
    type: 'object',
    properties: { temp: { type: 'number' }, city: { type: 'string' } },
    required: ['temp'],
  },
};

function forecast(city) {
  if (city === 'none') return { content: [{ type: 'text', text: 'no structure' }] };
  const structuredContent = { city, temp: city === 'drift' ? 'warm' : 21 };
  return { content: [{ type: 'text', text: JSON.stringify(structuredContent) }], structuredContent };
}

/** A stateless Streamable HTTP server on the official SDK 1.x (one Server per request). */
async function startDriftServer() {
  const port = await freePort();
  const srv = http.createServer(async (req, res) => {
    let body = '';
    for await (const c of req) body += c;
    const server = new Server({ name: 'drift-peer', version: '1.0.0' }, { capabilities: { tools: {} } });
    server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: [FORECAST] }));
    server.setRequestHandler(CallToolRequestSchema, async (r) => forecast(r.params.arguments?.city));
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => { transport.close(); server.close(); });
    await server.connect(transport);
    await transport.handleRequest(req, res, body ? JSON.parse(body) : undefined);
  });
  await new Promise((resolve) => srv.listen(port, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${port}/mcp`, close: () => new Promise((resolve) => srv.close(resolve)) };
}

describe('live contract on results: findings on records, /metrics, /contract', () => {
  let peer;
  let w;
  let s;

  before(async () => {
    peer = await startDriftServer();
    w = await startAdminWarden({ upstreams: [{ name: 'drift', url: peer.url }] });
    s = await connectClient(w.url, { name: 'admin-validate-results-it' });
    await withTimeout(s.client.listTools(), CALL_TIMEOUT, 'tools/list');
    // the SDK client checks results itself and throws on the two bad ones:
    // report mode forwarded them unchanged
    for (const city of ['Oslo', 'drift', 'none']) await call(s, 'forecast', { city });
    await waitForCalls(w.admin, (calls) => calls.filter((r) => r.tool === 'forecast').length >= 3,
      { what: 'the three forecast records' });
  }, T);

  after(async () => {
    await s?.close();
    await stopAll();
    await peer?.close();
  });

  test('records: result-invalid with its pointers, structured-content-missing, none on a conforming result', T, async () => {
    const calls = (await getCalls(w.admin, 'tool=forecast')).calls;
    const by = (city) => calls.find((r) => (r.arguments ?? '').includes(`"${city}"`));
    assert.deepEqual(codes(by('Oslo')), []);
    assert.deepEqual(codes(by('drift')), ['result-invalid']);
    const f = by('drift').findings[0];
    assert.equal(f.kind, 'result');
    assert.equal(f.instance, '/temp');
    assert.match(f.schema, /^\/properties\/temp/);
    assert.equal(f.keyword, 'type');
    assert.deepEqual(codes(by('none')), ['structured-content-missing']);
    assert.equal((await getCalls(w.admin, 'finding=result-invalid')).count, 1);
    assert.equal((await getCalls(w.admin, 'finding=structured-content-missing')).count, 1);
  });

  test('/metrics and /contract count the results', T, async () => {
    const text = (await adminGet(w.admin, '/metrics')).text;
    const pc = await promtoolCheck(text);
    assert.equal(pc.code, 0, pc.stdout + pc.stderr);
    const F = 'mcpwarden_validation_findings_total';
    assert.equal(metricValue(text, F, { upstream: 'drift', tool: 'forecast', code: 'result-invalid' }), 1);
    assert.equal(metricValue(text, F, { upstream: 'drift', tool: 'forecast', code: 'structured-content-missing' }), 1);
    assert.equal(metricValue(text, F, { upstream: 'drift', tool: 'forecast', code: 'arguments-invalid' }), undefined);
    assert.ok(metricValue(text, 'mcpwarden_validation_results_checked_total') >= 3);
    const live = (await adminGet(w.admin, '/contract')).json().upstreams[0].live;
    assert.equal(live.forecast.calls, 3);
    assert.equal(live.forecast.arguments_invalid, 0);
    assert.equal(live.forecast.results, 3);
    assert.equal(live.forecast.results_invalid, 2);
    assert.equal(live.forecast.last.kind, 'result');
  });
});
