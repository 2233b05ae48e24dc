"""Every measuring job takes `device` (cpu | cuda | auto) and refuses `device=cuda` without CUDA in
one line before any work; what each row says it ran on (`retrofit.hosts.device`)."""

import pytest
import torch
from omegaconf import open_dict

import retrofit.fitting
from retrofit.errors import RetrofitError
from retrofit.hosts.device import device_clock, device_label
from retrofit.jobs import job_module, job_names, root_config
from retrofit.jobs.exits import schema_keys
from retrofit.jobs.start import job_device, job_start

MEASURING_JOBS = [
    "ablation",
    "audit",
    "bench_attention",
    "bench_batch",
    "exactness",
    "explain_bench",
    "explain_scale",
    "host_quality",
    "noise_floor",
    "padding_demo",
    "sink_mass",
    "sweep",
    "tau_sweep",
]
"""The jobs that measure a number on a model or tensors, each with a `device` key (scale_check takes
its own `device` in benchmarks/scale)."""

no_cuda = pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal where CUDA is absent")


def test_every_measuring_job_has_a_device_key():
    with_key = {job for job in MEASURING_JOBS if "device" in schema_keys(job_module(job).SCHEMA)}
    assert set(MEASURING_JOBS) <= set(job_names()) and with_key == set(MEASURING_JOBS)


@no_cuda
@pytest.mark.parametrize("job", MEASURING_JOBS)
def test_a_job_refuses_cuda_without_cuda_in_one_line_before_any_work(job, hydra_compose, monkeypatch, tmp_path):
    def no_work(*args, **kwargs):
        raise AssertionError(f"{job} began work before refusing device=cuda")

    monkeypatch.setattr(retrofit.fitting, "load_table", no_work)  # every dataset load goes through it
    monkeypatch.setattr(retrofit.fitting, "make_regressor", no_work)  # every fit too
    overrides = ["device=cuda", f"hydra.runtime.cwd={tmp_path}"]
    cfg = hydra_compose(root_config(job_module(job)), overrides)
    hydra_cfg = cfg.hydra
    with open_dict(cfg):  # a job gets its config without the hydra node, as Hydra runs it
        del cfg["hydra"]
    with pytest.raises(RetrofitError) as refused:  # as `launch` starts the job
        job_module(job).run(job_start(job_module(job), cfg, hydra_cfg))
    message = str(refused.value)
    assert "\n" not in message and "device='cuda'" in message and "no CUDA device" in message
    assert list(tmp_path.iterdir()) == []  # nothing written


@no_cuda
def test_auto_is_cpu_without_cuda_and_rows_say_cpu():
    assert job_device("auto") == "cpu" and job_device("cpu") == "cpu"
    assert device_label("cpu") == device_label(torch.device("cpu")) == "cpu"
    with pytest.raises(RetrofitError, match="device must be one of"):
        job_device("gpu")


def test_the_cpu_clock_is_the_one_given():
    clock = device_clock("cpu", lambda: 7.0)
    assert clock() == 7.0


@pytest.mark.cuda
def test_the_cuda_clock_waits_for_queued_work():
    """A region timed with `device_clock` includes its kernels: a large matmul queued and then
    timed with the clock reads far longer than the time to queue it."""
    import time

    x = torch.randn(4096, 4096, device="cuda")
    clock = device_clock("cuda")
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(20):
        x @ x
    queued = time.perf_counter() - start
    waited = clock() - start
    assert waited > queued and device_label("cuda") == torch.cuda.get_device_name()


@pytest.mark.cuda
@pytest.mark.parametrize("host", ["tiny_v2", "tiny_v3", "tiny_v3_5"])
def test_a_shipped_host_predicts_the_same_on_cuda_as_on_the_cpu(host, dataset_spec):
    """The stock host fitted on one split on each device: predictions within 1e-5 relative of the
    largest |prediction| (float32 with TF32 off on CUDA; `retrofit.hosts.regressor.resolve_device`)."""
    from pathlib import Path

    from retrofit.fitting import fit_host, load_split
    from retrofit.hosts import get_path

    _, data = load_split(dataset_spec("diabetes"), 0, base_dir=Path("."))
    cpu, cuda = (
        fit_host(get_path(host), data, random_state=0, device=device)[0].predict(data.X_test)
        for device in ("cpu", "cuda")
    )
    assert abs(cuda - cpu).max() <= 1e-5 * abs(cpu).max()
