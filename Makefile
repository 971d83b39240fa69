# Front door: `make run` and `make test` on a fresh Debian 12 machine.
BUILD ?= build
BUILD_TYPE ?= RelWithDebInfo
PLUGINS ?= plugins
HOST ?= 127.0.0.1
PORT ?= 8931
TEST_JOBS ?= 2
PREFIX ?= /usr/local

.PHONY: all deps configure build build-server test run run-stdio bench fuzz chaos flake memcheck soak install deb clean

all: build

deps:
	@sh scripts/deps.sh

configure: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) >/dev/null

# Quiet unless something fails.
build: configure
	@cmake --build $(BUILD) -j2 >$(BUILD)/build.log 2>&1 || { cat $(BUILD)/build.log; exit 1; }

build-server: configure
	@cmake --build $(BUILD) -j2 --target luamcp >$(BUILD)/build.log 2>&1 || { cat $(BUILD)/build.log; exit 1; }

test: build
	@cd $(BUILD) && ctest --output-on-failure -j$(TEST_JOBS)

run: build-server
	@echo "luamcp: serving $(PLUGINS)/ on http://$(HOST):$(PORT)/mcp, reloading on edits (Ctrl-C stops it)"
	@echo "  MCP Inspector:  npx @modelcontextprotocol/inspector  (transport: Streamable HTTP, URL http://$(HOST):$(PORT)/mcp)"
	@echo "  Claude Code:    claude mcp add --transport http luamcp http://$(HOST):$(PORT)/mcp"
	@echo "  stdio clients:  $(CURDIR)/$(BUILD)/luamcp --plugins $(CURDIR)/$(PLUGINS)"
	@echo "  console:        the URL luamcp prints below (\"console: http://...?token=...\")"
	@$(BUILD)/luamcp --plugins $(PLUGINS) --http $(HOST):$(PORT) --watch --console

run-stdio: build-server
	$(BUILD)/luamcp --plugins $(PLUGINS)

bench: build
	@sh bench/run.sh

# PREFIX (default /usr/local) and DESTDIR as usual; the tree may be moved later.
install: build-server
	@DESTDIR=$(DESTDIR) cmake --install $(BUILD) --prefix $(PREFIX)

# A Debian package in $(BUILD)/ (CPack; Depends from dpkg-shlibdeps).
deb: build-server
	@cd $(BUILD) && cpack -G DEB

# libFuzzer, with clang, in build-fuzz: each target for SECONDS (test/fuzz/README.md).
SECONDS ?= 60
fuzz: deps
	@sh scripts/fuzz.sh $(SECONDS) $(FUZZ)

# The chaos client (spec/chaos_spec.lua) for MINUTES (default 10) on $(BUILD)/luamcp;
# LUAMCP_SPEC_SEED=N replays a seed it printed.
MINUTES ?= 10
chaos: build-server
	@LUAMCP_BIN=$(CURDIR)/$(BUILD)/luamcp LUAMCP_CHAOS_SECONDS=$$(( $(MINUTES) * 60 )) \
	  lua5.4 $$(command -v busted) spec/chaos_spec.lua

# The whole spec suite RUNS times in a row on both builds (STRESS=1: under
# `stress -c 2`); failing runs' TAP output stays in $(BUILD)/flake/.
RUNS ?= 30
flake: build
	@sh scripts/flake.sh $(BUILD) $(RUNS)

# 10 million requests over stdio (one in ten cancelled), then over HTTP:
# RSS, fds and p99 per window (bench/README.md).
soak: build-server
	@BUILD=$(BUILD) sh bench/soak.sh

# valgrind memcheck: the C unit tests, then a spec subset (MEMCHECK_SPECS) with
# the server under valgrind; slow, so not part of `make test`.
memcheck: build
	@sh scripts/memcheck.sh $(BUILD)

clean:
	rm -rf $(BUILD)
