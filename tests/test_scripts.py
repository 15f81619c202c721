"""The shell scripts' shared settings (scripts/run_env.sh), sourced the way the scripts source it."""

import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


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
