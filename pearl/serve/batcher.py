"""Concurrent requests' texts encoded together: one model call for what arrived while the last ran.

A request waits for no timer: when the model is idle its texts go at once, and those that arrive
while a batch runs are taken together by the next one, so batches grow with the load and a lone
request pays no added latency. Model calls run in a thread (the event loop keeps accepting) under
the lock the batcher is given: batchers that share one never compete for the same cores.

The endpoints share one Backlog too: the texts admitted and not yet answered, and the candidates
they will return (a /link request's mentions × k: the answer's size, which texts alone do not bound).
A request that would take either past its bound is refused at once (QueueFull: 429) instead of
waiting in a queue that grows without end. A request not answered within its timeout is dropped
(RequestTimeout: 503): if its batch has not started, it is never run. When a batch's model call
fails, each of its requests is run again alone, so that one bad request fails no other.
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any


class QueueFull(Exception):
    def __init__(self, message: str, retry_after: int):
        super().__init__(message)
        self.retry_after = retry_after


class RequestTimeout(Exception):
    def __init__(self, seconds: float):
        super().__init__(f"not answered within {seconds:g} s (the server's --request-timeout): the server is busy; "
                         "retry later, or send fewer texts")


class Backlog:
    """The texts and candidates admitted and not yet answered, bounded by `limit` and `candidate_limit`; and the
    last model call's pace."""

    def __init__(self, limit: int, candidate_limit: float = math.inf):
        self.limit, self.candidate_limit = limit, candidate_limit
        self.texts = self.candidates = 0
        self.texts_per_s = 0.0

    def admit(self, size: int, candidates: int = 0) -> None:
        if self.texts + size > self.limit:
            retry = self._retry()
            raise QueueFull(f"the server holds {self.texts} queued texts, at most {self.limit} (its "
                            f"--max-queued-texts): retry in {retry} s", retry)
        if self.candidates + candidates > self.candidate_limit:
            retry = self._retry()
            raise QueueFull(f"the server holds {self.candidates} queued candidates (mentions × k), at most "
                            f"{self.candidate_limit} (its --max-queued-candidates): retry in {retry} s", retry)
        self.texts += size
        self.candidates += candidates

    def release(self, size: int, candidates: int = 0) -> None:
        self.texts -= size
        self.candidates -= candidates

    def _retry(self) -> int:
        # the time the model needs for what is queued, at the last call's pace: a hint, at least 1 s
        wait = self.texts / self.texts_per_s if self.texts_per_s else 1.0
        return min(60, max(1, math.ceil(wait)))


@dataclass
class _Pending:
    job: Any
    size: int
    done: asyncio.Future


class MicroBatcher:
    """`await submit(job, size)` returns `work([job, …])`'s result for that job.

    `work` takes the jobs of one batch and returns one result per job, in order. A batch holds at
    least one job and, beyond that, at most `max_size` in total of the jobs' sizes (texts).
    `on_batch(texts)` is told each model call's size."""

    def __init__(self, work: Callable[[Sequence[Any]], list[Any]], lock: threading.Lock, max_size: int,
                 backlog: Backlog | None = None, on_batch: Callable[[int], None] = lambda texts: None):
        self._work = work
        self._lock = lock
        self._max_size = max_size
        self._backlog = backlog or Backlog(math.inf)
        self._on_batch = on_batch
        self._queue: asyncio.Queue[_Pending] | None = None
        self._task: asyncio.Task | None = None
        self.batches = 0  # how many model calls ran: the tests and /health read it

    def start(self) -> None:
        self._queue = asyncio.Queue()
        self._task = asyncio.get_running_loop().create_task(self._serve())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None

    async def submit(self, job: Any, size: int, candidates: int = 0, timeout: float | None = None) -> Any:
        """`job`'s result; `size` texts and `candidates` count against the backlog until it is answered, and past
        `timeout` seconds it is dropped (RequestTimeout)."""
        if self._queue is None:
            raise RuntimeError("MicroBatcher.start() was not called (the app's lifespan starts it)")
        self._backlog.admit(size, candidates)
        try:
            done = asyncio.get_running_loop().create_future()
            self._queue.put_nowait(_Pending(job, size, done))
            try:
                # on time-out wait_for cancels `done`: a batch not yet started skips it, a running one drops its result
                return await asyncio.wait_for(done, timeout)
            except TimeoutError:
                raise RequestTimeout(timeout) from None
        finally:
            self._backlog.release(size, candidates)

    async def _serve(self) -> None:
        carried = None  # the job that did not fit the last batch opens the next
        while True:
            batch = [carried or await self._queue.get()]
            carried, total = None, batch[0].size
            while not self._queue.empty():
                pending = self._queue.get_nowait()
                if total + pending.size > self._max_size:
                    carried = pending
                    break
                batch.append(pending)
                total += pending.size
            waiting = [pending for pending in batch if not pending.done.cancelled()]  # a client that hung up
            if not waiting:
                continue
            texts, started = sum(pending.size for pending in waiting), time.perf_counter()
            try:
                results = await asyncio.to_thread(self._run, [pending.job for pending in waiting])
                self._backlog.texts_per_s = texts / max(time.perf_counter() - started, 1e-6)
                self._on_batch(texts)
            except Exception as error:
                if len(waiting) == 1:
                    _settle(waiting[0], error=error)
                else:  # each request alone, so that only a bad one gets an error
                    for pending in waiting:
                        await self._alone(pending)
                continue
            for pending, result in zip(waiting, results):
                _settle(pending, result)

    async def _alone(self, pending: _Pending) -> None:
        if pending.done.done():  # timed out or hung up while the batch ran
            return
        try:
            (result,) = await asyncio.to_thread(self._run, [pending.job])
            self._on_batch(pending.size)
        except Exception as error:
            _settle(pending, error=error)
        else:
            _settle(pending, result)

    def _run(self, jobs: list[Any]) -> list[Any]:
        with self._lock:
            self.batches += 1
            return self._work(jobs)


def _settle(pending: _Pending, result: Any = None, error: Exception | None = None) -> None:
    if pending.done.done():  # timed out, or the client hung up
        return
    if error is None:
        pending.done.set_result(result)
    else:
        pending.done.set_exception(error)
