// TLS clients for the HTTPS suites (admin-tls.test.mjs, tls-reload.test.mjs):
//
//   tlsConnect(port, ca)         a TLS connection (SNI localhost, verified
//                                against ca) wrapped in lib/http.mjs's
//                                RawConn; .cert is the certificate the
//                                server presented ({subject, serial}).
//   httpsRequest(url, opts)      node:https, body buffered, no pooling:
//                                {status, headers, text, json(), cert}.
//   httpsStream(url, opts)       node:https, body consumed as it arrives
//                                through an SseParser: {status, headers,
//                                sse, abort()}.
//   certInfo(file)               subject and serial of a PEM file, as the
//                                openssl command line reads it.

import https from 'node:https';
import tls from 'node:tls';
import fs from 'node:fs';
import { execFileSync } from 'node:child_process';
import { RawConn, SseParser } from './http.mjs';
import { withTimeout } from './util.mjs';

const peerCert = (sock) => {
  const c = sock.getPeerCertificate();
  return { subject: c.subject, serial: c.serialNumber?.toUpperCase() };
};

export function tlsConnect(port, ca, { timeout = 3000 } = {}) {
  return withTimeout(new Promise((resolve, reject) => {
    const sock = tls.connect({ host: '127.0.0.1', port, ca: fs.readFileSync(ca), servername: 'localhost' });
    sock.once('secureConnect', () => {
      sock.removeListener('error', reject);
      const c = new RawConn(sock);
      c.cert = peerCert(sock);
      resolve(c);
    });
    sock.once('error', reject);
  }), timeout, `TLS connect to 127.0.0.1:${port}`);
}

export function httpsRequest(url, { ca, method = 'GET', headers = {}, body, timeout = 5000 } = {}) {
  return withTimeout(new Promise((resolve, reject) => {
    const req = https.request(url, { method, headers, ca: fs.readFileSync(ca), servername: 'localhost', agent: false }, (res) => {
      const cert = peerCert(res.socket);
      const parts = [];
      res.on('data', (d) => parts.push(d));
      res.on('end', () => {
        const text = Buffer.concat(parts).toString('utf8');
        resolve({ status: res.statusCode, headers: res.headers, text, json: () => JSON.parse(text), cert });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  }), timeout, `${method} ${url}`);
}

export function httpsStream(url, { ca, headers = {}, timeout = 5000 } = {}) {
  return withTimeout(new Promise((resolve, reject) => {
    const req = https.request(url, { headers, ca: fs.readFileSync(ca), servername: 'localhost', agent: false }, (res) => {
      const st = { status: res.statusCode, headers: res.headers, sse: new SseParser(), abort: () => req.destroy() };
      res.on('data', (d) => st.sse.feed(d.toString('utf8')));
      res.on('error', () => {});
      resolve(st);
    });
    req.on('error', reject);
    req.end();
  }), timeout, `GET ${url}`);
}

export function certInfo(file) {
  const out = execFileSync('openssl', ['x509', '-in', file, '-noout', '-serial', '-subject'], { encoding: 'utf8' });
  return {
    serial: /serial=([0-9A-Fa-f]+)/.exec(out)[1].toUpperCase(),
    subject: /subject=(.*)/.exec(out)[1].trim(),
  };
}
