"""`retrofit.hosts.validation`: a checkpoint is checked before it is trusted. A classifier, a header that does
not fit its tensors or is no JSON, a weight that is not finite, a header that claims more than the file
holds: each is refused in one line naming the problem and the fix, within the file's memory; intact hosts pass."""

import dataclasses
import json
import pathlib
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from refusals import one_line
from safetensors import safe_open
from safetensors.torch import save_file
from tabpfn.architectures import ARCHITECTURES as TABPFN_ARCHITECTURES
from tabpfn.checkpoint import save_as_safetensors

from retrofit.adapters import ARCHITECTURES
from retrofit.errors import RetrofitError
from retrofit.hosts import check_checkpoint, get_path, make_regressor
from retrofit.hosts.checkpoint import build_host, inference_config, save_host, set_borders
from retrofit.hosts.column_embeddings import pin_drawn
from retrofit.hosts.random_host import TINY_ARCHS
from retrofit.hosts.validation import _regression_head_missing


def _rewritten(tmp_path: Path, name: str, **header: str) -> Path:
    """The shipped tiny_v2 host's tensors under `name`, with header fields replaced by `header`."""
    with safe_open(str(get_path("tiny_v2")), framework="pt") as fh:
        fields, tensors = fh.metadata(), {key: fh.get_tensor(key) for key in fh.keys()}  # noqa: SIM118
    path = tmp_path / name
    save_file(tensors, str(path), metadata={**fields, **header})
    return path


@pytest.mark.parametrize("arch_name", ["tabpfn_v3", "tabpfn_v2", "tabpfn_v2_5"])
def test_classifier_checkpoint_is_refused_at_validation(tmp_path, arch_name):
    """Without the check it passed validation, fit and retrofit and failed at predict (IndexError on v3,
    a size mismatch on v2): its decoder gives max_num_classes logits, not the regression buckets."""
    model, config = build_host(arch_name, {**TINY_ARCHS[arch_name], "max_num_classes": 10})
    pin_drawn(model, 2)  # a v2-family host is written with its column embeddings (none on v3)
    criterion = set_borders(model, torch.linspace(-4.0, 4.0, config.num_buckets + 1))
    path = save_host(tmp_path / "tabpfn-v3-classifier.safetensors", model, config, arch_name, criterion, {})
    with pytest.raises(RetrofitError, match=rf"is a TabPFN classifier checkpoint \({arch_name}, max_num_classes=10\)"):
        check_checkpoint(path)
    with pytest.raises(RetrofitError, match="classifier checkpoint"):
        make_regressor(path)


def _tiny_v3_5(max_num_classes: int):
    """A tiny tabpfn v3.5 (multitask) model and its config, built by tabpfn itself."""
    module = TABPFN_ARCHITECTURES["tabpfn_v3_5"]
    config, _ = module.parse_config(
        dict(
            max_num_classes=max_num_classes,
            num_buckets=32,
            embed_dim=32,
            nlayers=2,
            icl_num_heads=4,
            dist_embed_num_heads=2,
            dist_embed_num_blocks=1,
            dist_embed_num_inducing_points=8,
            feat_agg_num_heads=2,
            feat_agg_num_blocks=1,
            decoder_num_heads=2,
            decoder_head_dim=8,
        )
    )
    return module.get_architecture(config), config


def test_multitask_v3_5_model_keeps_its_regression_head():
    """A v3.5 checkpoint backs both estimators: a classification head (max_num_classes > 0) does not
    make it classification-only, while a v3 model with the same head is."""
    model, config = _tiny_v3_5(max_num_classes=10)
    assert config.max_num_classes == 10 and not _regression_head_missing(model, config)
    v3, v3_config = build_host("tabpfn_v3", {**TINY_ARCHS["tabpfn_v3"], "max_num_classes": 10})
    assert _regression_head_missing(v3, v3_config)


@pytest.mark.skipif("tabpfn_v3_5" not in ARCHITECTURES, reason="tabpfn_v3_5 has no adapter spec registered")
def test_multitask_v3_5_checkpoint_passes_validation(tmp_path):
    model, config = _tiny_v3_5(max_num_classes=10)
    path = tmp_path / "tabpfn-v3.5-multitask.safetensors"
    checkpoint = {"state_dict": model.state_dict(), "config": dataclasses.asdict(config)}
    save_as_safetensors(
        {**checkpoint, "architecture_name": "tabpfn_v3_5", "inference_config": inference_config("lean")}, path
    )
    assert check_checkpoint(path) == path


def test_architecture_name_that_does_not_fit_the_tensors_is_refused(tmp_path):
    """tiny_v2's tensors under a tabpfn_v2_5 header: tabpfn's strict load_state_dict raised a RuntimeError at fit."""
    path = _rewritten(tmp_path, "mislabelled-v2.5.safetensors", architecture_name=json.dumps("tabpfn_v2_5"))
    with pytest.raises(RetrofitError, match=r"tensors do not fit architecture 'tabpfn_v2_5'.*missing \['add_thinking"):
        check_checkpoint(path)


def test_header_field_that_is_not_json_is_refused(tmp_path):
    path = _rewritten(tmp_path, "broken-v2.safetensors", inference_config="{not json")
    with pytest.raises(RetrofitError, match=r"header field 'inference_config' is not JSON"):
        check_checkpoint(path)


def test_config_that_does_not_build_is_refused(tmp_path):
    path = _rewritten(tmp_path, "badconfig-v2.safetensors", config=json.dumps({"emsize": "wide"}))
    with pytest.raises(RetrofitError, match=r"'config' does not build a tabpfn_v2 model"):
        check_checkpoint(path)


REPO = Path(__file__).resolve().parents[1]


def _rewritten_v3(tmp_path: Path, change=None, **config) -> Path:
    """tiny_v3's file with `change(tensors)` applied and its config updated with `config`."""
    with safe_open(str(get_path("tiny_v3")), framework="pt") as fh:
        fields, tensors = fh.metadata(), {key: fh.get_tensor(key) for key in fh.keys()}  # noqa: SIM118
    if change is not None:
        change(tensors)
    fields["config"] = json.dumps({**json.loads(fields["config"]), **config})
    path = tmp_path / "host.safetensors"
    save_file(tensors, str(path), metadata=fields)
    return path


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_checkpoint_with_one_non_finite_weight_is_refused_naming_it(tmp_path, value):
    """One NaN in an in-context block's k_projection passed, and every prediction became the training mean."""
    key = "icl_blocks.1.icl_attention.k_projection.weight"

    def poison(tensors):
        tensors[key][3, 5] = value

    with pytest.raises(RetrofitError) as err:
        check_checkpoint(_rewritten_v3(tmp_path, poison))
    assert f"tensor {key!r} holds 1 non-finite values" in one_line(err)


def test_torch_checkpoint_with_a_nan_weight_is_refused_naming_it(tmp_path):
    with safe_open(str(get_path("tiny_v2")), framework="pt") as fh:
        config, tensors = json.loads(fh.metadata()["config"]), {key: fh.get_tensor(key) for key in fh.keys()}  # noqa: SIM118
    tensors["blocks.0.mlp.0.weight"][0, 0] = float("nan")
    torch.save({"state_dict": tensors, "config": config}, tmp_path / "host.ckpt")
    with pytest.raises(RetrofitError, match=r"tensor 'blocks\.0\.mlp\.0\.weight' holds 1 non-finite values") as err:
        check_checkpoint(tmp_path / "host.ckpt")
    one_line(err)


_PEAK_RSS = """
import resource, sys
from retrofit.hosts import check_checkpoint, get_path
from retrofit.errors import RetrofitError
check_checkpoint(get_path("tiny_v3"))  # imports and tabpfn's lazy modules, outside the measure
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
try:
    check_checkpoint(sys.argv[1])
except RetrofitError as err:
    print(str(err))
print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) // 1024)
"""


def test_header_declaring_5000_layers_is_refused_within_the_files_memory(tmp_path):
    """A config of nlayers=5000 over 4 layers' tensors cost ~570 MB before it was refused (20000
    exhausted 16 GB): the model was built before its sizes were compared with the file's."""
    path = _rewritten_v3(tmp_path, nlayers=5000)
    out = subprocess.run(
        [sys.executable, "-c", _PEAK_RSS, str(path)], capture_output=True, text=True, check=True, cwd=REPO
    ).stdout.splitlines()
    assert "declares a model of more parameters than the file's 114 tensors" in out[0]
    assert int(out[1]) < 40  # MiB of peak RSS growth; the file itself is 10 MB
    big = _rewritten_v3(tmp_path, embed_dim=1 << 20)  # a huge width on the meta device costs nothing
    with pytest.raises(RetrofitError, match="do not fit architecture 'tabpfn_v3'") as err:
        check_checkpoint(big)
    one_line(err)


def test_intact_hosts_still_pass():
    for host in ("tiny_v2", "tiny_v3", "tiny_v3_5"):
        assert check_checkpoint(get_path(host)) == get_path(host)


class _RunsCode:
    """A pickle payload that would create a marker file if it were ever unpickled unsafely."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (pathlib.Path.touch, (self.marker,))


def test_checkpoint_whose_pickle_runs_code_is_refused_and_the_code_never_runs(tmp_path):
    path, marker = tmp_path / "evil.ckpt", tmp_path / "code_ran"
    torch.save({"state_dict": {}, "config": {}, "payload": _RunsCode(marker)}, path)
    with pytest.raises(RetrofitError, match=r"is refused: its pickle calls .*pathlib.*weights_only=False"):
        check_checkpoint(path)
    assert not marker.exists()


@pytest.mark.parametrize(
    "content, suffix, message",
    [
        (b"not a checkpoint", ".safetensors", "not a readable safetensors"),
        (b"garbage", ".ckpt", "could not be read"),
    ],
)
def test_unreadable_checkpoint_is_refused(tmp_path, content, suffix, message):
    path = tmp_path / f"model{suffix}"
    path.write_bytes(content)
    with pytest.raises(RetrofitError, match=message):
        check_checkpoint(path)


def test_torch_file_that_is_not_tabpfn_is_refused(tmp_path):
    path = tmp_path / "other.ckpt"
    torch.save({"weights": torch.zeros(2)}, path)
    with pytest.raises(RetrofitError, match="not a TabPFN checkpoint"):
        check_checkpoint(path)
