#!/usr/bin/env bash
# table.sh: the side-by-side table (tests/bench/README.md).
#
# Seven targets in front of the same upstream fixture (build/bench/upstream,
# 1,000 tools): the upstream directly, the floor (build/bench/relay, a byte
# pump with one upstream connection per client connection: what any proxy
# must at least spend), nginx, mcpwarden with full
# inspection (the live contract's validation on, its default), the same
# with validation off (what validation costs), mcpwarden with inspection
# off, supergateway. For each
# scenario (tools/call answered as JSON, tools/call answered as SSE,
# tools/list of 1,000 tools) every target gets DURATION seconds of
# `wrk -t1 -cCONNS` per round, ROUNDS rounds, targets interleaved within a
# round (and their order rotated each round) so machine drift hits all
# alike. Printed per target: requests/s, p50 and p99 (medians over the
# rounds), CPU time its own processes spent per request (user + system,
# median; for "direct", the fixture's), peak resident memory of its processes during that scenario,
# ratios to nginx and to direct, and every non-2xx reply or socket error.
#
#   DURATION=10 ROUNDS=3 CONNS=50 WARMUP=2 SG_SESSIONS=10 \
#   TARGETS="direct floor nginx mw-full mw-capture mw-noval mw-off supergateway" SCENARIOS="json sse list"
#   TARGETS="mw-old mw-full" MW_OLD_BIN=/path/to/old/mcpwarden: two builds side by side
set -euo pipefail
. "$(dirname "$0")/lib.sh"

DURATION=${DURATION:-10}
ROUNDS=${ROUNDS:-3}
CONNS=${CONNS:-50}
WARMUP=${WARMUP:-2}
SG_SESSIONS=${SG_SESSIONS:-10}
TARGETS=${TARGETS:-direct floor nginx mw-full mw-capture mw-noval mw-off supergateway}
SCENARIOS=${SCENARIOS:-json sse list}

bench_init table
RELAY_BIN=$HERE/$BUILD/bench/relay
[ -x "$RELAY_BIN" ] || bench_die "no $RELAY_BIN (make bench-build)"
# The floor gets as many workers as mcpwarden has event loops, so the two
# can use the cores alike.
RELAY_WORKERS=$(mw_workers_args)
RELAY_WORKERS=${RELAY_WORKERS#--workers }
RELAY_WORKERS=${RELAY_WORKERS:-1}
declare -A PORT ROOT NAME BROKEN

UP=$(bench_free_port)
start_upstream upstream "$UP" --tools 1000
UP_PID=$BG_PID

start_target() { # T
	local t=$1 p
	p=$(bench_free_port)
	case $t in
	direct)
		PORT[$t]=$UP ROOT[$t]=$UP_PID NAME[$t]="upstream direct" ;;
	floor)
		bench_bg floor "$RELAY_BIN" --port "$p" --upstream "$UP" --workers "$RELAY_WORKERS"
		bench_wait_port "$p" "$BG_PID" floor
		PORT[$t]=$p ROOT[$t]=$BG_PID NAME[$t]="relay floor (bytes only)" ;;
	nginx)
		start_nginx nginx "$p" "$UP"
		PORT[$t]=$p ROOT[$t]=$NGINX_PID NAME[$t]="nginx ($(($(bench_tree "$NGINX_PID" | wc -l) - 1)) workers)" ;;
	mw-full)
		mw_config "$WORK/mw-full.json" "$p" "$UP" full "$(bench_free_port)"
		start_mcpwarden mw-full "$WORK/mw-full.json" "$p"
		PORT[$t]=$p ROOT[$t]=$BG_PID NAME[$t]="mcpwarden, full inspection" ;;
	mw-capture)
		# capture: full inspection plus the capture file (docs/capture.md),
		# redacted, rotated at 16 MiB with one old file kept (disk bounded).
		mw_config "$WORK/mw-capture.json" "$p" "$UP" full "$(bench_free_port)"
		sed -i "s|\"transport\": \"streamable_http\"|\"capture\": {\"path\": \"$WORK/capture.jsonl\", \"max_bytes\": 16777216, \"keep\": 1}, \"transport\": \"streamable_http\"|" "$WORK/mw-capture.json"
		"$MCPWARDEN" --check-config -c "$WORK/mw-capture.json" >"$WORK/check-config.log" 2>&1 ||
			bench_die "mw-capture: this build has no capture ($(tail -1 "$WORK/check-config.log"))"
		start_mcpwarden mw-capture "$WORK/mw-capture.json" "$p"
		PORT[$t]=$p ROOT[$t]=$BG_PID NAME[$t]="mcpwarden, full inspection + capture file" ;;
	mw-old)
		# The same full inspection through another build (MW_OLD_BIN), so a
		# change's cost shows in one run beside the current binary.
		[ -x "${MW_OLD_BIN:-}" ] || bench_die "mw-old needs MW_OLD_BIN=<path of an mcpwarden binary>"
		mw_config "$WORK/mw-old.json" "$p" "$UP" full "$(bench_free_port)"
		MCPWARDEN=$MW_OLD_BIN start_mcpwarden mw-old "$WORK/mw-old.json" "$p"
		PORT[$t]=$p ROOT[$t]=$BG_PID NAME[$t]="mcpwarden $(basename "$(dirname "$MW_OLD_BIN")"), full inspection" ;;
	mw-noval)
		mw_config "$WORK/mw-noval.json" "$p" "$UP" full-novalid "$(bench_free_port)"
		start_mcpwarden mw-noval "$WORK/mw-noval.json" "$p"
		PORT[$t]=$p ROOT[$t]=$BG_PID NAME[$t]="mcpwarden, full, validation off" ;;
	mw-off)
		mw_config "$WORK/mw-off.json" "$p" "$UP" off
		start_mcpwarden mw-off "$WORK/mw-off.json" "$p"
		PORT[$t]=$p ROOT[$t]=$BG_PID NAME[$t]="mcpwarden, inspection off" ;;
	supergateway)
		start_supergateway supergateway "$p" "$UP"
		PORT[$t]=$p ROOT[$t]=$BG_PID NAME[$t]="supergateway (2-hop chain)" ;;
	*) bench_die "unknown target $t" ;;
	esac
}

for t in $TARGETS; do start_target "$t"; done
for t in $TARGETS; do
	n=$CONNS
	[ "$t" = supergateway ] && [ "$SG_SESSIONS" -lt "$n" ] && n=$SG_SESSIONS
	if ! open_sessions "http://127.0.0.1:${PORT[$t]}/mcp" "$n" "$WORK/sessions-$t" 2>"$WORK/sessions-$t.err"; then
		BROKEN[$t]="sessions failed: $(tail -1 "$WORK/sessions-$t.err")"
	fi
done

off_note="contract checker off"
[ "$(mw_contract_off_supported)" = 1 ] || off_note="contract checker still on (this build has no contract mode off)"
echo "== side-by-side: wrk -t1 -c$CONNS, $ROUNDS rounds x ${DURATION}s per target (medians), warm-up ${WARMUP}s"
echo "   $(nproc) cores shared by wrk, the upstream fixture and the proxy; loopback; $(date -u +%Y-%m-%dT%H:%MZ)"
echo "   mcpwarden: $(mw_workers_label); full inspection = contract (report) + policy (5 rules) + admin recording + call validation (report, where the build has it);"
echo "   inspection off = no policy, no admin, $off_note"
echo "   relay floor: $RELAY_WORKERS worker(s), one upstream connection per client connection, bytes relayed unparsed"
echo "   supergateway: $SG_SESSIONS sessions shared by the $CONNS connections (one node child per session)"

scenario_title() {
	case $1 in
	json) echo "tools/call, JSON reply" ;;
	sse) echo "tools/call, SSE reply (one event)" ;;
	list) echo "tools/list of 1,000 tools ($(curl -s -o /dev/null -w '%{size_download}' "${MCP_HDRS[@]}" \
		-H "Mcp-Session-Id: $(head -1 "$WORK/sessions-direct" 2>/dev/null)" "http://127.0.0.1:$UP/mcp" \
		-d '{"jsonrpc":"2.0","id":1,"method":"tools/list"}') bytes)" ;;
	esac
}

run_scenario() { # SCENARIO
	local s=$1 t r i rps p50 p99 reqs errs c0 c1
	declare -A R50 R99 RPS ERR HWM CPU
	for t in $TARGETS; do
		[ -n "${BROKEN[$t]:-}" ] && continue
		local chk
		chk=$(check_reply "http://127.0.0.1:${PORT[$t]}/mcp" "$WORK/sessions-$t" "$s")
		[ "$chk" = ok ] || ERR[$t]="WRONG REPLY: $chk; "
		run_wrk "http://127.0.0.1:${PORT[$t]}/mcp" "$WORK/sessions-$t" "$s" "${WARMUP}s" "$CONNS" warmup >/dev/null
		# Reset the peak resident size (VmHWM) so this scenario's peak shows.
		for p in $(bench_tree "${ROOT[$t]}"); do echo 5 >"/proc/$p/clear_refs" 2>/dev/null || true; done
	done
	local targets
	read -r -a targets <<<"$TARGETS"
	for r in $(seq "$ROUNDS"); do
		for i in $(seq 0 $((${#targets[@]} - 1))); do
			t=${targets[$(((i + r - 1) % ${#targets[@]}))]}
			[ -n "${BROKEN[$t]:-}" ] && continue
			c0=$(bench_cpu_ticks "${ROOT[$t]}")
			read -r rps p50 p99 reqs errs < <(run_wrk "http://127.0.0.1:${PORT[$t]}/mcp" "$WORK/sessions-$t" "$s" \
				"${DURATION}s" "$CONNS" "$t-$s")
			c1=$(bench_cpu_ticks "${ROOT[$t]}")
			RPS[$t]="${RPS[$t]:-} $rps" R50[$t]="${R50[$t]:-} $p50" R99[$t]="${R99[$t]:-} $p99"
			# CPU per request in tenths of a microsecond (median-able integers).
			CPU[$t]="${CPU[$t]:-} $(awk -v a="$c0" -v b="$c1" -v n="$reqs" -v hz="$CLK_TCK" \
				'BEGIN { printf "%.0f", (n > 0 ? (b - a) * 1e7 / hz / n : 0) }')"
			[ "$errs" = - ] || ERR[$t]="${ERR[$t]:-}round $r: $errs; "
		done
	done
	for t in $TARGETS; do
		[ -n "${BROKEN[$t]:-}" ] && continue
		HWM[$t]=$(bench_tree_kib VmHWM "${ROOT[$t]}")
		# shellcheck disable=SC2086
		RPS[$t]=$(bench_median ${RPS[$t]}) R50[$t]=$(bench_median ${R50[$t]}) R99[$t]=$(bench_median ${R99[$t]})
		# shellcheck disable=SC2086
		CPU[$t]=$(bench_median ${CPU[$t]})
	done
	echo
	echo "-- $(scenario_title "$s")"
	printf '%-30s %9s %9s %9s %9s %10s %17s %9s  %s\n' target "req/s" p50 p99 "CPU/req" "peak RSS" "vs nginx req,p99" "vs direct" "errors"
	for t in $TARGETS; do
		if [ -n "${BROKEN[$t]:-}" ]; then
			printf '%-30s %s\n' "${NAME[$t]}" "not measured: ${BROKEN[$t]}"
			continue
		fi
		local vn=- vd=-
		[ -n "${RPS[nginx]:-}" ] && [ "${RPS[nginx]}" != 0 ] &&
			vn=$(awk -v a="${RPS[$t]}" -v b="${RPS[nginx]}" -v c="${R99[$t]}" -v d="${R99[nginx]}" \
				'BEGIN { printf "%.2fx, %.2fx", a / b, (d > 0 ? c / d : 0) }')
		[ -n "${RPS[direct]:-}" ] && [ "${RPS[direct]}" != 0 ] &&
			vd=$(awk -v a="${RPS[$t]}" -v b="${RPS[direct]}" 'BEGIN { printf "%.2fx", a / b }')
		printf '%-30s %9s %9s %9s %9s %10s %17s %9s  %s\n' "${NAME[$t]}" "$(fmt_int "${RPS[$t]}")" \
			"$(fmt_us "${R50[$t]}")" "$(fmt_us "${R99[$t]}")" \
			"$(awk -v v="${CPU[$t]}" 'BEGIN { printf "%.1f us", v / 10 }')" \
			"$(awk -v k="${HWM[$t]}" 'BEGIN { printf "%.1f MiB", k / 1024 }')" "$vn" "$vd" "${ERR[$t]:-none}"
	done
}

for s in $SCENARIOS; do run_scenario "$s"; done
echo
echo "   per-round wrk output: BENCH_KEEP=1 keeps $WORK (*.wrk.log)"
