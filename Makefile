# iolab — `make demo` runs the main job, `make test` runs the tests; both install what is missing.
.PHONY: deps test demo lint clean

deps:
	scripts/install-deps

test: deps
	scripts/run-tests -q

demo: deps
	scripts/demo

lint: deps
	.venv/bin/ruff check src tests bench
	.venv/bin/ruff format --check src tests bench
	.venv/bin/mypy && .venv/bin/mypy bench tests

clean:
	rm -rf .venv .mypy_cache .ruff_cache .pytest_cache
