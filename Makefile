# Quick start: `make run` and `make test` on a machine with only Python 3.11+.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
SCENARIO ?= scenarios/blue_vela.yaml
OUT    ?= runs/blue_vela

.PHONY: run test venv venv-all lint bench bench-scale assets studies clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(VENV)/.installed-all: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e ".[viz,sweep,dev,jupyter]"
	touch $@ $(VENV)/.installed

venv: $(VENV)/.installed
venv-all: $(VENV)/.installed-all

run: venv
	$(BIN)/twin run $(SCENARIO) --out $(OUT)

test: venv-all
	$(BIN)/python -m pytest -q -n 2

lint: venv-all
	$(BIN)/ruff check twin tests bench
	$(BIN)/mypy

bench: venv-all
	for f in bench/bench_*.py; do echo "== $$f"; $(BIN)/python $$f || exit 1; done

# the gigawatt-scale benchmarks of issue 19 (a million GPUs for a year, Blue Vela, Frontier-size,
# 1-s sampling, sweep scaling), each against its target; bench/RESULTS.md records them
bench-scale: venv-all
	OPENBLAS_NUM_THREADS=1 $(BIN)/python bench/bench_gigawatt.py

studies: venv-all
	for f in scenarios/studies/*.yaml; do n=$$(basename $$f .yaml); \
	  $(BIN)/twin sweep $$f --out runs/studies/$$n && \
	  $(BIN)/twin report runs/studies/$$n --out runs/studies/$$n.html || exit 1; done

assets: venv-all
	$(BIN)/python -m twin.viz.assets assets

clean:
	rm -rf $(VENV) runs build *.egg-info
