#!/usr/bin/env bash
# run.sh: `make bench`, the whole benchmark suite (tests/bench/README.md):
#
#   table      table.sh      side by side: upstream direct, the floor relay,
#                            nginx, mcpwarden (full inspection, validation
#                            off, inspection off); JSON replies, SSE
#                            replies, a 1,000-tool list unchanged and
#                            changing on every request (listvary)
#   streams    streams.sh    10,000 idle SSE streams: memory per stream,
#                            latency of a pushed message (nginx for reference)
#   listcheck  listcheck.sh  what the contract check adds to a 1,000-tool list
#   memory     memflat.sh    resident memory over 1,000,000 tools/call
#   upstreams  upstreams.sh  (issue 23) start-up, memory, /readyz, /metrics,
#                            admin page at 1, 100, 1,000 upstreams; memory
#                            per session and per stream
#   syscalls   syscalls.sh   on request only (PARTS=syscalls): system calls
#                            per tools/call under load, mcpwarden and nginx
#
# Then the "targets (issue 20)" block (targets.sh): each target with this
# run's ratio and met / missed by X / not measured, from the figures the
# parts wrote to BENCH_FIGURES (a TSV in this run's work directory).
#
#   PARTS="table streams listcheck memory upstreams" DURATION=5 ROUNDS=3 CONNS=50 make bench
#
# Loopback only; each part starts its own processes and ends them (by PID)
# on exit; each part is bounded by PART_TIMEOUT seconds (default 1500).
# Exit status: 0, or 1 when a part failed or reported a broken run (streams
# that did not open or stay open, memory that grew, a part that could not
# start); the figures are a benchmark, not a test: missing a target is
# printed, not failed.
set -uo pipefail
dir=$(cd "$(dirname "$0")" && pwd)
PARTS=${PARTS:-table streams listcheck memory upstreams} # upstreams: issue 23
PART_TIMEOUT=${PART_TIMEOUT:-1500}
here=$(cd "$dir/../.." && pwd)
# The parts' figures, machine-readable (lib.sh bench_figure), for the
# targets block at the end (targets.sh); kept with BENCH_KEEP=1.
RUN_WORK=$(mktemp -d /tmp/mcpwarden-bench-run.XXXXXX)
export BENCH_FIGURES=$RUN_WORK/figures.tsv
: >"$BENCH_FIGURES"
trap '[ -n "${BENCH_KEEP:-}" ] || rm -rf "$RUN_WORK"' EXIT

echo "mcpwarden benchmark, $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -n): $(nproc) cores," \
	"load $(cut -d' ' -f1-3 /proc/loadavg), $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo)"
echo "  $("$here/mcpwarden" --version 2>/dev/null), $(wrk --version 2>&1 | head -1 | cut -d' ' -f1-2)," \
	"$( (nginx -v || /usr/sbin/nginx -v) 2>&1 | head -1 | sed 's/.*: //'), node $(node --version 2>/dev/null)," \
	"supergateway $(node -p 'require(process.argv[1]).version' "$here/node_modules/supergateway/package.json" 2>/dev/null || echo missing)"
echo "  the machine is shared: figures move between runs; compare the ratios within one run"
echo

failed=
run_t0=$(date +%s)
for part in $PARTS; do
	case $part in
	table) script=table.sh ;;
	streams) script=streams.sh ;;
	listcheck) script=listcheck.sh ;;
	memory) script=memflat.sh ;;
	upstreams) script=upstreams.sh ;; # the fleet's cost (issue 23)
	syscalls) script=syscalls.sh ;;
	*) echo "bench: unknown part $part (table streams listcheck memory upstreams syscalls)" >&2; exit 2 ;;
	esac
	t0=$(date +%s)
	timeout -s TERM "$PART_TIMEOUT" bash "$dir/$script"
	rc=$?
	echo "   ($part: $(($(date +%s) - t0)) s$([ $rc = 0 ] || echo ", exit status $rc"))"
	echo
	[ $rc = 0 ] || failed="$failed $part"
done
total=$(($(date +%s) - run_t0))
bash "$dir/targets.sh" "$BENCH_FIGURES"
echo "   (bench: $((total / 60)) min $((total % 60)) s$([ -n "${BENCH_KEEP:-}" ] && echo "; figures in $BENCH_FIGURES"))"
echo
if [ -n "$failed" ]; then
	echo "bench: parts that failed or reported a broken run:$failed"
	exit 1
fi
