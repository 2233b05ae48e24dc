"""`benchmarks.gpu_record`: the GPU record refuses in one line where there is no CUDA, writing nothing."""

import pytest
import torch

no_cuda = pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal where CUDA is absent")


@no_cuda
def test_the_gpu_record_is_refused_in_one_line_without_cuda(tmp_path, capsys):
    from benchmarks.gpu_record import NO_CUDA, main

    with pytest.raises(SystemExit) as refused:
        main(["--out", str(tmp_path / "gpu")])
    err = capsys.readouterr().err
    assert refused.value.code == NO_CUDA and err.count("\n") == 1 and "needs a CUDA device" in err
    assert not (tmp_path / "gpu").exists()  # nothing written
