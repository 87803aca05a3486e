# SPDX-License-Identifier: MIT
# The Python package in a project-local virtualenv, and the pytest run that closes `make test`.

$(VENV_STAMP): pyproject.toml VERSION $(DEPS_STAMP)
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e '.[test,lab,sim]'
	@touch $@

.PHONY: venv test-python
venv: $(VENV_STAMP)

test-python: $(VENV_STAMP) $(PYTEST_NEEDS)
	$(PY) -m pytest
