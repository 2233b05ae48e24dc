"""The O parts a variant can list are a fixed vocabulary; architectures are what registers."""

import pytest

from retrofit.adapters import ADAPTERS, ARCHITECTURES, PARTS, adapter, register_architecture
from retrofit.errors import RetrofitError


def test_one_adapter_per_block_part():
    assert sorted(spec.part for spec in ADAPTERS.values()) == sorted(PARTS)
    assert {name: spec.part for name, spec in ADAPTERS.items()} == {
        "o_attention": "attention",
        "o_ffn": "ffn",
        "o_norm": "norm",
    }


def test_the_vocabulary_is_read_only():
    with pytest.raises(TypeError):
        ADAPTERS["o_extra"] = ADAPTERS["o_ffn"]  # type: ignore[index]
    assert len(ADAPTERS) == 3


def test_an_unknown_adapter_is_refused_with_the_known_ones():
    with pytest.raises(
        RetrofitError, match=r"unknown adapter 'o_mlp'; known adapters: \['o_attention', 'o_ffn', 'o_norm'\]"
    ):
        adapter("o_mlp")


@pytest.mark.parametrize("field", ["name", "module"])
def test_a_second_architecture_with_the_same_name_or_module_is_refused(field):
    v3 = ARCHITECTURES["tabpfn_v3"]
    clash = v3.__class__(**{**vars(v3), "name": "other", "module": "other.module", field: getattr(v3, field)})
    before = dict(ARCHITECTURES)
    with pytest.raises(RetrofitError, match=r"clashes with registered 'tabpfn_v3' \(same name or module\)"):
        register_architecture(clash)
    assert before == ARCHITECTURES
