"""The pretraining loop: prior batches -> bar-distribution NLL, schedule-free AdamW, resumable.

State lives in `run_dir`:
- `state.pt`: model (train-mode weights), optimizer, prior generator, step, elapsed seconds and
  the log — written atomically every `checkpoint_every_s`, so a killed run loses at most that;
- `log.jsonl`: one line per evaluation;
- `host.safetensors`: the latest evaluation-mode (averaged) weights as a loadable tabpfn
  checkpoint (`export_path`, if set, receives a copy).
Re-running with the same `run_dir` resumes where the state left off, bit-for-bit the same
stream of prior batches (drawn on the CPU, whatever `device` the model trains on; a state saved on
one device resumes on another). The bucket borders are part of the state: a resumed run keeps its own
unless `reborder=True` adopts the ones the config computes now (recorded in the model card).
"""

import json
import logging
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import schedulefree
import torch

from retrofit.hosts.checkpoint import build_host, inference_config, regression_logits, save_host, set_borders
from retrofit.hosts.column_embeddings import pin_drawn
from retrofit.hosts.regressor import resolve_device
from retrofit.io import write_atomic
from retrofit.pretrain.borders import quantile_borders
from retrofit.pretrain.curriculum import Stage, draw_shape, parse_curriculum
from retrofit.pretrain.held_out import evaluate_host, make_validation_set
from retrofit.pretrain.pretrain_config import PretrainConfig
from retrofit.prior import sample_batch, zscore_targets

log = logging.getLogger(__name__)


def trained_columns(curriculum: tuple[Stage, ...], features_per_group: int) -> int:
    """The most columns (feature groups of `features_per_group`) a table of `curriculum` has: a v2-family
    host trains on, and stores, the column-embedding draws of 1..this many columns."""
    features = max(bucket.features[1] for stage in curriculum for bucket in stage.buckets)
    return -(-features // features_per_group)


class Pretrainer:
    def __init__(self, cfg: PretrainConfig):
        self.cfg = cfg
        self.run_dir = Path(cfg.run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        torch.set_num_threads(cfg.threads)
        self.device = torch.device(resolve_device(cfg.device))
        self.curriculum = parse_curriculum(cfg.curriculum)
        self.model, self.arch_config = build_host(cfg.arch_name, cfg.arch, seed=cfg.seed)
        pin_drawn(self.model, trained_columns(self.curriculum, getattr(self.model, "features_per_group", 1)))
        self.model.to(self.device)
        self.borders = quantile_borders(
            int(cfg.arch["num_buckets"]), cfg.seed + 777, cfg.border_samples, cfg.border_tail_share
        )
        self.opt = schedulefree.AdamWScheduleFree(
            self.model.parameters(), lr=cfg.lr, warmup_steps=cfg.warmup_steps, weight_decay=0.0
        )
        self.generator = torch.Generator().manual_seed(cfg.seed + 1)
        self.val_sets = [make_validation_set(name, **spec) for name, spec in cfg.val.items()]
        self.step, self.elapsed_s, self.history, self.reborder_steps = 0, 0.0, [], []
        self._resume()
        self.criterion = set_borders(self.model, self.borders.to(self.device)).to(self.device)
        self.model.train()
        self.opt.train()

    # -- state ---------------------------------------------------------------------------
    def _resume(self) -> None:
        path = self.run_dir / "state.pt"
        if not path.exists():
            return
        state = torch.load(path, weights_only=True, map_location=self.device)
        if state["arch_name"] != self.cfg.arch_name:
            raise ValueError(f"{path} holds a {state['arch_name']} run, not {self.cfg.arch_name}; use another run_dir")
        self.model.load_state_dict(state["model"])
        self.opt.load_state_dict(state["optimizer"])
        self.generator.set_state(state["generator"].cpu())
        self.step, self.elapsed_s, self.history = state["step"], state["elapsed_s"], state["history"]
        self.reborder_steps = state["reborder_steps"]
        if not self.cfg.reborder:
            self.borders = state["borders"].cpu()
        elif not torch.equal(state["borders"].cpu(), self.borders):
            self.reborder_steps.append(self.step)
            log.warning("step %d: adopting the config's bucket borders (reborder=True)", self.step)
        log.info("resumed %s at step %d (%.1f min trained)", path, self.step, self.elapsed_s / 60)

    def _save_state(self) -> None:
        state = {
            "arch_name": self.cfg.arch_name,
            "model": self.model.state_dict(),
            "optimizer": self.opt.state_dict(),
            "generator": self.generator.get_state(),
            "step": self.step,
            "elapsed_s": self.elapsed_s,
            "history": self.history,
            "borders": self.borders,
            "reborder_steps": self.reborder_steps,
        }
        write_atomic(self.run_dir / "state.pt", lambda tmp: torch.save(state, tmp))

    def host_card(self) -> dict[str, Any]:
        return {
            "host": self.cfg.host_name,
            "arch_name": self.cfg.arch_name,
            "params": sum(p.numel() for p in self.model.parameters()),
            "steps": self.step,
            "train_minutes": round(self.elapsed_s / 60, 2),
            "lr": self.cfg.lr,
            "curriculum": self.cfg.curriculum,
            "prior": "retrofit.prior (linear, gp, mlp, trees, interactions, near_linear on factor-correlated columns; "
            "categorical with 2-10 levels, skewed, heavy-tailed, missing)",
            "notes": list(self.cfg.notes),
            "border_tail_share": self.cfg.border_tail_share,
            "reborder_steps": list(self.reborder_steps),
            "history": self.history,
        }

    @contextmanager
    def averaged_weights(self) -> Iterator[None]:
        """Swap in schedule-free's averaged (evaluation) weights; on exit restore the training
        weights bit for bit, so evaluating or exporting never perturbs the training trajectory."""
        training_state = {k: v.clone() for k, v in self.model.state_dict().items()}
        self.opt.eval()
        try:
            yield
        finally:
            self.opt.train()
            self.model.load_state_dict(training_state)

    def export(self, path: Path) -> Path:
        """Write the averaged (evaluation-mode) weights as a tabpfn checkpoint at `path`."""
        with self.averaged_weights():
            return save_host(
                path,
                self.model,
                self.arch_config,
                self.cfg.arch_name,
                self.criterion,
                inference_config(self.cfg.inference_preset),
                self.host_card(),
            )

    # -- loop ----------------------------------------------------------------------------
    def _evaluate(self, train_loss: float | None) -> dict[str, Any]:
        record: dict[str, Any] = {"step": self.step, "minutes": round(self.elapsed_s / 60, 2), "train_loss": train_loss}
        with self.averaged_weights():
            for vset in self.val_sets:
                record.update({k: round(v, 4) for k, v in evaluate_host(self.model, self.criterion, vset).items()})
        self.history.append(record)
        with open(self.run_dir / "log.jsonl", "a") as fh:
            fh.write(json.dumps(record) + "\n")
        log.info("eval %s", json.dumps(record))
        return record

    def train_step(self) -> float | None:
        """One optimiser step on a fresh prior batch; returns the loss (None if skipped)."""
        shape, batch_size = draw_shape(self.curriculum, self.step, self.generator)
        batch = sample_batch(shape, batch_size, self.generator)
        y_RB = zscore_targets(batch.y_RB, shape.n_train).to(self.device)
        logits_TBK = regression_logits(self.model, batch.x_RBF.to(self.device), y_RB[: shape.n_train])
        loss = self.criterion(logits_TBK, y_RB[shape.n_train :]).mean()
        if not torch.isfinite(loss):
            log.warning("step %d: non-finite loss on shape %s, batch skipped", self.step, shape)
            return None
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.cfg.grad_clip)
        self.opt.step()
        self.step += 1
        return loss.item()

    def run(self) -> Path:
        """Train until `max_steps` or `max_minutes` of this invocation; returns the exported host."""
        if not self.history:
            self._evaluate(None)
        start, last_eval, last_ckpt = time.time(), time.time(), time.time()
        losses: list[float] = []
        budget_s = self.cfg.max_minutes * 60
        while self.step < self.cfg.max_steps and time.time() - start < budget_s:
            t0 = time.time()
            loss = self.train_step()
            self.elapsed_s += time.time() - t0
            if loss is not None:
                losses.append(loss)
            if self.step % 100 == 0 and losses:
                log.info(
                    "step %d loss(100) %.4f %.2f steps/s",
                    self.step,
                    np.mean(losses[-100:]),
                    1 / max(time.time() - t0, 1e-9),
                )
            if time.time() - last_eval >= self.cfg.eval_every_s:
                self._evaluate(float(np.mean(losses)) if losses else None)
                losses, last_eval = [], time.time()
                self._publish()
            if time.time() - last_ckpt >= self.cfg.checkpoint_every_s:
                self._save_state()
                last_ckpt = time.time()
        self._evaluate(float(np.mean(losses)) if losses else None)
        self._save_state()
        return self._publish()

    def _publish(self) -> Path:
        path = self.export(self.run_dir / "host.safetensors")
        if self.cfg.export_path:
            write_atomic(Path(self.cfg.export_path), lambda tmp: shutil.copyfile(path, tmp))
        return path
