// Generated mcpwarden config files, written to a temp dir that is removed
// when the test process exits.

import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

let dir = null;
function tmpDir() {
  // Opt-in for tests/integration/config-schema.test.mjs: with
  // MCPWARDEN_IT_KEEP_CONF=DIR the files go to a fresh directory under DIR
  // and stay there, so that test can check every one against the schemas.
  const keep = process.env.MCPWARDEN_IT_KEEP_CONF;
  if (!dir && keep) dir = mkdtempSync(path.join(keep, 'p-'));
  if (!dir) {
    dir = mkdtempSync(path.join(os.tmpdir(), 'mcpwarden-it-'));
    process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  }
  return dir;
}

let n = 0;
/** Write `content` (object → pretty JSON, string → as is); return its path. */
export function writeConfig(content, name = `conf-${n++}.json`) {
  const p = path.join(tmpDir(), name);
  writeFileSync(p, typeof content === 'string' ? content : JSON.stringify(content, null, 2) + '\n');
  return p;
}
