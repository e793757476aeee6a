# lib.sh: what the benchmark scripts share (sourced by run.sh, streams.sh,
# listcheck.sh, memflat.sh; see tests/bench/README.md). Bash.
#
# Processes are started with bench_bg and remembered by PID; bench_cleanup
# (trapped on exit) ends exactly those, their descendants, and the nginx
# instances started here, and removes the work directory. Nothing is ever
# killed by name. Everything listens on 127.0.0.1.

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
HERE=$(cd "$BENCH_DIR/../.." && pwd)
BUILD=${BUILD:-build}
MCPWARDEN=${MCPWARDEN:-$HERE/mcpwarden}
UPSTREAM_BIN=$HERE/$BUILD/bench/upstream
STREAMS_BIN=$HERE/$BUILD/bench/streams
SG_JS=$HERE/node_modules/supergateway/dist/index.js
LUA=$BENCH_DIR/mcp.lua
BENCH_PIDS=()
NGINX_CONFS=()
WORK=

bench_die() { echo "bench: $*" >&2; exit 2; }

# Install a Debian package for the benchmark when its command is missing
# (as root only; the benchmark needs nothing else from outside).
bench_need() { # COMMAND PACKAGE
	command -v "$1" >/dev/null 2>&1 || [ -x "/usr/sbin/$1" ] && return 0
	[ "$(id -u)" = 0 ] || bench_die "needs $1: apt-get install $2"
	echo "bench: installing $2" >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$2" >/dev/null 2>&1 ||
		{ apt-get update >/dev/null 2>&1 &&
		  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$2" >/dev/null 2>&1; } ||
		bench_die "could not install $2"
}

bench_init() { # NAME
	[ -x "$MCPWARDEN" ] || bench_die "no $MCPWARDEN (make -j2 first)"
	[ -x "$UPSTREAM_BIN" ] && [ -x "$STREAMS_BIN" ] || bench_die "no $UPSTREAM_BIN (make bench-build)"
	bench_need wrk wrk
	bench_need curl curl
	WORK=$(mktemp -d "/tmp/mcpwarden-bench-$1.XXXXXX")
	trap bench_cleanup EXIT
	trap 'exit 130' INT TERM
	# Every stream costs the proxy two descriptors: take what is allowed.
	ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
}

# All descendants of a PID (children first found through /proc), then it.
bench_tree() { # PID
	local p=$1 kids c
	kids=$(grep -l "^PPid:[[:space:]]*$p\$" /proc/[0-9]*/status 2>/dev/null | cut -d/ -f3)
	for c in $kids; do bench_tree "$c"; done
	echo "$p"
}

# CPU time (user + system, in clock ticks) used so far by a PID and all its
# descendants, threads included: what a target spent, however the machine's
# two cores were shared, so a figure per request holds better than seconds.
bench_cpu_ticks() { # PID
	local p t=0 v
	for p in $(bench_tree "$1"); do
		# Fields 14 and 15 after the ")" that ends the command name.
		v=$(sed 's/^.*) //' "/proc/$p/stat" 2>/dev/null | awk '{print $12 + $13}')
		t=$((t + ${v:-0}))
	done
	echo "$t"
}
CLK_TCK=$(getconf CLK_TCK 2>/dev/null || echo 100)

# A process's start time (field 22 of /proc/PID/stat), so a PID is only
# signalled again while it is still the process this script started.
bench_started() { awk '{print $22}' "/proc/$1/stat" 2>/dev/null; }

bench_cleanup() {
	set +e
	local p t st alive=()
	for c in "${NGINX_CONFS[@]}"; do "$NGINX" -c "$c" -s stop 2>/dev/null; done
	for p in "${BENCH_PIDS[@]}"; do
		for t in $(bench_tree "$p"); do
			st=$(bench_started "$t")
			[ -n "$st" ] && kill "$t" 2>/dev/null && alive+=("$t:$st")
		done
	done
	for _ in $(seq 20); do
		local left=()
		for p in "${alive[@]}"; do
			[ "$(bench_started "${p%%:*}")" = "${p#*:}" ] && left+=("$p")
		done
		alive=("${left[@]}")
		[ ${#alive[@]} = 0 ] && break
		sleep 0.1
	done
	for p in "${alive[@]}"; do kill -9 "${p%%:*}" 2>/dev/null; done
	[ -n "$WORK" ] && [ -z "${BENCH_KEEP:-}" ] && rm -rf "$WORK"
	return 0
}

# Start a command in the background, logging to $WORK/NAME.log; sets BG_PID.
bench_bg() { # NAME CMD...
	local name=$1
	shift
	"$@" >"$WORK/$name.log" 2>&1 &
	BG_PID=$!
	BENCH_PIDS+=("$BG_PID")
}

bench_port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# A loopback port nothing listens on now: random (parallel runs of other
# engineers' tests rarely meet it) and below the ephemeral range, where an
# outgoing connection's local port could make bind fail.
bench_free_port() {
	local p lo
	lo=$(awk '{print $1}' /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
	for _ in $(seq 50); do
		p=$((10000 + (RANDOM * 32768 + RANDOM) % (lo - 10000)))
		bench_port_busy "$p" || { echo "$p"; return; }
	done
	bench_die "no free port found"
}

bench_wait_port() { # PORT PID NAME
	for _ in $(seq 200); do
		bench_port_busy "$1" && return 0
		kill -0 "$2" 2>/dev/null || { cat "$WORK/$3.log" >&2; bench_die "$3 exited at start-up"; }
		sleep 0.05
	done
	cat "$WORK/$3.log" >&2
	bench_die "$3 does not listen on $1"
}

start_upstream() { # NAME PORT [ARGS...]
	local name=$1 port=$2
	shift 2
	bench_bg "$name" "$UPSTREAM_BIN" --port "$port" "$@"
	bench_wait_port "$port" "$BG_PID" "$name"
}

# The --workers flag lands with the multi-core work: use it when this
# binary knows it (WORKERS, default the number of cores).
mw_workers_args() {
	if "$MCPWARDEN" --help 2>&1 | grep -q -- '--workers'; then
		echo "--workers ${WORKERS:-$(nproc)}"
	fi
}

mw_workers_label() {
	local w
	w=$(mw_workers_args)
	echo "${w:-one event loop (no --workers in this build)}"
}

# Does this binary accept "contract": {"mode": "off"}? (1 = yes)
mw_contract_off_supported() {
	local f="$WORK/probe-off.json"
	printf '{"upstreams":[{"url":"http://127.0.0.1:1/mcp","contract":{"mode":"off"}}]}' >"$f"
	"$MCPWARDEN" --check-config -c "$f" >/dev/null 2>&1 && echo 1 || echo 0
}

# Whether this build knows the live contract's "validation" section (a
# build from before it refuses the key).
mw_validation_supported() {
	local f="$WORK/probe-validation.json"
	printf '{"upstreams":[{"url":"http://127.0.0.1:1/mcp","validation":{"arguments":"off"}}]}' >"$f"
	"$MCPWARDEN" --check-config -c "$f" >/dev/null 2>&1 && echo 1 || echo 0
}

# A mcpwarden config. INSPECT: "full" = contract checker (report mode), a
# policy of a few rules, the admin endpoint recording every call and the
# live contract's defaults (arguments and results validated, report);
# "full-novalid" = the same with validation off; "full-nocontract" = full
# with the contract checker off; "off" = no contract checker, no
# validation, no policy, no admin. LIMITS is the body of
# "limits" (default: 10,000 connections, all of them allowed from loopback).
mw_config() { # FILE PORT UPSTREAM_PORT INSPECT [ADMIN_PORT] [LIMITS_JSON]
	local file=$1 port=$2 up=$3 inspect=$4 admin=${5:-}
	local limits=${6:-'"max_connections": 10000, "max_connections_per_client": 10000'}
	local contract='"contract": {"mode": "report"},' policy='' adm='"admin": {"listen": "off"},'
	local off='' valid_off=''
	[ "$(mw_contract_off_supported)" = 1 ] && off='"contract": {"mode": "off"},'
	[ "$(mw_validation_supported)" = 1 ] && valid_off='"validation": {"arguments": "off", "results": "off"},'
	case $inspect in
	full | full-nocontract | full-novalid)
		[ "$inspect" = full-nocontract ] && contract=$off
		[ "$inspect" = full-novalid ] && contract="$contract $valid_off"
		policy='"policy": {
    "default": "allow",
    "rules": [
      { "name": "no-raw-drops", "match": { "tool": "echo",
          "args": [ { "pointer": "/message", "matches": "(?i)drop\\s+table" } ] },
        "action": "deny", "message": "no SQL through the echo tool" },
      { "name": "no-destructive", "match": { "annotations": { "destructiveHint": true } }, "action": "deny" },
      { "name": "hide-admin", "match": { "tool": ["admin_*", "*.admin.*"] }, "action": "hide" },
      { "name": "deny-last", "match": { "tool": "tool_0999" }, "action": "deny" },
      { "name": "watch-writes", "match": { "name_words": true }, "action": "log" }
    ]
  },'
		adm="\"admin\": {\"listen\": \"127.0.0.1:$admin\", \"ring_size\": 1024},"
		;;
	off) contract="$off $valid_off" ;;
	*) bench_die "mw_config: inspect must be full, full-novalid, full-nocontract or off" ;;
	esac
	cat >"$file" <<EOF
{
  "listen": "127.0.0.1:$port",
  "upstreams": [ { "name": "bench", "url": "http://127.0.0.1:$up/mcp",
                   $contract "transport": "streamable_http" } ],
  $policy
  $adm
  "log": { "level": "warn" },
  "limits": { $limits }
}
EOF
	"$MCPWARDEN" --check-config -c "$file" >"$WORK/check-config.log" 2>&1 ||
		{ cat "$WORK/check-config.log" >&2; bench_die "bad generated config $file"; }
}

start_mcpwarden() { # NAME CONF PORT
	# shellcheck disable=SC2046
	bench_bg "$1" "$MCPWARDEN" -c "$2" $(mw_workers_args)
	bench_wait_port "$3" "$BG_PID" "$1"
}

# nginx: every core, keep-alive to the upstream, no buffering of replies,
# long reads (streams stay open), everything in $WORK. Sets NGINX_PID (master).
start_nginx() { # NAME PORT UPSTREAM_PORT
	local name=$1 port=$2 up=$3 conf="$WORK/$1.conf" dir="$WORK/$1"
	bench_need nginx nginx-light
	NGINX=$(command -v nginx || echo /usr/sbin/nginx)
	mkdir -p "$dir"
	cat >"$conf" <<EOF
worker_processes auto;
worker_rlimit_nofile $(ulimit -Hn);
error_log $dir/error.log warn;
pid $dir/nginx.pid;
events { worker_connections 16384; multi_accept on; }
http {
  access_log off;
  client_body_temp_path $dir/body; proxy_temp_path $dir/proxy;
  fastcgi_temp_path $dir/fcgi; uwsgi_temp_path $dir/uwsgi; scgi_temp_path $dir/scgi;
  upstream mcp { server 127.0.0.1:$up; keepalive 128; }
  server {
    listen 127.0.0.1:$port reuseport backlog=4096;
    location / {
      proxy_pass http://mcp;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_buffering off;
      proxy_read_timeout 1h;
      proxy_send_timeout 1h;
    }
  }
}
EOF
	"$NGINX" -c "$conf" >"$WORK/$name.log" 2>&1 || { cat "$WORK/$name.log" >&2; bench_die "nginx did not start"; }
	NGINX_CONFS+=("$conf")
	for _ in $(seq 100); do [ -s "$dir/nginx.pid" ] && break; sleep 0.05; done
	NGINX_PID=$(cat "$dir/nginx.pid")
	bench_wait_port "$port" "$NGINX_PID" "$name"
}

# supergateway's closest topology to a Streamable HTTP -> Streamable HTTP
# proxy (README.md in this folder says why): a stateful stdio ->
# Streamable HTTP gateway whose per-session child is a Streamable HTTP ->
# stdio gateway to the upstream.
start_supergateway() { # NAME PORT UPSTREAM_PORT
	[ -f "$SG_JS" ] || bench_die "no supergateway in node_modules (npm ci)"
	bench_bg "$1" node "$SG_JS" --stdio "node $SG_JS --streamableHttp http://127.0.0.1:$3/mcp --logLevel none" \
		--outputTransport streamableHttp --stateful --port "$2" --streamableHttpPath /mcp --logLevel none
	bench_wait_port "$2" "$BG_PID" "$1"
}

# Sum of a /proc status field (VmHWM, VmRSS) over processes, in KiB.
bench_kib() { # FIELD PID...
	local f=$1 sum=0 v p
	shift
	for p in "$@"; do
		v=$(awk -v f="$f:" '$1 == f {print $2}' "/proc/$p/status" 2>/dev/null)
		sum=$((sum + ${v:-0}))
	done
	echo "$sum"
}

bench_tree_kib() { # FIELD PID
	# shellcheck disable=SC2046
	bench_kib "$1" $(bench_tree "$2")
}

MCP_HDRS=(-H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream'
	-H 'MCP-Protocol-Version: 2025-11-25')

# Open N sessions through URL as a client does: initialize,
# notifications/initialized, tools/list. Their ids go to FILE; 1 when one
# initialize gets no session id.
open_sessions() { # URL N FILE
	local url=$1 n=$2 file=$3 sid
	: >"$file"
	for _ in $(seq "$n"); do
		sid=$(curl -s -m 20 -D - -o /dev/null "${MCP_HDRS[@]}" "$url" -d \
			'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"mcpwarden-bench","version":"1.0.0"}}}' |
			tr -d '\r' | awk 'tolower($1) == "mcp-session-id:" {print $2}')
		[ -n "$sid" ] || { echo "initialize through $url gave no Mcp-Session-Id" >&2; return 1; }
		curl -s -m 20 -o /dev/null "${MCP_HDRS[@]}" -H "Mcp-Session-Id: $sid" "$url" \
			-d '{"jsonrpc":"2.0","method":"notifications/initialized"}'
		curl -s -m 20 -o /dev/null "${MCP_HDRS[@]}" -H "Mcp-Session-Id: $sid" "$url" \
			-d '{"jsonrpc":"2.0","id":2,"method":"tools/list"}'
		echo "$sid" >>"$file"
	done
}

# One request of VARIANT through URL with the first session of FILE;
# prints "ok" when the reply is the right one, else what came back.
check_reply() { # URL FILE VARIANT
	local sid body want
	sid=$(head -1 "$2")
	case $3 in
	json) body='{"jsonrpc":"2.0","id":424242,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}'
	      want='"id":424242,"result":{"content":[{"type":"text","text":"hello"}]}' ;;
	sse) body='{"jsonrpc":"2.0","id":424243,"method":"tools/call","params":{"name":"sse","arguments":{"message":"hi"}}}'
	     want='"id":424243,"result":{"content":[{"type":"text","text":"hello"}]}' ;;
	list) body='{"jsonrpc":"2.0","id":424244,"method":"tools/list"}'
	      want='"name":"tool_0999"' ;;
	esac
	local out
	out=$(curl -s -m 30 "${MCP_HDRS[@]}" -H "Mcp-Session-Id: $sid" "$1" -d "$body" | tr -d ' \n')
	want=$(echo "$want" | tr -d ' ')
	case $out in
	*"$want"*) echo ok ;;
	*) echo "${out:0:160}" ;;
	esac
}

# wrk's latency figure ("512.00us", "1.20ms", "2.00s") in microseconds.
bench_us() {
	awk -v v="$1" 'BEGIN {
		n = v + 0; u = v; sub(/^[0-9.]+/, "", u)
		if (u == "ms") n *= 1000; else if (u == "s") n *= 1000000; else if (u == "m") n *= 60000000
		printf "%.0f", n }'
}

# Run wrk with mcp.lua; prints "RPS P50_US P99_US REQUESTS ERRORS" where
# ERRORS is "-" or what wrk reported (non-2xx, socket errors).
run_wrk() { # URL SESSIONS VARIANT DURATION CONNS [LOGNAME]
	wrk_parse "$(wrk -t1 -c"$5" -d"$4" --timeout 10s --latency -s "$LUA" "$1" -- "$2" "$3" 2>&1)" "${6:-}"
}

# The same for COUNT requests: mcp.lua's thread stops after COUNT
# responses, but wrk's main thread sleeps out -d regardless, so once the
# upstream fixture (GET /stats) has seen them, wrk gets the SIGINT that
# makes it print its figures at once. MAX_SECONDS bounds the run.
run_wrk_count() { # URL SESSIONS VARIANT COUNT CONNS UPSTREAM_PORT MAX_SECONDS [LOGNAME]
	local out="$WORK/wrk-count.out" base cur wpid
	base=$(upstream_requests "$6")
	MCP_STOP_AFTER=$4 wrk -t1 -c"$5" -d"$7s" --timeout 10s --latency -s "$LUA" "$1" -- "$2" "$3" >"$out" 2>&1 &
	wpid=$!
	while kill -0 "$wpid" 2>/dev/null; do
		sleep 0.2
		cur=$(upstream_requests "$6")
		[ $((cur - base)) -ge "$4" ] && { sleep 0.2; kill -INT "$wpid" 2>/dev/null; break; }
	done
	wait "$wpid" || true
	wrk_parse "$(cat "$out")" "${8:-}"
}

upstream_requests() { # PORT
	curl -s -m 5 "http://127.0.0.1:$1/stats" | sed -n 's/.*"requests":\([0-9]*\).*/\1/p'
}

wrk_parse() { # WRK_OUTPUT [LOGNAME]
	local out=$1 rps p50 p99 reqs errs
	[ -n "${2:-}" ] && echo "$out" >>"$WORK/$2.wrk.log"
	rps=$(echo "$out" | awk '/^Requests\/sec/ {printf "%.0f", $2}')
	p50=$(bench_us "$(echo "$out" | awk '$1 == "50%" {print $2}')")
	p99=$(bench_us "$(echo "$out" | awk '$1 == "99%" {print $2}')")
	reqs=$(echo "$out" | awk '/requests in/ {print $1}')
	errs=$(echo "$out" | awk '/Non-2xx/ {printf "non-2xx:%s,", $NF}
		/Socket errors/ {gsub(/,/, ""); printf "socket-errors:connect=%s/read=%s/write=%s/timeout=%s,", $4, $6, $8, $10}' | sed 's/,$//')
	echo "${rps:-0} ${p50:-0} ${p99:-0} ${reqs:-0} ${errs:--}"
}

# The machine-readable figures (issue 20's targets block, targets.sh): one
# line per figure, PART SCENARIO TARGET METRIC VALUE, tab-separated, appended
# to BENCH_FIGURES (run.sh sets it to a file in its work directory; a part
# run alone writes $WORK/figures.tsv). The printed tables stay for people;
# this file is what targets.sh reads, so no figure is parsed back from text.
bench_figure() { # PART SCENARIO TARGET METRIC VALUE
	local v=${5//$'\t'/ }
	printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "${v//$'\n'/ }" >>"${BENCH_FIGURES:-$WORK/figures.tsv}"
}

# Median of numbers given as arguments.
bench_median() {
	printf '%s\n' "$@" | sort -n | awk '{a[NR] = $1} END { if (NR == 0) print 0; else if (NR % 2) print a[(NR + 1) / 2]; else printf "%.0f\n", (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}

fmt_us() {
	awk -v v="$1" 'BEGIN { s = v < 0 ? "-" : ""; a = v < 0 ? -v : v
		if (a >= 1000000) printf "%s%.2f s", s, a / 1000000; else if (a >= 10000) printf "%s%.1f ms", s, a / 1000; else if (a >= 1000) printf "%s%.2f ms", s, a / 1000
		else printf "%s%d us", s, a }'
}
fmt_int() { echo "$1" | sed ':a;s/\B[0-9]\{3\}\>/,&/;ta'; }
