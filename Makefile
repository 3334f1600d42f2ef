# paperworks — every set-up step lives here, so a fresh machine needs only Python 3.11 + pip.
#   make test [PKG=slug]   install, then the repo-level suites and each package's suite (one process each)
#   make demo [PKG=slug]   install, run each package's `quick` experiment, build reports/index.html
#   make lint              ruff
#   make new PKG=slug      scaffold packages/<slug> from tools/template

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
PKGS := $(sort $(patsubst packages/%/pyproject.toml,%,$(wildcard packages/*/pyproject.toml)))
SEL := $(if $(PKG),$(PKG),$(PKGS))
STAMP := $(VENV)/.installed
# A package whose dependency cannot be resolved normally (e.g. a stale pin that does not build on
# Python 3.11) lists it in packages/<slug>/requirements-nodeps.txt: installed with --no-deps.
NODEPS := $(wildcard packages/*/requirements-nodeps.txt)

.PHONY: setup test demo lint new clean-reports

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip

# Re-install when a pyproject or the constraints change (editable installs see code edits at once).
$(STAMP): $(PY) constraints.txt shared/pyproject.toml $(wildcard packages/*/pyproject.toml) $(NODEPS)
	$(PIP) install -q -c constraints.txt ruff hatchling editables -e "shared[test,plot]" $(foreach p,$(PKGS),-e "packages/$(p)[test,plot]")
	$(if $(NODEPS),$(PIP) install -q --no-deps -c constraints.txt $(foreach f,$(NODEPS),-r $(f)))
	touch $(STAMP)

setup: $(STAMP)

test: setup
	$(PY) tools/run_tests.py $(foreach p,$(PKG),--pkg $(p))

demo: setup
	@set -e; for p in $(SEL); do \
	  echo "== $$p experiment=quick"; rm -rf reports/runs/$$p/quick; \
	  $(VENV)/bin/$$p experiment=quick hydra.run.dir=reports/runs/$$p/quick; \
	done
	$(PY) tools/report.py reports/runs reports

lint: setup
	$(VENV)/bin/ruff check shared tools tests packages

new: $(PY)
	@test -n "$(PKG)" || { echo "usage: make new PKG=<slug>"; exit 2; }
	$(PY) tools/new_package.py $(PKG)
	$(PIP) install -q -c constraints.txt -e "packages/$(PKG)[test,plot]"
	touch $(STAMP)
