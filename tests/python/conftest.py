# Run with: PYTHONPATH=build-py/python /usr/bin/python3 -m pytest tests/python
import os

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "thunder")


@pytest.fixture
def fixtures_dir():
    if not os.path.isdir(FIXTURES):
        pytest.skip(f"no fixtures at {FIXTURES}")
    return FIXTURES
