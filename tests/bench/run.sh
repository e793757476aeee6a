#!/bin/sh
# make bench: mcpwarden against nginx in front of the same upstream, on
# loopback, with wrk. The upstream is nginx answering a fixed MCP reply, so
# the figures measure the proxies, not a Node server.
#   DURATION=10 CONNS=50 make bench
# Needs the Debian packages wrk and nginx (installed here when missing and
# root). Bounded: three runs of DURATION seconds, loopback only.
set -eu
DURATION=${DURATION:-10}
CONNS=${CONNS:-50}
here=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d /tmp/mcpwarden-bench.XXXXXX)
for p in wrk nginx; do
	command -v $p >/dev/null 2>&1 || [ -x /usr/sbin/$p ] || {
		[ "$(id -u)" = 0 ] && apt-get install -y --no-install-recommends wrk nginx-light >/dev/null 2>&1 ||
			{ echo "bench: needs wrk and nginx (apt-get install wrk nginx-light)" >&2; exit 2; }
	}
done
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
UP=39981 NGX=39982 MW=39983
cat >"$work/nginx.conf" <<CONF
worker_processes 1;
error_log $work/error.log;
pid $work/nginx.pid;
events { worker_connections 4096; }
http {
  access_log off;
  upstream up { server 127.0.0.1:$UP; keepalive 64; }
  server { listen 127.0.0.1:$UP;
    location /mcp { default_type application/json;
      return 200 '{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hello"}]}}'; } }
  server { listen 127.0.0.1:$NGX;
    location / { proxy_pass http://up; proxy_http_version 1.1; proxy_set_header Connection ""; proxy_buffering off; } }
}
CONF
cat >"$work/post.lua" <<'LUA'
wrk.method = "POST"
wrk.body = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
LUA
"$NGINX" -c "$work/nginx.conf"
"$here/mcpwarden" --listen 127.0.0.1:$MW --upstream http://127.0.0.1:$UP/mcp --log-level warn 2>"$work/mcpwarden.log" &
mw=$!
trap 'kill $mw 2>/dev/null; "$NGINX" -c "$work/nginx.conf" -s stop 2>/dev/null; rm -rf "$work"' EXIT INT TERM
sleep 0.5
echo "wrk -t1 -c$CONNS -d${DURATION}s, POST tools/call, JSON reply; $(nproc) cores shared by load generator, proxy and upstream"
printf '%-28s %12s %12s %12s\n' target req/s p50 p99
for t in "upstream direct:$UP" "nginx proxy_pass:$NGX" "mcpwarden:$MW"; do
	name=${t%:*}; port=${t##*:}
	out=$(wrk -t1 -c"$CONNS" -d"${DURATION}s" --latency -s "$work/post.lua" "http://127.0.0.1:$port/mcp")
	rps=$(echo "$out" | awk '/Requests\/sec/ {print $2}')
	p50=$(echo "$out" | awk '$1=="50%" {print $2}')
	p99=$(echo "$out" | awk '$1=="99%" {print $2}')
	bad=$(echo "$out" | awk '/Non-2xx|Socket errors/ {print}')
	printf '%-28s %12s %12s %12s %s\n' "$name" "$rps" "$p50" "$p99" "$bad"
done
