// lists.mjs PORT N: an initialize, then N sequential tools/list on one
// keep-alive connection with the session id it gave. Fails on any reply that does not list the upstream's
// last tool (build/bench/upstream --tools 1000). Used by
// tests/bench/profile.sh (list, listvary).
import http from 'node:http';

const [port, n] = [Number(process.argv[2]), Number(process.argv[3])];
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
const list = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} });

let session = null;
function post(body) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: '/mcp', method: 'POST', agent,
      headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream',
        ...(session ? { 'Mcp-Session-Id': session } : {}), 'MCP-Protocol-Version': '2025-06-18',
        'Content-Length': Buffer.byteLength(body) } }, (res) => {
      session ??= res.headers['mcp-session-id'] ?? null;
      let b = '';
      res.setEncoding('utf8');
      res.on('data', (d) => { b += d; });
      res.on('end', () => (res.statusCode === 200 ? resolve(b) : reject(new Error(`${res.statusCode} ${b.slice(0, 200)}`))));
    });
    req.on('error', reject);
    req.end(body);
  });
}

await post(JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: {
  protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'lists', version: '1' } } }));
for (let i = 0; i < n; i++) {
  const r = await post(list);
  if (!r.includes('"tool_0999"')) throw new Error(`unexpected tools/list reply: ${r.slice(0, 200)}`);
}
agent.destroy();
