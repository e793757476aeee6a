#!/usr/bin/env bash
# table.sh: the side-by-side table (tests/bench/README.md).
#
# Up to eight targets in front of the same upstream fixture (build/bench/upstream,
# 1,000 tools): the upstream directly, the floor (build/bench/relay, a byte
# pump with one upstream connection per client connection: what any proxy
# must at least spend), nginx, mcpwarden with full
# inspection (the live contract's validation on, its default), the same
# with validation off (what validation costs), mcpwarden with inspection
# off; on request the same plus the capture file, and supergateway. For each
# scenario (tools/call answered as JSON, tools/call answered as SSE,
# tools/list of 1,000 tools, and "listvary": the same list from a second
# fixture started with --vary-list, so every listing differs, each target
# a second instance in front of it) every target gets DURATION seconds of
# `wrk -t1 -cCONNS` per round, ROUNDS rounds, targets interleaved within a
# round (each round runs every target once, the order rotated by one each
# round: A B C, then B C A) so machine drift hits all alike. Printed per target: requests/s, p50 and p99 (medians over the
# rounds), CPU time its own processes spent per request (user + system,
# median; for "direct", the fixture's), peak resident memory of its processes during that scenario,
# ratios to nginx and to direct, and every non-2xx reply or socket error.
# The same figures go to BENCH_FIGURES (lib.sh bench_figure) for the
# targets block (targets.sh).
#
#   DURATION=5 ROUNDS=3 CONNS=50 WARMUP=2 SG_SESSIONS=10 \
#   TARGETS="direct floor nginx mw-full mw-noval mw-off" SCENARIOS="json sse list listvary"
#   TARGETS="... mw-capture supergateway": the capture file and supergateway too
#   TARGETS="mw-old mw-full" MW_OLD_BIN=/path/to/old/mcpwarden: two builds side by side
set -euo pipefail
. "$(dirname "$0")/lib.sh"

# Defaults sized so `make bench` stays under 15 minutes (tests/bench/README.md):
# 6 targets x 4 scenarios x (2 + 3 x 5) s of wrk = 6.8 minutes of table.
DURATION=${DURATION:-5}
ROUNDS=${ROUNDS:-3}
CONNS=${CONNS:-50}
WARMUP=${WARMUP:-2}
SG_SESSIONS=${SG_SESSIONS:-10}
# mw-capture and supergateway are not in the default: no target of issue 20
# reads them, and supergateway's node children (1.5 GiB, 4 ms a call) would
# cost minutes and load the shared cores during the others' rounds.
TARGETS=${TARGETS:-direct floor nginx mw-full mw-noval mw-off}
SCENARIOS=${SCENARIOS:-json sse list listvary}
for s in $SCENARIOS; do
	case $s in json | sse | list | listvary) ;; *) bench_die "unknown scenario $s (json sse list listvary)" ;; esac
done

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
# listvary: a second fixture whose list changes on every request, and a
# second instance of every target in front of it (key "T.vary"), so the
# targets of the other scenarios keep an upstream whose list never changes.
VARY_UP='' VARY_PID=''
case " $SCENARIOS " in
*" listvary "*)
	VARY_UP=$(bench_free_port)
	start_upstream upstream-vary "$VARY_UP" --tools 1000 --vary-list
	VARY_PID=$BG_PID ;;
esac

# Start target T as instance KEY (T, or T.vary) in front of the fixture on
# UPORT (PID UPID).
start_target() { # T KEY UPORT UPID
	local t=$1 k=$2 up=$3 p
	p=$(bench_free_port)
	case $t in
	direct)
		PORT[$k]=$up ROOT[$k]=$4 NAME[$t]="upstream direct" ;;
	floor)
		bench_bg "$k" "$RELAY_BIN" --port "$p" --upstream "$up" --workers "$RELAY_WORKERS"
		bench_wait_port "$p" "$BG_PID" "$k"
		PORT[$k]=$p ROOT[$k]=$BG_PID NAME[$t]="relay floor (bytes only)" ;;
	nginx)
		start_nginx "$k" "$p" "$up"
		PORT[$k]=$p ROOT[$k]=$NGINX_PID NAME[$t]="nginx ($(($(bench_tree "$NGINX_PID" | wc -l) - 1)) workers)" ;;
	mw-full)
		mw_config "$WORK/$k.json" "$p" "$up" full "$(bench_free_port)"
		start_mcpwarden "$k" "$WORK/$k.json" "$p"
		PORT[$k]=$p ROOT[$k]=$BG_PID NAME[$t]="mcpwarden, full inspection" ;;
	mw-capture)
		# capture: full inspection plus the capture file (docs/capture.md),
		# redacted, rotated at 16 MiB with one old file kept (disk bounded).
		mw_config "$WORK/$k.json" "$p" "$up" full "$(bench_free_port)"
		sed -i "s|\"transport\": \"streamable_http\"|\"capture\": {\"path\": \"$WORK/capture-$k.jsonl\", \"max_bytes\": 16777216, \"keep\": 1}, \"transport\": \"streamable_http\"|" "$WORK/$k.json"
		"$MCPWARDEN" --check-config -c "$WORK/$k.json" >"$WORK/check-config.log" 2>&1 ||
			bench_die "mw-capture: this build has no capture ($(tail -1 "$WORK/check-config.log"))"
		start_mcpwarden "$k" "$WORK/$k.json" "$p"
		PORT[$k]=$p ROOT[$k]=$BG_PID NAME[$t]="mcpwarden, full inspection + capture file" ;;
	mw-old)
		# The same full inspection through another build (MW_OLD_BIN), so a
		# change's cost shows in one run beside the current binary.
		[ -x "${MW_OLD_BIN:-}" ] || bench_die "mw-old needs MW_OLD_BIN=<path of an mcpwarden binary>"
		mw_config "$WORK/$k.json" "$p" "$up" full "$(bench_free_port)"
		MCPWARDEN=$MW_OLD_BIN start_mcpwarden "$k" "$WORK/$k.json" "$p"
		PORT[$k]=$p ROOT[$k]=$BG_PID NAME[$t]="mcpwarden $(basename "$(dirname "$MW_OLD_BIN")"), full inspection" ;;
	mw-noval)
		mw_config "$WORK/$k.json" "$p" "$up" full-novalid "$(bench_free_port)"
		start_mcpwarden "$k" "$WORK/$k.json" "$p"
		PORT[$k]=$p ROOT[$k]=$BG_PID NAME[$t]="mcpwarden, full, validation off" ;;
	mw-off)
		mw_config "$WORK/$k.json" "$p" "$up" off
		start_mcpwarden "$k" "$WORK/$k.json" "$p"
		PORT[$k]=$p ROOT[$k]=$BG_PID NAME[$t]="mcpwarden, inspection off" ;;
	supergateway)
		start_supergateway "$k" "$p" "$up"
		PORT[$k]=$p ROOT[$k]=$BG_PID NAME[$t]="supergateway (2-hop chain)" ;;
	*) bench_die "unknown target $t" ;;
	esac
}

KEYS=
for t in $TARGETS; do start_target "$t" "$t" "$UP" "$UP_PID"; KEYS="$KEYS $t"; done
if [ -n "$VARY_UP" ]; then
	for t in $TARGETS; do start_target "$t" "$t.vary" "$VARY_UP" "$VARY_PID"; KEYS="$KEYS $t.vary"; done
fi
for k in $KEYS; do
	n=$CONNS
	[ "${k%.vary}" = supergateway ] && [ "$SG_SESSIONS" -lt "$n" ] && n=$SG_SESSIONS
	if ! open_sessions "http://127.0.0.1:${PORT[$k]}/mcp" "$n" "$WORK/sessions-$k" 2>"$WORK/sessions-$k.err"; then
		BROKEN[$k]="sessions failed: $(tail -1 "$WORK/sessions-$k.err")"
	fi
done

off_note="contract checker off"
[ "$(mw_contract_off_supported)" = 1 ] || off_note="contract checker still on (this build has no contract mode off)"
read -r -a TLIST <<<"$TARGETS"
echo "== side-by-side: wrk -t1 -c$CONNS, $ROUNDS rounds x ${DURATION}s per target (medians), warm-up ${WARMUP}s"
echo "   rounds interleave the targets, each round runs every target once, the order rotated by one:"
echo "   round 1: ${TLIST[*]}$([ "$ROUNDS" -gt 1 ] && [ ${#TLIST[@]} -gt 1 ] &&
	echo "; round 2: ${TLIST[*]:1} ${TLIST[0]}") (load drift hits all alike)"
echo "   $(nproc) cores shared by wrk, the upstream fixture and the proxy; loopback; $(date -u +%Y-%m-%dT%H:%MZ)"
echo "   mcpwarden: $(mw_workers_label); full inspection = contract (report) + policy (5 rules) + admin recording + call validation (report, where the build has it);"
echo "   inspection off = no policy, no admin, $off_note"
echo "   relay floor: $RELAY_WORKERS worker(s), one upstream connection per client connection, bytes relayed unparsed"
case " $TARGETS " in *" supergateway "*)
	echo "   supergateway: $SG_SESSIONS sessions shared by the $CONNS connections (one node child per session)" ;;
esac

# The size of the fixture's tools/list reply, asked of the fixture itself
# on a session of its own (so it does not depend on which targets run).
list_bytes() { # UPSTREAM_PORT
	local url="http://127.0.0.1:$1/mcp" f="$WORK/sessions-size-$1"
	[ -s "$f" ] || open_sessions "$url" 1 "$f" >/dev/null 2>&1 || { echo "?"; return; }
	fmt_int "$(curl -s -m 30 -o /dev/null -w '%{size_download}' "${MCP_HDRS[@]}" -H "Mcp-Session-Id: $(head -1 "$f")" \
		"$url" -d '{"jsonrpc":"2.0","id":1,"method":"tools/list"}')"
}

scenario_title() {
	case $1 in
	json) echo "tools/call, JSON reply" ;;
	sse) echo "tools/call, SSE reply (one event)" ;;
	list) echo "tools/list of 1,000 tools, unchanged ($(list_bytes "$UP") bytes)" ;;
	listvary) echo "tools/list of 1,000 tools, changing on every request (--vary-list, $(list_bytes "$VARY_UP") bytes)" ;;
	esac
}

run_scenario() { # SCENARIO
	local s=$1 t r i rps p50 p99 reqs errs c0 c1 sfx='' v=$1
	# listvary: the list variant of mcp.lua, through the targets' .vary instances.
	[ "$s" = listvary ] && sfx=.vary v=list
	declare -A R50 R99 RPS ERR HWM CPU
	for t in $TARGETS; do
		[ -n "${BROKEN[$t$sfx]:-}" ] && continue
		local chk
		chk=$(check_reply "http://127.0.0.1:${PORT[$t$sfx]}/mcp" "$WORK/sessions-$t$sfx" "$v")
		[ "$chk" = ok ] || ERR[$t]="WRONG REPLY: $chk; "
		run_wrk "http://127.0.0.1:${PORT[$t$sfx]}/mcp" "$WORK/sessions-$t$sfx" "$v" "${WARMUP}s" "$CONNS" warmup >/dev/null
		# Reset the peak resident size (VmHWM) so this scenario's peak shows.
		for p in $(bench_tree "${ROOT[$t$sfx]}"); do echo 5 >"/proc/$p/clear_refs" 2>/dev/null || true; done
	done
	local targets
	read -r -a targets <<<"$TARGETS"
	# Interleaved: round r runs every target once, starting at the r-th
	# (round 1: A B C, round 2: B C A, ...), so drift hits all alike.
	for r in $(seq "$ROUNDS"); do
		for i in $(seq 0 $((${#targets[@]} - 1))); do
			t=${targets[$(((i + r - 1) % ${#targets[@]}))]}
			[ -n "${BROKEN[$t$sfx]:-}" ] && continue
			c0=$(bench_cpu_ticks "${ROOT[$t$sfx]}")
			read -r rps p50 p99 reqs errs < <(run_wrk "http://127.0.0.1:${PORT[$t$sfx]}/mcp" "$WORK/sessions-$t$sfx" "$v" \
				"${DURATION}s" "$CONNS" "$t-$s")
			c1=$(bench_cpu_ticks "${ROOT[$t$sfx]}")
			RPS[$t]="${RPS[$t]:-} $rps" R50[$t]="${R50[$t]:-} $p50" R99[$t]="${R99[$t]:-} $p99"
			# CPU per request in tenths of a microsecond (median-able integers).
			CPU[$t]="${CPU[$t]:-} $(awk -v a="$c0" -v b="$c1" -v n="$reqs" -v hz="$CLK_TCK" \
				'BEGIN { printf "%.0f", (n > 0 ? (b - a) * 1e7 / hz / n : 0) }')"
			[ "$errs" = - ] || ERR[$t]="${ERR[$t]:-}round $r: $errs; "
		done
	done
	for t in $TARGETS; do
		[ -n "${BROKEN[$t$sfx]:-}" ] && continue
		HWM[$t]=$(bench_tree_kib VmHWM "${ROOT[$t$sfx]}")
		# shellcheck disable=SC2086
		RPS[$t]=$(bench_median ${RPS[$t]}) R50[$t]=$(bench_median ${R50[$t]}) R99[$t]=$(bench_median ${R99[$t]})
		# shellcheck disable=SC2086
		CPU[$t]=$(bench_median ${CPU[$t]})
		# For the targets block (targets.sh): the row as numbers.
		bench_figure table "$s" "$t" rps "${RPS[$t]}"
		bench_figure table "$s" "$t" p50_us "${R50[$t]}"
		bench_figure table "$s" "$t" p99_us "${R99[$t]}"
		bench_figure table "$s" "$t" cpu_us "$(awk -v v="${CPU[$t]}" 'BEGIN { printf "%.1f", v / 10 }')"
		bench_figure table "$s" "$t" hwm_kib "${HWM[$t]}"
		[ -z "${ERR[$t]:-}" ] || bench_figure table "$s" "$t" errors "${ERR[$t]}"
	done
	echo
	echo "-- $(scenario_title "$s")"
	printf '%-30s %9s %9s %9s %9s %10s %17s %9s  %s\n' target "req/s" p50 p99 "CPU/req" "peak RSS" "vs nginx req,p99" "vs direct" "errors"
	for t in $TARGETS; do
		if [ -n "${BROKEN[$t$sfx]:-}" ]; then
			printf '%-30s %s\n' "${NAME[$t]}" "not measured: ${BROKEN[$t$sfx]}"
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

bench_figure table - - conns "$CONNS"
for s in $SCENARIOS; do run_scenario "$s"; done
echo
echo "   per-round wrk output: BENCH_KEEP=1 keeps $WORK (*.wrk.log)"
