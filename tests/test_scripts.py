"""The shell scripts' shared settings (scripts/run_env.sh), sourced the way the scripts source it."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VOCAB7 = "data/pilots/cpu-mini-32-first-mask-40-50min-planned-vocabulary/tokenizer.json"


def source_run_env(checkout: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Source run_env.sh from `checkout` under `set -euo pipefail`, as run_pilots.sh and
    reference_run.sh do, then print the python it chose."""
    return subprocess.run(
        ["bash", "-c", 'set -euo pipefail; . scripts/run_env.sh; echo "PY=$PY"'],
        cwd=checkout,
        env={"PATH": "/usr/bin:/bin", **(env or {})},
        capture_output=True,
        text=True,
    )


def checkout_copy(tmp_path: Path, with_venv: bool) -> Path:
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "run_env.sh", tmp_path / "scripts" / "run_env.sh")
    if with_venv:
        python = tmp_path / ".venv" / "bin" / "python"
        python.parent.mkdir(parents=True)
        python.write_text("#!/bin/sh\n")
        python.chmod(0o755)
    return tmp_path


def test_run_env_without_a_venv_does_not_end_the_script(tmp_path):
    # a checkout with no .venv (a git worktree, a fresh clone before `make setup`): the calling
    # script must go on, with the python on the PATH
    done = source_run_env(checkout_copy(tmp_path, with_venv=False))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "PY=python"


def test_run_env_prefers_the_checkouts_venv_and_respects_a_given_python(tmp_path):
    checkout = checkout_copy(tmp_path, with_venv=True)
    assert source_run_env(checkout).stdout.strip() == "PY=.venv/bin/python"
    given = source_run_env(checkout, {"PY": "/opt/py/bin/python"})
    assert given.returncode == 0 and given.stdout.strip() == "PY=/opt/py/bin/python"


def pilot_lines(tmp_path: Path, series: str, pilot: str, *args: str) -> list[list[str]]:
    """The commands run_pilots.sh runs for one pilot of a series, with a python that only echoes
    what it is asked to run (and runs the script's own `-c` one-liners)."""
    fake = tmp_path / "py"
    fake.write_text(f'#!/bin/bash\nif [ "$1" = "-c" ]; then exec {sys.executable} "$@"; fi\necho "PY $*"\n')
    fake.chmod(0o755)
    done = subprocess.run(
        ["bash", "scripts/run_pilots.sh", *args],
        cwd=ROOT,
        env={"PATH": "/usr/bin:/bin", "PY": str(fake), "SERIES": series, "PILOTS": pilot},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return [x.split() for x in done.stdout.splitlines() if x.startswith("PY ")]


def flag(command: list[str], name: str) -> str:
    """The value argparse keeps for `name`: the last one given."""
    return [command[i + 1] for i, a in enumerate(command) if a == name][-1]


def test_run_pilots_record_128_series_compares_batches_at_equal_tokens_and_heldout_windows(tmp_path):
    """SERIES=record-128: the baseline takes the record's settings on 128-token sequences, 64 a batch;
    the pilot halves the batch and doubles every step count, so that both runs see the same tokens
    at each evaluation and score the same number of held-out windows."""
    (base, base_record) = pilot_lines(tmp_path, "record-128", "cpu-mini-record-128")
    (half, half_record) = pilot_lines(tmp_path, "record-128", "cpu-mini-record-128-batch-32")
    tokens = {}
    for cmd in (base, half):
        assert cmd[1:4] == ["-m", "bertlab", "pretrain"]
        assert flag(cmd, "--tokenizer") == VOCAB7
        assert flag(cmd, "--norm-position") == "post" and "--segment-pairs" in cmd and "--phases" not in cmd
        assert flag(cmd, "--mlm-probability") == "0.4" and flag(cmd, "--seq-len") == "128"
        batch = int(flag(cmd, "--batch-size"))
        tokens[batch] = {
            "run": batch * int(flag(cmd, "--steps")),
            "stop": batch * int(flag(cmd, "--stop-after")),
            "eval": batch * int(flag(cmd, "--eval-every")),
            "heldout": min(batch, 64) * int(flag(cmd, "--eval-batches")),
        }
    assert set(tokens) == {64, 32} and tokens[64] == tokens[32]
    assert tokens[64]["stop"] == 64 * 1000  # the series' default stop
    assert "--baseline" not in base_record
    assert flag(half_record, "--baseline") == "cpu-mini-record-128"
    # a longer pilot moves both stops together
    (base2, _) = pilot_lines(tmp_path, "record-128", "cpu-mini-record-128", "1500")
    (half2, _) = pilot_lines(tmp_path, "record-128", "cpu-mini-record-128-batch-32", "1500")
    assert int(flag(base2, "--stop-after")) * 2 == int(flag(half2, "--stop-after")) == 3000
    # two layers: 1.71 times the schedule and the stop (the same CPU time), everything else the same
    (two, _) = pilot_lines(tmp_path, "record-128", "cpu-mini-record-128-2-layers-x1.71")
    assert flag(two, "--layers") == "2" and flag(two, "--batch-size") == "64"
    assert int(flag(two, "--steps")) == 3000 * 171 // 100 and int(flag(two, "--stop-after")) == 1000 * 171 // 100


def test_run_pilots_record7_runs_two_layers_for_the_records_cpu_time(tmp_path):
    """SERIES=record7: the seventh record's settings on a fixed schedule, its vocabulary kept beside
    the pilots (the same pieces as the record's), two layers for 1.71 times its steps, resumable."""
    planned = ROOT / "data/pilots/cpu-mini-32-first-mask-40-50min-planned.json"
    total = json.loads(planned.read_text())["heldout"][-1]["step"]
    # the seventh record: the book's record now, or kept under data/pilots/ once another replaces it
    records = [ROOT / "data/reference_run", ROOT / "data/pilots/record7"]
    [seventh] = [
        r
        for r in records
        if (r / "provenance.json").exists()
        and json.loads((r / "provenance.json").read_text())["pretraining"]["steps"] == total
    ]
    assert (ROOT / VOCAB7).read_bytes() == (seventh / "tokenizer.json").read_bytes()
    (pretrain, record) = pilot_lines(tmp_path, "record7", "cpu-mini-record7-2-layers-x1.71")
    assert flag(pretrain, "--tokenizer") == VOCAB7 and "--resume" in pretrain
    assert flag(pretrain, "--phases") == "0.5:32:256,0.3:64:128,0.1:128:64,0.1:256:32"
    assert flag(pretrain, "--mlm-probability") == "0.4" and flag(pretrain, "--layers") == "2"
    assert int(flag(pretrain, "--steps")) == total * 171 // 100 and total == 3747
    assert "--baseline" not in record


def test_run_pilots_record5_builds_whole_resumable_runs(tmp_path):
    """SERIES=record5 with a python that only echoes what it is asked to run: each pilot is one
    resumable `pretrain` on the fifth record's settings plus its change (a later flag wins), then
    `record_pilot.py` without a baseline."""
    fake = tmp_path / "py"
    fake.write_text(f'#!/bin/bash\nif [ "$1" = "-c" ]; then exec {sys.executable} "$@"; fi\necho "PY $*"\n')
    fake.chmod(0o755)
    env = {"PATH": "/usr/bin:/bin", "PY": str(fake), "SERIES": "record5"}

    def lines(pilot):
        done = subprocess.run(
            ["bash", "scripts/run_pilots.sh"],
            cwd=ROOT,
            env={**env, "PILOTS": pilot},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        return [x.split() for x in done.stdout.splitlines() if x.startswith("PY ")]

    record5 = ROOT / "data/pilots/cpu-mini-post-ln-pairs-phases-50min.json"
    total = json.loads(record5.read_text())["heldout"][-1]["step"]
    (pretrain, record) = lines("cpu-mini-2-layers-x1.71")
    assert pretrain[1:4] == ["-m", "bertlab", "pretrain"] and "--resume" in pretrain
    steps = [int(pretrain[i + 1]) for i, a in enumerate(pretrain) if a == "--steps"]
    assert steps == [total, total * 171 // 100]  # the last one is the one argparse keeps
    assert pretrain[pretrain.index("--layers") + 1] == "2"
    assert pretrain[pretrain.index("--out") + 1] == "runs/pilots/cpu-mini-2-layers-x1.71"
    assert record[1].endswith("record_pilot.py") and "--baseline" not in record
    assert f"{total * 171 // 100:,} steps, 1.71 times its {total:,}:" in " ".join(record)
    (control, _) = lines("cpu-mini-record5-steps")
    assert "--layers" not in control and control.count("--steps") == 1
    assert control[control.index("--phases") + 1] == "0.8:64:128,0.1:128:64,0.1:256:32"
