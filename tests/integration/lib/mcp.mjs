// The official TypeScript SDK (1.x) client, wrapped for the tests:
//   connectClient(url)  Client + StreamableHTTPClientTransport whose fetch is
//                       recorded (method, status, content type, headers) and
//                       whose server notifications are collected.
//   startHealthyLoop()  a second, independent session that keeps calling a
//                       tool while a test throws bad input at the proxy; its
//                       stop() reports every failure.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { withTimeout, sleep } from './util.mjs';

export const CALL_TIMEOUT = 10000;

/**
 * Connect an SDK client to `url`. Returns {client, transport, fetchLog,
 * notifications, errors, waitNotification(pred, ms), close()}.
 * fetchLog entries: {method, status, contentType, headers (Headers), t}.
 */
export async function connectClient(url, { name = 'mcpwarden-it', headers, capabilities = {} } = {}) {
  const fetchLog = [];
  const notifications = [];
  const errors = [];
  const waiters = new Set();

  const recordingFetch = async (input, init = {}) => {
    const res = await fetch(input, init);
    fetchLog.push({
      method: init.method ?? 'GET',
      status: res.status,
      contentType: res.headers.get('content-type'),
      headers: res.headers,
      t: Date.now(),
    });
    return res;
  };

  const transport = new StreamableHTTPClientTransport(new URL(url), {
    fetch: recordingFetch,
    requestInit: headers ? { headers } : undefined,
    // Fail fast instead of the default 1 s+ backoff when a stream drops.
    reconnectionOptions: {
      initialReconnectionDelay: 100,
      maxReconnectionDelay: 500,
      reconnectionDelayGrowFactor: 1.5,
      maxRetries: 2,
    },
  });
  const client = new Client({ name, version: '1.0.0' }, { capabilities });
  client.onerror = (e) => errors.push(e);
  client.fallbackNotificationHandler = async (n) => {
    const rec = { ...n, t: Date.now() };
    notifications.push(rec);
    for (const w of waiters) {
      if (w.pred(rec)) { waiters.delete(w); w.resolve(rec); }
    }
  };
  await withTimeout(client.connect(transport), CALL_TIMEOUT, `SDK connect to ${url}`);

  return {
    client,
    transport,
    fetchLog,
    notifications,
    errors,
    /** Wait for a notification (already received or future) matching pred. */
    waitNotification(pred, ms = 5000, since = 0) {
      const seen = notifications.slice(since).find(pred);
      if (seen) return Promise.resolve(seen);
      let w;
      const p = new Promise((resolve) => { w = { pred, resolve }; waiters.add(w); });
      return withTimeout(p, ms, 'server notification').finally(() => waiters.delete(w));
    },
    async close() {
      await withTimeout(client.close(), 3000, 'SDK client close').catch(() => {});
    },
  };
}

/**
 * Open a second SDK session on `url` and call `echo` in a loop until stop().
 * stop() resolves {calls, failures: [msg...]}; a healthy proxy gives
 * calls > 0 and no failures. `minCallsAfter(n)` waits until n more calls
 * succeeded, proving the session still works after some event.
 */
export async function startHealthyLoop(url, { pauseMs = 20 } = {}) {
  const s = await connectClient(url, { name: 'healthy-neighbour' });
  const state = { calls: 0, failures: [], running: true };
  const loop = (async () => {
    let i = 0;
    while (state.running) {
      const msg = `healthy-${i++}`;
      try {
        const r = await withTimeout(
          s.client.callTool({ name: 'echo', arguments: { message: msg } }, undefined, { timeout: CALL_TIMEOUT }),
          CALL_TIMEOUT + 1000, `healthy echo ${msg}`);
        const text = r?.content?.[0]?.text;
        if (text !== `Echo: ${msg}`) state.failures.push(`unexpected echo result ${JSON.stringify(r)}`);
        else state.calls++;
      } catch (e) {
        state.failures.push(`echo ${msg}: ${e.message}`);
      }
      await sleep(pauseMs);
    }
  })();
  return {
    state,
    async minCallsAfter(n, ms = 10000) {
      const target = state.calls + n;
      const deadline = Date.now() + ms;
      while (state.calls < target) {
        if (state.failures.length) throw new Error(`healthy session failed: ${state.failures.join('; ')}`);
        if (Date.now() > deadline) throw new Error(`healthy session made only ${state.calls}/${target} calls in ${ms} ms`);
        await sleep(20);
      }
    },
    async stop() {
      state.running = false;
      await withTimeout(loop, CALL_TIMEOUT + 2000, 'healthy loop to stop');
      await s.close();
      return { calls: state.calls, failures: state.failures, transportErrors: s.errors };
    },
  };
}
