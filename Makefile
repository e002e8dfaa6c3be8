# The two commands: `make run` (keel's main job on the bundled demo scene) and
# `make test` (every test, sanitizers on). Both install missing packages first.
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
ARGS ?=

.PHONY: run test bench deps release clean
deps:
	@sh tools/deps.sh

# the Release build in build/, for run and bench
release: deps
	@cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
	@cmake --build build -j $(JOBS) >/dev/null

run: release
	@./build/keel run $(ARGS)

test: deps
	@cmake -S . -B build-test -DCMAKE_BUILD_TYPE=Debug -DKEEL_SANITIZE=ON -DKEEL_WERROR=ON \
		-DCMAKE_C_COMPILER=clang >/dev/null
	@cmake --build build-test -j $(JOBS)
	@cd build-test && ctest --output-on-failure -j $(JOBS)

bench: release
	@sh tools/bench/run.sh build

clean:
	rm -rf build build-test
