"""The project's error rule as one test helper: a refusal is one exception with a one-line message."""

from __future__ import annotations

from collections.abc import Callable

import pytest


def one_line_error(error: type[Exception], call: Callable[[], object]) -> str:
    """The message of the ``error`` that ``call()`` raises, checked to be a single line."""
    with pytest.raises(error) as info:
        call()
    message = str(info.value)
    assert "\n" not in message, message
    return message
