"""Publishing the book's records from a checkout: the package's manifest of data/
(`bertlab/data/published_records.json`, which a reader without a checkout fetches by), and a folder
that serves every chapter offline. Reading them is `bertlab.data.records`, in the package.

From the repository root (lab/ is not installed with bertlab):

    python -m lab.publish_records --manifest        # after committing data/; then commit the manifest
    python -m lab.publish_records --out /tmp/records  # then BERTLAB_RECORDS_URL=/tmp/records
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Sequence

from bertlab.data.records import MANIFEST, manifest
from bertlab.files import atomic_path, sha256_file, write_json

ROOT = Path(__file__).resolve().parents[1]  # the checkout that holds lab/, data/ and bertlab/


def _git(checkout: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(checkout), *args], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed in {checkout}: {done.stderr.strip()}")
    return done.stdout


def repository_url(checkout: Path) -> str:
    """The repository setting of the book's `_config.yml` (`repository: url:`)."""
    import yaml

    config = checkout / "_config.yml"
    url = ((yaml.safe_load(config.read_text()) or {}).get("repository") or {}).get("url")
    if not url:
        raise ValueError(f"{config} has no `repository: url:`; the records are published from that repository")
    return url.rstrip("/")


def build_manifest(checkout: Path) -> dict[str, Any]:
    """The manifest of a checkout: every file git tracks under data/ but its READMEs, at the commit
    that last changed one; refuses uncommitted changes (they would not be at that commit's URLs)."""
    checkout = Path(checkout)
    tracked = [p for p in sorted(_git(checkout, "ls-files", "-z", "--", "data").split("\0")) if p]
    published = [p for p in tracked if not p.endswith(".md")]
    dirty = _git(checkout, "status", "--porcelain", "--", *published).strip()
    if dirty:
        raise RuntimeError(
            f"data/ has changes that are not committed:\n{dirty}\ncommit them first: the records are "
            f"published as the files of a commit"
        )
    ref = _git(checkout, "log", "-1", "--format=%H", "--", *published).strip()
    files = {}
    for path in published:
        local = checkout / path
        files[path.removeprefix("data/")] = {"size": local.stat().st_size, "sha256": sha256_file(local)}
    return {"repository": repository_url(checkout), "ref": ref, "files": files}


def write_manifest(checkout: Path = ROOT) -> Path:
    """Write the package's manifest from the checkout (`--manifest`)."""
    target = Path(checkout) / "bertlab" / "data" / MANIFEST
    write_json(target, build_manifest(checkout), indent=1)
    manifest.cache_clear()  # the package reads its manifest once a process; this one changed it
    return target


def publish(out: Path, source: Path = ROOT / "data") -> list[Path]:
    """Copy the manifest's files, checked, and the manifest into `out`, laid out as the base URL serves
    them: BERTLAB_RECORDS_URL=out serves every chapter offline."""
    out, source = Path(out), Path(source)
    written = []
    for path, entry in manifest()["files"].items():
        src = source / path
        if not src.is_file() or sha256_file(src) != entry["sha256"]:
            raise RuntimeError(
                f"{src} is not the file the manifest publishes (missing or changed); commit data/, run "
                f"`python -m lab.publish_records --manifest` and commit the manifest"
            )
        dst = out / path
        dst.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(dst, fsync=False) as tmp:
            shutil.copyfile(src, tmp)
        written.append(dst)
    write_json(out / MANIFEST, manifest(), indent=1, fsync=False)
    return written


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.publish_records", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=None, help="the folder to write; BERTLAB_RECORDS_URL=OUT then serves the book")
    parser.add_argument("--manifest", action="store_true", help="rewrite the manifest from this checkout's data/")
    args = parser.parse_args(argv)
    if not args.manifest and not args.out:
        parser.error("give --out DIR (the folder to write) or --manifest (or both)")
    try:
        if args.manifest:
            path = write_manifest()
            m = manifest()
            print(f"{path}: {len(m['files'])} files at commit {m['ref'][:12]}; commit it")
        if args.out:
            written = publish(Path(args.out))
            mb = sum(p.stat().st_size for p in written) / 1e6
            print(f"{args.out}: {len(written)} files, {mb:.1f} MB; serve it with BERTLAB_RECORDS_URL={args.out}")
    except (RuntimeError, ValueError) as err:  # uncommitted or changed records, a failing git: each names its fix
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
