# SPDX-License-Identifier: MIT
# ito — the two commands of the README, and a few more.
#   make run      build in release mode and run the benchmark suite (report/REPORT.md)
#   make test     build and pass every test: plain, ASan+UBSan and TSan builds
#   make soak     the reliability suite for minutes (docs/reliability.md)
#   make install PREFIX=/usr/local
# Options: FULL=1 (make run: the long version), JOBS=n, BUILD=dir.

BUILD ?= build
JOBS  ?= $(shell nproc)
PREFIX ?= /usr/local
# Debian's python3 carries python3-matplotlib; prefer it over other pythons on PATH.
PYTHON ?= $(shell [ -x /usr/bin/python3 ] && echo /usr/bin/python3 || echo python3)
CMAKE_GEN = -G Ninja

.PHONY: run test soak install build deps-build deps-test deps-run test-plain test-asan test-tsan clean

deps-build: ; @scripts/deps.sh build
deps-test:  ; @scripts/deps.sh test
deps-run:   ; @scripts/deps.sh run

$(BUILD)/release/build.ninja: | deps-build
	cmake -S . -B $(BUILD)/release $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=Release -DITO_BUILD_TESTS=OFF
$(BUILD)/test/build.ninja: | deps-build
	cmake -S . -B $(BUILD)/test $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DITO_DEBUG=ON
$(BUILD)/asan/build.ninja: | deps-build
	cmake -S . -B $(BUILD)/asan $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DITO_DEBUG=ON \
	  -DITO_SANITIZE=address -DITO_BUILD_BENCH=OFF -DITO_BUILD_EXAMPLES=OFF
$(BUILD)/tsan/build.ninja: | deps-build
	cmake -S . -B $(BUILD)/tsan $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DITO_DEBUG=ON \
	  -DITO_SANITIZE=thread -DITO_BUILD_BENCH=OFF -DITO_BUILD_EXAMPLES=OFF

build: $(BUILD)/release/build.ninja
	cmake --build $(BUILD)/release -j $(JOBS)

run: deps-run build
	$(PYTHON) bench/run.py --build $(BUILD)/release --report report $(if $(FULL),--full,)

# The sanitizer builds skip the tests labelled nosan, and run the policy
# matrix under ws, prio and affinity only: tests/CMakeLists.txt says why.
SAN_EXCLUDE = '^(nosan|matrix-fifo|matrix-prio-shared)$$'

test-plain: deps-test $(BUILD)/test/build.ninja
	cmake --build $(BUILD)/test -j $(JOBS)
	cd $(BUILD)/test && ctest --output-on-failure -j $(JOBS) --timeout 600
test-asan: deps-test $(BUILD)/asan/build.ninja
	cmake --build $(BUILD)/asan -j $(JOBS)
	cd $(BUILD)/asan && ctest --output-on-failure -j $(JOBS) -LE $(SAN_EXCLUDE) --timeout 900
test-tsan: deps-test $(BUILD)/tsan/build.ninja
	cmake --build $(BUILD)/tsan -j $(JOBS)
	cd $(BUILD)/tsan && ctest --output-on-failure -j $(JOBS) -LE $(SAN_EXCLUDE) --timeout 900

test: test-plain test-asan test-tsan
	@echo "ito: all test builds passed (plain, ASan+UBSan, TSan)"

# The reliability suite of tests/soak/ for minutes, with a table of figures
# (scripts/soak.sh says what it runs; SOAK_SECONDS=120 per policy, ...).
SOAK_TESTS = test_soak test_peer_kill test_signal_storm test_exhaust test_fork_busy
soak: deps-test $(BUILD)/test/build.ninja
	cmake --build $(BUILD)/test -j $(JOBS) --target $(SOAK_TESTS)
	scripts/soak.sh $(BUILD)/test

install: build
	cmake --install $(BUILD)/release --prefix $(PREFIX)

clean:
	rm -rf $(BUILD)
