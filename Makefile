# mcpwarden: plain Makefile (see ../shared/STYLE.md §4).
#   make            build ./mcpwarden (objects under build/)
#   make deps       install missing Debian packages (apt-get)
#   make run        build, then start mcpwarden in front of the bundled demo upstream
#   make test       layers + unit + fuzz-corpus replay + integration tests
#   make unit | fuzz | fuzz-run | integration | asan | tsan | valgrind | perf-guard | bench | bench-streams | clean
#   make perf-baseline  re-measure tests/perf/baseline.txt (a deliberate, committed change)

CC        ?= cc
BUILD     ?= build
PKGS      := libevent libevent_openssl jansson openssl
LLHTTP_INC ?= /usr/share/include/llhttp
LLHTTP_SRC ?= /usr/share/llhttp

# ---- deps preflight (issue 22): two commands on a fresh machine -----------
# `make run` and `make test` first make sure the Debian packages are there
# (tests/deps.sh --preflight: installs them as root; as anyone else stops
# here, before anything is compiled, with the apt-get line to run). It runs
# while the Makefile is read, so nothing can start before it, and only in
# the top-level make: the sub-makes of asan, tsan and fuzz-run skip it. The
# npm packages come from package-lock.json (node_modules/.package-lock.json,
# a prerequisite of both). About 15 ms when everything is installed.
ifeq ($(MAKELEVEL),0)
ifneq ($(filter run test,$(MAKECMDGOALS)),)
DEPS_PREFLIGHT := $(shell tests/deps.sh --preflight)
ifneq ($(DEPS_PREFLIGHT),)
$(error $(DEPS_PREFLIGHT))
endif
endif
endif

WARN      := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wcast-qual
OPT       ?= -O3 -g
CFLAGS    ?=
CFLAGS    += -std=c11 -D_GNU_SOURCE $(OPT) $(WARN) -MMD -MP \
             -I. -I$(LLHTTP_INC) $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
LDLIBS    += $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lm -pthread

# Every module but main goes into one archive shared by the binary, the unit
# tests and the fuzz drivers.
MAIN_SRC  := proxy/main.c
LIB_SRC   := $(filter-out $(MAIN_SRC),$(wildcard proxy/*.c proxy/*/*.c policy/*.c checks/*.c admin/*.c))
# The admin page is embedded with the assembler's .incbin (admin/page_asset.S).
ASM_SRC   := $(wildcard admin/*.S)
# replay: the read-only policy preset, embedded the same way (proxy/cli/replay_preset.S).
ASM_SRC   += proxy/cli/replay_preset.S
LIB_OBJ   := $(LIB_SRC:%.c=$(BUILD)/%.o) $(ASM_SRC:%.S=$(BUILD)/%.o)
LLHTTP_OBJ := $(BUILD)/llhttp/api.o $(BUILD)/llhttp/http.o $(BUILD)/llhttp/llhttp.o
LIB       := $(BUILD)/libmcpwarden.a

# Unit tests mirror the tree (tests/unit/README.md): tests/unit/net/test_loop.c
# builds to build/tests/net/test_loop. A flat tests/unit/test_*.c is still
# accepted (build/tests/test_x) until it is moved into its folder.
UNIT_SRC  := $(wildcard tests/unit/test_*.c tests/unit/*/test_*.c)
UNIT_BIN  := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
UNIT_HELP := $(BUILD)/tests/unit/helpers.o
FUZZ_SRC  := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BIN  := $(FUZZ_SRC:tests/fuzz/%.c=$(BUILD)/fuzz/%)

.PHONY: all deps run test layers unit fuzz fuzz-run integration asan tsan valgrind perf-guard perf-baseline bench bench-build bench-streams clean
BIN ?= mcpwarden
all: $(BIN)

# The proxy allocates and frees per message on every worker thread: glibc's
# malloc spent ~14% of its cycles there (perf), jemalloc's thread caches far
# less. Only the binary links it; sanitizer builds keep their own allocator.
MALLOC_LIB ?= -ljemalloc
$(BIN): $(BUILD)/$(MAIN_SRC:.c=.o) $(LIB) $(LLHTTP_OBJ)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS) $(MALLOC_LIB)

$(LIB): $(LIB_OBJ)
	@rm -f $@
	$(AR) rcs $@ $^

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c -o $@ $<

$(BUILD)/%.o: %.S
	@mkdir -p $(dir $@)
	$(CC) -c -o $@ $<

$(BUILD)/admin/page_asset.o: admin/page.html
$(BUILD)/proxy/cli/replay_preset.o: conf/policy-read-only.json  # replay

# ---- version (issue 22): `mcpwarden --version` -----------------------------
# From git (tags, else the commit, -dirty for local edits); without git a
# VERSION file; else 0.2.0-unknown. Only proxy/base/version.o gets the
# define, and it depends on a stamp rewritten only when the string changes,
# so a new commit (or a first edit) rebuilds that one object and relinks.
# Without a tag, describe gives a bare hash: it is put after VERSION_BASE
# (0.2.0-g1a2b3c4), so the version starts with a number, as consumers of
# the SARIF output (driver.version) and packagers expect.
VERSION_BASE ?= 0.2.0
MCPWARDEN_VERSION := $(or $(shell git describe --tags --dirty 2>/dev/null),$(addprefix $(VERSION_BASE)-g,$(shell git describe --always --dirty 2>/dev/null)),$(shell cat VERSION 2>/dev/null),$(VERSION_BASE)-unknown)
VERSION_STAMP := $(BUILD)/version.stamp
$(BUILD)/proxy/base/version.o: CFLAGS += -DMCPWARDEN_VERSION='"$(MCPWARDEN_VERSION)"'
$(BUILD)/proxy/base/version.o: $(VERSION_STAMP)
$(VERSION_STAMP): FORCE
	@mkdir -p $(dir $@)
	@echo '$(MCPWARDEN_VERSION)' | cmp -s - $@ || echo '$(MCPWARDEN_VERSION)' >$@
.PHONY: FORCE
FORCE:

# llhttp's C sources come from Debian's node-llhttp package, never from this
# repository. They are generated code: build them without our warning set.
$(BUILD)/llhttp/%.o: $(LLHTTP_SRC)/%.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 $(OPT) -I$(LLHTTP_INC) -c -o $@ $<

# ---- tests ---------------------------------------------------------------
# The include directions between the folders (README.md "Layout"): any
# include the table forbids, and any include circle, fails. The self-test
# first shows that a planted violation is found.
layers:
	node tests/layers/layers.mjs --self-test
	node tests/layers/layers.mjs

# Every unit test links the shared test helpers (tests/unit/helpers.h).
$(BUILD)/tests/%: tests/unit/%.c $(UNIT_HELP) $(LIB) $(LLHTTP_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(UNIT_HELP) $(LIB) $(LLHTTP_OBJ) $(LDLIBS) -lcmocka

unit: $(UNIT_BIN)
	@set -e; for t in $(UNIT_BIN); do echo "== $$t"; $$t; done

# Each fuzz target also links a standalone driver that replays its corpus, so
# `make test` exercises every parser on every checked-in input without clang.
$(BUILD)/fuzz/%: tests/fuzz/%.c tests/fuzz/replay.c $(LIB) $(LLHTTP_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< tests/fuzz/replay.c $(LIB) $(LLHTTP_OBJ) $(LDLIBS)

fuzz: $(FUZZ_BIN)
	@set -e; for f in $(FUZZ_BIN); do n=$${f##*/fuzz_}; \
	  echo "== $$f (corpus tests/fuzz/corpus/$$n)"; $$f tests/fuzz/corpus/$$n; done

# libFuzzer proper (clang): every target, or FUZZ=sse, for SECONDS each.
# New inputs go to build/libfuzzer/corpus-<target>, never into the repo;
# a crash leaves its input in build/libfuzzer/ and fails the run.
#   make fuzz-run SECONDS=60 [FUZZ=http_request]
FUZZ    ?= $(FUZZ_SRC:tests/fuzz/fuzz_%.c=%)
SECONDS ?= 30
FZ      := build/libfuzzer
fuzz-run:
	$(MAKE) BUILD=$(FZ) CC=clang OPT="-O1 -g -fsanitize=fuzzer-no-link,address,undefined" \
	  $(FZ)/libmcpwarden.a $(FZ)/llhttp/api.o $(FZ)/llhttp/http.o $(FZ)/llhttp/llhttp.o
	@set -e; for t in $(FUZZ); do \
	  clang -std=c11 -D_GNU_SOURCE -O1 -g -fsanitize=fuzzer,address,undefined -I. -I$(LLHTTP_INC) \
	    $$(pkg-config --cflags $(PKGS)) -o $(FZ)/fuzz_$$t tests/fuzz/fuzz_$$t.c \
	    $(FZ)/libmcpwarden.a $(FZ)/llhttp/*.o $(LDLIBS); \
	  mkdir -p $(FZ)/corpus-$$t; \
	  dict=; case $$t in http_*) dict=-dict=$(abspath tests/fuzz/http.dict);; esac; \
	  echo "== fuzz_$$t for $(SECONDS) s"; \
	  rc=0; (cd $(FZ) && ./fuzz_$$t $$dict -max_total_time=$(SECONDS) -timeout=10 -rss_limit_mb=2048 \
	    -print_final_stats=1 corpus-$$t ../../tests/fuzz/corpus/$$t >fuzz_$$t.log 2>&1) || rc=$$?; \
	  grep -E "stat::number_of_executed_units|stat::peak_rss|DONE" $(FZ)/fuzz_$$t.log | tail -3; \
	  if [ $$rc != 0 ]; then tail -40 $(FZ)/fuzz_$$t.log; exit $$rc; fi; \
	done

node_modules/.package-lock.json: package.json package-lock.json
	npm ci --no-audit --no-fund
	@touch $@

INTEGRATION_FILES ?= tests/integration/
integration: $(BIN) node_modules/.package-lock.json
	MCPWARDEN_BIN=$(abspath $(BIN)) node --test --test-concurrency=1 $(INTEGRATION_FILES)

# The ajv differential's C side (tests/integration/jschema-differential.test.mjs):
# tests/unit/checks/jschema_cli.c, built by the unit-test rule above.
integration: $(BUILD)/tests/checks/jschema_cli

# ---- man pages (issue 22): mdoc sources in man/, installed as they are ----
# Any warning of mandoc's linter fails (style notes below warnings pass).
MAN_PAGES := $(wildcard man/*.[1-8])
.PHONY: man-lint
man-lint:
	mandoc -T lint -W warning $(MAN_PAGES)
	@echo "man-lint: $(words $(MAN_PAGES)) pages clean"

# Everything CI runs: plain build and tests, the same under ASan+UBSan,
# the unit tests under valgrind, and each fuzz target for a short while.
test: node_modules/.package-lock.json layers man-lint $(BIN) bench-build unit fuzz integration asan tsan valgrind perf-guard
	$(MAKE) fuzz-run SECONDS=$(FUZZ_TEST_SECONDS)
FUZZ_TEST_SECONDS ?= 10

# Unit tests, corpus replays and the integration suite under ASan+UBSan
# (the sanitized binary is build/asan/mcpwarden; ./mcpwarden is untouched).
# Reports go to build/asan/logs; any file there fails the run, so a leak
# reported when a proxy under test exits cannot go unnoticed.
ASAN_OPT := -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
ASAN_LOGS := $(abspath build/asan/logs)
# The package test builds and installs the plain tree (never the sanitized
# binary) and the setup test runs make in a copy: under asan they would
# only repeat the first pass, at two minutes, so they run once.
ASAN_INTEGRATION := $(filter-out tests/integration/package.test.mjs tests/integration/setup.test.mjs,\
                    $(wildcard tests/integration/*.test.mjs))
asan:
	@rm -rf $(ASAN_LOGS) && mkdir -p $(ASAN_LOGS)
	ASAN_OPTIONS=log_path=$(ASAN_LOGS)/asan:detect_leaks=1 UBSAN_OPTIONS=log_path=$(ASAN_LOGS)/ubsan:print_stacktrace=1 \
	  $(MAKE) BUILD=build/asan BIN=build/asan/mcpwarden OPT="$(ASAN_OPT)" MALLOC_LIB= \
	    INTEGRATION_FILES="$(ASAN_INTEGRATION)" unit fuzz integration
	@if [ -n "$$(ls -A $(ASAN_LOGS))" ]; then echo "sanitizer reports:"; head -50 $(ASAN_LOGS)/*; exit 1; fi
	@echo "asan: no sanitizer reports"

# The multi-worker paths under ThreadSanitizer (clang): the unit tests of
# the inbox, the session ids, the policy hook (workers judging while a
# writer lists tools and reloads), the recorder's outboxes, the jansson
# arena and the listings the workers share, and the integration files that cross
# threads (workers, legacy sessions handed between workers, shared caps
# and policy reload) with a TSan build; any report fails, like asan.
# Timing-bound tests (admin flood, slowloris) stay out: TSan slows
# everything tenfold.
TSAN_OPT := -O1 -g -fsanitize=thread
TSAN_LOGS := $(abspath build/tsan/logs)
TSAN_TESTS := workers translate sesslimit policy
TSAN_UNITS := net/test_inbox mcp/test_sessid mcp/test_sesslimit policy/test_policy hooks/test_hook_record_fast \
              base/test_jarena mcp/test_listings
# jansson's reference counts (tests/tsan.supp says why).
TSAN_RUN_OPTIONS := log_path=$(TSAN_LOGS)/tsan:halt_on_error=0:suppressions=$(abspath tests/tsan.supp)
# live baselines (issue 21): accepts and SIGHUP commits while a worker lists
TSAN_UNITS += hooks/test_hook_contract
tsan: node_modules/.package-lock.json
	@rm -rf $(TSAN_LOGS) && mkdir -p $(TSAN_LOGS)
	$(MAKE) BUILD=build/tsan BIN=build/tsan/mcpwarden CC=clang OPT="$(TSAN_OPT)" MALLOC_LIB= \
	  build/tsan/mcpwarden $(TSAN_UNITS:%=build/tsan/tests/%)
	@set -e; for t in $(TSAN_UNITS); do \
	  TSAN_OPTIONS=$(TSAN_RUN_OPTIONS) build/tsan/tests/$$t; done
	TSAN_OPTIONS=$(TSAN_RUN_OPTIONS) MCPWARDEN_BIN=$(abspath build/tsan/mcpwarden) \
	  node --test --test-concurrency=1 $(TSAN_TESTS:%=tests/integration/%.test.mjs)
	@if [ -n "$$(ls -A $(TSAN_LOGS))" ]; then echo "thread sanitizer reports:"; head -80 $(TSAN_LOGS)/*; exit 1; fi
	@echo "tsan: no thread sanitizer reports"

# The C unit tests under valgrind's memcheck: any error or leak fails.
valgrind: $(UNIT_BIN)
	@set -e; for t in $(UNIT_BIN); do echo "== valgrind $$t"; \
	  valgrind -q --leak-check=full --errors-for-leak-kinds=definite,indirect,possible \
	    --error-exitcode=1 $$t >/dev/null; done; echo "valgrind: clean"

# The instruction-count regression guard (tests/perf/README.md): callgrind
# counts the instructions per proxied tools/call with full inspection on; more
# than 10% over tests/perf/baseline.txt fails, and so does a failed
# measurement. The self-test first shows that the guard can fail.
PERF_ENV := MCPWARDEN_BIN=$(abspath $(BIN)) PERF_BUILD="CC=$(CC) OPT=$(OPT)" CC="$(CC)"
perf-guard: $(BIN)
	$(PERF_ENV) node tests/perf/guard.mjs --self-test
	$(PERF_ENV) node tests/perf/guard.mjs

perf-baseline: $(BIN)
	$(PERF_ENV) node tests/perf/guard.mjs --baseline

# ---- benchmarks (tests/bench/README.md) ------------------------------------
# `make test` only builds these programs (they must compile warning-free);
# `make bench` runs the suite (about 13 minutes): the side-by-side table
# (floor relay, nginx, mcpwarden; JSON, SSE, a 1,000-tool list unchanged
# and changing), then the streams, list-check, 1,000,000-request memory and
# upstreams runs, and ends with issue 20's targets block (tests/bench/
# targets.sh: each target's measured ratio, met / missed by X / not
# measured). Knobs: DURATION, ROUNDS, CONNS, TARGETS, SCENARIOS, STREAMS,
# PUSHES, MEM_REQUESTS, PARTS (see tests/bench/README.md).
BENCH_BIN := $(BUILD)/bench/upstream $(BUILD)/bench/streams $(BUILD)/bench/relay
$(BUILD)/bench/%: tests/bench/%.c tests/bench/benchnet.c proxy/base/hash.c $(LLHTTP_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< tests/bench/benchnet.c proxy/base/hash.c $(LLHTTP_OBJ) $(LDLIBS)

# The programs that time one module alone link the library, like the unit
# tests; built by make test too, so an interface change cannot leave them
# behind (contract_time did once).
BENCH_LIB_BIN := $(BUILD)/bench/contract_time $(BUILD)/bench/jschema_time
$(BUILD)/bench/contract_time $(BUILD)/bench/jschema_time: $(BUILD)/bench/%: tests/bench/%.c $(LIB) $(LLHTTP_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(LIB) $(LLHTTP_OBJ) $(LDLIBS)

bench-build: $(BENCH_BIN) $(BENCH_LIB_BIN)

bench: $(BIN) $(BENCH_BIN) node_modules/.package-lock.json
	tests/bench/run.sh

bench-streams: $(BIN) $(BENCH_BIN)
	PARTS=streams tests/bench/run.sh

# ---- install, uninstall, deb (issue 22, items 2 and 3) ---------------------
#   make install [PREFIX=/usr/local] [DESTDIR=]   make uninstall (same variables)
#   make deb      a Debian package (debian/), built out of a copy of the tree in
#                 build/deb/src; the .deb lands in build/deb/
# The man pages and example configs are wildcards: whatever man/*.[15] and
# conf/examples/*.json hold. The unit's ExecStart follows BINDIR; its config
# path stays /etc/mcpwarden/mcpwarden.json (the package's conffile).
.PHONY: install uninstall deb deb-lint
PREFIX     ?= /usr/local
BINDIR     ?= $(PREFIX)/bin
MANDIR     ?= $(PREFIX)/share/man
DATADIR    ?= $(PREFIX)/share/mcpwarden
DOCDIR     ?= $(PREFIX)/share/doc/mcpwarden
UNITDIR    ?= $(PREFIX)/lib/systemd/system
INST_MAN   := $(wildcard man/*.[15])
INST_EX    := $(wildcard conf/examples/*.json) conf/policy-read-only.json conf/mcpwarden.logrotate
INST_DATA  := conf/mcpwarden.schema.json conf/mcpwarden-policy.schema.json
# Running many replicas (issue 23): the HAProxy front and the Prometheus rules.
INST_FLEET := conf/haproxy/mcpwarden.cfg conf/haproxy/README.md \
              conf/prometheus/mcpwarden-rules.yml conf/prometheus/prometheus.yml
D          := $(DESTDIR)
install: $(BIN)
	install -d $(D)$(BINDIR) $(D)$(DATADIR) $(D)$(DOCDIR)/examples $(D)$(UNITDIR)
	install -m 0755 $(BIN) $(D)$(BINDIR)/mcpwarden
	@set -e; for m in $(INST_MAN); do s=$${m##*.}; \
	  echo "install -m 0644 $$m $(D)$(MANDIR)/man$$s/"; \
	  install -d $(D)$(MANDIR)/man$$s; install -m 0644 $$m $(D)$(MANDIR)/man$$s/; done
	install -m 0644 $(INST_DATA) $(D)$(DATADIR)/
	install -m 0644 $(INST_EX) $(D)$(DOCDIR)/examples/
	@set -e; for f in $(INST_FLEET); do d=$(D)$(DOCDIR)/examples/$$(basename $$(dirname $$f)); \
	  echo "install -m 0644 $$f $$d/"; install -d $$d; install -m 0644 $$f $$d/; done
	sed 's|^ExecStart=/usr/bin/mcpwarden |ExecStart=$(BINDIR)/mcpwarden |' conf/mcpwarden.service \
	  >$(D)$(UNITDIR)/mcpwarden.service && chmod 0644 $(D)$(UNITDIR)/mcpwarden.service

# Removes what install put there; DATADIR and DOCDIR are mcpwarden's own.
uninstall:
	rm -f $(D)$(BINDIR)/mcpwarden $(D)$(UNITDIR)/mcpwarden.service
	@set -e; for m in $(notdir $(INST_MAN)); do s=$${m##*.}; \
	  echo "rm -f $(D)$(MANDIR)/man$$s/$$m"; rm -f $(D)$(MANDIR)/man$$s/$$m; done
	rm -rf $(D)$(DATADIR) $(D)$(DOCDIR)

# Debian version: a tag (v0.3.0 -> 0.3.0; 2 commits later -> 0.3.0+git2.g1a2b3c4),
# else 0.2.0~git<commit date>.<hash> (before 0.2.0, which sorts above it).
# The same string goes into the binary (MCPWARDEN_VERSION, debian/rules).
DEB_DIR    := build/deb
DEB_BASE   ?= $(VERSION_BASE)
DEB_DESC    = $(shell git describe --tags 2>/dev/null)
DEB_VERSION ?= $(shell d='$(DEB_DESC)'; \
  if [ -n "$$d" ]; then echo "$$d" | sed -E 's/^v//; s/-([0-9]+)-(g[0-9a-f]+)$$/+git\1.\2/'; \
  elif h=$$(git rev-parse --short HEAD 2>/dev/null); then \
    echo "$(DEB_BASE)~git$$(git log -1 --format=%cd --date=format:%Y%m%d).$$h"; \
  else echo "$(DEB_BASE)~unknown"; fi)
DEB_DATE   ?= $(shell date -R -u -d @$$(git log -1 --format=%ct 2>/dev/null || date +%s))
deb:
	rm -rf $(DEB_DIR) && mkdir -p $(DEB_DIR)/src
	tar -c --exclude=./build --exclude=./node_modules --exclude=./.git --exclude=./mcpwarden . \
	  | tar -x -C $(DEB_DIR)/src
	echo '$(DEB_VERSION)' >$(DEB_DIR)/src/VERSION
	sed -i -e '1s/(.*)/($(DEB_VERSION))/' -e '0,/^ -- /s/>  .*/>  $(DEB_DATE)/' $(DEB_DIR)/src/debian/changelog
	cd $(DEB_DIR)/src && dpkg-buildpackage --no-sign -b -jauto
	@ls $(DEB_DIR)/*.deb

# lintian on the package just built (make deb first); any warning or error fails.
deb-lint:
	lintian --fail-on error,warning --info $(DEB_DIR)/mcpwarden_*.deb

# make run ADMIN=127.0.0.1:9191 (or ADMIN_PORT=9191): the admin address (issue 22).
run: $(BIN) node_modules/.package-lock.json
	ADMIN='$(ADMIN)' ADMIN_PORT='$(ADMIN_PORT)' tests/demo/run.sh

deps:
	@tests/deps.sh

clean:
	rm -rf build mcpwarden

# (make deb, issue 22: its copy of the tree in build/deb has directories
# named *.d (etc/logrotate.d) and dependency files of its own: not ours.)
-include $(shell find $(BUILD) -name '*.d' -type f -not -path 'build/deb/*' 2>/dev/null)
