"""The error a user can fix by changing a dataset YAML, a file or an override."""

from retrofit.errors import RetrofitError


class DatasetError(RetrofitError):
    """A dataset cannot be loaded or used as given; the message says what to change."""
