#!/usr/bin/env bash
# listcheck.sh: what the contract check adds to a tools/list reply of 1,000
# tools (tests/bench/README.md).
#
# mcpwarden with full inspection and the contract checker on (report mode)
# against the same configuration with "contract": {"mode": "off"}; single
# sequential requests on one connection (wrk -t1 -c1), LIST_DURATION
# seconds each, ROUNDS rounds interleaved; p50 and p99 (medians over the
# rounds) and their difference. Twice: with an upstream whose list never
# changes (what a proxy may recognise and skip), and with one whose list
# differs in one description every time (--vary-list: the check must run).
#
#   LIST_DURATION=10 ROUNDS=3
set -euo pipefail
. "$(dirname "$0")/lib.sh"

LIST_DURATION=${LIST_DURATION:-10}
ROUNDS=${ROUNDS:-3}

bench_init listcheck
if [ "$(mw_contract_off_supported)" != 1 ]; then
	echo "== list check cost: not measured: this mcpwarden has no contract mode off"
	exit 0
fi
declare -A PORT
for list in same vary; do
	up=$(bench_free_port)
	if [ $list = vary ]; then start_upstream "up-$list" "$up" --tools 1000 --vary-list
	else start_upstream "up-$list" "$up" --tools 1000; fi
	for c in on off; do
		p=$(bench_free_port)
		if [ $c = on ]; then mw_config "$WORK/$list-$c.json" "$p" "$up" full "$(bench_free_port)"
		else mw_config "$WORK/$list-$c.json" "$p" "$up" full-nocontract "$(bench_free_port)"; fi
		start_mcpwarden "mw-$list-$c" "$WORK/$list-$c.json" "$p"
		PORT[$list-$c]=$p
		open_sessions "http://127.0.0.1:$p/mcp" 1 "$WORK/sessions-$list-$c" ||
			bench_die "no session through mcpwarden ($list, contract $c)"
		[ "$(check_reply "http://127.0.0.1:$p/mcp" "$WORK/sessions-$list-$c" list)" = ok ] ||
			bench_die "wrong tools/list reply through mcpwarden ($list, contract $c)"
	done
done

echo "== list check cost: tools/list of 1,000 tools, one connection, sequential requests"
echo "   (wrk -t1 -c1), $ROUNDS rounds x ${LIST_DURATION}s each, medians; $(mw_workers_label)"
printf '   %-40s %9s %9s %9s  %s\n' "" "p50" "p99" "req/s" "errors"
declare -A P50 P99 RPS ERR
for r in $(seq "$ROUNDS"); do
	for k in same-on same-off vary-on vary-off; do
		read -r rps p50 p99 _ errs < <(run_wrk "http://127.0.0.1:${PORT[$k]}/mcp" "$WORK/sessions-$k" list \
			"${LIST_DURATION}s" 1 "$k")
		P50[$k]="${P50[$k]:-} $p50" P99[$k]="${P99[$k]:-} $p99" RPS[$k]="${RPS[$k]:-} $rps"
		[ "$errs" = - ] || ERR[$k]="${ERR[$k]:-}round $r: $errs; "
	done
done
for list in same vary; do
	for c in on off; do
		k=$list-$c
		# shellcheck disable=SC2086
		P50[$k]=$(bench_median ${P50[$k]}) P99[$k]=$(bench_median ${P99[$k]}) RPS[$k]=$(bench_median ${RPS[$k]})
		label="list $([ $list = same ] && echo unchanged || echo "changing  "), contract $c"
		printf '   %-40s %9s %9s %9s  %s\n' "$label" "$(fmt_us "${P50[$k]}")" "$(fmt_us "${P99[$k]}")" \
			"${RPS[$k]}" "${ERR[$k]:-none}"
	done
	d50=$((${P50[$list-on]} - ${P50[$list-off]})) d99=$((${P99[$list-on]} - ${P99[$list-off]}))
	printf '   %-40s %9s %9s   (target < 2 ms)\n' "  added by the check" "$(fmt_us $d50)" "$(fmt_us $d99)"
done
