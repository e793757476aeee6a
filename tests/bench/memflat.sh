#!/usr/bin/env bash
# memflat.sh: mcpwarden's resident memory over MEM_REQUESTS tools/call
# (default 1,000,000) with full inspection (tests/bench/README.md).
#
# wrk has no request count, so mcp.lua stops its thread after
# MCP_STOP_AFTER responses (lib.sh run_wrk_count); the run goes in steps of
# MEM_STEP requests
# (the first one is the warm-up), VmRSS read after each, and wrk's -d is
# only the bound on a step. "Flat": no more growth after the warm-up than
# MEM_NOISE_KIB (default 1024 KiB) or 3% of the warm size, whichever is
# larger (allocator noise).
#
#   MEM_REQUESTS=1000000 MEM_STEP=100000 CONNS=50 VARIANT=json
set -euo pipefail
. "$(dirname "$0")/lib.sh"

MEM_REQUESTS=${MEM_REQUESTS:-1000000}
MEM_STEP=${MEM_STEP:-100000}
MEM_NOISE_KIB=${MEM_NOISE_KIB:-1024}
CONNS=${CONNS:-50}
VARIANT=${VARIANT:-json}

bench_init memflat
UP=$(bench_free_port)
start_upstream upstream "$UP" --tools 1000
MW=$(bench_free_port)
mw_config "$WORK/mw.json" "$MW" "$UP" full "$(bench_free_port)"
start_mcpwarden mw "$WORK/mw.json" "$MW"
mw=$BG_PID
URL="http://127.0.0.1:$MW/mcp"
open_sessions "$URL" "$CONNS" "$WORK/sessions" || bench_die "no sessions through mcpwarden"
[ "$(check_reply "$URL" "$WORK/sessions" "$VARIANT")" = ok ] || bench_die "wrong reply through mcpwarden"

rss() { bench_tree_kib VmRSS "$mw"; }
echo "== memory over $(fmt_int "$MEM_REQUESTS") tools/call ($VARIANT replies) through mcpwarden, full inspection,"
echo "   wrk -t1 -c$CONNS in steps of $(fmt_int "$MEM_STEP"); $(mw_workers_label)"
printf '   %12s %12s %10s %9s  %s\n' requests "VmRSS KiB" "req/s" p99 errors
start_kib=$(rss)
printf '   %12s %12s\n' 0 "$start_kib"
total=0 warm_kib='' errors=0
while [ "$total" -lt "$MEM_REQUESTS" ]; do
	want=$MEM_STEP
	[ $((MEM_REQUESTS - total)) -lt "$want" ] && want=$((MEM_REQUESTS - total))
	read -r rps _ p99 reqs errs < <(run_wrk_count "$URL" "$WORK/sessions" "$VARIANT" "$want" "$CONNS" "$UP" 300 steps)
	total=$((total + reqs))
	[ "$errs" = - ] || errors=1
	kib=$(rss)
	[ -z "$warm_kib" ] && warm_kib=$kib
	printf '   %12s %12s %10s %9s  %s%s\n' "$(fmt_int "$total")" "$kib" "$(fmt_int "$rps")" "$(fmt_us "$p99")" \
		"$errs" "$([ "$kib" = "$warm_kib" ] && [ "$total" -le "$reqs" ] && echo '   <- after the warm-up')"
	[ "$reqs" -gt 0 ] || bench_die "wrk made no progress"
done
end_kib=$(rss)
growth=$((end_kib - warm_kib))
limit=$((warm_kib * 3 / 100))
[ "$limit" -lt "$MEM_NOISE_KIB" ] && limit=$MEM_NOISE_KIB
verdict=flat
[ "$growth" -gt "$limit" ] && verdict="GROWING"
echo "   after the warm-up $warm_kib KiB, at the end $end_kib KiB: growth $growth KiB over" \
	"$(fmt_int $((total - MEM_STEP))) requests (noise allowance $limit KiB): $verdict" \
	"(peak $(bench_tree_kib VmHWM "$mw") KiB)"
[ "$verdict" = flat ] && [ "$errors" = 0 ]
