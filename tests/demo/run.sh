#!/bin/sh
# make run: mcpwarden in front of the bundled demo upstream, the official
# "everything" MCP server (npm @modelcontextprotocol/server-everything,
# pinned in package-lock.json). Ctrl-C stops both.
#   LISTEN=127.0.0.1:8080 UPSTREAM_PORT=3001 make run
set -eu
LISTEN=${LISTEN:-127.0.0.1:8080}
UPSTREAM_PORT=${UPSTREAM_PORT:-3001}
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
mcpwarden: demo upstream (server-everything) on 127.0.0.1:$UPSTREAM_PORT, proxy on $LISTEN
Try, in another terminal:
  curl -si http://$LISTEN/mcp -H 'Content-Type: application/json' \\
       -H 'Accept: application/json, text/event-stream' \\
       -d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}'
  npx @modelcontextprotocol/inspector   (then connect to http://$LISTEN/mcp, Streamable HTTP)
MSG
./mcpwarden --listen "$LISTEN" --upstream "http://127.0.0.1:$UPSTREAM_PORT/mcp"
