# Front door: `make run` and `make test` on a fresh Debian 12 machine.
BUILD ?= build
BUILD_TYPE ?= RelWithDebInfo
PLUGINS ?= plugins

.PHONY: all deps build test run bench clean

all: build

deps:
	@sh scripts/deps.sh

build: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) >/dev/null
	@cmake --build $(BUILD) -j2

test: build
	@cd $(BUILD) && ctest --output-on-failure

run: build
	$(BUILD)/luamcp --plugins $(PLUGINS)

bench: build
	@sh bench/run.sh

clean:
	rm -rf $(BUILD)
