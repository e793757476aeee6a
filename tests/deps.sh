#!/bin/sh
# make deps: installs the Debian packages mcpwarden builds and tests with.
# As root it runs apt-get; otherwise it prints the exact command to run.
#   tests/deps.sh --preflight   what `make run` and `make test` call before
#     anything is built (issue 22): silent when everything is there, installs
#     as root (apt-get's output on stderr), and otherwise prints one line
#     naming the apt-get command on stdout (the Makefile stops with it).
set -eu
PKGS="gcc make pkg-config libevent-dev libjansson-dev libssl-dev node-llhttp libcmocka-dev libjemalloc-dev clang libclang-rt-14-dev valgrind openssl perl-base prometheus chromium nodejs npm json-schema-test-suite libtest-json-schema-acceptance-perl"
# issue 22 (w1): systemd-analyze verifies conf/mcpwarden.service; python3 is the
# NOTIFY_SOCKET peer of tests/integration/systemd.test.mjs.
PKGS="$PKGS systemd python3"
# issues 21 and 22: the package build (debhelper, lintian), the man-page lint
# (mandoc), the JUnit consumer (python3-junitparser).
PKGS="$PKGS debhelper lintian mandoc python3-junitparser"
# issue 23 (replicas): HAProxy in front of three replicas (tests/integration/replicas.test.mjs).
PKGS="$PKGS haproxy"
# issue 22 (ops): DEPS_EXTRA_PKGS adds names to the list, for a test that
# needs a package to be missing (tests/integration/setup.test.mjs).
PKGS="$PKGS ${DEPS_EXTRA_PKGS:-}"
preflight=0
[ "${1:-}" = --preflight ] && preflight=1
# One dpkg-query for the whole list (one per package cost over half a second).
installed=" $(dpkg-query -W -f='${Package}:${db:Status-Abbrev}\n' $PKGS 2>/dev/null |
	sed -n 's/^\([^:]*\):ii.*/\1/p' | tr '\n' ' ') "
missing=""
for p in $PKGS; do
	case "$installed" in *" $p "*) continue ;; esac
	# node and npm may come from elsewhere than Debian (e.g. nodesource):
	# what matters is that the commands exist.
	case "$p" in nodejs) command -v node >/dev/null 2>&1 && continue ;; npm) command -v npm >/dev/null 2>&1 && continue ;; esac
	missing="$missing $p"
done
if [ -z "$missing" ]; then
	[ $preflight = 1 ] || echo "deps: everything is installed"
	exit 0
fi
if [ "$(id -u)" != 0 ]; then
	if [ $preflight = 1 ]; then
		echo "deps: stopped before building: Debian packages are missing; as root run: apt-get install -y --no-install-recommends$missing"
		exit 1
	fi
	echo "deps: missing:$missing"
	echo "deps: run: sudo apt-get install -y$missing"
	exit 1
fi
echo "deps: installing:$missing" >&2
export DEBIAN_FRONTEND=noninteractive
if [ $preflight = 1 ]; then
	{ apt-get install -y --no-install-recommends $missing || { apt-get update && apt-get install -y --no-install-recommends $missing; }; } >&2 ||
		{ echo "deps: apt-get install -y --no-install-recommends$missing failed (see above)"; exit 1; }
	exit 0
fi
apt-get install -y --no-install-recommends $missing || { apt-get update && apt-get install -y --no-install-recommends $missing; }
