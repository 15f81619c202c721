"""Run chapters 10-16 on a GPU, as a Colab reader would (their GPU branch, unpatched), and record
each chapter's wall time and key printed lines in data/gpu_runs/<gpu>-<date>/chapters.json.

    python scripts/gpu_chapters.py                 # every chapter, 10-16
    python scripts/gpu_chapters.py 11 14           # some of them
    python scripts/gpu_chapters.py --out DIR       # somewhere else

Each chapter runs in a fresh kernel from book/ (where the book build runs it), with the data mirror
and the hub offline as the Makefile sets them. A chapter that fails is recorded with its error and
the others still run. The record sets the measured wall time beside the time the chapter printed as
expected on a T4 (bertlab.training.flops), so those estimates can be checked and refitted.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = {
    "10": "10_pretraining",
    "11": "11_finetuning_sst2",
    "12": "12_sentence_pairs",
    "13": "13_question_answering",
    "14": "14_named_entities",
    "15": "15_features",
    "16": "16_attention_heads",
}
# the printed lines worth keeping: sizes, estimates, scores, times
KEEP = re.compile(
    r"expected on a T4|GPU \(full size\)|FULL = |median|F1|accuracy|exact match|steps, .* tokens|"
    r"held-out|ran in|executed in|\[\d+ s\]",
    re.I,
)


def key_lines(nb) -> list[str]:
    lines = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        for out in cell.get("outputs", []):
            text = out.get("text", "") or out.get("data", {}).get("text/plain", "")
            lines += [line.strip() for line in text.splitlines() if KEEP.search(line)]
    return lines[:200]


def run_chapter(name: str, timeout: int) -> dict:
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(ROOT / "book" / f"{name}.ipynb", as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell('print("FULL =", FULL)'))
    t0 = time.perf_counter()
    error = None
    try:
        NotebookClient(
            nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(ROOT / "book")}}
        ).execute()
    except Exception as err:  # recorded, and the next chapter runs
        error = f"{type(err).__name__}: {str(err)[-2000:]}"
    seconds = time.perf_counter() - t0
    printed = key_lines(nb)
    expected = [line for line in printed if "expected on a T4" in line]
    return {
        "chapter": name,
        "seconds": round(seconds, 1),
        "ok": error is None,
        "error": error,
        "full_branch": any(line == "FULL = True" for line in printed) or None,
        "expected_on_t4": expected,
        "key_lines": printed,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("chapters", nargs="*", default=list(CHAPTERS), help="chapter numbers (default: 10-16)")
    parser.add_argument("--out", type=Path, help="the folder to write chapters.json to")
    parser.add_argument("--timeout", type=int, default=1800, help="seconds a cell may take")
    args = parser.parse_args(argv)

    import torch

    if not torch.cuda.is_available():
        print("gpu_chapters: no CUDA GPU here; the chapters would take their CPU branch", file=sys.stderr)
        return 2
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    mirror = ROOT.parent / "shared" / "data"
    if "BERTLAB_DATA_MIRROR" not in os.environ and (mirror / "SHA256SUMS").is_file():
        os.environ["BERTLAB_DATA_MIRROR"] = str(mirror)
    os.environ.pop("BERTLAB_GPU_BRANCH", None)  # a real GPU takes its branch by itself
    gpu = torch.cuda.get_device_name(0)
    short = re.sub(r"[^a-z0-9]+", "", gpu.lower().replace("nvidia", "").split()[0]) or "gpu"
    out = args.out or ROOT / "data" / "gpu_runs" / f"{short}-{datetime.date.today().isoformat()}"
    out.mkdir(parents=True, exist_ok=True)
    from bertlab.runtime import git_commit

    record = {"gpu": gpu, "torch": torch.__version__, "git_commit": git_commit(), "chapters": []}
    for number in args.chapters:
        name = CHAPTERS[number]
        print(f"{name} ...", flush=True)
        result = run_chapter(name, args.timeout)
        record["chapters"].append(result)
        status = "ok" if result["ok"] else "FAILED"
        print(f"{name}: {status} in {result['seconds']:.0f} s; {result['expected_on_t4']}", flush=True)
        (out / "chapters.json").write_text(json.dumps(record, indent=1) + "\n")  # after each: a partial record
    print(f"wrote {out / 'chapters.json'}")
    return 0 if all(c["ok"] for c in record["chapters"]) else 1


if __name__ == "__main__":
    sys.exit(main())
