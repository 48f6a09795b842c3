"""`engine: ray`: a stage's per-row work on Ray workers, each building its model once per pipeline.

Ray is imported only here and only when the engine is chosen, so the default local engine never
starts it. Rows reach the actors as Arrow blocks through Ray's object store, so worker nodes need
neither the project's files nor shared storage, only the same Python packages; or, with
`ray.shared_storage`, the nodes read a stage's input files from storage they all see.
- map_with_actors: a table the stage has read and checked, or Parquet files the nodes read
  themselves (NodeFiles), as a Ray Data pipeline; outputs come back in completion order (typing,
  augment, teacher). Its "actors" are tasks on Ray's worker processes, which keep the model for the
  pipeline's next batch, or real actors where they hold a GPU.
- group_after_actors: the same, then a reduce of each group of output rows sharing a key after Ray
  Data's hash shuffle (parse's phrase counts, candidates' shared-word join).
- stream_through_actors: a stream too long to hold, or a table whose outputs must keep its order,
  through an ActorPool with one batch per actor in flight (corpus, candidates); KeptActors keeps that
  pool for a product verb's many calls (the verbs' searches).
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import socket
import time
import uuid
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pearl.errors import PearlError, first_line
from pearl.log import get_logger
from pearl.params import RayParams, RayStageParams

log = get_logger("ray")


def _import_ray():
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # Ray otherwise reports usage over the network
    try:
        import ray
        import ray.data
    except ImportError:
        raise PearlError("engine=ray needs Ray: pip install 'ray[data]' (on every node), "
                         "or set engine=local") from None
    return ray


@contextlib.contextmanager
def ray_session(p: RayParams) -> Iterator[RayRun]:
    """Start a Ray on this machine (`ray.address` null) or join a running cluster, for one stage; the
    RayRun gathers where and how long its actors worked. A Ray this process already runs (started by a
    notebook or a driver script that calls pearl's stages) is used as it is and left running."""
    ray = _import_ray()
    started = not ray.is_initialized()
    if started:
        start_ray(p)
    else:
        log.info("using the Ray this process already runs: ray.address and ray.num_cpus do not apply")
    # Ray 2.60's default (V2) Parquet reader lists the files in a task of one CPU, which waits forever
    # behind actors holding every CPU (a node of 1 CPU, or workers = CPUs): the V1 reader lists them here
    ray.data.DataContext.get_current().use_datasource_v2 = False
    resources = ray.cluster_resources()
    where = "of this process" if not started else "started here" if p.address is None else f"at {p.address}"
    log.info("Ray %s: %d node(s), %g CPU, %g GPU", where, len([n for n in ray.nodes() if n["Alive"]]),
             resources.get("CPU", 0), resources.get("GPU", 0))
    try:
        yield RayRun()
    finally:
        if started:
            ray.shutdown()


def start_ray(p: RayParams) -> None:
    """ray.init as `ray.address` and `ray.num_cpus` say, or one line naming the address it could not join."""
    ray = _import_ray()
    if p.address is None:
        options = {"num_cpus": p.num_cpus, "include_dashboard": False}
    else:
        _check_reachable(p.address)
        options = {"address": p.address}
    try:
        ray.init(**options, configure_logging=False, log_to_driver=False)
    except (ConnectionError, RuntimeError, ValueError) as error:
        raise PearlError(f"cannot join the Ray cluster at ray.address={p.address!r} ({first_line(error)}): "
                         "start it with `ray start --head`, or set ray.address=null for a Ray on this "
                         "machine") from None


def _check_reachable(address: str) -> None:
    """Fail fast on a head that is not listening: ray.init would wait minutes for it."""
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if address == "auto" or not port.isdigit():
        return
    try:
        socket.create_connection((host, int(port)), timeout=5).close()
    except OSError as error:
        raise PearlError(f"no Ray head answers at ray.address={address!r} ({error.strerror or error}): start one "
                         "with `ray start --head`, or set ray.address=null for a Ray on this machine") from None


@dataclass(frozen=True)
class NodeFiles:
    """An input the nodes read themselves with Ray Data's read_parquet: Parquet files at paths every
    node sees (`ray.shared_storage`), so the rows never pass through the driver; `rows` in all."""

    paths: list[str]
    columns: list[str]
    rows: int


class PoisonedRow(PearlError):
    """A row that makes a stage's actor raise."""


def partitions(keys: list[str], parts: int) -> pa.Array:
    """Each key's shuffle partition, crc32 of its UTF-8 modulo `parts`: the same on every node and
    run, unlike Python's salted hash()."""
    return pa.array([zlib.crc32(key.encode("utf-8")) % parts for key in keys], pa.int32())


class RowActor:
    """Base of the stages' Ray actors: a subclass builds its model once in __init__ and maps a batch of
    rows in `process`. Every output row is stamped with the node and the batch's start and end, which
    map_with_actors takes off again; a batch that raises is retried row by row to name the row."""

    def process(self, batch: pa.Table) -> pa.Table:
        raise NotImplementedError

    def __call__(self, batch: pa.Table) -> pa.Table:
        started = time.time()
        try:
            out = self.process(batch)
        except PearlError:
            raise
        except Exception as error:
            raise self._poisoned_row(batch, error) from None
        return _stamped(out, started)

    def _poisoned_row(self, batch: pa.Table, error: Exception) -> PearlError:
        for i in range(batch.num_rows):
            row = batch.slice(i, 1)
            try:
                self.process(row)
            except Exception as row_error:
                values = {k: v for k, v in row.to_pylist()[0].items() if k not in (_ROW, _FILE)}
                shown = ", ".join(f"{k}={str(v)[:60]!r}" for k, v in values.items())
                if _FILE in batch.column_names:  # read by the node: the row is known by its file and values
                    where = f"the row ({shown}) of {row[_FILE][0].as_py()}"
                else:
                    first, last = batch[_ROW][0].as_py(), batch[_ROW][-1].as_py()
                    where = f"row {row[_ROW][0].as_py()} ({shown}), in the batch of rows {first}–{last},"
                return PoisonedRow(f"{where} makes the actor raise {type(row_error).__name__}: "
                                   f"{first_line(row_error)}")
        return PearlError(f"a batch raised {type(error).__name__} ({first_line(error)}) that no row alone raises")


def _stamped(out: pa.Table, started: float) -> pa.Table:
    import ray

    stamps = {_NODE: (ray.get_runtime_context().get_node_id(), pa.string()), _STARTED: (started, pa.float64()),
              _ENDED: (time.time(), pa.float64())}
    for column, (value, kind) in stamps.items():  # typed: an empty output joins the others' blocks
        out = out.append_column(column, pa.array([value] * out.num_rows, kind))
    return out


_ROW, _NODE, _STARTED, _ENDED = "_pearl_row", "_pearl_node", "_pearl_started", "_pearl_ended"
_FILE = "path"  # the column read_parquet(include_paths=True) adds


@dataclass
class RayRun:
    """Where a stage's Ray pipeline ran, and for how long its actors were busy (start-up excluded)."""

    nodes: set[str] = field(default_factory=set)
    started: float = float("inf")
    ended: float = 0.0

    def metrics(self) -> dict:
        return {"ray_nodes": len(self.nodes), "ray_busy_seconds": round(max(self.ended - self.started, 0.0), 2)}


def _check_fits(stage: RayStageParams, name: str) -> None:
    ray = _import_ray()
    resources = ray.cluster_resources()
    if stage.cpus_per_worker > resources.get("CPU", 0) or stage.gpus_per_worker > resources.get("GPU", 0):
        raise PearlError(f"ray.{name}: an actor asks for {stage.cpus_per_worker:g} CPU and "
                         f"{stage.gpus_per_worker:g} GPU, the cluster has {resources.get('CPU', 0):g} and "
                         f"{resources.get('GPU', 0):g}: lower ray.{name}.cpus_per_worker/gpus_per_worker")


def _unstamped(out: pa.Table, run: RayRun) -> pa.Table:
    if out.num_rows:
        run.nodes.update(out[_NODE].unique().to_pylist())
        run.started = min(run.started, pc.min(out[_STARTED]).as_py())
        run.ended = max(run.ended, pc.max(out[_ENDED]).as_py())
    return out.drop_columns([_NODE, _STARTED, _ENDED])


def _one_line(error: Exception, name: str, source: str) -> PearlError:
    # Ray passes on only the text of an actor's exception: find ours, the last one raised
    ours = _OUR_ERROR.findall(str(error))
    if ours and ours[-1][0] == "PoisonedRow":
        return PearlError(f"{source}: {ours[-1][1]}: fix or drop that row, then run again")
    if ours:  # bad params or a missing model, found inside an actor
        return PearlError(ours[-1][1])
    return PearlError(f"ray.{name}: the Ray pipeline failed ({type(error).__name__}: {first_line(error)}); "
                      "see the Ray logs under /tmp/ray/session_latest/logs")


def _actor_pipeline(rows: pa.Table | NodeFiles, actor: type[RowActor], constructor_args: tuple,
                    stage: RayStageParams, name: str):
    ray = _import_ray()
    _check_fits(stage, name)
    blocks = max(1, math.ceil((rows.rows if isinstance(rows, NodeFiles) else rows.num_rows) / stage.batch_size))
    if isinstance(rows, NodeFiles):
        # Blocks of about one batch, each an actor's call, as the driver's below. An actor takes whole
        # blocks: Ray Data's default split of a shard into a few large ones left one of two actors
        # with 3 of 5 blocks, 22K sentences against 15K. Reading is I/O: its tasks take no CPU.
        dataset = ray.data.read_parquet(rows.paths, columns=rows.columns, include_paths=True, num_cpus=0,
                                        override_num_blocks=blocks)
    else:
        rows = rows.append_column(_ROW, pa.array(range(rows.num_rows), pa.int64()))
        dataset = ray.data.from_arrow([rows.slice(start, stage.batch_size)
                                       for start in range(0, rows.num_rows, stage.batch_size)])
    if stage.gpus_per_worker:
        # Ray ends a GPU task's worker process after each task (to free the GPU): only an actor keeps a model there
        return dataset.map_batches(
            actor, fn_constructor_args=constructor_args, batch_size=None, batch_format="pyarrow",
            compute=ray.data.ActorPoolStrategy(size=stage.workers),
            num_cpus=stage.cpus_per_worker, num_gpus=stage.gpus_per_worker,
        )
    # On CPUs, tasks on Ray's pool of worker processes, which outlive a pipeline: a pool of actors starts new
    # processes that import torch and the model libraries again, 6-20 s a pipeline on 2 cores, and a stage runs
    # several (augment five). No more tasks at once than blocks: Ray Data warns on stderr of a concurrency it cannot use
    return dataset.map_batches(
        _call_kept_actor, fn_args=(uuid.uuid4().hex, actor, constructor_args), batch_size=None, batch_format="pyarrow",
        compute=ray.data.TaskPoolStrategy(size=min(stage.workers, blocks)), num_cpus=stage.cpus_per_worker,
    )


_kept_actor: dict[str, RowActor] = {}


def _call_kept_actor(batch: pa.Table, pipeline: str, actor: type[RowActor], constructor_args: tuple) -> pa.Table:
    """`actor(*constructor_args)(batch)`, the actor built once per worker process and pipeline: the worker
    keeps it for the pipeline's next batches, and drops it for the next pipeline's."""
    if pipeline not in _kept_actor:
        _kept_actor.clear()
        _kept_actor[pipeline] = actor(*constructor_args)
    return _kept_actor[pipeline](batch)


def _results(dataset, name: str, source: str, run: RayRun) -> Iterator[pa.Table]:
    ray = _import_ray()
    try:
        for out in dataset.iter_batches(batch_size=None, batch_format="pyarrow"):
            yield _unstamped(out, run)
    except ray.exceptions.RayError as error:
        raise _one_line(error, name, source) from None


def map_with_actors(rows: pa.Table | NodeFiles, actor: type[RowActor], constructor_args: tuple,
                    stage: RayStageParams, name: str, source: str, run: RayRun) -> Iterator[pa.Table]:
    """Yield `actor(*constructor_args)(batch)` over `rows` (read from `source`, or the files the nodes
    read) in batches of `stage.batch_size`, on a pool of `stage.workers` actors; record in `run` the
    nodes and the busy time. Output batches come in completion order, not input order."""
    yield from _results(_actor_pipeline(rows, actor, constructor_args, stage, name), name, source, run)


def group_after_actors(rows: pa.Table | NodeFiles, actor: type[RowActor], constructor_args: tuple, key: str,
                       groups: int, reduce: Callable[[pa.Table], pa.Table], stage: RayStageParams, name: str,
                       source: str, run: RayRun) -> Iterator[pa.Table]:
    """map_with_actors, then `reduce(group)` for each of the `groups` groups of the actors' output rows
    that share `key`: Ray Data's hash shuffle brings a group together on one node, where a Ray task of
    `stage.cpus_per_worker` CPUs reduces it. Groups come in no particular order."""
    # as many shuffle partitions as groups: Ray Data's default is 200, mostly empty here
    dataset = _actor_pipeline(rows, actor, constructor_args, stage, name).groupby(key, num_partitions=groups).map_groups(
        _stamped_reduce, fn_args=(reduce,), batch_format="pyarrow", num_cpus=stage.cpus_per_worker)
    yield from _results(dataset, name, source, run)


def _stamped_reduce(group: pa.Table, reduce: Callable[[pa.Table], pa.Table]) -> pa.Table:
    """A reduce's output stamped as a RowActor's, its busy time reaching back to the group's first batch."""
    started = pc.min(group[_STARTED]).as_py()
    return _stamped(reduce(group.drop_columns([_NODE, _STARTED, _ENDED])), started)


def stream_through_actors(rows: Iterable[dict] | pa.Table, actor: type[RowActor], constructor_args: tuple,
                          stage: RayStageParams, name: str, source: str, run: RayRun) -> Iterator[pa.Table]:
    """Yield `actor(*constructor_args)(batch)` over a table or a stream of rows too large to hold, in
    batches of `stage.batch_size` and in input order. At most one batch per actor is in flight, so
    memory stays flat however long the stream. An actor lost with its node is restarted and its batch
    retried."""
    yield from KeptActors(actor, constructor_args, stage, name, source, run).map(rows)


class KeptActors:
    """`stage.workers` actors of one class, each built once, that map table after table as
    stream_through_actors maps one: a verb's many calls on the same large arguments (a join's left names)
    send them once. The actors end with `close`, or with the last reference to it."""

    def __init__(self, actor: type[RowActor], constructor_args: tuple, stage: RayStageParams, name: str, source: str,
                 run: RayRun, hold_cpus: bool = True):
        """`hold_cpus` False: the actors reserve no CPU (spread over the nodes instead), for work that alternates
        with Ray tasks that need the CPUs, which actors holding them for their lifetime would starve."""
        ray = _import_ray()
        from ray.util import ActorPool

        _check_fits(stage, name)
        placement = ({"num_cpus": stage.cpus_per_worker} if hold_cpus else
                     {"num_cpus": 0, "scheduling_strategy": "SPREAD"})
        remote = ray.remote(actor).options(**placement, num_gpus=stage.gpus_per_worker, max_restarts=3,
                                           max_task_retries=3)
        # each argument is stored once for all actors (a large one: candidates' phrases, a join's left index), and
        # serialised once: Ray keeps a small one inline itself. It stays referenced here while they live, so a
        # restarted actor finds it (Ray logs a warning about such arguments)
        self._shared = [ray.put(arg) for arg in constructor_args]
        self._pool = ActorPool([remote.remote(*self._shared) for _ in range(stage.workers)])
        self.stage, self.name, self.source, self.run = stage, name, source, run

    def map(self, rows: Iterable[dict] | pa.Table) -> Iterator[pa.Table]:
        """The actors' outputs of `rows`' batches, in input order, one batch per actor in flight."""
        ray = _import_ray()
        try:
            for batch in _batches(rows, self.stage.batch_size):
                if not self._pool.has_free():
                    yield _unstamped(self._pool.get_next(), self.run)
                self._pool.submit(lambda worker, block: worker.__call__.remote(block), batch)
            while self._pool.has_next():
                yield _unstamped(self._pool.get_next(), self.run)
        except ray.exceptions.RayError as error:
            raise _one_line(error, self.name, self.source) from None

    def close(self) -> None:
        self._pool, self._shared = None, []


def matrix_column(matrix: np.ndarray) -> pa.FixedSizeListArray:
    """A 2-D array as a column of one fixed-size list per row: how the actors' tables carry vectors and rows."""
    return pa.FixedSizeListArray.from_arrays(np.ascontiguousarray(matrix).ravel(), matrix.shape[1])


def column_matrix(table: pa.Table, name: str, width: int = -1) -> np.ndarray:
    """matrix_column's inverse: the column `name` of `table` as a 2-D array (`width` given, an empty table too)."""
    return table[name].combine_chunks().flatten().to_numpy().reshape(table.num_rows, width)


def _batches(rows: Iterable[dict] | pa.Table, size: int) -> Iterator[pa.Table]:
    if isinstance(rows, pa.Table):
        rows = rows.append_column(_ROW, pa.array(range(rows.num_rows), pa.int64()))
        yield from (rows.slice(start, size) for start in range(0, rows.num_rows, size))
        return
    batch: list[dict] = []
    for number, row in enumerate(rows):
        batch.append({**row, _ROW: number})
        if len(batch) == size:
            yield pa.Table.from_pylist(batch)
            batch = []
    if batch:
        yield pa.Table.from_pylist(batch)


_OUR_ERROR = re.compile(r"^pearl\.[\w.]+\.(\w+): (.+)$", re.MULTILINE)
