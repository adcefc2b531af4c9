"""Shared pytest setup for the kit's unit tests.

The kit's package ``pfslab`` is installed into ``.venv`` (editable) by ``make deps``.
Real tool outputs used as test data live in ``tests/fixtures/<tool>/``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

KIT = Path(__file__).resolve().parents[2]
FIXTURES = KIT / "tests" / "fixtures"


@pytest.fixture
def fixtures_dir() -> Path:
    """``tests/fixtures``: real outputs, one directory per tool (see its README.md)."""
    return FIXTURES


@pytest.fixture
def fixture_text() -> Callable[[str], str]:
    """Read ``tests/fixtures/<relative path>`` as text, as the parsers get it."""

    def read(relative: str) -> str:
        return (FIXTURES / relative).read_text(encoding="utf-8")

    return read
