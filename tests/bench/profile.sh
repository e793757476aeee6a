#!/bin/sh
# profile.sh: instructions per proxied tools/call, counted by callgrind
# (repeatable on a noisy machine, unlike seconds).
#
#   tests/bench/profile.sh [full|bare ...]     (default: full bare)
#
# For each configuration, mcpwarden runs under valgrind --tool=callgrind
# between an nginx upstream answering a fixed tools/call reply (and a
# three-tool tools/list when asked with X-Bench: list) and
# tests/bench/calls.mjs sending N sequential tools/call with a session id.
# Two runs, N = $N1 and $N2: the difference of their totals divided by
# N2 - N1 is the cost of one call, start-up and shutdown cancelled out.
#   full  every module: contract check (report), a policy of four rules,
#         the admin endpoint with the call recorder
#   bare  no admin endpoint (no recording), no policy
# The callgrind files stay in $OUT (default /tmp/mcpwarden-profile) for
# callgrind_annotate. Loopback only; needs valgrind, nginx, node.
set -eu
here=$(cd "$(dirname "$0")/../.." && pwd)
BIN=${MCPWARDEN_BIN:-$here/mcpwarden}
OUT=${OUT:-/tmp/mcpwarden-profile}
N1=${N1:-200}
N2=${N2:-1200}
# Ports: PROFILE_PORT (default 39991) and the next three, so that two
# profiles (two worktrees) can run at once.
UP=${PROFILE_PORT:-39991}
MW=$((UP + 2)) ADM=$((UP + 3))
mkdir -p "$OUT/tmp"
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
for p in valgrind node "$NGINX"; do
	command -v "$p" >/dev/null 2>&1 || { echo "profile: needs $p" >&2; exit 2; }
done

cat >"$OUT/nginx.conf" <<CONF
worker_processes 1;
error_log $OUT/nginx-error.log;
pid $OUT/nginx.pid;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path $OUT/tmp; proxy_temp_path $OUT/tmp; fastcgi_temp_path $OUT/tmp;
  uwsgi_temp_path $OUT/tmp; scgi_temp_path $OUT/tmp;
  server { listen 127.0.0.1:$UP; keepalive_requests 1000000;
    location /mcp { default_type application/json;
      if (\$http_x_bench = "list") {
        return 200 '{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"echo","description":"Echoes back the input message.","inputSchema":{"type":"object","properties":{"message":{"type":"string","description":"Message to echo"}},"required":["message"]},"annotations":{"readOnlyHint":true}},{"name":"get_sum","description":"Adds two numbers together.","inputSchema":{"type":"object","properties":{"a":{"type":"number","description":"First"},"b":{"type":"number","description":"Second"}},"required":["a","b"]},"annotations":{"readOnlyHint":true}},{"name":"delete_file","description":"Deletes a file on the server.","inputSchema":{"type":"object","properties":{"path":{"type":"string","description":"Path"}},"required":["path"]},"annotations":{"destructiveHint":true}}]}}';
      }
      return 200 '{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"Echo: hello"}]}}'; } }
}
CONF
cat >"$OUT/full.json" <<CONF
{ "listen": "127.0.0.1:$MW",
  "upstreams": [ { "name": "bench", "path": "/mcp", "url": "http://127.0.0.1:$UP/mcp",
                   "contract": { "mode": "report" } } ],
  "admin": { "listen": "127.0.0.1:$ADM", "ring_size": 1024 },
  "policy": { "default": "allow", "unknown_tools": "deny", "rules": [
    { "name": "no-raw-writes", "match": { "tool": "run_query",
      "args": [ { "pointer": "/sql", "matches": "(?i)^\\\\s*(drop|delete|update)" } ] }, "action": "deny" },
    { "name": "no-destructive", "match": { "annotations": { "destructiveHint": true } }, "action": "deny" },
    { "name": "hide-admin", "match": { "tool": ["*.admin.*", "admin_*"] }, "action": "hide" },
    { "name": "watch-writes", "match": { "name_words": true }, "action": "log" } ] },
  "log": { "level": "warn" } }
CONF
cat >"$OUT/bare.json" <<CONF
{ "listen": "127.0.0.1:$MW",
  "upstreams": [ { "name": "bench", "path": "/mcp", "url": "http://127.0.0.1:$UP/mcp" } ],
  "admin": { "listen": "off" }, "log": { "level": "warn" } }
CONF

"$NGINX" -c "$OUT/nginx.conf"
mw=
trap '[ -n "$mw" ] && kill $mw 2>/dev/null; "$NGINX" -c "$OUT/nginx.conf" -s stop 2>/dev/null' EXIT INT TERM

# Total instructions of one run of N calls.
run() {
	conf=$1 n=$2
	out="$OUT/callgrind.$conf.$n"
	valgrind --tool=callgrind --callgrind-out-file="$out" "$BIN" -c "$OUT/$conf.json" \
		2>"$OUT/valgrind.$conf.$n.log" &
	mw=$!
	i=0
	until node -e "require('net').connect($MW,'127.0.0.1').on('connect',()=>process.exit(0)).on('error',()=>process.exit(1))" 2>/dev/null; do
		i=$((i + 1))
		[ $i -lt 100 ] || { echo "profile: mcpwarden did not start" >&2; exit 1; }
		sleep 0.2
	done
	node "$here/tests/bench/calls.mjs" $MW "$n"
	kill -TERM $mw
	wait $mw || true
	mw=
	awk '/^(summary|totals):/ {print $2; exit}' "$out"
}

echo "callgrind, instructions per proxied tools/call ($N2 - $N1 calls)"
for conf in ${*:-full bare}; do
	a=$(run "$conf" "$N1")
	b=$(run "$conf" "$N2")
	printf '%-5s %9d\n' "$conf" $(((b - a) / (N2 - N1)))
done
