# Thin wrapper over CMake and the scripts; see README.md.
BUILD      ?= build
BUILD_ASAN ?= build-asan
BUILD_FUZZ ?= build-fuzz
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
ACCEPTANCE ?= ../shared/acceptance
# Acceptance files of every resolved issue.
ACCEPT_FILES ?= 01 02 03 04 05 06 07 08 09
# make fuzz: seconds per libFuzzer driver, and which drivers (empty: all of tests/fuzz/).
FUZZ_SECONDS ?= 600
FUZZ_NAMES ?=

.PHONY: all deps build build-asan docs image install test test-unit test-asan acceptance up bench chaos soak fuzz coverage fmt fmt-check clean

all: build

deps:
	@bash scripts/deps.sh

build: deps
	@cmake -S . -B $(BUILD) -DMCPQ_WERROR=$${CI:+ON} >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

build-asan: deps
	@cmake -S . -B $(BUILD_ASAN) -DMCPQ_WERROR=ON -DMCPQ_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null
	@cmake --build $(BUILD_ASAN) -j $(JOBS)

# docs/configuration.md's settings table from the code (scripts/config-doc.sh; a test checks it).
docs: build
	@bash scripts/config-doc.sh $(BUILD)

# make install [PREFIX=/usr/local] [DESTDIR=]: the binaries to PREFIX/bin, the systemd units
# to PREFIX/lib/systemd/system, the env file example and the Redis ACL to PREFIX/share/mcpq,
# the docs to PREFIX/share/doc/mcpq (docs/operations.md, "Installing on a host (systemd)").
# INSTALL_NO_BUILD=1 installs what BUILD holds without building it first.
PREFIX ?= /usr/local
install: $(if $(INSTALL_NO_BUILD),,build)
	@DESTDIR="$(DESTDIR)" cmake --install $(BUILD) --prefix "$(PREFIX)"

# The container image (docs/production.md, "Container image"): the binaries of $(BUILD) on a
# minimal Debian root file system, exported to $(BUILD)/image/<name>-<tag>.oci.tar and kept in
# the podman storage of $(BUILD)/image (scripts/image.sh). Prints its size.
IMAGE_NAME ?= mcpq
IMAGE_TAG  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
image: build
	@BIN_DIR=$(abspath $(BUILD)) IMAGE_NAME=$(IMAGE_NAME) IMAGE_TAG=$(IMAGE_TAG) bash scripts/image.sh

# Every test: unit, integration, end-to-end (ctest), then the shared acceptance suite; the
# same again on the ASan+UBSan build when CI=true or ASAN=1.
test: build
	@bash scripts/test.sh $(BUILD) "$(ACCEPT_FILES)"

test-asan: build-asan
	@bash scripts/test.sh $(BUILD_ASAN) "$(ACCEPT_FILES)"

acceptance: build
	@ACCEPT_NO_BUILD=1 $(ACCEPTANCE)/run.sh . $(ACCEPT_FILES)

up: build
	@exec bash scripts/up.sh $${PORT:-8080}

# The benchmarks (bench/run.sh, docs/benchmarks.md), about 4 minutes; BENCH_ONLY=fsync runs only
# the appendfsync everysec/always comparison (about a minute) and rewrites its section.
bench: build
	@bash bench/run.sh

# The fault campaign (tests/chaos/chaos.py, docs/reliability.md): a 2-ingress, 3-worker stack
# under synchronous calls, tasks ending by webhook and cancellations while processes are
# killed, Redis is frozen or killed, brokers fail, processes are cut off and the webhook
# receiver fails; fails on a lost call, task or delivery, an unexpected answer (another call's
# or execution's, a task call without its task, a repeat answered otherwise or running the tool
# again), clear errors above CHAOS_MAX_ERROR_RATE, or under CI a fault family that could not
# run. CHAOS_SECONDS (default 180), CHAOS_NEMESIS (comma list, default every fault),
# CHAOS_ORDER (random or each), CHAOS_SEED, CHAOS_CLIENTS, CHAOS_REDIS_FSYNC.
chaos: build
	@MCPQ_BIN_DIR=$(abspath $(BUILD)) python3 tests/chaos/chaos.py

# The soak (docs/reliability.md): SOAK_SECONDS (default 1800) at about half of peak load (6
# clients) with a fault a minute, RSS, fds and Redis memory sampled, per-minute p50/p99, and
# the graph drawn into SOAK_DIR (default build/soak/soak.png).
SOAK_SECONDS ?= 1800
SOAK_DIR ?= $(BUILD)/soak
soak: build
	@MCPQ_BIN_DIR=$(abspath $(BUILD)) python3 tests/chaos/chaos.py --seconds $(SOAK_SECONDS) \
	    --clients 6 --interval 55,65 --soak $(abspath $(SOAK_DIR))

# The suite's line and branch coverage of common/, ingress/ and worker/ (gcovr over a --coverage
# build in build-cov; COV_TESTS: a ctest regex to run a part only). Reports, never fails on
# the figures (docs/architecture.md, "Tests").
coverage: deps
	@JOBS=$(JOBS) bash scripts/coverage.sh $(COV_TESTS)

# Every libFuzzer driver (tests/fuzz/) for FUZZ_SECONDS each, one after the other, built with
# clang in $(BUILD_FUZZ) on a copy of its seed corpus; see docs/fuzzing.md.
fuzz: deps
	@BUILD_FUZZ=$(BUILD_FUZZ) JOBS=$(JOBS) bash scripts/fuzz.sh $(FUZZ_SECONDS) $(FUZZ_NAMES)

fmt:
	@clang-format -i common/*.[ch] ingress/*.[ch] ingress/*/*.[ch] worker/*.[ch] worker/*/*.[ch] tests/*.[ch] tests/*/*/*.c tests/integration/*.c tests/fuzz/*.[ch] bench/*.c deploy/devbroker/*.c

fmt-check:
	@clang-format --dry-run --Werror common/*.[ch] ingress/*.[ch] ingress/*/*.[ch] worker/*.[ch] worker/*/*.[ch] deploy/devbroker/*.c

clean:
	rm -rf $(BUILD) $(BUILD_ASAN) $(BUILD_FUZZ) build-cov
