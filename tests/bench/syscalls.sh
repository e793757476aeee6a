#!/usr/bin/env bash
# syscalls.sh: system calls per tools/call under load, mcpwarden (full
# inspection) against nginx (tests/bench/README.md; not in the default
# PARTS: `PARTS=syscalls make bench`).
#
# Both in front of the same upstream fixture; wrk -t1 -cCONNS with a
# session per connection (mcp.lua), JSON replies. For each target, after a
# WARMUP-second warm-up, perf counts the raw_syscalls:sys_enter tracepoint
# on the target's processes (every thread; nginx: its workers) for
# SC_DURATION seconds while wrk runs as long: the calls divided by the
# requests wrk completed in that time. ROUNDS rounds, targets interleaved,
# medians. It says whether a difference in CPU per request (the table) is
# the kernel's (more calls) or the proxy's own code.
#
#   SC_DURATION=4 ROUNDS=3 CONNS=50 WARMUP=2
set -euo pipefail
. "$(dirname "$0")/lib.sh"

SC_DURATION=${SC_DURATION:-4}
ROUNDS=${ROUNDS:-3}
CONNS=${CONNS:-50}
WARMUP=${WARMUP:-2}

bench_init syscalls
bench_need perf linux-perf
bench_need bc bc
UP=$(bench_free_port)
start_upstream upstream "$UP"
MW=$(bench_free_port)
mw_config "$WORK/mw.json" "$MW" "$UP" full "$(bench_free_port)"
start_mcpwarden mw "$WORK/mw.json" "$MW"
mw=$BG_PID
NG=$(bench_free_port)
start_nginx nginx "$NG" "$UP"

declare -A PORT=([mw-full]=$MW [nginx]=$NG)
for t in nginx mw-full; do
	open_sessions "http://127.0.0.1:${PORT[$t]}/mcp" "$CONNS" "$WORK/sessions-$t" ||
		bench_die "no sessions through $t"
	[ "$(check_reply "http://127.0.0.1:${PORT[$t]}/mcp" "$WORK/sessions-$t" json)" = ok ] ||
		bench_die "wrong tools/call reply through $t"
done

pids_of() { # TARGET: comma-separated, for perf -p
	if [ "$1" = nginx ]; then pgrep -f "nginx: worker" | paste -sd, -
	else echo "$mw"; fi
}

echo "== system calls per tools/call (JSON replies), wrk -t1 -c$CONNS, $ROUNDS rounds x ${SC_DURATION}s (medians)"
declare -A PER
for r in $(seq "$ROUNDS"); do
	order="nginx mw-full"
	[ $((r % 2)) = 0 ] && order="mw-full nginx"
	for t in $order; do
		url="http://127.0.0.1:${PORT[$t]}/mcp"
		run_wrk "$url" "$WORK/sessions-$t" json "${WARMUP}s" "$CONNS" >/dev/null
		perf stat -x, -e raw_syscalls:sys_enter -p "$(pids_of "$t")" -o "$WORK/perf-$t-$r" \
			-- sleep "$SC_DURATION" &
		sp=$!
		out=$(wrk -t1 -c"$CONNS" -d"${SC_DURATION}s" --timeout 10s -s "$LUA" "$url" -- \
			"$WORK/sessions-$t" json 2>&1)
		wait "$sp"
		reqs=$(echo "$out" | awk '/requests in/ {print $1}')
		calls=$(awk -F, '/raw_syscalls/ {print $1}' "$WORK/perf-$t-$r")
		[ -n "$reqs" ] && [ "$reqs" -gt 0 ] && [ -n "$calls" ] ||
			bench_die "no figures for $t (wrk: $(echo "$out" | tail -1))"
		PER[$t]="${PER[$t]:-} $(echo "scale=3; $calls / $reqs" | bc)"
	done
done
for t in nginx mw-full; do
	med=$(echo "${PER[$t]}" | tr ' ' '\n' | sed '/^$/d' | sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}')
	printf '   %-28s %6s syscalls/request   (rounds:%s)\n' "$t" "$med" "${PER[$t]}"
done
