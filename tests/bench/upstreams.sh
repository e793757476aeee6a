#!/usr/bin/env bash
# upstreams.sh: part "upstreams" of `make bench` (tests/bench/README.md;
# issue 23): start-up, memory, /readyz, /metrics and the admin page at 1,
# 100 and 1,000 upstreams, and what one replica holds per Streamable
# session, per legacy HTTP+SSE stream and per Streamable GET stream
# (upstreams.mjs does the work; it ends what it starts, by PID).
#
#   UPSTREAM_COUNTS="1 100 1000" SESSIONS=1000 LEGACY=1000
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
[ -x "$here/mcpwarden" ] || { echo "bench: no $here/mcpwarden (make -j2 first)" >&2; exit 2; }
[ -x "$here/${BUILD:-build}/bench/upstream" ] || { echo "bench: make bench-build first" >&2; exit 2; }
# 1,000 legacy streams hold 2,000 descriptors in mcpwarden: take what is allowed.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
exec node "$here/tests/bench/upstreams.mjs"
