# csgi — thin wrapper around CMake (as neovim does). Every target installs what it needs first.
#   make run     install deps, build, serve the demo on http://127.0.0.1:5000/
#   make test    install deps, build, run every test (non-zero exit on any failure)
#   make bench   install deps, build, run the benchmarks, write bench/RESULTS.md
BUILD ?= build
BUILD_TYPE ?= RelWithDebInfo
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
CTEST_FLAGS ?=

.PHONY: all deps build run test test-asan test-reliability bench fuzz install clean format

all: build

deps:
	@scripts/install-deps.sh all

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_FLAGS)

build: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j$(JOBS)

run: deps build
	scripts/run-demo.sh $(BUILD)

test: deps build
	ctest --test-dir $(BUILD) --output-on-failure $(CTEST_FLAGS)

# The same suites built with AddressSanitizer + UndefinedBehaviorSanitizer in their own build tree.
test-asan: deps
	$(MAKE) test BUILD=build-asan BUILD_TYPE=Debug CMAKE_FLAGS="-DCSGI_SANITIZE=address,undefined -DCSGI_BUILD_BENCH=OFF"

bench: deps build
	scripts/bench.sh $(BUILD)

# The long reliability runs (fuzzing, bad-request corpus vs nginx, faults, hostile clients, scale-out).
test-reliability: deps build
	scripts/reliability.sh $(BUILD)

# libFuzzer targets (clang, ASan+UBSan) for FUZZ_SECONDS each (default 60).
fuzz: deps
	scripts/fuzz.sh

install: build
	cmake --install $(BUILD) --prefix $(or $(PREFIX),/usr/local)

format:
	git ls-files '*.cpp' '*.hpp' | xargs clang-format -i

clean:
	rm -rf $(BUILD) build-asan build-fuzz
