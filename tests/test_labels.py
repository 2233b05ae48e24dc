"""`retrofit.labels.check_label`: a name that goes into file paths is a label: letters, digits and a few
separators, at most `LABEL_CHARS` characters."""

import pytest
from refusals import one_line

from retrofit.errors import RetrofitError
from retrofit.labels import LABEL_CHARS, check_label


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("x/../../esc", "use letters, digits"),
        ("..", "use letters, digits"),
        ("-rf", "use letters, digits"),
        ("a" * (LABEL_CHARS + 1), f"has {LABEL_CHARS + 1} characters; use at most {LABEL_CHARS}"),
        (5, "use letters, digits"),
    ],
)
def test_label_rule_refuses_separators_dots_and_long_names(name, message):
    with pytest.raises(RetrofitError, match=message) as err:
        check_label("variant name", name)
    one_line(err)
    assert check_label("variant name", "a" * LABEL_CHARS) == "a" * LABEL_CHARS
