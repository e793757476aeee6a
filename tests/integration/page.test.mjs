// The admin live page (issue 7) in a real browser: headless Chromium (Debian
// package `chromium`) driven by playwright-core, loading GET / from the
// admin endpoint of ./mcpwarden in front of server-everything. An SDK client
// makes calls; the page must show each new call within a second (from
// /calls/stream), filter by tool, method and outcome, open a call's full
// record on click, and fetch nothing from anywhere but the admin endpoint.
// One screenshot goes to /tmp/admin-page.png.

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from './lib/ports.mjs';
import { startEverything, stopAll } from './lib/procs.mjs';
import { connectClient, CALL_TIMEOUT } from './lib/mcp.mjs';
import { withTimeout } from './lib/util.mjs';
import { startAdminWarden } from './lib/admin-util.mjs';

const T = { timeout: 60000 };
const CHROMIUM = '/usr/bin/chromium';
const SHOT = '/tmp/admin-page.png';

let chromium;
try {
  ({ chromium } = await import('playwright-core'));
} catch {
  chromium = null;
}

async function launch() {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'mcpwarden-chromium-'));
  const ctx = await chromium.launchPersistentContext(dir, {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport: { width: 1400, height: 900 },
  });
  return { ctx, close: async () => { await ctx.close().catch(() => {}); rmSync(dir, { recursive: true, force: true }); } };
}

/** Watch a page: every request URL, console errors, page errors. */
function watch(page) {
  const w = { requests: [], errors: [] };
  page.on('request', (r) => w.requests.push(r.url()));
  page.on('console', (m) => { if (m.type() === 'error') w.errors.push(m.text()); });
  page.on('pageerror', (e) => w.errors.push(e.message));
  return w;
}

const rowFor = (page, text) => page.locator('#calls tbody tr', { hasText: text });

describe('admin page in headless Chromium', { skip: !chromium || !existsSync(CHROMIUM) ? 'playwright-core or /usr/bin/chromium missing' : false }, () => {
  let se;
  let w;
  let s;
  let browser;

  before(async () => {
    se = await startEverything(await freePort());
    w = await startAdminWarden({ upstreams: [{ name: 'everything', url: se.url }] });
    s = await connectClient(w.url, { name: 'page-it' });
    browser = await launch();
  }, T);

  after(async () => {
    await browser?.close();
    await s?.close();
    await stopAll();
  });

  test('live table, filters, a record on click, counters, nothing from outside', T, async () => {
    const page = await browser.ctx.newPage();
    const seen = watch(page);
    await page.goto(`${w.admin}/`);
    await page.waitForSelector('#live.on', { timeout: 5000 });
    // the backlog: the session's initialize is already there
    await rowFor(page, 'initialize').first().waitFor({ timeout: 3000 });

    // a new call appears within a second of its answer
    await s.client.callTool({ name: 'echo', arguments: { message: 'seen in chromium' } });
    const t0 = Date.now();
    const row = rowFor(page, 'seen in chromium');
    await row.waitFor({ timeout: 1000 });
    const lag = Date.now() - t0;
    assert.ok(lag <= 1000, `row after ${lag} ms`);
    assert.equal(await row.locator('.badge').textContent(), 'ok');

    await s.client.callTool({ name: 'get-sum', arguments: { a: 2, b: 3 } });
    await s.client.callTool({ name: 'no-such-tool', arguments: {} }).catch(() => {});
    await rowFor(page, 'no-such-tool').waitFor({ timeout: 1000 });

    // filter by tool
    await page.selectOption('#filter-tool', 'get-sum');
    const tools = await page.locator('#calls tbody tr td:nth-child(5)').allTextContents();
    assert.ok(tools.length >= 1 && tools.every((t) => t === 'get-sum'), JSON.stringify(tools));
    // by outcome
    await page.selectOption('#filter-tool', '');
    await page.selectOption('#filter-outcome', 'tool_error');
    const outs = await page.locator('#calls tbody tr').evaluateAll((trs) => trs.map((t) => t.dataset.outcome));
    assert.deepEqual(outs, ['tool_error']);
    // by method
    await page.selectOption('#filter-outcome', '');
    await page.selectOption('#filter-method', 'initialize');
    const methods = await page.locator('#calls tbody tr td:nth-child(4)').allTextContents();
    assert.deepEqual(methods, ['initialize']);
    // a live call that does not match the filter stays out; one that matches comes in
    await page.selectOption('#filter-method', 'tools/call');
    await page.selectOption('#filter-tool', 'echo');
    await s.client.callTool({ name: 'get-sum', arguments: { a: 7, b: 7 } });
    await s.client.callTool({ name: 'echo', arguments: { message: 'filtered in live' } });
    await rowFor(page, 'filtered in live').waitFor({ timeout: 1000 });
    const live = await page.locator('#calls tbody tr td:nth-child(5)').allTextContents();
    assert.ok(live.every((t) => t === 'echo'), JSON.stringify(live));
    await page.click('#filter-clear');

    // the full record on click
    await rowFor(page, 'seen in chromium').click();
    await page.waitForSelector('#detail.open');
    assert.match(await page.textContent('#detail-title'), /tools\/call · echo/);
    assert.match(await page.textContent('#detail-args'), /"message": "seen in chromium"/);
    assert.equal(await page.textContent('#detail-result'), 'Echo: seen in chromium');
    const dd = await page.locator('#detail dl').textContent();
    assert.match(dd, /http_status200/);
    assert.match(dd, new RegExp(`session${s.transport.sessionId}`));

    // counters at a glance (refreshed from /metrics every 2 s)
    await page.waitForFunction(() => Number(document.querySelector('[data-counter="calls"] .v')?.textContent) >= 5,
      null, { timeout: 5000 });
    assert.equal(await page.textContent('[data-counter="tool errors"] .v'), '1');

    await page.screenshot({ path: SHOT, fullPage: false });
    // same origin only, and a clean console (a CSP violation would show)
    const outside = seen.requests.filter((u) => !u.startsWith(w.admin + '/'));
    assert.deepEqual(outside, []);
    assert.deepEqual(seen.errors, []);
    await page.close();
  });

  test('with admin.token: the page asks for it, then works (fetch-based stream)', T, async () => {
    const TOKEN = 'page-token-123';
    const wt = await startAdminWarden({ upstreams: [{ name: 'everything', url: se.url }], admin: { token: TOKEN } });
    const st = await connectClient(wt.url, { name: 'page-token-it' });
    const page = await browser.ctx.newPage();
    const seen = watch(page);
    // without the token the page itself comes with a 401: it holds no data
    // and asks for the token, which every data request then carries
    const resp = await page.goto(`${wt.admin}/`);
    assert.equal(resp.status(), 401);
    await page.waitForSelector('#auth.show', { timeout: 5000 });
    await page.fill('#token', TOKEN);
    await page.click('#token-go');
    await page.waitForSelector('#live.on', { timeout: 5000 });
    await withTimeout(st.client.callTool({ name: 'echo', arguments: { message: 'token page call' } }), CALL_TIMEOUT, 'echo');
    await rowFor(page, 'token page call').waitFor({ timeout: 1000 });
    // the only console errors are the 401s before the token was given
    assert.deepEqual(seen.errors.filter((e) => !/401/.test(e)), []);
    await page.close();
    await st.close();
  });
});
