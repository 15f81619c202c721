#!/usr/bin/env python
"""Execute the book's notebooks side by side, into the jupyter-cache the book build reads.

Jupyter Book executes one notebook at a time, and most chapters keep fewer than two cores busy
(the build used 1.5 on average on a 2-core machine). This script empties the cache, runs the
notebooks of _toc.yml in N worker processes (longest first, each kernel in its notebook's folder,
as the build runs them), and stores every notebook that ran without an error in the cache; the
build (`execute_notebooks: cache`) then renders those outputs. A notebook that failed is not
stored, so the build executes it again and reports its error as it always did. Emptying the cache
first means every build executes every notebook afresh, as `force` did.

    python scripts/execute_book.py                 # two workers
    python scripts/execute_book.py --workers 1     # one at a time
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import nbformat
import yaml

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / "_build" / ".jupyter_cache"  # where Jupyter Book's default configuration looks
# Seconds each notebook took in a serial build on 2 CPU cores, to start the longest first; a
# notebook not listed counts as short.
LONGEST = {
    "book/13_question_answering": 208,
    "book/11_finetuning_sst2": 142,
    "book/12_sentence_pairs": 95,
    "book/15_features": 88,
    "book/10_pretraining": 69,
    "book/14_named_entities": 58,
    "book/02_wordpiece": 24,
    "book/16_attention_heads": 17,
    "book/exercises/09_capstone": 15,
}


def notebooks() -> list[str]:
    """The notebooks of _toc.yml ("book/10_pretraining", ...), longest first."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [c["file"] for part in toc["parts"] for c in part["chapters"]]
    found = [f for f in files if (ROOT / f"{f}.ipynb").exists()]
    return sorted(found, key=lambda f: -LONGEST.get(f, 0))


def execute(name: str, timeout: int, threads: int) -> tuple[str, object | None, float, str | None]:
    """Run one notebook in a fresh kernel in its folder: (name, the executed notebook or None,
    seconds, the error's text or None)."""
    from jupyter_cache.executors.utils import single_nb_execution

    os.environ["OMP_NUM_THREADS"] = str(threads)  # inherited by the kernel: no oversubscribed cores
    path = ROOT / f"{name}.ipynb"
    nb = nbformat.read(path, as_version=4)
    result = single_nb_execution(nb, cwd=str(path.parent), timeout=timeout, allow_errors=False)
    if result.err is not None:
        return name, None, result.time, result.exc_string
    return name, nb, result.time, None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--timeout", type=int, default=900, help="seconds a cell may run (the build's)")
    args = parser.parse_args(argv)
    if args.workers < 1:
        parser.error("--workers must be at least 1")
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn

    shutil.rmtree(CACHE, ignore_errors=True)
    cache = get_cache(str(CACHE))
    cores = os.cpu_count() or 1
    threads = max(1, cores // args.workers)
    names = notebooks()
    t0 = time.perf_counter()
    failed = []
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        futures = [pool.submit(execute, n, args.timeout, threads) for n in names]
        for future in as_completed(futures):
            name, nb, seconds, err = future.result()
            if err is not None:
                failed.append(name)
                print(f"execute_book: {name} failed after {seconds:.0f} s; the build runs it again", flush=True)
                continue
            # the uri is the notebook's path, as the build stages it
            bundle = CacheBundleIn(nb, str(ROOT / f"{name}.ipynb"), data={"execution_seconds": seconds})
            cache.cache_notebook_bundle(bundle, check_validity=False, overwrite=True)
            print(f"execute_book: {name} in {seconds:.1f} s", flush=True)
    wall = time.perf_counter() - t0
    done = len(names) - len(failed)
    print(f"execute_book: {done} of {len(names)} notebooks in {wall / 60:.1f} min, {args.workers} workers")
    return 0  # failures are the build's to report


if __name__ == "__main__":
    sys.exit(main())
