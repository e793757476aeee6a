// Preloaded (node --import) into server-everything, for two things:
// 1. Its Express app calls listen(PORT) and so binds every interface. The
//    tests only ever use loopback, so bind 127.0.0.1 instead:
//    listen(port[, cb]) gains a host.
// 2. An orphan guard (below).

import net from 'node:net';

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const portOnly = typeof args[0] === 'number' ||
    (typeof args[0] === 'string' && /^\d+$/.test(args[0]));
  if (portOnly && (args.length === 1 || typeof args[1] === 'function')) {
    args.splice(1, 0, '127.0.0.1');
  }
  return listen.apply(this, args);
};

// Orphan guard: the test process holds our stdin pipe. If it dies without
// running its cleanup (SIGKILL), the pipe closes and we exit too.
if (process.env.MCPWARDEN_IT_STDIN_GUARD === '1') {
  process.stdin.on('end', () => process.exit(0));
  process.stdin.on('close', () => process.exit(0));
  process.stdin.resume();
}
