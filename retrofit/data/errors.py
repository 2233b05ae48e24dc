"""The error a user can fix by changing a dataset YAML, a file or an override."""


class DatasetError(ValueError):
    """A dataset cannot be loaded or used as given; the message says what to change."""
