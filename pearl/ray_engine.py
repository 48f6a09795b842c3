"""`base.engine: ray`: a stage's per-row model work as a Ray Data pipeline over actors.

Ray is imported only here and only when the engine is chosen, so the default local engine never
starts it. The stage reads and validates its input Parquet once, as with the local engine, and
hands the rows to Ray as Arrow blocks: they reach the actors through Ray's object store, so worker
nodes need neither the project's files nor shared storage, only the same Python packages. The
actors each build their model once and see batches of `batch_size` rows.
"""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from pearl.errors import PearlError, first_line
from pearl.log import get_logger
from pearl.params import RayParams, RayStageParams

log = get_logger("ray")


def _import_ray():
    try:
        import ray
        import ray.data
    except ImportError:
        raise PearlError("base.engine=ray needs Ray: pip install 'ray[data]' (on every node), "
                         "or set base.engine=local") from None
    return ray


@contextlib.contextmanager
def ray_session(p: RayParams) -> Iterator[Any]:
    """Start a Ray on this machine (`ray.address` null) or join a running cluster, for one stage."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # Ray otherwise reports usage over the network
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
    resources = ray.cluster_resources()
    log.info("Ray %s: %d node(s), %g CPU, %g GPU", "started here" if p.address is None else f"at {p.address}",
             len([n for n in ray.nodes() if n["Alive"]]), resources.get("CPU", 0), resources.get("GPU", 0))
    try:
        yield ray
    finally:
        ray.shutdown()


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


def node_id() -> str:
    """The Ray node this code runs on (inside an actor)."""
    import ray

    return ray.get_runtime_context().get_node_id()


def map_with_actors(rows: pa.Table, actor: type, constructor_args: tuple, stage: RayStageParams,
                    name: str) -> Iterator[pa.Table]:
    """Yield `actor(*constructor_args)(batch)` over `rows` in batches of `stage.batch_size`, on a
    pool of `stage.workers` actors. Output batches come in completion order, not input order."""
    ray = _import_ray()
    resources = ray.cluster_resources()
    if stage.cpus_per_worker > resources.get("CPU", 0) or stage.gpus_per_worker > resources.get("GPU", 0):
        raise PearlError(f"ray.{name}: an actor asks for {stage.cpus_per_worker:g} CPU and "
                         f"{stage.gpus_per_worker:g} GPU, the cluster has {resources.get('CPU', 0):g} and "
                         f"{resources.get('GPU', 0):g}: lower ray.{name}.cpus_per_worker/gpus_per_worker")
    blocks = [rows.slice(start, stage.batch_size) for start in range(0, rows.num_rows, stage.batch_size)]
    dataset = ray.data.from_arrow(blocks).map_batches(
        actor, fn_constructor_args=constructor_args, batch_size=None, batch_format="pyarrow",
        compute=ray.data.ActorPoolStrategy(size=stage.workers),
        num_cpus=stage.cpus_per_worker, num_gpus=stage.gpus_per_worker,
    )
    try:
        yield from dataset.iter_batches(batch_size=None, batch_format="pyarrow")
    except ray.exceptions.RayError as error:
        cause = _root_cause(error)
        if isinstance(cause, PearlError):  # bad params or a missing model, found inside an actor
            raise PearlError(str(cause)) from None
        raise PearlError(f"ray.{name}: the Ray pipeline failed ({type(cause).__name__}: {first_line(cause)}); "
                         "see the Ray logs under /tmp/ray/session_latest/logs") from None


def _root_cause(error: BaseException) -> BaseException:
    while getattr(error, "cause", None) is not None or error.__cause__ is not None:
        error = getattr(error, "cause", None) or error.__cause__
    return error
