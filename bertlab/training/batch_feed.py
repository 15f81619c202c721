"""How batches reach the pretraining loop. A source yields GLOBAL batches (every process draws
the same one) and saves and restores its position; `shard_rows` gives each process its rows, in
gradient-accumulation micro-batches; `Prefetcher` prepares the next batches in a background thread
while the model trains.
"""

from __future__ import annotations

import contextlib
import queue
import threading
from typing import Any, Callable, Protocol

import torch


class BatchSource(Protocol):
    """The next GLOBAL batch (a dict of CPU tensors), and a state_dict that restores the position."""

    def __next__(self) -> dict[str, torch.Tensor]: ...
    def state_dict(self) -> dict[str, Any]: ...
    def load_state_dict(self, state: dict[str, Any]) -> None: ...


def shard_rows(batch: dict[str, torch.Tensor], rank: int, world: int, accum: int) -> list[dict[str, torch.Tensor]]:
    """This process's rows of a global batch (rank r of W: the r-th block of B/W rows), split into
    `accum` micro-batches."""
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
    """Draws and prepares batches in a background thread (collating, masking and pinning overlap
    the model's step) and hands each out with the source's state right after it: what a checkpoint
    stores to resume at the next unconsumed batch."""

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
