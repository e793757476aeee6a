#!/usr/bin/env bash
# targets.sh: the "targets (issue 20)" block at the end of `make bench`
# (tests/bench/README.md): issue 20's targets, each with the ratio this
# run measured and "met", "missed by X" or "not measured" (its part did not
# run, or a target row is missing).
#
#   tests/bench/targets.sh FIGURES.tsv
#
# FIGURES.tsv is what the parts wrote through lib.sh bench_figure: lines of
# PART SCENARIO TARGET METRIC VALUE, tab-separated (table: rps, p50_us,
# p99_us, cpu_us, hwm_kib, errors per scenario and target, and conns;
# streams: kib_per_stream, hop_p99_ms, streams per label). A missing file
# reads as empty. A ratio is rounded to two decimals before it is compared,
# so the verdict agrees with the figure printed beside it. Exit status 0
# whatever the verdicts (a benchmark, not a test); 2 on bad usage.
set -euo pipefail
[ $# = 1 ] || { echo "usage: targets.sh FIGURES.tsv" >&2; exit 2; }
f=$1
[ -f "$f" ] || f=/dev/null

awk -F '\t' '
function key(p, s, t, m) { return p SUBSEP s SUBSEP t SUBSEP m }
function has(p, s, t, m) { return key(p, s, t, m) in F }
function get(p, s, t, m) { return F[key(p, s, t, m)] + 0 }
function r2(x) { return sprintf("%.2f", x) + 0 }
function thousands(n,    s) { s = sprintf("%d", n); while (s ~ /[0-9][0-9][0-9][0-9]/) sub(/[0-9][0-9][0-9]($|,)/, ",&", s); return s }
function out(label, measured, want, verdict) {
	printf "   %-62s %17s  %-11s %s\n", label, measured, want, verdict
	if (verdict ~ /^met/) met++
	else if (verdict ~ /^missed/) missed++
	else notm++
}
# Errors (non-2xx, socket errors, a wrong reply) in either row of a table
# comparison: the figures are printed, but the verdict says so.
function errnote(s, a, b) {
	return (has("table", s, a, "errors") || has("table", s, b, "errors")) ? " (errors in the table rows)" : ""
}
# Table metric of target A over nginx in scenario S, against BOUND; LE = 1
# for "at most", 0 for "at least".
function tratio(label, s, m, a, bound, le,    r, v) {
	if (!has("table", s, a, m) || !has("table", s, "nginx", m) || get("table", s, "nginx", m) <= 0) {
		out(label, "-", (le ? "<= " : ">= ") sprintf("%.2fx", bound), "not measured")
		return
	}
	r = r2(get("table", s, a, m) / get("table", s, "nginx", m))
	if (le) v = r <= bound ? "met" : sprintf("missed by %.2fx", r - bound)
	else v = r >= bound ? "met" : sprintf("missed by %.2fx", bound - r)
	out(label, sprintf("%.2fx", r), (le ? "<= " : ">= ") sprintf("%.2fx", bound), v errnote(s, a, "nginx"))
}
{ F[key($1, $2, $3, $4)] = $5 }
END {
	met = missed = notm = 0
	conns = has("table", "-", "-", "conns") ? get("table", "-", "-", "conns") : 50
	print "== targets (issue 20): this run'"'"'s figures against each target (nginx = 1.00x)"
	printf "   %-62s %17s  %-11s %s\n", "", "measured", "target", "verdict"
	split("json sse", sc, " ")
	for (i = 1; i <= 2; i++) {
		s = sc[i]; n = s == "json" ? "JSON" : "SSE"
		tratio("tools/call " n ", full inspection (mw-noval): CPU/req", s, "cpu_us", "mw-noval", 1.0, 1)
		tratio("tools/call " n ", full inspection (mw-noval): req/s", s, "rps", "mw-noval", 1.0, 0)
		tratio("tools/call " n ", full inspection (mw-noval): p99", s, "p99_us", "mw-noval", 1.0, 1)
	}
	for (i = 1; i <= 2; i++) {
		s = sc[i]; n = s == "json" ? "JSON" : "SSE"
		tratio("tools/call " n ", validation on (mw-full): CPU/req", s, "cpu_us", "mw-full", 1.1, 1)
	}
	tratio("tools/list 1,000 tools, unchanged (mw-full): CPU/list", "list", "cpu_us", "mw-full", 1.0, 1)
	tratio("tools/list 1,000 tools, changing (mw-full): CPU/list", "listvary", "cpu_us", "mw-full", 2.0, 1)
	tratio("tools/list unchanged, " conns " listing clients (mw-full): peak RSS", "list", "hwm_kib", "mw-full", 2.0, 1)
	tratio("tools/list changing, " conns " listing clients (mw-full): peak RSS", "listvary", "hwm_kib", "mw-full", 2.0, 1)

	ns = has("streams", "idle", "mcpwarden", "streams") ? get("streams", "idle", "mcpwarden", "streams") : 0
	lab = (ns ? thousands(ns) : "10,000") " idle SSE streams (mw-full): KiB per stream"
	if (has("streams", "idle", "mcpwarden", "kib_per_stream") && has("streams", "idle", "nginx", "kib_per_stream") &&
	    get("streams", "idle", "nginx", "kib_per_stream") > 0) {
		a = get("streams", "idle", "mcpwarden", "kib_per_stream"); b = get("streams", "idle", "nginx", "kib_per_stream")
		out(lab, sprintf("%.2f / %.2f KiB", a, b), "<= nginx",
		    sprintf("%.2f", a) + 0 <= sprintf("%.2f", b) + 0 ? "met" : sprintf("missed by %.2f KiB (%.2fx)", a - b, r2(a / b)))
	} else out(lab, "-", "<= nginx", "not measured")
	lab = "a pushed message, upstream write -> client (mw-full): hop p99"
	if (has("streams", "idle", "mcpwarden", "hop_p99_ms")) {
		a = sprintf("%.3f", get("streams", "idle", "mcpwarden", "hop_p99_ms")) + 0
		out(lab, sprintf("%.3f ms", a), "<= 0.16 ms", a <= 0.16 ? "met" : sprintf("missed by %.3f ms", a - 0.16))
	} else out(lab, "-", "<= 0.16 ms", "not measured")

	# The floor row: measured in every table scenario that ran.
	ran = rows = 0; miss = ""
	for (k in F) {
		split(k, q, SUBSEP)
		if (q[1] == "table" && q[4] == "rps" && !(q[2] in seen)) { seen[q[2]] = 1; ran++ }
	}
	for (s in seen) { if (has("table", s, "floor", "rps")) rows++; else miss = miss " " s }
	if (!ran) out("a floor row in the table (build/bench/relay)", "-", "present", "not measured")
	else out("a floor row in the table (build/bench/relay)", rows " of " ran " scenarios", "present",
	         rows == ran ? "met" : "missed: no floor row in" miss)
	printf "   %d met, %d missed, %d not measured\n", met, missed, notm
}' "$f"
