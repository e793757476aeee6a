// Test certificates made with the openssl command line, fresh per run: a CA,
// a server certificate for localhost/127.0.0.1, one for another host, an
// expired one, and a client certificate for mTLS; issue() makes more.

import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

function ossl(dir, args) {
  execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
}

function leaf(dir, name, subj, san, { start, end } = {}) {
  ossl(dir, ['req', '-newkey', 'rsa:2048', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.csr`,
    '-subj', subj, ...(san ? ['-addext', `subjectAltName=${san}`] : [])]);
  ossl(dir, ['ca', '-batch', '-config', 'ca.cnf', '-cert', 'ca.pem', '-keyfile', 'ca.key',
    '-in', `${name}.csr`, '-out', `${name}.pem`,
    ...(start ? ['-startdate', start, '-enddate', end] : ['-days', '30'])]);
  return { cert: path.join(dir, `${name}.pem`), key: path.join(dir, `${name}.key`) };
}

export function makeCerts() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mcpwarden-certs-'));
  fs.writeFileSync(path.join(dir, 'ca.cnf'), [
    '[ ca ]', 'default_ca = testca', '[ testca ]', 'dir = .', 'database = index.txt',
    'new_certs_dir = .', 'serial = serial', 'default_md = sha256', 'policy = any',
    'copy_extensions = copy', 'unique_subject = no', '[ any ]', 'commonName = supplied', ''].join('\n'));
  fs.writeFileSync(path.join(dir, 'index.txt'), '');
  fs.writeFileSync(path.join(dir, 'serial'), '01\n');
  ossl(dir, ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.pem',
    '-days', '30', '-subj', '/CN=mcpwarden-test-ca']);
  return {
    dir,
    ca: path.join(dir, 'ca.pem'),
    server: leaf(dir, 'server', '/CN=localhost', 'DNS:localhost,IP:127.0.0.1'),
    wrongHost: leaf(dir, 'wrong', '/CN=other.example', 'DNS:other.example'),
    expired: leaf(dir, 'expired', '/CN=localhost', 'DNS:localhost,IP:127.0.0.1',
      { start: '20200101000000Z', end: '20200102000000Z' }),
    client: leaf(dir, 'client', '/CN=mcpwarden-client', null),
    /** Another certificate from the same CA (a new serial each time). */
    issue: (name, subj, san = 'DNS:localhost,IP:127.0.0.1') => leaf(dir, name, subj, san),
    cleanup: () => fs.rmSync(dir, { recursive: true, force: true }),
  };
}
