"""The bulk evaluation on Ray: the job's chunks as tasks on actors, one actor per device.

``evaluate_file_on_ray`` (``lc0py bulk-eval --ray [ADDRESS]``) plans the job exactly as the local
run does (``job.prepare_job``: same manifest, same chunks, same part files, so a job started
locally can be finished on Ray and the other way round), then:

* connects to Ray: ``address=None`` starts a local cluster on this machine (a laptop, or a
  multi-GPU box), ``"auto"`` joins the running cluster, ``"ray://head:10001"`` a remote one
  (the output folder must then be on storage every node sees);
* starts the actors: one per GPU of the cluster (``num_gpus=1``: Ray gives each its own device,
  so ``backend="cuda-fp16"`` runs on that one), or ``actors`` CPU actors where there is no GPU;
* keeps every actor ``TASKS_PER_ACTOR`` chunks deep (read, on the device, written at once); each
  actor reads, encodes, evaluates (its device fed from its own thread, batches in flight, as the
  local run feeds each device) and writes its chunk's part and record atomically;
* redoes the chunk of an actor that dies (killed, out of memory, node lost) on a fresh actor, at
  most ``attempts`` times per chunk; a half-written part is never seen (atomic rename), and a
  part written twice is the same bytes written over itself;
* checks the output (``job.check_output``: every part's rows against its record, the records
  against the input) and returns the :class:`~lc0py.tools.bulk.job.JobSummary`.

Ray is an optional extra: ``pip install "lc0py[ray]"``.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from lc0py.errors import Lc0pyError, UsageError
from lc0py.tools.bulk import job as J
from lc0py.tools.bulk.sources import Chunk
from lc0py.tools.bulk.writers import warm_writer, write_jsonl_pieces


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        raise UsageError('--ray needs Ray: pip install "lc0py[ray]"') from None
    return ray


#: chunks each actor holds at once (tasks running in its threads): read and encoded, on the
#: device, being written, so its device is never idle between chunks
TASKS_PER_ACTOR = 6
#: seconds an actor's device thread waits for a full batch before it sends the rows it has (the
#: actor cannot know whether another chunk is coming: its last rows must go)
LINGER = 0.02


class ChunkWorker:
    """The actor's body (plain class; ``ray.remote`` wraps it): one backend, fed as the local job
    feeds each device (``job.ChunkEvaluator``: its own thread, batches in flight, cut across
    chunk boundaries). Up to ``TASKS_PER_ACTOR`` chunks at once (a threaded actor): read and
    encoded (PGN: in ``parse_workers`` processes), on the device, written (``writers``
    processes format the parts, off the device thread's GIL)."""

    def __init__(
        self,
        plan: J.JobPlan,
        weights: str | None,
        backend: str,
        options: str | None,
        batch: int,
        in_flight: int,
        hook: Callable[[int, int], None] | None,
        parse_workers: int = 0,
        writers: int = 0,
    ) -> None:
        import sys

        from lc0py.api.net import open_net as load  # errors in the command line's terms

        sys.setswitchinterval(min(sys.getswitchinterval(), J.SWITCH_INTERVAL))
        self.plan = plan
        # the reader processes start (and import python-chess) while the net loads, as in the
        # local job: started after it, they were still starting when the job's clock began
        self.loader = J.ChunkLoader(plan, 0, workers=parse_workers, inline=parse_workers == 0)
        try:
            self.net = load(weights, backend, options)
        except BaseException:  # a bad net or option: the readers go with the actor
            self.loader.close()
            raise
        self.loader.input_format = self.net.backend.info.input_format
        probe = self.net if plan.settings.probe_layers else None
        self.evaluator = J.ChunkEvaluator(
            self.net.backend, plan.settings, batch, in_flight, probe, linger=LINGER
        )
        self.evaluator.warm_up()
        self.writers = J._spawn_pool(writers, warm_writer) if writers else None
        self.writer_count = writers
        self.hook = hook

    def start_clock(self, wall: float) -> None:
        """The job's clock started at ``wall`` (``time.time()`` on the driver): this actor's
        profile times (first batch, last result) are counted from it."""
        self.evaluator.feeder.origin = time.perf_counter() - (time.time() - wall)

    def run(self, row: list[int], attempt: int) -> dict[str, Any]:
        chunk = Chunk.from_list(row)
        loaded = self.loader.load(chunk)
        # no flush: the other tasks' chunks follow in the same batches; the device thread sends
        # a short batch only after LINGER without a full one (the actor's last rows)
        run = self.evaluator.start(loaded)
        block, record = self.evaluator.finish(run)
        if self.hook is not None:  # fault injection (tests): between evaluating and writing
            self.hook(chunk.index, attempt)
        if self.writers is not None and self.writer_count > 1 and self.plan.settings.suffix == ".jsonl":
            # the part's rows formatted by all the actor's writers at once: its last part,
            # which nothing overlaps, does not end the job on one writer
            plan = self.plan
            write_jsonl_pieces(
                plan.part_path(record.chunk), plan.record_path(record.chunk), self.writers, block,
                json.dumps(asdict(record)), self.writer_count,
            )
        else:
            written = J.write_chunk(self.plan, block, record, self.writers)
            if written is not None:
                written.result()
        return {"chunk": record.chunk, "positions": record.positions, "bad": record.bad}

    def ping(self) -> int:
        return os.getpid()

    def profile(self) -> dict[str, Any]:
        """This actor's stage times (``job.StageTimes`` fields it has: read, encode, per device)."""
        return {
            "read_s": self.loader.read_s,
            "encode_s": self.loader.encode_s,
            "devices": [d.as_dict() for d in self.evaluator.feeder.stats],
        }


def evaluate_file_on_ray(
    input_path: str | os.PathLike[str],
    output_dir: str | os.PathLike[str],
    weights: str | os.PathLike[str] | None = None,
    backend: str = "auto",
    options: str | None = None,
    *,
    address: str | None = None,
    actors: int = 0,
    gpus_per_actor: float | None = None,
    input_format: str | None = None,
    output_format: str = "jsonl",
    top: int = 10,
    chunk_records: int = 0,
    batch: int = 0,
    in_flight: int = 0,
    history_fill: str = "fen_only",
    probe_layers: tuple[int, ...] = (),
    attempts: int = 3,
    hook: Callable[[int, int], None] | None = None,
) -> J.JobSummary:
    """Run ``evaluate_file``'s job on Ray (module docstring). ``actors``: how many (default: one
    per GPU, else 2); ``gpus_per_actor``: default 1 when the cluster has GPUs, else 0."""
    ray = _ray()
    settings = J.make_settings(
        input_path,
        input_format,
        output_format,
        top,
        chunk_records,
        history_fill,
        probe_layers,
        weights,
        backend,
    )
    plan = J.prepare_job(input_path, output_dir, settings)
    plan.input = plan.input.resolve()
    plan.output = plan.output.resolve()
    started_here = False
    if not ray.is_initialized():
        ray.init(address=address, include_dashboard=False, logging_level="warning", log_to_driver=False)
        started_here = True
    try:
        gpus = int(ray.cluster_resources().get("GPU", 0))
        per_actor = (1.0 if gpus else 0.0) if gpus_per_actor is None else gpus_per_actor
        count = actors or (max(1, int(gpus / per_actor)) if per_actor else 2)
        remote = ray.remote(
            num_cpus=0 if per_actor else 1,
            num_gpus=per_actor,
            max_restarts=0,
            max_task_retries=0,
            max_concurrency=TASKS_PER_ACTOR,
        )(ChunkWorker)
        # PGN movetext: each GPU actor gets its share of the node's CPUs as parsing processes
        cpus = int(ray.cluster_resources().get("CPU", 1))
        share = cpus // count
        # JSON formatting off the device thread: a writer per 4 CPUs of the share, at most 4 (a
        # part formatted by all of them at once); the rest read PGN (python-chess, ~30,000
        # positions a second a process: a few keep one GPU fed now that a chunk is read by
        # several at once)
        writers = min(4, share // 4) if per_actor else 0
        parse_workers = max(1, share - 1 - writers) if per_actor and settings.input_kind == "pgn" else 0
        weights_arg = None if weights is None else str(Path(weights).resolve())
        args = (plan, weights_arg, backend, options, batch, in_flight, hook, parse_workers, writers)
        positions, seconds, profile = _dispatch(ray, remote, args, count, plan, attempts)
        todo = len([c for c in plan.chunks if c.index not in plan.done])
        return J.check_output(plan, todo, seconds, positions, profile)
    finally:
        if started_here:
            ray.shutdown()


def _init_error(exc: Exception) -> str:
    """The one line of an actor whose constructor failed (the ``Lc0pyError`` it raised)."""
    text = str(getattr(exc, "error_msg", "") or exc)
    found = re.findall(r"lc0py\.errors\.\w+: (.+)", text)
    if found:
        return found[-1].strip()
    lines = [line for line in text.splitlines() if line.strip()]
    return f"bulk-eval --ray: an actor could not start ({lines[-1].strip() if lines else 'no reason given'})"


def _dispatch(
    ray: Any, remote: Any, args: tuple[Any, ...], count: int, plan: J.JobPlan, attempts: int
) -> tuple[int, float, dict[str, Any]]:
    """Every chunk not done, ``TASKS_PER_ACTOR`` per actor at a time; a dead actor's chunks go
    to a new one. Returns the positions, the seconds from the actors' being ready (each has
    loaded the net and warmed its device, as the local run has before its clock starts) and the
    profile of the actors alive at the end (``_gather_profile``)."""
    pending = [c for c in plan.chunks if c.index not in plan.done]
    tries: dict[int, int] = {}
    workers = [remote.remote(*args) for _ in range(min(count, max(1, len(pending))))]
    try:
        ray.get([w.ping.remote() for w in workers])
    except ray.exceptions.RayActorError as exc:
        for w in workers:
            try:
                ray.kill(w)
            except Exception:  # already gone
                pass
        if getattr(exc, "actor_init_failed", False):
            raise Lc0pyError(_init_error(exc)) from None
        raise
    started = time.perf_counter()
    wall = time.time()
    for w in workers:
        w.start_clock.remote(wall)
    running: dict[Any, tuple[Any, Chunk]] = {}  # task -> (actor, chunk)
    load: dict[Any, int] = {w: 0 for w in workers}
    printer = J.BadRecordPrinter()
    positions = 0
    try:
        while pending or running:
            # dealt one at a time round the actors: a job of few chunks still uses them all
            while pending and any(n < TASKS_PER_ACTOR for n in load.values()):
                for w in list(load):
                    if pending and load[w] < TASKS_PER_ACTOR:
                        chunk = pending.pop(0)
                        attempt = tries.get(chunk.index, 0)
                        task = w.run.remote(chunk.to_list(), attempt)
                        running[task] = (w, chunk)
                        load[w] += 1
            ready, _ = ray.wait(list(running), num_returns=1)
            for task in ready:
                w, chunk = running.pop(task)
                try:
                    result = ray.get(task)
                except ray.exceptions.RayActorError as exc:
                    if getattr(exc, "actor_init_failed", False):  # a bad option, net, device: no retry
                        raise Lc0pyError(_init_error(exc)) from None
                    load.pop(w, None)
                    tries[chunk.index] = tries.get(chunk.index, 0) + 1
                    if tries[chunk.index] >= attempts:
                        raise Lc0pyError(
                            f"bulk-eval --ray: chunk {chunk.index} failed {attempts} times "
                            "(its actor died each time)"
                        ) from None
                    pending.insert(0, chunk)
                    # the dead actor's other tasks fail too and come back through here
                    if w not in load and len(load) < count:
                        fresh = remote.remote(*args)
                        fresh.start_clock.remote(wall)
                        load[fresh] = 0
                    continue
                except ray.exceptions.RayTaskError as exc:
                    cause = getattr(exc, "cause", None)
                    if isinstance(cause, Lc0pyError):
                        raise Lc0pyError(str(cause).splitlines()[0]) from None
                    raise
                if w in load:
                    load[w] -= 1
                positions += int(result["positions"])
                printer(J.ChunkRecord(result["chunk"], 0, result["positions"], 0, result["bad"]))
        seconds = time.perf_counter() - started
        profile = _gather_profile(ray, list(load))
    finally:
        printer.close()
        for w in list(load):
            try:
                ray.kill(w)
            except Exception:  # already gone
                pass
    return positions, seconds, profile


def _gather_profile(ray: Any, actors: list[Any]) -> dict[str, Any]:
    """The actors' profiles as one (``job.StageTimes``' fields the actors have): read and
    encode summed, every actor's devices, named ``actor K: DEVICE``, times on the job's clock."""
    profile: dict[str, Any] = {"read_s": 0.0, "encode_s": 0.0, "devices": []}
    try:
        parts = ray.get([a.profile.remote() for a in actors], timeout=30)
    except Exception:  # an actor gone at the very end: the run's result stands without it
        return profile
    for k, part in enumerate(parts):
        profile["read_s"] += part["read_s"]
        profile["encode_s"] += part["encode_s"]
        for d in part["devices"]:
            profile["devices"].append({**d, "device": f"actor {k}: {d['device']}"})
    profile["read_s"] = round(profile["read_s"], 4)
    profile["encode_s"] = round(profile["encode_s"], 4)
    return profile
