// Certificates re-read on SIGHUP (issue 9, point 1: "reload on SIGHUP"),
// for the client listener and the admin endpoint, with certificates made by
// the openssl command line (each with its own serial and subject):
//
//   start with A, replace the files with B, SIGHUP: new connections get B,
//   a connection opened before keeps working (on A); the log names B.
//   the admin endpoint's own certificate is re-read the same way.
//   a broken new certificate (its key does not match) is refused, the old
//   one kept, and the error logged; a reload is whole or nothing: a good
//   client certificate is not taken when the admin one is broken.
//   admin.tls "listener" follows the client listener's reload.

import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { stop, stopAll } from './lib/procs.mjs';
import { rawRequestBytes } from './lib/http.mjs';
import { makeCerts } from './lib/certs.mjs';
import { startAdminWarden } from './lib/admin-util.mjs';
import { certInfo, httpsRequest, tlsConnect } from './lib/tls-client.mjs';
import { waitFor } from './lib/util.mjs';
import { startScriptedPeer } from './peers/scripted.mjs';

const T = { timeout: 30000 };

function install(pair, files) {
  fs.copyFileSync(pair.cert, files.cert);
  fs.copyFileSync(pair.key, files.key);
}

/** SIGHUP, then wait for the reload's verdict in the log (the n-th one). */
async function sighup(w, n) {
  const verdicts = () => w.proc.stderr.split('\n')
    .filter((l) => /SIGHUP: configuration reloaded|still running the old configuration/.test(l));
  const before = verdicts().length;
  assert.equal(before, n - 1, 'reload verdicts so far');
  w.proc.child.kill('SIGHUP');
  await waitFor(() => verdicts().length === n, { timeout: 3000, what: `reload ${n} to finish` });
  return verdicts()[n - 1];
}

/** The serial a new TLS connection to port is shown. */
async function servedSerial(port, ca) {
  const c = await tlsConnect(port, ca);
  c.close();
  return c.cert.serial;
}

/** One ping on an open TLS connection (keep-alive): its status. */
async function pingOn(c, port, id) {
  const body = JSON.stringify({ jsonrpc: '2.0', id, method: 'ping' });
  await c.write(rawRequestBytes('POST /mcp HTTP/1.1', [['Host', `127.0.0.1:${port}`],
    ['Content-Type', 'application/json'], ['Content-Length', String(Buffer.byteLength(body))]], body));
  const res = await c.readResponse({ timeout: 3000 });
  assert.equal(JSON.parse(res.text).id, id);
  return res.status;
}

describe('SIGHUP re-reads the certificates', () => {
  let certs;
  let peer;
  let w;
  let A;
  let B;
  let D;
  let admA;
  let admB;
  let live;
  let adm;

  before(async () => {
    certs = makeCerts();
    A = certs.issue('cert-a', '/CN=cert-A');
    B = certs.issue('cert-b', '/CN=cert-B');
    D = certs.issue('cert-d', '/CN=cert-D');
    admA = certs.issue('adm-a', '/CN=admin-A');
    admB = certs.issue('adm-b', '/CN=admin-B');
    live = { cert: path.join(certs.dir, 'live.pem'), key: path.join(certs.dir, 'live.key') };
    adm = { cert: path.join(certs.dir, 'adm.pem'), key: path.join(certs.dir, 'adm.key') };
    install(A, live);
    install(admA, adm);
    peer = await startScriptedPeer({ mode: 'json', name: 'reload' });
    w = await startAdminWarden({
      upstreams: [{ name: 'scripted', url: peer.url }],
      admin: { tls: { cert_file: adm.cert, key_file: adm.key } },
      extra: { tls: { cert_file: live.cert, key_file: live.key } },
    });
  }, T);

  after(async () => {
    await stopAll();
    await peer?.close();
    certs?.cleanup();
  });

  test('A, then B after SIGHUP for new connections; a connection opened before keeps working', T, async () => {
    const a = certInfo(A.cert);
    const b = certInfo(B.cert);
    assert.notEqual(a.serial, b.serial);
    assert.match(w.proc.stderr, new RegExp(`client listener: TLS certificate subject CN=cert-A, serial 0x${a.serial}`));

    const old = await tlsConnect(w.port, certs.ca);
    assert.equal(old.cert.serial, a.serial);
    assert.equal(old.cert.subject.CN, 'cert-A');
    assert.equal(await pingOn(old, w.port, 1), 200);

    install(B, live);
    const verdict = await sighup(w, 1);
    assert.match(verdict, /configuration reloaded/);
    assert.match(w.proc.stderr, new RegExp(`SIGHUP: new client connections get TLS certificate subject CN=cert-B, serial 0x${b.serial}`));

    const fresh = await tlsConnect(w.port, certs.ca);
    assert.equal(fresh.cert.serial, b.serial);
    assert.equal(fresh.cert.subject.CN, 'cert-B');
    assert.equal(await pingOn(fresh, w.port, 2), 200);
    // The connection from before: same TLS session, still served.
    assert.equal(await pingOn(old, w.port, 3), 200);
    assert.equal(old.sock.getPeerCertificate().serialNumber.toUpperCase(), a.serial);
    old.close();
    fresh.close();
  });

  test('the admin endpoint\'s own certificate is re-read too', T, async () => {
    const before = await tlsConnect(w.adminPort, certs.ca);
    assert.equal(before.cert.serial, certInfo(admA.cert).serial);
    install(admB, adm);
    assert.match(await sighup(w, 2), /configuration reloaded/);
    const b = certInfo(admB.cert);
    assert.match(w.proc.stderr, new RegExp(`admin: new connections get TLS certificate subject CN=admin-B, serial 0x${b.serial}`));
    const r = await httpsRequest(`https://127.0.0.1:${w.adminPort}/healthz`, { ca: certs.ca });
    assert.equal(r.status, 200);
    assert.equal(r.cert.serial, b.serial);
    // Unchanged files: the client listener still serves B.
    assert.equal(await servedSerial(w.port, certs.ca), certInfo(B.cert).serial);
    before.close();
  });

  test('a new certificate whose key does not match is refused; the old one stays; logged', T, async () => {
    fs.copyFileSync(D.cert, live.cert); // D's certificate, B's key
    const verdict = await sighup(w, 3);
    assert.match(verdict, /SIGHUP: TLS key does not match the certificate: .*live\.key.*; still running the old configuration/);
    assert.match(verdict, /error/i);
    const c = await tlsConnect(w.port, certs.ca);
    assert.equal(c.cert.serial, certInfo(B.cert).serial, 'still B');
    assert.equal(await pingOn(c, w.port, 4), 200);
    c.close();
  });

  test('a broken admin certificate refuses the whole reload: a good client one is not taken either', T, async () => {
    install(D, live);                     // a good new client certificate
    fs.copyFileSync(admA.cert, adm.cert); // admin: A's certificate, B's key
    const verdict = await sighup(w, 4);
    assert.match(verdict, /SIGHUP: admin\.tls: TLS key does not match the certificate: .*adm\.key.*; still running the old configuration/);
    assert.equal(await servedSerial(w.port, certs.ca), certInfo(B.cert).serial, 'client: still B');
    assert.equal(await servedSerial(w.adminPort, certs.ca), certInfo(admB.cert).serial, 'admin: still B');

    install(admB, adm); // mended: both apply
    assert.match(await sighup(w, 5), /configuration reloaded/);
    assert.equal(await servedSerial(w.port, certs.ca), certInfo(D.cert).serial, 'client: now D');
  });

  test('mcpwarden exits 0', T, async () => {
    const st = await stop(w.proc);
    assert.equal(st.code, 0, w.proc.stderr.slice(-2000));
  });
});

describe('SIGHUP with admin.tls "listener"', () => {
  let certs;
  let peer;

  before(async () => {
    certs = makeCerts();
    peer = await startScriptedPeer({ mode: 'json', name: 'reload-listener' });
  });

  after(async () => {
    await stopAll();
    await peer?.close();
    certs?.cleanup();
  });

  test('the admin endpoint follows the client listener\'s new certificate', T, async () => {
    const A = certs.issue('l-a', '/CN=listener-A');
    const B = certs.issue('l-b', '/CN=listener-B');
    const live = { cert: path.join(certs.dir, 'l-live.pem'), key: path.join(certs.dir, 'l-live.key') };
    install(A, live);
    const w = await startAdminWarden({
      upstreams: [{ name: 'scripted', url: peer.url }],
      admin: { tls: 'listener' },
      extra: { tls: { cert_file: live.cert, key_file: live.key } },
    });
    assert.equal(await servedSerial(w.adminPort, certs.ca), certInfo(A.cert).serial);
    install(B, live);
    assert.match(await sighup(w, 1), /configuration reloaded/);
    assert.equal(await servedSerial(w.adminPort, certs.ca), certInfo(B.cert).serial);
    assert.equal(await servedSerial(w.port, certs.ca), certInfo(B.cert).serial);
  });
});
