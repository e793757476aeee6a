// A TCP-level misbehaving upstream (node:net, no HTTP parser at all), for
// failures below HTTP that the scripted node:http peer cannot produce.
//
// Modes
//   close     accepts, reads the request, closes without a byte of answer.
//   reset     accepts, reads the request, answers with a TCP reset.
//   garbage   writes non-HTTP bytes as soon as the connection opens, before
//             any request, then closes once the request arrives.
//
// Each accepted connection is recorded: {t, bytes (what the proxy sent),
// closedAt}.
//
// Run alone:  node tests/integration/peers/raw.mjs close

import net from 'node:net';
import { fileURLToPath } from 'node:url';
import { withTimeout } from '../lib/util.mjs';

export const GARBAGE = '\x00\x01\x02 ceci n\'est pas HTTP \xff\r\n\r\n';

export async function startRawPeer({ mode = 'close' } = {}) {
  const conns = [];
  const sockets = new Set();
  const server = net.createServer((sock) => {
    sockets.add(sock);
    const rec = { t: Date.now(), bytes: '', closedAt: null };
    conns.push(rec);
    sock.once('close', () => { rec.closedAt = Date.now(); sockets.delete(sock); });
    sock.on('error', () => {});
    if (mode === 'garbage') sock.write(Buffer.from(GARBAGE, 'latin1'));
    sock.on('data', (d) => {
      rec.bytes += d.toString('latin1');
      if (!rec.bytes.includes('\r\n\r\n')) return; // wait for the whole head
      if (mode === 'reset') sock.resetAndDestroy();
      else sock.end();
    });
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const { port } = server.address();
  return {
    port,
    url: `http://127.0.0.1:${port}/mcp`,
    conns,
    async close() {
      for (const s of sockets) s.destroy();
      await withTimeout(new Promise((r) => server.close(() => r())), 3000, 'raw peer close').catch(() => {});
    },
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const p = await startRawPeer({ mode: process.argv[2] ?? 'close' });
  console.error(`raw peer (${process.argv[2] ?? 'close'}) listening on 127.0.0.1:${p.port}`);
}
