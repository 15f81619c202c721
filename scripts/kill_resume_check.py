#!/usr/bin/env python
"""Kill -9 a CPU pretraining run again and again, resume it each time, and check that it ends with
no corrupt checkpoint and exactly the weights of an uninterrupted run.

    python scripts/kill_resume_check.py                  # 25 kills, ~4 minutes on 2 cores
    python scripts/kill_resume_check.py --kills 40 --steps 100 --seed 3 --keep --work /tmp/kr

The run's length is sized by time, not by a fixed number of steps: a short calibration run measures
the step time on this machine, and the runs get enough steps for every kill to find training still
going (at least 60; `--seconds-per-kill` of steps for each kill). A fixed count that suits a slow
CPU lets a session on a fast one finish before its kill. The runs change their sequence length
half-way (`--phases`, 16 then 32 tokens), so kills also land on both sides of a phase boundary.

What it does:
  0. (without --steps) a calibration run of 20 steps, timed;
  1. a reference run, uninterrupted: `python -m bertlab pretrain` (tiny 1-layer model, 2 books,
     fp32 on the CPU, a checkpoint every step, dropout on so the RNG states matter);
  2. a second run in another folder, with the reference's tokenizer (`--tokenizer`), started with
     `--resume` and killed with SIGKILL after a random moment (seeded), `--kills` times. About half
     of the kills (`--write-share`) wait for the process to start writing a checkpoint (its
     `.tmp-step-<step>-<pid>` folder appears) and kill it then, after 0-10 ms; the others land
     during start-up (importing, loading the data) or between / inside training steps. One more
     kill aims at the write of the final model folder (`.tmp-final-<pid>`);
  3. after every kill: every `step-*` folder that `list_checkpoints` reports (the newest is what
     `latest_checkpoint` and `--resume` choose) must load with `load_checkpoint` and be whole
     (its step, its state, finite weights of the expected names); the newest step may never go
     back; the next start must say "resuming from" that newest checkpoint;
  4. the run is then let finish; `<out>/final/model.safetensors` is compared with the reference's
     tensor by tensor with torch.equal (and the last checkpoints' optimizer / RNG / data state and
     the logged loss of every step too: the runs log every step, because a metrics line averages
     the steps since the previous line *of the same session*, so with --log-every > 1 the first
     line after a resume covers fewer steps than the uninterrupted run's).

A kill "hit a checkpoint write" when the killed process's temporary checkpoint folder is still
there after it died (bertlab.checkpoint writes `.tmp-step-<step>-<pid>/` and renames it into
place: a kill before the rename leaves it). The last line printed is a JSON summary; the exit
status is 0 only if the weights are identical and no checkpoint was ever corrupt.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import torch  # noqa: E402
from safetensors.torch import load_file  # noqa: E402

from bertlab import checkpoint as ckpt  # noqa: E402

STEP_DIR = re.compile(r"^step-(\d+)$")
RESUMING = re.compile(r"resuming from (\S+) \(step (\d+)\)")
SLOW, FAST = 0.005, 0.0002  # polling intervals (s): while waiting, and when a write is imminent


# ------------------------------------------------------------------------------------------------
# Checks (also used by tests/test_kill_resume.py)
# ------------------------------------------------------------------------------------------------
class CorruptCheckpoint(Exception):
    pass


def check_checkpoint(path: Path, expect_keys: set[str] | None = None) -> int:
    """Load a checkpoint folder the way --resume does and check it is whole; returns its step.
    Raises CorruptCheckpoint (with the reason) otherwise."""
    try:
        c = ckpt.load_checkpoint(path)
        m = STEP_DIR.match(path.name)
        if m and c.step != int(m.group(1)):
            raise CorruptCheckpoint(f"state.json says step {c.step}")
        missing = {"optimizer", "rng", "data", "trainer", "run"} - set(c.state)
        if missing:
            raise CorruptCheckpoint(f"state lacks {sorted(missing)}")
        if int(c.state["trainer"]["step"]) != c.step:
            raise CorruptCheckpoint(f"trainer step {c.state['trainer']['step']} != {c.step}")
        if expect_keys is not None and set(c.model_state) != expect_keys:
            raise CorruptCheckpoint(f"weights {sorted(set(c.model_state) ^ expect_keys)[:5]} missing/unexpected")
        bad = [k for k, v in c.model_state.items() if v.is_floating_point() and not torch.isfinite(v).all()]
        if bad:
            raise CorruptCheckpoint(f"non-finite weights {bad[:3]}")
        if (path / "tokenizer.json").exists():
            json.loads((path / "tokenizer.json").read_text())
        return c.step
    except CorruptCheckpoint:
        raise
    except Exception as err:  # noqa: BLE001  (any failure to load is what we are looking for)
        raise CorruptCheckpoint(f"{type(err).__name__}: {err}") from err


def verify_checkpoints(root: Path, expect_keys: set[str] | None = None) -> dict[str, Any]:
    """Every checkpoint list_checkpoints reports must load. Returns {"steps": [...], "latest":
    step or None, "corrupt": [(name, reason)], "latest_ok": bool}."""
    listed = ckpt.list_checkpoints(root)
    latest = ckpt.latest_checkpoint(root)
    steps, corrupt = [], []
    for p in listed:
        try:
            steps.append(check_checkpoint(p, expect_keys))
        except CorruptCheckpoint as err:
            corrupt.append((p.name, str(err)))
    latest_ok = latest is None or latest.name not in {n for n, _ in corrupt}
    return {
        "steps": steps,
        "latest": int(STEP_DIR.match(latest.name).group(1)) if latest else None,
        "corrupt": corrupt,
        "latest_ok": latest_ok,
    }


def compare_weights(a: Path, b: Path) -> dict[str, Any]:
    """Tensor-by-tensor exact comparison of two safetensors files."""
    wa, wb = load_file(str(a)), load_file(str(b))
    differ = sorted(k for k in set(wa) & set(wb) if not torch.equal(wa[k], wb[k]))
    max_diff = 0.0
    for k in set(wa) & set(wb):
        if wa[k].shape == wb[k].shape and wa[k].is_floating_point():
            max_diff = max(max_diff, (wa[k].double() - wb[k].double()).abs().max().item() if wa[k].numel() else 0.0)
        elif wa[k].shape != wb[k].shape:
            max_diff = float("inf")
    only = sorted(set(wa) ^ set(wb))
    return {
        "identical": not differ and not only,
        "differ": differ,
        "only_in_one": only,
        "max_abs_diff": max_diff,
        "tensors": len(wa),
    }


def compare_states(a: Path, b: Path) -> dict[str, Any]:
    """The rest of two checkpoints: optimizer moments, RNG states, data position, counters
    (everything but the wall-clock time)."""
    ta, tb = load_file(str(a / "state.safetensors")), load_file(str(b / "state.safetensors"))
    differ = sorted(k for k in set(ta) | set(tb) if k not in ta or k not in tb or not torch.equal(ta[k], tb[k]))
    ja, jb = (json.loads((p / "state.json").read_text()) for p in (a, b))
    for j in (ja, jb):
        j["state"]["trainer"].pop("elapsed_s", None)
    return {"identical": not differ and ja == jb, "tensors_differ": differ[:10], "json_identical": ja == jb}


def logged_losses(run: Path) -> list[tuple]:
    from bertlab.training.logs import read_metrics

    return [
        (r.get("split"), r.get("step"), r.get("loss"), r.get("mlm_acc")) for r in read_metrics(run / "metrics.jsonl")
    ]


# ------------------------------------------------------------------------------------------------
# The runs
# ------------------------------------------------------------------------------------------------
@dataclass
class Settings:
    kills: int = 25
    steps: int | None = None  # None: sized by time on this machine (a calibration run)
    seconds_per_kill: float = 0.25  # with steps=None: at least this much training time per kill
    phases: str = "0.5:16:16,0.5:32:8"  # the runs' sequence-length phases ("": none)
    seed: int = 0
    write_share: float = 0.5  # of the kills: wait for a checkpoint write and kill inside it
    startup_share: float = 0.15  # of the kills: a random moment of the start-up
    final_kill: bool = True  # one more kill aimed at the write of <out>/final
    corpus: str = "books"
    max_documents: int = 2
    vocab_size: int = 1000
    keep_last: int = 2
    threads: int = 1
    timeout: float = 1800.0  # for the whole check
    python: str = sys.executable
    verbose: bool = True


def child_env(threads: int) -> dict[str, str]:
    env = dict(os.environ)
    mirror = env.get("BERTLAB_DATA_MIRROR") or (
        str(REPO.parent / "shared" / "data") if (REPO.parent / "shared" / "data").is_dir() else ""
    )
    if mirror:
        env["BERTLAB_DATA_MIRROR"] = mirror
    env.setdefault("HF_HUB_OFFLINE", "1")
    env.update(
        TOKENIZERS_PARALLELISM="false",
        BERTLAB_PROGRESS="0",
        PYTHONUNBUFFERED="1",
        OMP_NUM_THREADS=str(threads),
        MKL_NUM_THREADS=str(threads),
    )
    return env


def pretrain_args(s: Settings, out: Path, tokenizer: Path | None, steps: int) -> list[str]:
    args = [
        "-m",
        "bertlab",
        "pretrain",
        "--preset",
        "tiny",
        "--layers",
        "1",
        "--hidden",
        "64",
        "--heads",
        "2",
        "--corpus",
        s.corpus,
        "--max-documents",
        str(s.max_documents),
        "--seq-len",
        "32",
        "--batch-size",
        "8",
        "--steps",
        str(steps),
        "--recipe",
        "budget",
        "--lr",
        "1e-3",
        "--warmup",
        "0.1",
        "--dropout",
        "0.1",
        "--seed",
        str(s.seed),
        "--device",
        "cpu",
        "--precision",
        "fp32",
        "--no-compile",
        "--checkpoint-every",
        "1",
        "--keep-last",
        str(s.keep_last),
        "--log-every",
        "1",
        "--eval-every",
        "100000",
        "--eval-batches",
        "1",
        "--no-progress",
        "--out",
        str(out),
        "--resume",
    ]
    args += ["--tokenizer", str(tokenizer)] if tokenizer else ["--vocab-size", str(s.vocab_size)]
    args += ["--phases", s.phases] if s.phases else []
    return args


class Aborted(Exception):
    pass


@dataclass
class Check:
    s: Settings
    work: Path
    rng: random.Random = field(init=False)
    log: list[str] = field(default_factory=list)
    launches: int = 0
    kills: int = 0
    kills_during_write: int = 0
    kills_during_prune: int = 0
    kills_by_mode: dict[str, int] = field(default_factory=dict)
    resumes: int = 0
    corrupt: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    startup_est: float = 4.0  # s from launch to the first checkpoint write of a session
    step_est: float = 0.1  # s per step (with its checkpoint)

    def __post_init__(self):
        self.rng = random.Random(self.s.seed)
        self.t0 = time.monotonic()
        self.deadline = self.t0 + self.s.timeout
        self.env = child_env(self.s.threads)
        self.steps: int = self.s.steps or 0  # set by calibrate() when sized by time

    def say(self, msg: str) -> None:
        self.log.append(msg)
        if self.s.verbose:
            print(msg, flush=True)

    # --- processes ------------------------------------------------------------------------------
    def launch(self, out: Path, tokenizer: Path | None, steps: int | None = None) -> tuple[subprocess.Popen, Path]:
        self.launches += 1
        logf = self.work / "logs" / f"{out.name}-{self.launches:03d}.log"
        logf.parent.mkdir(parents=True, exist_ok=True)
        with open(logf, "w") as f:
            args = pretrain_args(self.s, out, tokenizer, steps or self.steps)
            p = subprocess.Popen([self.s.python, *args], cwd=REPO, env=self.env, stdout=f, stderr=subprocess.STDOUT)
        p.t_start = time.monotonic()  # type: ignore[attr-defined]
        return p, logf

    def poll(self, p: subprocess.Popen, cond: Callable[[], bool], interval: Callable[[], float] | float = SLOW) -> bool:
        """Wait until cond() (True) or the process exits (False)."""
        while True:
            if cond():
                return True
            if p.poll() is not None:
                return cond()
            if time.monotonic() > self.deadline:
                p.kill()
                raise Aborted(f"timed out after {self.s.timeout:.0f} s")
            time.sleep(interval() if callable(interval) else interval)

    def finish(self, p: subprocess.Popen, logf: Path, what: str) -> None:
        try:
            rc = p.wait(timeout=max(self.deadline - time.monotonic(), 1))
        except subprocess.TimeoutExpired:
            p.kill()
            raise Aborted(f"{what} timed out") from None
        if rc != 0:
            raise Aborted(f"{what} failed with exit status {rc}:\n{logf.read_text()[-3000:]}")

    # --- the run's length -----------------------------------------------------------------------
    def calibrate(self) -> None:
        """Without a step count: time 20 steps on this machine and give the runs enough steps that
        every kill finds the run still training (at least 60, `seconds_per_kill` per kill)."""
        if self.s.steps:
            return
        out = self.work / "calibration"
        p, logf = self.launch(out, None, steps=20)
        self.finish(p, logf, "the calibration run")
        m = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines() if x.strip()]
        train = [r for r in m if r.get("split") == "train"]
        per_step = (train[-1]["elapsed_s"] - train[1]["elapsed_s"]) / (train[-1]["step"] - train[1]["step"])
        per_kill = max(2.5, self.s.seconds_per_kill / max(per_step, 1e-6))
        self.steps = max(60, math.ceil(self.s.kills * per_kill))
        self.say(f"calibration: {per_step * 1000:.0f} ms a step with its checkpoint; {self.steps} steps a run")
        shutil.rmtree(out, ignore_errors=True)

    # --- the reference --------------------------------------------------------------------------
    def reference(self) -> Path:
        out = self.work / "reference"
        p, logf = self.launch(out, None)
        first = out / "checkpoints" / "step-0000001"
        t = p.t_start  # type: ignore[attr-defined]
        if self.poll(p, first.exists, 0.02):
            self.startup_est = min(max(time.monotonic() - t, 1.0), 30.0)
        self.finish(p, logf, "the reference run")
        m = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines() if x.strip()]
        train = [r for r in m if r.get("split") == "train"]
        if len(train) >= 2 and train[-1]["step"] > train[0]["step"]:
            self.step_est = (train[-1]["elapsed_s"] - train[0]["elapsed_s"]) / (train[-1]["step"] - train[0]["step"])
        self.say(
            f"reference: {self.steps} steps uninterrupted in {time.monotonic() - t:.1f} s "
            f"(start-up ~{self.startup_est:.1f} s, ~{self.step_est * 1000:.0f} ms/step with its checkpoint)"
        )
        return out

    # --- one killed session ---------------------------------------------------------------------
    def session(self, out: Path, tokenizer: Path, latest: int, mode: str) -> tuple[bool, str]:
        """Start a --resume session and SIGKILL it as `mode` says. Returns (killed, what it aimed at)."""
        root = out / "checkpoints"
        p, logf = self.launch(out, tokenizer)
        pid, t = p.pid, p.t_start  # type: ignore[attr-defined]
        remaining = self.steps - latest
        tmp = lambda n: root / f".tmp-step-{n:07d}-{pid}"  # noqa: E731
        done = lambda n: (root / f"step-{n:07d}").is_dir()  # noqa: E731
        aim = ""
        if mode == "startup":
            delay = self.rng.uniform(0.05, self.startup_est)
            aim = f"start-up +{delay:.2f}s"
            self.poll(p, lambda: time.monotonic() - t >= delay, SLOW)
        elif mode == "write":  # inside the k-th checkpoint write of this session
            n = latest + self.rng.randint(1, max(1, min(3, remaining - 1)))
            jitter = self.rng.choice([0.0, 0.0, self.rng.uniform(0, 0.002), self.rng.uniform(0, 0.01)])

            def imminent() -> float:
                if n - 1 > latest:
                    return FAST if done(n - 1) else SLOW
                return FAST if time.monotonic() - t > 0.6 * self.startup_est else SLOW

            while True:
                hit = self.poll(p, lambda: tmp(n).is_dir() or done(n), imminent)
                if not hit or tmp(n).is_dir() or n >= self.steps:
                    break
                n += 1  # the whole write happened between two looks: aim at the next one
            if jitter:
                time.sleep(jitter)
            aim = f"write of step {n} +{jitter * 1000:.1f}ms"
        elif mode == "step":  # a random moment after the k-th step of this session
            n = latest + self.rng.randint(1, max(1, min(2, remaining - 1)))
            delay = self.rng.uniform(0, 1.5 * self.step_est)
            self.poll(p, lambda: done(n), SLOW)
            time.sleep(delay)
            aim = f"step {n} +{delay * 1000:.0f}ms"
        elif mode == "final":  # the write of <out>/final, after the last checkpoint
            final_tmp = out / f".tmp-final-{pid}"
            self.poll(p, lambda: done(self.steps) or final_tmp.is_dir(), SLOW)
            self.poll(p, final_tmp.is_dir, FAST)
            aim = "write of final/"
        if p.poll() is None:
            os.kill(pid, signal.SIGKILL)
        rc = p.wait()
        if rc != -signal.SIGKILL:
            if rc == 0:  # it finished before the kill: not a kill, but it still had to resume correctly
                self.check_resumed(logf, latest)
                return False, aim
            raise Aborted(f"session {self.launches} ({mode}) exited with status {rc}:\n{logf.read_text()[-3000:]}")
        # How far did this session get, and where did the kill land?
        self.check_resumed(logf, latest)
        leftovers = sorted(x.name for x in root.glob(f".tmp-step-*-{pid}")) if root.is_dir() else []
        leftovers += sorted(x.name for x in out.glob(f".tmp-final-{pid}"))
        if leftovers:
            self.kills_during_write += 1
            inside = sorted(f.name for f in (root if "step" in leftovers[0] else out).joinpath(leftovers[0]).iterdir())
            aim += f" -> HIT WRITE ({leftovers[0]}: {', '.join(inside) or 'empty'})"
        if root.is_dir() and len(ckpt.list_checkpoints(root)) > self.s.keep_last:
            self.kills_during_prune += 1
            aim += " -> hit pruning"
        return True, aim

    def check_resumed(self, logf: Path, latest: int) -> None:
        """A session that got past start-up must have resumed from the newest checkpoint."""
        m = RESUMING.search(logf.read_text())
        if m:
            self.resumes += 1
            if int(m.group(2)) != latest:
                self.problems.append(f"{logf.name}: resumed from step {m.group(2)}, newest checkpoint was {latest}")

    # --- the whole check ------------------------------------------------------------------------
    def run(self) -> dict[str, Any]:
        self.calibrate()
        ref = self.reference()
        tokenizer = ref / "tokenizer" / "tokenizer.json"
        expect_keys = set(load_file(str(ref / "final" / "model.safetensors")))
        out = self.work / "killed"
        root = out / "checkpoints"
        latest = 0
        history = []
        plan = []
        for _ in range(self.s.kills):
            u = self.rng.random()
            plan.append(
                "write"
                if u < self.s.write_share
                else "startup"
                if u < self.s.write_share + self.s.startup_share
                else "step"
            )
        if self.s.final_kill:
            plan.append("final")
        attempts = 0
        while plan:
            mode = plan[0]
            if mode != "final" and self.steps - latest < 2:
                mode = "startup"  # nothing left to aim at without finishing the run
            attempts += 1
            if attempts > 3 * (self.s.kills + 2):
                raise Aborted("too many sessions finished before they could be killed")
            killed, aim = self.session(out, tokenizer, latest, mode)
            if not killed:
                if mode == "final":
                    self.say(f"session {self.launches}: finished before the final write could be hit")
                    plan.pop(0)
                    latest = verify_checkpoints(root, expect_keys)["latest"] or latest  # it ran to the end
                    break
                raise Aborted(f"session {self.launches} finished before its kill ({aim}); use more --steps")
            plan.pop(0)
            self.kills += 1
            self.kills_by_mode[mode] = self.kills_by_mode.get(mode, 0) + 1
            v = verify_checkpoints(root, expect_keys)
            for name, why in v["corrupt"]:
                self.corrupt.append(f"after kill {self.kills}: {name}: {why}")
            if not v["latest_ok"]:
                self.problems.append(f"after kill {self.kills}: the checkpoint --resume would choose is corrupt")
            final_dir = out / "final"
            if final_dir.exists():
                try:
                    load_file(str(final_dir / "model.safetensors"))
                    json.loads((final_dir / "config.json").read_text())
                except Exception as err:  # noqa: BLE001
                    self.corrupt.append(f"after kill {self.kills}: final/: {type(err).__name__}: {err}")
            new_latest = v["latest"] or 0
            if new_latest < latest:
                self.problems.append(
                    f"after kill {self.kills}: the newest checkpoint went back from {latest} to {new_latest}"
                )
            history.append(new_latest)
            self.say(
                f"kill {self.kills:3d} [{mode:7s}] {aim}; checkpoints {v['steps']}"
                + (f"  CORRUPT {v['corrupt']}" if v["corrupt"] else "")
            )
            latest = new_latest
        # let it finish
        p, logf = self.launch(out, tokenizer)
        self.finish(p, logf, "the last session")
        self.check_resumed(logf, latest)
        v = verify_checkpoints(root, expect_keys)
        for name, why in v["corrupt"]:
            self.corrupt.append(f"at the end: {name}: {why}")
        self.say(f"finished: {self.launches - 1} sessions of the killed run; checkpoints {v['steps']}")

        w = compare_weights(ref / "final" / "model.safetensors", out / "final" / "model.safetensors")
        last = f"step-{self.steps:07d}"
        st = compare_states(ref / "checkpoints" / last, root / last)
        losses_same = logged_losses(ref) == logged_losses(out)
        if not w["identical"]:
            self.say(f"final weights DIFFER: {w['differ'][:10]} {w['only_in_one'][:5]}")
        if not st["identical"]:
            self.problems.append(f"the last checkpoints' state differs: {st}")
        if not losses_same:
            self.problems.append("the logged losses differ from the reference's")
        return {
            "kills": self.kills,
            "kills_during_write": self.kills_during_write,
            "kills_during_prune": self.kills_during_prune,
            "kills_by_mode": self.kills_by_mode,
            "resumes": self.resumes,
            "sessions": self.launches - 1,
            "steps": self.steps,
            "corrupt_checkpoints": len(self.corrupt),
            "identical": w["identical"],
            "max_abs_diff": w["max_abs_diff"],
            "tensors_compared": w["tensors"],
            "state_identical": st["identical"],
            "losses_identical": losses_same,
            "problems": self.problems,
            "corrupt": self.corrupt[:20],
            "wall_s": round(time.monotonic() - self.t0, 1),
        }


def run_check(settings: Settings, work: Path | None = None, keep: bool = False) -> dict[str, Any]:
    made = work is None
    work = Path(tempfile.mkdtemp(prefix="kill-resume-")) if made else Path(work)
    if not made and work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True, exist_ok=True)
    check = Check(settings, work)
    try:
        summary = check.run()
        summary["ok"] = passed(summary, settings)
    except Aborted as err:
        summary = {
            "kills": check.kills,
            "kills_during_write": check.kills_during_write,
            "resumes": check.resumes,
            "corrupt_checkpoints": len(check.corrupt),
            "identical": False,
            "max_abs_diff": None,
            "wall_s": round(time.monotonic() - check.t0, 1),
            "error": str(err)[-2000:],
            "corrupt": check.corrupt[:20],
            "problems": check.problems,
            "ok": False,
        }
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)
    summary["work"] = str(work) if keep else None
    return summary


def passed(summary: dict[str, Any], s: Settings) -> bool:
    return (
        summary["identical"]
        and summary["corrupt_checkpoints"] == 0
        and not summary.get("problems")
        and summary["kills"] >= s.kills
        and summary.get("state_identical", False)
        and summary.get("losses_identical", False)
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--kills", type=int, default=25, help="SIGKILLs before the run may finish (default 25)")
    ap.add_argument(
        "--steps",
        type=int,
        default=None,
        help="optimiser steps of each run (default: sized by time on this machine, at least 60)",
    )
    ap.add_argument(
        "--seconds-per-kill",
        type=float,
        default=0.25,
        help="without --steps: training time per kill the runs are sized for (default 0.25)",
    )
    ap.add_argument(
        "--phases",
        default="0.5:16:16,0.5:32:8",
        help='sequence-length phases of the runs (FRACTION:SEQ_LEN:BATCH,...; "" for none)',
    )
    ap.add_argument("--seed", type=int, default=0, help="seed of the kill schedule and of the runs")
    ap.add_argument("--write-share", type=float, default=0.5, help="share of kills aimed at checkpoint writes")
    ap.add_argument("--startup-share", type=float, default=0.15, help="share of kills during start-up")
    ap.add_argument("--no-final-kill", action="store_true", help="no extra kill during the write of final/")
    ap.add_argument("--threads", type=int, default=1, help="torch threads of each run (OMP_NUM_THREADS)")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds for the whole check")
    ap.add_argument("--work", type=Path, default=None, help="folder for the runs (emptied first; default a temp dir)")
    ap.add_argument("--keep", action="store_true", help="keep the runs' folders")
    ap.add_argument("--quiet", action="store_true")
    a = ap.parse_args(argv)
    if a.kills < 0 or (a.steps is not None and a.steps < 3):
        ap.error("--kills must be >= 0 and --steps >= 3")
    s = Settings(
        kills=a.kills,
        steps=a.steps,
        seconds_per_kill=a.seconds_per_kill,
        phases=a.phases,
        seed=a.seed,
        write_share=a.write_share,
        startup_share=a.startup_share,
        final_kill=not a.no_final_kill,
        threads=a.threads,
        timeout=a.timeout,
        verbose=not a.quiet,
    )
    summary = run_check(s, a.work, a.keep)
    if summary.get("error"):
        print(f"ERROR: {summary['error']}", flush=True)
    for line in summary.get("corrupt") or []:
        print(f"CORRUPT: {line}")
    for line in summary.get("problems") or []:
        print(f"PROBLEM: {line}")
    print(
        f"{summary['kills']} kills ({summary['kills_during_write']} during checkpoint writes), "
        f"{summary['resumes']} resumes, {summary['corrupt_checkpoints']} corrupt checkpoints; final weights "
        f"{'IDENTICAL to' if summary['identical'] else 'DIFFERENT from'} the uninterrupted run "
        f"(max |diff| {summary['max_abs_diff']}); {'PASS' if summary['ok'] else 'FAIL'}"
    )
    keys = ("kills", "kills_during_write", "resumes", "corrupt_checkpoints", "identical", "max_abs_diff", "wall_s")
    extra = ("kills_during_prune", "kills_by_mode", "sessions", "steps", "state_identical", "losses_identical", "ok")
    print(json.dumps({**{k: summary.get(k) for k in keys}, **{k: summary[k] for k in extra if k in summary}}))
    return 0 if summary["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
