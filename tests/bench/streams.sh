#!/usr/bin/env bash
# streams.sh: STREAMS idle SSE streams through mcpwarden (full inspection),
# their memory, and how fast a pushed message crosses (build/bench/streams,
# tests/bench/README.md); then the same through nginx for reference.
#
#   STREAMS=10000 PUSHES=1000 STREAMS_NGINX=1
#
# 1,000 pushes: the p99 is then the tenth slowest push, not the second (with
# 100 it moved by a factor of four from run to run on this machine).
#
# Each stream costs the proxy two descriptors (client + upstream). When the
# hard RLIMIT_NOFILE does not allow 2*STREAMS plus a few, the run uses as
# many streams as fit and says so (raising a hard limit needs
# CAP_SYS_RESOURCE, which this sandbox lacks).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

STREAMS=${STREAMS:-10000}
PUSHES=${PUSHES:-1000}
STREAMS_NGINX=${STREAMS_NGINX:-1}

bench_init streams
hard=$(ulimit -Hn)
n=$STREAMS
if [ "$hard" != unlimited ] && [ $((2 * n + 40)) -gt "$hard" ]; then
	n=$(((hard - 40) / 2))
	echo "   note: RLIMIT_NOFILE hard limit is $hard here; a proxy holds 2 descriptors per stream," \
		"so $n streams instead of $STREAMS"
fi

UP=$(bench_free_port)
start_upstream upstream "$UP"
MW=$(bench_free_port)
max=$((n + 100))
mw_config "$WORK/mw.json" "$MW" "$UP" full "$(bench_free_port)" \
	"\"max_connections\": $max, \"max_connections_per_client\": $max, \"max_sessions\": $max"
start_mcpwarden mw "$WORK/mw.json" "$MW"
mw=$BG_PID

echo "== $n idle SSE streams, then $PUSHES pushes on random ones (mcpwarden: full inspection, $(mw_workers_label))"
rc=0
# shellcheck disable=SC2046
"$STREAMS_BIN" --port "$MW" --upstream-port "$UP" $(bench_tree "$mw" | sed 's/^/--pid /') \
	--streams "$n" --pushes "$PUSHES" --label mcpwarden | tee -a "$WORK/streams.out" || rc=1
kill "$mw" 2>/dev/null || true

if [ "$STREAMS_NGINX" = 1 ]; then
	NG=$(bench_free_port)
	start_nginx nginx "$NG" "$UP"
	echo "-- the same through nginx (reference)"
	# shellcheck disable=SC2046
	"$STREAMS_BIN" --port "$NG" --upstream-port "$UP" $(bench_tree "$NGINX_PID" | sed 's/^/--pid /') \
		--streams "$n" --pushes "$PUSHES" --label nginx | tee -a "$WORK/streams.out" || true
fi

# ---- figures for the targets block (issue 20; targets.sh) -------------------
# From the output above (streams.c's lines; a line it no longer prints is a
# figure missing, "not measured" in the block): per label, the streams
# open, KiB per open stream and the hop's p99 in ms.
awk '/^[a-z]+: [0-9]+ of [0-9]+ streams open/ { l = substr($1, 1, length($1) - 1); print l "\tstreams\t" $2 }
	l != "" && /^  per open stream/ { print l "\tkib_per_stream\t" $4 }
	l != "" && /^  upstream write -> client/ { for (i = 1; i < NF; i++) if ($i == "p99") print l "\thop_p99_ms\t" $(i + 1) }' \
	"$WORK/streams.out" | while IFS=$'\t' read -r label metric value; do
	bench_figure streams idle "$label" "$metric" "$value"
done
# ---- end of the figures block ----
exit $rc
