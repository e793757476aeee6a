// Small async helpers shared by the integration suites: bounded waits only.
// Every await in these tests goes through withTimeout() or a helper that has
// its own deadline, so a hung proxy fails a test instead of hanging the run.

import { setTimeout as delay } from 'node:timers/promises';

export const sleep = (ms) => delay(ms);

/**
 * Resolve/reject like `promise`, or reject after `ms` with an error naming
 * `what`. The timer never keeps the process alive.
 */
export function withTimeout(promise, ms, what = 'operation') {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms);
    timer.unref?.();
  });
  return Promise.race([Promise.resolve(promise), timeout]).finally(() => clearTimeout(timer));
}

/** Poll `fn` (sync or async) until it returns a truthy value; return it. */
export async function waitFor(fn, { timeout = 5000, interval = 25, what = 'condition' } = {}) {
  const deadline = Date.now() + timeout;
  let lastErr;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (e) {
      lastErr = e;
    }
    if (Date.now() >= deadline) {
      const why = lastErr ? ` (last error: ${lastErr.message})` : '';
      throw new Error(`timed out after ${timeout} ms waiting for ${what}${why}`);
    }
    await delay(interval);
  }
}

/** A promise plus its resolve/reject, for events observed from callbacks. */
export function deferred() {
  let resolve, reject;
  const promise = new Promise((res, rej) => { resolve = res; reject = rej; });
  return { promise, resolve, reject };
}
