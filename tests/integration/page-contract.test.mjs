// The admin page's live baselines (issue 21, item 3) in headless Chromium
// (Debian package `chromium`, driven by playwright-core, as page.test.mjs):
// ./mcpwarden with an admin token in front of the contract peer, whose
// listing now breaks its baseline. The page asks for the token, shows the
// diff per upstream (breaking changes first), and its accept button makes
// the listing the baseline: the page shows the answer, the diff empties,
// the file holds the listing and /readyz (ready_requires_contract) turns
// 200. An upstream that never listed has its button disabled.

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, existsSync, writeFileSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { stopAll } from './lib/procs.mjs';
import { postJson } from './lib/http.mjs';
import { startAdminWarden, adminGet } from './lib/admin-util.mjs';
import { startContractPeer, GOOD } from './peers/contract-peer.mjs';

const T = { timeout: 60000 };
const CHROMIUM = '/usr/bin/chromium';
const SHOT = '/tmp/admin-page-contract.png';
const TOKEN = 'page-contract-token-42';
const PROTO = '2025-06-18';

let chromium;
try {
  ({ chromium } = await import('playwright-core'));
} catch {
  chromium = null;
}

const tmp = mkdtempSync(path.join(os.tmpdir(), 'mcpwarden-page-contract-'));
process.once('exit', () => rmSync(tmp, { recursive: true, force: true }));

async function launch() {
  const dir = mkdtempSync(path.join(tmp, 'chromium-'));
  const ctx = await chromium.launchPersistentContext(dir, {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    viewport: { width: 1400, height: 1000 },
  });
  return { ctx, close: async () => { await ctx.close().catch(() => {}); } };
}

/** initialize + tools/list through the proxy: the tools/list reply. */
async function listOnce(url) {
  const init = await postJson(url, {
    jsonrpc: '2.0', id: 1, method: 'initialize',
    params: { protocolVersion: PROTO, capabilities: {}, clientInfo: { name: 'page-contract', version: '0' } },
  });
  const h = { 'mcp-session-id': init.headers['mcp-session-id'], 'mcp-protocol-version': PROTO };
  const r = await postJson(url, { jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} }, { headers: h });
  return r.json();
}

after(async () => { await stopAll(); });

describe('admin page: diff view and accept button in headless Chromium', { skip: !chromium || !existsSync(CHROMIUM) ? 'playwright-core or /usr/bin/chromium missing' : false }, () => {
  let peer;
  let w;
  let browser;
  const BASE = path.join(tmp, 'base.json');
  const V2 = [GOOD('search'), GOOD('store')];

  before(async () => {
    writeFileSync(BASE, JSON.stringify({ tools: [GOOD('search'), GOOD('fetch')] }));
    peer = await startContractPeer({ listings: { live: { pages: [V2] } } });
    w = await startAdminWarden({
      upstreams: [
        { name: 'live', path: '/live/mcp', url: peer.url('live', 'json'), contract: { mode: 'fail', baseline: BASE } },
        { name: 'idle', path: '/idle/mcp', url: peer.url('clean', 'json') },
      ],
      admin: { token: TOKEN, ready_requires_contract: true },
    });
    const r = await listOnce(`${w.base}/live/mcp`);
    assert.equal(r.error?.code, -32003, 'the listing breaks its baseline');
    browser = await launch();
  }, T);

  after(async () => {
    await browser?.close();
    await peer?.close();
  });

  test('asks for the token, shows the diff breaking first, accepts, shows the answer', T, async () => {
    const page = await browser.ctx.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${w.admin}/`);
    // the token form first (every data request gets 401 without it)
    await page.waitForSelector('#auth.show', { timeout: 5000 });
    await page.fill('#token', TOKEN);
    await page.click('#token-go');

    const live = page.locator('.diff[data-upstream="live"]');
    await live.waitFor({ timeout: 5000 });
    assert.equal(await live.locator('.diff-breaking').textContent(), '1');
    assert.equal(await live.locator('.diff-gate').textContent(), 'failing');
    const kinds = await live.locator('tr[data-kind]').evaluateAll((rows) => rows.map((r) => r.dataset.kind));
    assert.deepEqual(kinds, ['breaking', 'notice'], 'breaking first');
    const codes = await live.locator('tr[data-kind]').evaluateAll((rows) => rows.map((r) => r.dataset.code));
    assert.deepEqual(codes, ['tool-removed', 'tool-added']);
    // the idle upstream never listed: nothing to accept
    const idle = page.locator('.diff[data-upstream="idle"] button.accept');
    await idle.waitFor({ timeout: 5000 });
    assert.equal(await idle.isDisabled(), true);

    await live.locator('button.accept').click();
    await page.locator('.diff[data-upstream="live"] .accept-result.ok').waitFor({ timeout: 5000 });
    const res = await page.locator('.diff[data-upstream="live"] .accept-result').textContent();
    assert.match(res, /accepted 2 tools · written to .*base\.json/);
    // the diff view reloads from /contract: nothing left to review
    await page.waitForFunction(() => document.querySelector('.diff[data-upstream="live"] .diff-gate')?.textContent === 'passing', null, { timeout: 5000 });
    assert.equal(await page.locator('.diff[data-upstream="live"] .diff-breaking').textContent(), '0');
    assert.equal(await page.locator('.diff[data-upstream="live"] tr[data-kind]').count(), 0);
    assert.match(await page.locator('.diff[data-upstream="live"]').textContent(), /last accepted .* by 127\.0\.0\.1:\d+ \(admin token\)/);
    await page.screenshot({ path: SHOT, fullPage: true });

    assert.deepEqual(JSON.parse(readFileSync(BASE, 'utf8')), { tools: V2 });
    const rz = await adminGet(w.admin, '/readyz', { headers: { authorization: `Bearer ${TOKEN}` } });
    assert.equal(rz.status, 200, rz.text);
    assert.deepEqual(errors, []);
  });
});
