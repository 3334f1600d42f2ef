# paperworks — every set-up step lives here, so a fresh machine needs only Python 3.11 + pip.
#   make test [PKG=slug]          install, then the repo-level suites and each package's suite (two at a time)
#   make test-isolated PKG=slug   what a CI package job does: a fresh venv with only shared/ and that package
#   make demo [PKG=slug]          install, run each package's `quick` experiment, build reports/index.html
#   make lint                     ruff over the tree, zizmor over the workflow
#   make dist                     wheels and sdists of shared/ and every package into dist/
#   make lock                     re-resolve constraints.txt (pip-tools) from every pyproject
#   make new PKG=slug             scaffold packages/<slug> from tools/template and install it

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip
PKGS := $(sort $(patsubst packages/%/pyproject.toml,%,$(wildcard packages/*/pyproject.toml)))
SEL := $(if $(PKG),$(PKG),$(PKGS))
STAMP := $(VENV)/.installed

.PHONY: setup test test-isolated demo lint dist lock new clean-reports

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip

# Re-install when a pyproject or the constraints change (editable installs see code edits at once).
$(STAMP): $(PY) constraints.txt tools/dev-tools.txt shared/pyproject.toml $(wildcard packages/*/pyproject.toml)
	$(PIP) install -q -c constraints.txt -r tools/dev-tools.txt -e "shared[test,plot]" $(foreach p,$(PKGS),-e "packages/$(p)[test,plot]")
	touch $(STAMP)

setup: $(STAMP)

test: setup
	$(PY) tools/run_tests.py $(foreach p,$(PKG),--pkg $(p))

# A fresh venv under a temp dir, only shared/ and the package with their [test] extras (the [plot]
# extra is not added: a suite must pass with what [test] declares), then that package's suite.
test-isolated:
	@test -n "$(PKG)" || { echo "usage: make test-isolated PKG=<slug> [PKG='a b']"; exit 2; }
	$(PYTHON) tools/isolated.py $(PKG)

demo: setup
	$(PY) tools/demo.py --bin $(VENV)/bin --runs reports/runs --out reports $(SEL)

lint: setup
	$(VENV)/bin/ruff check shared tools tests packages
	$(VENV)/bin/zizmor --offline .github/workflows

dist: setup
	rm -rf dist
	$(PY) -m build --no-isolation --outdir dist shared
	@set -e; for p in $(PKGS); do $(PY) -m build --no-isolation --outdir dist packages/$$p; done
	@ls dist

lock: setup
	$(PY) tools/lock.py

new: $(PY)
	@test -n "$(PKG)" || { echo "usage: make new PKG=<slug>"; exit 2; }
	$(PY) tools/new_package.py $(PKG) --install

clean-reports:
	rm -rf reports/runs reports/index.html reports/summary.md
