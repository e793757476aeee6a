#!/bin/sh
# make deps: installs the Debian packages mcpwarden builds and tests with.
# As root it runs apt-get; otherwise it prints the exact command to run.
set -eu
PKGS="gcc make pkg-config libevent-dev libjansson-dev libssl-dev node-llhttp libcmocka-dev libjemalloc-dev clang libclang-rt-14-dev valgrind openssl perl-base prometheus chromium nodejs npm json-schema-test-suite libtest-json-schema-acceptance-perl"
# issue 22 (w1): systemd-analyze verifies conf/mcpwarden.service; python3 is the
# NOTIFY_SOCKET peer of tests/integration/systemd.test.mjs.
PKGS="$PKGS systemd python3"
# issues 21 and 22: the package build (debhelper, lintian), the man-page lint
# (mandoc), the JUnit consumer (python3-junitparser).
PKGS="$PKGS debhelper lintian mandoc python3-junitparser"
missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || {
		# node and npm may come from elsewhere than Debian (e.g. nodesource):
		# what matters is that the commands exist.
		case "$p" in nodejs) command -v node >/dev/null 2>&1 && continue ;; npm) command -v npm >/dev/null 2>&1 && continue ;; esac
		missing="$missing $p"
	}
done
if [ -z "$missing" ]; then
	echo "deps: everything is installed"
	exit 0
fi
if [ "$(id -u)" != 0 ]; then
	echo "deps: missing:$missing"
	echo "deps: run: sudo apt-get install -y$missing"
	exit 1
fi
echo "deps: installing:$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get install -y --no-install-recommends $missing || { apt-get update && apt-get install -y --no-install-recommends $missing; }
