# mcpwarden: plain Makefile (see ../shared/STYLE.md §4).
#   make            build ./mcpwarden (objects under build/)
#   make deps       install missing Debian packages (apt-get)
#   make run        build, then start mcpwarden in front of the bundled demo upstream
#   make test       unit + fuzz-corpus replay + integration tests
#   make unit | fuzz | fuzz-run | integration | asan | bench | clean

CC        ?= cc
BUILD     ?= build
PKGS      := libevent libevent_openssl jansson openssl
LLHTTP_INC ?= /usr/share/include/llhttp
LLHTTP_SRC ?= /usr/share/llhttp

WARN      := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wcast-qual
OPT       ?= -O2 -g
CFLAGS    ?=
CFLAGS    += -std=c11 -D_GNU_SOURCE $(OPT) $(WARN) -MMD -MP \
             -I. -I$(LLHTTP_INC) $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
LDLIBS    += $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lm

# Every module but main goes into one archive shared by the binary, the unit
# tests and the fuzz drivers.
MAIN_SRC  := proxy/main.c
LIB_SRC   := $(filter-out $(MAIN_SRC),$(wildcard proxy/*.c policy/*.c checks/*.c admin/*.c))
# The admin page is embedded with the assembler's .incbin (admin/page_asset.S).
ASM_SRC   := $(wildcard admin/*.S)
LIB_OBJ   := $(LIB_SRC:%.c=$(BUILD)/%.o) $(ASM_SRC:%.S=$(BUILD)/%.o)
LLHTTP_OBJ := $(BUILD)/llhttp/api.o $(BUILD)/llhttp/http.o $(BUILD)/llhttp/llhttp.o
LIB       := $(BUILD)/libmcpwarden.a

UNIT_SRC  := $(wildcard tests/unit/test_*.c)
UNIT_BIN  := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
FUZZ_SRC  := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BIN  := $(FUZZ_SRC:tests/fuzz/%.c=$(BUILD)/fuzz/%)

.PHONY: all deps run test unit fuzz fuzz-run integration asan bench clean
BIN ?= mcpwarden
all: $(BIN)

$(BIN): $(BUILD)/$(MAIN_SRC:.c=.o) $(LIB) $(LLHTTP_OBJ)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

$(LIB): $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c -o $@ $<

$(BUILD)/%.o: %.S
	@mkdir -p $(dir $@)
	$(CC) -c -o $@ $<

$(BUILD)/admin/page_asset.o: admin/page.html

# llhttp's C sources come from Debian's node-llhttp package, never from this
# repository. They are generated code: build them without our warning set.
$(BUILD)/llhttp/%.o: $(LLHTTP_SRC)/%.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 $(OPT) -I$(LLHTTP_INC) -c -o $@ $<

# ---- tests ---------------------------------------------------------------
$(BUILD)/tests/%: tests/unit/%.c $(LIB) $(LLHTTP_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< $(LIB) $(LLHTTP_OBJ) $(LDLIBS) -lcmocka

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

# libFuzzer proper: make fuzz-run FUZZ=sse SECONDS=60
FUZZ    ?= sse
SECONDS ?= 30
fuzz-run:
	$(MAKE) BUILD=build/libfuzzer CC=clang OPT="-O1 -g -fsanitize=fuzzer-no-link,address,undefined" $(LIB) build/libfuzzer/llhttp/api.o build/libfuzzer/llhttp/http.o build/libfuzzer/llhttp/llhttp.o
	clang -std=c11 -D_GNU_SOURCE -O1 -g -fsanitize=fuzzer,address,undefined -I. -I$(LLHTTP_INC) \
	  $(shell pkg-config --cflags $(PKGS)) -o build/libfuzzer/fuzz_$(FUZZ) tests/fuzz/fuzz_$(FUZZ).c \
	  build/libfuzzer/libmcpwarden.a build/libfuzzer/llhttp/*.o $(LDLIBS)
	mkdir -p build/libfuzzer/corpus-$(FUZZ)
	build/libfuzzer/fuzz_$(FUZZ) -max_total_time=$(SECONDS) build/libfuzzer/corpus-$(FUZZ) tests/fuzz/corpus/$(FUZZ)

node_modules/.package-lock.json: package.json package-lock.json
	npm ci --no-audit --no-fund
	@touch $@

integration: $(BIN) node_modules/.package-lock.json
	MCPWARDEN_BIN=$(abspath $(BIN)) node --test --test-concurrency=1 tests/integration/

test: $(BIN) unit fuzz integration

# Unit tests, corpus replays and the integration suite under ASan+UBSan
# (the sanitized binary is build/asan/mcpwarden; ./mcpwarden is untouched).
ASAN_OPT := -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
asan:
	$(MAKE) BUILD=build/asan BIN=build/asan/mcpwarden OPT="$(ASAN_OPT)" unit fuzz integration

bench: $(BIN)
	tests/bench/run.sh

run: $(BIN) node_modules/.package-lock.json
	tests/demo/run.sh

deps:
	@tests/deps.sh

clean:
	rm -rf build mcpwarden

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
