// Free loopback ports: bind port 0 on 127.0.0.1, read the port, close.
// There is a window between close and the next bind; tests only use ports on
// 127.0.0.1 and start their server right away, which is good enough here.

import net from 'node:net';

export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
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
