"""The error a user can fix by changing a sweep's config or overrides."""

from retrofit.errors import RetrofitError


class RunnerError(RetrofitError):
    """A sweep or case cannot run as configured; the message says what to change."""
