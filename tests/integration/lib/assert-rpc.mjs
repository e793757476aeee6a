// Assertions on the proxy's own answers: a JSON-RPC 2.0 error envelope
// {"jsonrpc":"2.0","id":<id|null>,"error":{"code":N,"message":"…","data":…}}
// served as application/json with the expected HTTP status.

import assert from 'node:assert/strict';

/**
 * `res` is a response from lib/http.mjs (status, headers, text). Options:
 * status, code, id (omit to accept any id), messageIncludes (string[]),
 * messageExcludes (string[], checked against the whole body).
 * Returns the parsed body.
 */
export function assertRpcError(res, { status, code, id, messageIncludes = [], bodyExcludes = [] }) {
  const ctx = `HTTP ${res.status} ${JSON.stringify(res.headers)} body ${JSON.stringify(res.text)}`;
  assert.equal(res.status, status, `status: ${ctx}`);
  assert.match(res.headers['content-type'] ?? '', /^application\/json\b/i, `content-type: ${ctx}`);
  let body;
  try {
    body = JSON.parse(res.text);
  } catch (e) {
    assert.fail(`error body is not JSON: ${ctx}`);
  }
  assert.equal(body.jsonrpc, '2.0', ctx);
  assert.ok(Object.hasOwn(body, 'id'), `error body must carry an id (or null): ${ctx}`);
  if (id !== undefined) assert.deepEqual(body.id, id, `id: ${ctx}`);
  assert.equal(typeof body.error, 'object', ctx);
  assert.ok(!Object.hasOwn(body, 'result'), `error and result together: ${ctx}`);
  assert.equal(body.error.code, code, `code: ${ctx}`);
  assert.equal(typeof body.error.message, 'string', ctx);
  assert.ok(body.error.message.length > 0, ctx);
  for (const s of messageIncludes) {
    assert.ok(body.error.message.includes(s), `message should include ${JSON.stringify(s)}: ${ctx}`);
  }
  for (const s of bodyExcludes) {
    assert.ok(!res.text.includes(s), `body must not contain ${JSON.stringify(s)}: ${ctx}`);
  }
  return body;
}
