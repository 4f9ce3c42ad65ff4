# csgi — thin wrapper around CMake (as neovim does). Every target installs what it needs first.
#   make run     install what the csgi program needs, build it, serve the demo on http://127.0.0.1:5000/
#   make deb     build the Debian package csgi_<version>_<arch>.deb
#   make test    install deps, build, run every test (non-zero exit on any failure)
#   make bench   install deps, build, run the benchmarks, write bench/RESULTS.md
BUILD ?= build
BUILD_TYPE ?= RelWithDebInfo
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
CTEST_FLAGS ?=

.PHONY: all deps deps-run deps-deb build-run build run deb test test-asan test-tsan test-reliability bench fuzz install clean format

all: build

# Everything the build, the tests and the benchmarks use (CI: .ci/run). `make run` installs only the
# packages of the csgi program and the demo (scripts/install-deps.sh run).
deps:
	@scripts/install-deps.sh all

deps-run:
	@scripts/install-deps.sh run

# The tree `make run` configures has no test suites nor benchmarks (their packages may be missing);
# `make build` turns them on in it.
CONFIGURE = cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE)
build:
	@grep -qx 'CSGI_BUILD_TESTS:BOOL=ON' $(BUILD)/CMakeCache.txt 2>/dev/null && \
	  grep -qx 'CSGI_BUILD_BENCH:BOOL=ON' $(BUILD)/CMakeCache.txt || \
	  $(CONFIGURE) -DCSGI_BUILD_TESTS=ON -DCSGI_BUILD_BENCH=ON $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j$(JOBS)

# The demo is the csgi program alone (scripts/run-demo.sh): no test suites, fuzzers or other programs,
# line tables only for debug information (-g1 compiles a unit in about two thirds of -g's time; a
# stack the server logs still has its lines), and its libraries compiled in batches (CSGI_UNITY_BUILD).
RUN_FLAGS = -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG"
build-run:
	@test -f $(BUILD)/CMakeCache.txt || $(CONFIGURE) -DCSGI_BUILD_TESTS=OFF -DCSGI_BUILD_BENCH=OFF $(RUN_FLAGS) -DCSGI_UNITY_BUILD=ON $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j$(JOBS) --target csgi_cli

run: deps-run build-run
	scripts/run-demo.sh $(BUILD)

# The Debian package $(BUILD)/csgi_<version>_<arch>.deb (docs/packaging.md): what the package holds is
# built (target csgi_package_parts), not the test suites.
deps-deb:
	@scripts/install-deps.sh deb

# The package's static libraries hold one object per source (no unity build), so that an app links only
# what it uses.
deb: deps-deb
	@test -f $(BUILD)/CMakeCache.txt || $(CONFIGURE) -DCSGI_BUILD_TESTS=OFF -DCSGI_BUILD_BENCH=OFF $(RUN_FLAGS) $(CMAKE_FLAGS)
	cmake -DCSGI_UNITY_BUILD=OFF $(BUILD) >/dev/null
	cmake --build $(BUILD) -j$(JOBS) --target csgi_package_parts
	cd $(BUILD) && cpack -G DEB

# A test that fails is run once more before it counts as failed: on a loaded 2-core machine a test with
# real servers (nginx, Apache, uWSGI, Chromium) can miss a timing window; a real failure fails twice.
# A test that sets no TIMEOUT of its own gets 900 s, so a hang fails the run instead of holding it.
# Tests run TEST_JOBS at a time: most of them wait on servers and sockets; those that compile declare
# PROCESSORS 2 and the RUN_SERIAL ones run alone.
TEST_JOBS ?= 2
test: deps build
	ctest --test-dir $(BUILD) -j$(TEST_JOBS) --output-on-failure --timeout 900 --repeat until-pass:2 $(CTEST_FLAGS)

# The unit suites, the standalone adapter's socket tests (HTTP/1, HTTP/2, WebSocket, TLS, PROXY protocol,
# workers, metrics), the fuzz replays, the conformance suite against the standalone server (HTTP/1.1,
# h2c, TLS), the bad-request corpus and the short fault checks under ASan + UBSan, then
# `csgi serve` itself under ASan/LSan for SOAK_SECONDS at half load (tests/reliability/soak.py; the
# 10-minute soak is part of test-reliability); and the multi-threaded suites under TSan. Each sanitizer
# has its own build tree.
ASAN_TESTS = core_tests middleware_tests bundler_tests cgi_gateway_tests standalone_test \
             $(patsubst tests/fuzz/%.cpp,%,$(wildcard tests/fuzz/fuzz_*.cpp)) \
             csgi_cli canary_app conformance_app ctest:conformance_standalone_root \
             ctest:conformance_standalone_prefix ctest:conformance_standalone_threads \
             ctest:conformance_standalone_pool ctest:standalone_test_pool \
             ctest:reliability_corpus ctest:reliability_faults_short \
             standalone_process_app standalone_websocket_app websocket_echo websocket_chat \
             ctest:standalone_h2 ctest:conformance_standalone_h2c ctest:conformance_standalone_h2c_pool \
             ctest:websocket_conformance ctest:websocket_conformance_pool ctest:websocket_examples \
             ctest:cli_tls ctest:conformance_standalone_tls ctest:cli_proxy_protocol ctest:standalone_workers \
             ctest:cli_metrics ctest:standalone_h2_websocket ctest:cli_h2c_haproxy fastcgi_socket_tests \
             cli_options_tests ctest:cli_command_line standalone_h3_app ctest:standalone_h3
TSAN_TESTS = core_tests standalone_test bundler_tests csgi_cli conformance_app ctest:conformance_standalone_threads \
             ctest:standalone_test_pool ctest:conformance_standalone_pool \
             standalone_process_app standalone_websocket_app ctest:standalone_h2 ctest:conformance_standalone_h2c_pool \
             ctest:websocket_conformance_pool ctest:cli_tls ctest:conformance_standalone_tls ctest:standalone_workers \
             ctest:cli_metrics ctest:cli_proxy_protocol ctest:standalone_h2_websocket ctest:cli_command_line middleware_redis_tests
SOAK_SECONDS ?= 60
# The AddressSanitizer tree is built by clang and instrumented for libFuzzer too (CSGI_FUZZ): its fuzz
# targets are libFuzzer programs beside their replay tests, and `make fuzz FUZZ_BUILD=build-asan` fuzzes
# in it without a build of its own.
test-asan: deps
	CC=clang CXX=clang++ SANITIZE_CMAKE_ARGS=-DCSGI_FUZZ=ON \
	  scripts/test-sanitized.sh address,undefined build-asan $(ASAN_TESTS)
	/usr/bin/python3 tests/reliability/soak.py --csgi build-asan/adapters/cli/csgi \
	  --app build-asan/tests/reliability/libcanary_app.so --seconds $(SOAK_SECONDS)

test-tsan: deps
	scripts/test-sanitized.sh thread build-tsan $(TSAN_TESTS)

# Every suite in bench/suites/ (scripts/bench.sh), each beside its peers; writes bench/RESULTS.md.
bench: deps build
	scripts/bench.sh $(BUILD)

# The long reliability runs (fuzzing, bad-request corpus vs nginx, faults, hostile clients, scale-out).
test-reliability: deps build
	scripts/reliability.sh $(BUILD)

# libFuzzer targets (clang, ASan+UBSan) for FUZZ_SECONDS each (default 60; FUZZ_RUNS=N for N execs), in
# their own optimized tree build-fuzz/, or in the tree FUZZ_BUILD names.
fuzz: deps
	scripts/fuzz.sh

install: build
	cmake --install $(BUILD) --prefix $(or $(PREFIX),/usr/local)

format:
	git ls-files '*.cpp' '*.hpp' | xargs clang-format -i

clean:
	rm -rf $(BUILD) build-asan build-tsan build-fuzz
