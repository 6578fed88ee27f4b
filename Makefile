# iolab — `make demo` runs the main job, `make test` runs the tests; both install what is missing.
.PHONY: deps guest-image test demo lint fuzz clean

deps:
	scripts/install-deps

# the QEMU guest image (Debian 12 root, packaged kernels): built once per machine, cached
guest-image: deps
	scripts/build-guest-image

test: deps guest-image
	scripts/run-tests -q

demo: deps
	scripts/demo

# the property tests with fresh random examples, ROUNDS times (CI runs them derandomized)
fuzz: deps
	scripts/fuzz

lint: deps
	.venv/bin/ruff check src tests bench
	.venv/bin/ruff format --check src tests bench
	.venv/bin/mypy && .venv/bin/mypy bench tests

clean:
	rm -rf .venv .mypy_cache .ruff_cache .pytest_cache
