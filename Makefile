# Two commands on a fresh machine with Python 3.11 and make: `make demo` and `make test`.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
export TLDEXTRACT_CACHE :=
export TLDEXTRACT_PUBLIC_SUFFIX_LIST_URLS :=

.PHONY: demo test lint format install bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV) || python3 -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

# Reinstall whenever pyproject.toml changes. `data` too: a test rebuilds the industry code
# table from its sources and compares it with the checked-in one; `docs` builds docs/.
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[test,data,docs]'
	touch $@

install: $(VENV)/.installed

# The demo's database is every command's default, var/contactdata.db (or CONTACTDATA_DB).
# --changes-from: the first run also imports a month of changes to the demo data (about 2,500
# people; about 10 s), so job changes show in /v1/changes and the connector's signals.
demo: install
	$(BIN)/contactdata demo --changes-from 1 --host 127.0.0.1 --port 8080

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: install
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

# The settings page's browser tests drive Debian's chromium through playwright; the limiter
# tests start Debian's redis-server on a loopback port of their own; the suites marked
# both_backends also run on a PostgreSQL cluster a fixture starts (Debian's postgresql), and
# those marked through_pgbouncer once more through Debian's pgbouncer in front of it.
# Before them, docs/ builds strictly (mkdocs.yml): a broken link or anchor fails the run.
# Two test processes (pytest-xdist), each module whole in one: much of the suite waits on
# servers, browsers and killed processes, so two halve the run on two cores (each has its own
# PostgreSQL cluster, PgBouncer and Redis).
test: lint
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir var/site
	command -v chromium >/dev/null || { apt-get update -qq && apt-get install -y -qq chromium; }
	command -v redis-server >/dev/null || { apt-get update -qq && apt-get install -y -qq redis-server; }
	test -x /usr/lib/postgresql/15/bin/pg_ctl || { apt-get update -qq && apt-get install -y -qq postgresql; }
	test -x /usr/sbin/pgbouncer || { apt-get update -qq && apt-get install -y -qq pgbouncer; }
	$(BIN)/pytest -q -n 2 --dist loadfile

# bench/enrich.py drives the server with wrk (a Debian package); it builds var/bench-full.db once.
bench: install
	command -v wrk >/dev/null || { apt-get update -qq && apt-get install -y -qq wrk; }
	$(BIN)/python bench/auth.py
	$(BIN)/python bench/dataset.py
	$(BIN)/python bench/enrich.py
	$(BIN)/python bench/matching_worst.py
	$(BIN)/python bench/discover.py
	$(BIN)/python bench/webhooks.py
	$(BIN)/python bench/backfill.py
	$(BIN)/python bench/load.py

clean:
	rm -rf $(VENV) var .pytest_cache .ruff_cache
