# Two entry points (see README): `make demo` and `make test`. Both set everything up first and
# are idempotent: scripts/setup.sh only installs what is missing.
PY := .venv/bin/python
PROMPT ?= Write a Python function that returns the n-th Fibonacci number, with a short docstring.

.PHONY: setup demo test test-slow bench results
setup:
	@bash scripts/setup.sh

demo: setup
	@$(PY) -m d3d.cli generate --prompt "$(PROMPT)" --max-new-tokens 128 --compare

test: setup
	@$(PY) -m pytest

test-slow: setup
	@D3D_SLOW=1 $(PY) -m pytest -m slow

bench: setup
	@$(PY) -m d3d.cli bench --suite humaneval --limit 20 --modes ar,sync,hf,pld

# Regenerate docs/results.md: every benchmark of the page (resumable, results in runs/results/).
results: setup
	@$(PY) -m d3d.evaluation.results
