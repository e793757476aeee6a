#!/bin/sh
# make run: mcpwarden in front of the bundled demo upstream, the official
# "everything" MCP server (npm @modelcontextprotocol/server-everything,
# pinned in package-lock.json). Ctrl-C stops both.
#   LISTEN=127.0.0.1:8080 UPSTREAM_PORT=3001 make run
#   make run ADMIN=127.0.0.1:9191   (or ADMIN_PORT=9191; ADMIN=off: none)
set -eu
LISTEN=${LISTEN:-127.0.0.1:8080}
UPSTREAM_PORT=${UPSTREAM_PORT:-3001}
# issue 22: the admin endpoint's address. Unset, mcpwarden's default
# (127.0.0.1:9090, and no endpoint with a warning when that port is taken);
# set, exactly that address (start-up fails when it cannot be bound).
ADMIN=${ADMIN:-}
[ -n "$ADMIN" ] || [ -z "${ADMIN_PORT:-}" ] || ADMIN=127.0.0.1:$ADMIN_PORT
set --
[ -z "$ADMIN" ] || set -- --admin "$ADMIN"
ADMIN=${ADMIN:-127.0.0.1:9090}
# The binary to run (a test runs its own build).
MCPWARDEN=${MCPWARDEN:-./mcpwarden}
admin_hint="the calls as they pass: http://$ADMIN/ (admin page), ./mcpwarden tail http://$ADMIN"
[ "$ADMIN" != off ] || admin_hint="no admin endpoint (ADMIN=off)"
here=$(cd "$(dirname "$0")/../.." && pwd)
cd "$here"

PORT=$UPSTREAM_PORT node node_modules/@modelcontextprotocol/server-everything/dist/index.js streamableHttp \
	>/tmp/mcpwarden-demo-upstream.log 2>&1 &
up=$!
trap 'kill $up 2>/dev/null || true' EXIT INT TERM
# Wait for the demo upstream to accept connections (at most 10 s).
i=0
until node -e "require('net').connect($UPSTREAM_PORT,'127.0.0.1').on('connect',()=>process.exit(0)).on('error',()=>process.exit(1))" 2>/dev/null; do
	i=$((i + 1))
	[ $i -lt 100 ] || { echo "demo upstream did not start; see /tmp/mcpwarden-demo-upstream.log" >&2; exit 1; }
	sleep 0.1
done
cat <<MSG
mcpwarden: demo upstream (server-everything) on 127.0.0.1:$UPSTREAM_PORT, proxy on $LISTEN, admin on $ADMIN
Try, in another terminal:
  curl -si http://$LISTEN/mcp -H 'Content-Type: application/json' \\
       -H 'Accept: application/json, text/event-stream' \\
       -d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}'
  npx @modelcontextprotocol/inspector   (then connect to http://$LISTEN/mcp, Streamable HTTP)
  $admin_hint
MSG
"$MCPWARDEN" --listen "$LISTEN" --upstream "http://127.0.0.1:$UPSTREAM_PORT/mcp" "$@"
