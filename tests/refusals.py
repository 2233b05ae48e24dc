"""The check every refusal test shares: a refusal is one line (imported by the test modules; pytest
puts tests/ on the path)."""

import pytest


def one_line(err: pytest.ExceptionInfo) -> str:
    """The message of a caught error, asserted to be one line."""
    message = str(err.value)
    assert "\n" not in message, message
    return message
