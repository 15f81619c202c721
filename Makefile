# The two commands of the README. Both set up .venv on first use (scripts/setup.sh).
#   make book   build the book, every chapter executed, into _build/html
#   make test   run every test: the linter and formatter check (make lint), unit tests, the book build (-W),
#               the student book build (-W), browser checks of the built pages; the tests on two
#               pytest-xdist workers (TEST_WORKERS=N to change, 0 for one process)
#   make student-book   the student book only (exercises without solutions): _build/student
SHELL := /bin/bash
VENV := .venv
ACT := . $(VENV)/bin/activate
# Datasets come from their canonical URLs unless a local mirror is named; next to a
# checkout that has ../shared/data (CI, the team's machines) that mirror is used.
BERTLAB_DATA_MIRROR ?= $(wildcard $(CURDIR)/../shared/data)
export BERTLAB_DATA_MIRROR
export HF_HUB_OFFLINE ?= 1
export HF_HUB_DISABLE_PROGRESS_BARS := 1
export TOKENIZERS_PARALLELISM := false
export PYTHONUNBUFFERED := 1
# pytest-xdist workers for `make test` and `make unit` (TEST_WORKERS=0: one process, as plain pytest).
# --dist loadscope keeps each test module on one worker, so its module-scoped fixtures are built once.
TEST_WORKERS ?= 2
PYTEST_PARALLEL := $(if $(filter-out 0,$(TEST_WORKERS)),-n $(TEST_WORKERS) --dist loadscope)

.PHONY: setup book student-book test unit lint format clean
setup:
	@bash scripts/setup.sh

book: setup
	$(ACT) && bash scripts/build_book.sh

student-book: setup
	$(ACT) && bash scripts/build_student_book.sh

# The formatter and linter: the package, tests, scripts and lab at 120 columns (pyproject.toml), the
# chapters' and lab pages' code cells at 88 (book/ruff.toml: what a rendered page shows without scrolling).
lint: setup
	$(ACT) && ruff check && ruff check book lab/notebook
	$(ACT) && ruff format --check && ruff format --check book lab/notebook

format: setup
	$(ACT) && ruff format && ruff format book lab/notebook

unit: lint
	$(ACT) && python -m pytest -m "not browser" -q $(PYTEST_PARALLEL)

# The book, the student book (nothing executed: seconds), then every test on TEST_WORKERS pytest-xdist
# workers of one torch thread each (tests/conftest.py). Each phase prints its wall and CPU time.
test: lint
	$(ACT) && time bash scripts/build_book.sh
	$(ACT) && time bash scripts/build_student_book.sh
	$(ACT) && time python -m pytest -q $(PYTEST_PARALLEL) --durations=30

clean:
	rm -rf _build
