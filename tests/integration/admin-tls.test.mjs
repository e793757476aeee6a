// HTTPS on the admin endpoint (issue 9, point 1: "The admin endpoint can be
// TLS too"), with certificates made by the openssl command line.
//
//   admin.tls {cert_file, key_file}  a certificate of its own: /healthz,
//                                    /calls (JSON), /calls/stream (SSE) and
//                                    /metrics over HTTPS; plain HTTP to the
//                                    port fails at once and hurts nothing.
//   admin.tls "listener"             the client listener's certificate.
//   configuration errors             each named, start-up refused.
//
// Reloading the admin certificate on SIGHUP: tls-reload.test.mjs.

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { freePort } from './lib/ports.mjs';
import { runWarden, stopAll } from './lib/procs.mjs';
import { postJson, request } from './lib/http.mjs';
import { writeConfig } from './lib/conf.mjs';
import { makeCerts } from './lib/certs.mjs';
import { metricValue, startAdminWarden } from './lib/admin-util.mjs';
import { certInfo, httpsRequest, httpsStream, tlsConnect } from './lib/tls-client.mjs';
import { waitFor } from './lib/util.mjs';
import { startScriptedPeer } from './peers/scripted.mjs';

const T = { timeout: 30000 };
const ping = (id) => ({ jsonrpc: '2.0', id, method: 'ping' });

describe('admin endpoint over HTTPS', () => {
  let certs;
  let peer;
  let adminPair;
  let w;
  let base;

  before(async () => {
    certs = makeCerts();
    adminPair = certs.issue('admin', '/CN=mcpwarden-admin');
    peer = await startScriptedPeer({ mode: 'json', name: 'tls-admin' });
    w = await startAdminWarden({
      upstreams: [{ name: 'scripted', url: peer.url }],
      admin: { tls: { cert_file: adminPair.cert, key_file: adminPair.key } },
    });
    base = `https://127.0.0.1:${w.adminPort}`;
  }, T);

  after(async () => {
    await stopAll();
    await peer?.close();
    certs?.cleanup();
  });

  test('it presents its own certificate and says https in the log', T, async () => {
    const c = await tlsConnect(w.adminPort, certs.ca);
    try {
      assert.equal(c.cert.serial, certInfo(adminPair.cert).serial);
      assert.equal(c.cert.subject.CN, 'mcpwarden-admin');
    } finally {
      c.close();
    }
    assert.match(w.proc.stderr, new RegExp(`admin endpoint on https://127\\.0\\.0\\.1:${w.adminPort}/`));
    assert.match(w.proc.stderr, /admin: TLS certificate subject CN=mcpwarden-admin, serial 0x[0-9A-F]+, expires /);
  });

  test('/healthz, /calls (JSON) and /metrics over HTTPS', T, async () => {
    assert.equal((await httpsRequest(`${base}/healthz`, { ca: certs.ca })).status, 200);
    assert.equal((await postJson(w.url, ping('over-tls'))).status, 200);
    const calls = await waitFor(async () => {
      const r = await httpsRequest(`${base}/calls`, { ca: certs.ca });
      assert.equal(r.status, 200);
      assert.match(r.headers['content-type'], /^application\/json/);
      return r.json().calls.find((x) => x.id === 'over-tls' || JSON.stringify(x).includes('over-tls'));
    }, { timeout: 3000, what: 'the call on /calls' });
    assert.ok(calls);
    const m = await httpsRequest(`${base}/metrics`, { ca: certs.ca });
    assert.equal(m.status, 200);
    assert.match(m.headers['content-type'], /^text\/plain/);
    assert.ok(metricValue(m.text, 'mcpwarden_http_requests_total') >= 1, m.text.slice(0, 500));
  });

  test('/calls/stream over HTTPS delivers records as they happen', T, async () => {
    const st = await httpsStream(`${base}/calls/stream`, { ca: certs.ca });
    try {
      assert.equal(st.status, 200);
      assert.match(st.headers['content-type'], /^text\/event-stream/);
      await new Promise((r) => setTimeout(r, 100));
      assert.equal((await postJson(w.url, ping('streamed-tls'))).status, 200);
      await waitFor(() => st.sse.events.some((e) => e.data.includes('streamed-tls')),
        { timeout: 3000, what: 'the record on the stream' });
    } finally {
      st.abort();
    }
  });

  test('plain HTTP to the HTTPS port fails at once; HTTPS goes on working', T, async () => {
    const t0 = Date.now();
    await assert.rejects(request(`http://127.0.0.1:${w.adminPort}/healthz`, { timeout: 3000 }),
      (e) => !/timed out|timeout/i.test(e.message) || assert.fail(`plain HTTP hung: ${e.message}`));
    assert.ok(Date.now() - t0 < 2000, 'refused at once');
    assert.equal((await httpsRequest(`${base}/healthz`, { ca: certs.ca })).status, 200);
    assert.equal((await postJson(w.url, ping(3))).status, 200, 'the MCP listener is unaffected');
  });
});

describe('admin.tls "listener": the client listener\'s certificate', () => {
  let certs;
  let peer;

  before(async () => {
    certs = makeCerts();
    peer = await startScriptedPeer({ mode: 'json', name: 'tls-admin-listener' });
  });

  after(async () => {
    await stopAll();
    await peer?.close();
    certs?.cleanup();
  });

  test('both listeners present the same certificate', T, async () => {
    const w = await startAdminWarden({
      upstreams: [{ name: 'scripted', url: peer.url }],
      admin: { tls: 'listener' },
      extra: { tls: { cert_file: certs.server.cert, key_file: certs.server.key } },
    });
    const mcp = await tlsConnect(w.port, certs.ca);
    const adm = await tlsConnect(w.adminPort, certs.ca);
    assert.equal(adm.cert.serial, mcp.cert.serial);
    assert.equal(adm.cert.serial, certInfo(certs.server.cert).serial);
    mcp.close();
    adm.close();
    assert.equal((await httpsRequest(`https://127.0.0.1:${w.adminPort}/healthz`, { ca: certs.ca })).status, 200);
    assert.match(w.proc.stderr, /admin: TLS certificate .* \(the client listener's\)/);
  });

  const startFails = async (admin, extra, re) => {
    const port = await freePort();
    const conf = writeConfig({
      listen: `127.0.0.1:${port}`, upstreams: [{ url: peer.url }],
      admin: { listen: `127.0.0.1:${await freePort()}`, ...admin }, ...extra,
    });
    const r = await runWarden(['-c', conf]);
    assert.notEqual(r.code, 0, 'start-up must fail');
    assert.match(r.stderr, re);
  };

  test('"listener" without TLS on the client listener is an error naming the key', T, async () => {
    await startFails({ tls: 'listener' }, {}, /\$\.admin\.tls: "listener" needs TLS on the client listener/);
  });

  test('a missing key file, an unknown key, a key that does not match: errors naming them', T, async () => {
    await startFails({ tls: { cert_file: certs.server.cert } }, {}, /\$\.admin\.tls: cert_file and key_file are both required/);
    await startFails({ tls: { cert_file: certs.server.cert, key_file: certs.server.key, ca_file: certs.ca } }, {},
      /\$\.admin\.tls\.ca_file: unknown key/);
    await startFails({ tls: { cert_file: certs.server.cert, key_file: certs.client.key } }, {},
      /\$\.admin\.tls: TLS key does not match the certificate/);
    await startFails({ tls: true }, {}, /\$\.admin\.tls: must be/);
  });
});
