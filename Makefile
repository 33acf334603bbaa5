# Thin wrapper over CMake and the scripts; see README.md.
BUILD      ?= build
BUILD_ASAN ?= build-asan
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
ACCEPTANCE ?= ../shared/acceptance
# Acceptance files of every resolved issue.
ACCEPT_FILES ?= 01 02 03 04 05 07 08

.PHONY: all deps build build-asan test test-unit test-asan acceptance up bench fmt fmt-check clean

all: build

deps:
	@bash scripts/deps.sh

build: deps
	@cmake -S . -B $(BUILD) -DMCPQ_WERROR=$${CI:+ON} >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

build-asan: deps
	@cmake -S . -B $(BUILD_ASAN) -DMCPQ_WERROR=ON -DMCPQ_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug >/dev/null
	@cmake --build $(BUILD_ASAN) -j $(JOBS)

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

bench: build
	@bash bench/run.sh

fmt:
	@clang-format -i common/*.[ch] ingress/*.[ch] worker/*.[ch] tests/*.[ch] tests/*/*/*.c tests/integration/*.c bench/*.c deploy/devbroker/*.c

fmt-check:
	@clang-format --dry-run --Werror common/*.[ch] ingress/*.[ch] worker/*.[ch] deploy/devbroker/*.c

clean:
	rm -rf $(BUILD) $(BUILD_ASAN)
