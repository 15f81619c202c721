"""How batches reach the pretraining loop: the source it draws from, each process's share of a
batch, and a background thread that prepares the next batches while the model trains on this one.

A source yields GLOBAL batches (every process draws the same one) and can save and restore its
position; `shard_rows` gives each process its own rows, split into gradient-accumulation
micro-batches; `Prefetcher` draws them ahead of the loop and prepares them there (sharded and, for
a GPU, pinned: the loop says how), and hands each out with the source's state right after it,
which is what a checkpoint must store to resume at the next unconsumed batch.
"""

from __future__ import annotations

import contextlib
import queue
import threading
from typing import Any, Callable, Protocol

import torch


class BatchSource(Protocol):
    """What the loop consumes: the next GLOBAL batch (a dict of CPU tensors in the agreed format,
    batch_size rows), and a state_dict that restores the position exactly."""

    def __next__(self) -> dict[str, torch.Tensor]: ...
    def state_dict(self) -> dict[str, Any]: ...
    def load_state_dict(self, state: dict[str, Any]) -> None: ...


def shard_rows(batch: dict[str, torch.Tensor], rank: int, world: int, accum: int) -> list[dict[str, torch.Tensor]]:
    """This process's rows of a global batch, split into `accum` micro-batches. Rank r of W takes
    the r-th contiguous block of B/W rows, so the W processes together see the global batch."""
    B = next(iter(batch.values())).shape[0]
    if B % (world * accum):
        raise ValueError(
            f"the batch of {B} sequences does not split evenly over {world} processes x "
            f"{accum} micro-batches; choose --batch-size divisible by {world * accum}"
        )
    per = B // world
    mine = {k: v[rank * per : (rank + 1) * per] for k, v in batch.items()}
    m = per // accum
    return [{k: v[i * m : (i + 1) * m] for k, v in mine.items()} for i in range(accum)]


class Prefetcher:
    """Draws batches from a BatchSource in a background thread (so collating, masking and pinning
    overlap with the model's step) and hands them out in order, each with the source's state
    right after it was drawn: checkpointing that state resumes at the next unconsumed batch."""

    def __init__(self, source: BatchSource, prepare: Callable[[dict], Any], depth: int = 3):
        self.source, self.prepare = source, prepare
        self.q: queue.Queue = queue.Queue(maxsize=depth)
        self._stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True, name="bertlab-prefetch")
        self.thread.start()

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                batch = next(self.source)
                item = (self.prepare(batch), self.source.state_dict())
                while not self._stop.is_set():
                    try:
                        self.q.put(item, timeout=0.1)
                        break
                    except queue.Full:
                        continue
        except BaseException as err:  # StopIteration included: hand it to the consumer
            self.q.put(err)

    def __next__(self):
        item = self.q.get()
        if isinstance(item, BaseException):
            if isinstance(item, StopIteration):
                raise RuntimeError("the batch source ran out; pretraining sources must repeat (epochs)")
            raise item
        return item

    def close(self) -> None:
        self._stop.set()
        with contextlib.suppress(queue.Empty):
            while True:
                self.q.get_nowait()
        self.thread.join(timeout=5)
