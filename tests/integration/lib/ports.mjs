// Free loopback ports for tests.
//
// Why not "bind port 0, read it, close": the kernel hands out the same
// ephemeral port again soon after it is closed, so two such calls in a row
// (a proxy port and an admin port) could return one port, and a fixture that
// listens on port 0 (or any outgoing connection) could take a port handed out
// but not yet bound. CI failed on exactly that ("Address already in use").
//
// So ports come from below the kernel's ephemeral range (read from
// /proc/sys/net/ipv4/ip_local_port_range), where the kernel never picks one on
// its own, each is handed out once per process, and each is checked bindable
// before it is handed out. The start is spread by pid so test processes run
// one after another do not walk the same ports.

import net from 'node:net';
import fs from 'node:fs';

function ephemeralLow() {
  try {
    const [lo] = fs.readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8')
      .trim().split(/\s+/).map(Number);
    if (Number.isInteger(lo) && lo > 12000) return lo;
  } catch { /* not Linux: fall through */ }
  return 32768;
}

const LOW = 10000;
const HIGH = ephemeralLow();            /* exclusive */
const SPAN = HIGH - LOW;
let next = LOW + ((process.pid * 7919) % SPAN);
const handed = new Set();
// fetch() (undici, the SDK clients' transport) refuses the WHATWG "bad
// ports" with "bad port": the one in this range is 10080. Handed to a
// proxy, every SDK call to it failed (config-schema's sampled policy run).
const FETCH_BAD = new Set([10080]);

function bindable(port) {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.unref();
    srv.once('error', () => resolve(false));
    srv.listen({ port, host: '127.0.0.1', exclusive: true }, () => srv.close(() => resolve(true)));
  });
}

export async function freePort() {
  for (let tries = 0; tries < SPAN; tries++) {
    const port = next;
    next = next + 1 >= HIGH ? LOW : next + 1;
    if (handed.has(port) || FETCH_BAD.has(port)) continue;
    if (!(await bindable(port))) continue;
    handed.add(port);
    return port;
  }
  throw new Error(`no free loopback port in [${LOW}, ${HIGH})`);
}

/** A port that nothing listens on (for "upstream unreachable"). */
export const closedPort = freePort;

/** Resolve once 127.0.0.1:port accepts a TCP connection. */
export function canConnect(port, host = '127.0.0.1') {
  return new Promise((resolve) => {
    const s = net.connect({ port, host });
    s.once('connect', () => { s.destroy(); resolve(true); });
    s.once('error', () => { s.destroy(); resolve(false); });
  });
}
