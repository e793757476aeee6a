// calls.mjs PORT N: one tools/list (so the policy knows the tool), then N
// sequential tools/call on one keep-alive connection with a session id, as
// a real client sends them. Fails on any reply that is not the expected
// one. Used by tests/bench/profile.sh.
import http from 'node:http';

const [port, n] = [Number(process.argv[2]), Number(process.argv[3])];
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
const call = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call',
  params: { name: 'echo', arguments: { message: 'hello' } } });
const list = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} });

function post(body, extra = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: '/mcp', method: 'POST', agent,
      headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream',
        'Mcp-Session-Id': 'bench-session-0123456789abcdef', 'MCP-Protocol-Version': '2025-06-18',
        'Content-Length': Buffer.byteLength(body), ...extra } }, (res) => {
      let b = '';
      res.setEncoding('utf8');
      res.on('data', (d) => { b += d; });
      res.on('end', () => (res.statusCode === 200 ? resolve(b) : reject(new Error(`${res.statusCode} ${b}`))));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const l = await post(list, { 'X-Bench': 'list' });
if (!l.includes('"echo"')) throw new Error(`unexpected tools/list reply: ${l}`);
for (let i = 0; i < n; i++) {
  const r = await post(call);
  if (!r.includes('Echo: hello')) throw new Error(`unexpected tools/call reply: ${r}`);
}
agent.destroy();
