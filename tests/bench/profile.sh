#!/bin/sh
# profile.sh: instructions per proxied tools/call, counted by callgrind
# (repeatable on a noisy machine, unlike seconds).
#
#   tests/bench/profile.sh [full|bare|list|listvary ...]     (default: full bare)
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
#   list  instructions per tools/list instead: build/bench/upstream --tools
#         1000 (a 448,808-byte listing) behind the bench's full config
#         (tests/bench/lib.sh mw_config full: contract report, validation
#         on, a policy with a hide rule, the recorder); tests/bench/lists.mjs
#         sends N sequential tools/list (N1/N2 default 20/120)
#   listvary  the same with --vary-list: the listing changes every time
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
# The bench's full config (tests/bench/lib.sh mw_config full) for list, listvary.
cat >"$OUT/list.json" <<CONF
{ "listen": "127.0.0.1:$MW",
  "upstreams": [ { "name": "bench", "url": "http://127.0.0.1:$((UP + 1))/mcp",
                   "contract": { "mode": "report" }, "transport": "streamable_http" } ],
  "policy": { "default": "allow", "rules": [
    { "name": "no-raw-drops", "match": { "tool": "echo",
        "args": [ { "pointer": "/message", "matches": "(?i)drop\\\\s+table" } ] },
      "action": "deny", "message": "no SQL through the echo tool" },
    { "name": "no-destructive", "match": { "annotations": { "destructiveHint": true } }, "action": "deny" },
    { "name": "hide-admin", "match": { "tool": ["admin_*", "*.admin.*"] }, "action": "hide" },
    { "name": "deny-last", "match": { "tool": "tool_0999" }, "action": "deny" },
    { "name": "watch-writes", "match": { "name_words": true }, "action": "log" } ] },
  "admin": { "listen": "127.0.0.1:$ADM", "ring_size": 1024 },
  "log": { "level": "warn" } }
CONF
cp "$OUT/list.json" "$OUT/listvary.json"
cat >"$OUT/bare.json" <<CONF
{ "listen": "127.0.0.1:$MW",
  "upstreams": [ { "name": "bench", "path": "/mcp", "url": "http://127.0.0.1:$UP/mcp" } ],
  "admin": { "listen": "off" }, "log": { "level": "warn" } }
CONF

"$NGINX" -c "$OUT/nginx.conf"
mw=
trap '[ -n "$mw" ] && kill $mw 2>/dev/null; [ -n "$upc" ] && kill $upc 2>/dev/null; "$NGINX" -c "$OUT/nginx.conf" -s stop 2>/dev/null' EXIT INT TERM

# The C upstream for list (listvary: --vary-list), on UP + 1.
upc=
start_upstream() {
	[ -n "$upc" ] && kill $upc 2>/dev/null && wait $upc 2>/dev/null
	upc=
	case $1 in
	list) "$here/build/bench/upstream" --port $((UP + 1)) --tools 1000 & upc=$! ;;
	listvary) "$here/build/bench/upstream" --port $((UP + 1)) --tools 1000 --vary-list & upc=$! ;;
	*) return 0 ;;
	esac
	# Bounded: a missing binary (make bench-build) or one that died says
	# so instead of waiting for ever.
	tries=0
	until node -e "require('net').connect($((UP + 1)),'127.0.0.1').on('connect',()=>process.exit(0)).on('error',()=>process.exit(1))" 2>/dev/null; do
		tries=$((tries + 1))
		if ! kill -0 $upc 2>/dev/null || [ $tries -ge 100 ]; then
			echo "profile: the upstream on port $((UP + 1)) did not start (built? make bench-build)" >&2
			exit 2
		fi
		sleep 0.1
	done
}

# Total instructions of one run of N calls (N listings for list, listvary).
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
	case $conf in
	list | listvary) node "$here/tests/bench/lists.mjs" $MW "$n" ;;
	*) node "$here/tests/bench/calls.mjs" $MW "$n" ;;
	esac
	kill -TERM $mw
	wait $mw || true
	mw=
	awk '/^(summary|totals):/ {print $2; exit}' "$out"
}

echo "callgrind, instructions per proxied tools/call ($N2 - $N1 calls; list, listvary: per tools/list)"
for conf in ${*:-full bare}; do
	n1=$N1 n2=$N2
	case $conf in list | listvary) n1=${LIST_N1:-20} n2=${LIST_N2:-120} ;; esac
	start_upstream "$conf"
	a=$(run "$conf" "$n1")
	b=$(run "$conf" "$n2")
	printf '%-8s %9d\n' "$conf" $(((b - a) / (n2 - n1)))
done
