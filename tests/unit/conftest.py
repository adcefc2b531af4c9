"""Shared pytest setup for the kit's unit tests.

The kit is not installed: its package lives in ``reframe/`` (beside the ReFrame
tests), so that directory goes on ``sys.path`` here, as ``scripts/pfslab`` does.
Real tool outputs used as test data live in ``tests/fixtures/<tool>/``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

KIT = Path(__file__).resolve().parents[2]
FIXTURES = KIT / "tests" / "fixtures"

if str(KIT / "reframe") not in sys.path:
    sys.path.insert(0, str(KIT / "reframe"))


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
