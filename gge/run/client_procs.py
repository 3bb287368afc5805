"""An endpoint run's samples asked from several client processes (``client_procs=N``): N cores for the client.

One process's request threads share one interpreter lock, and a share of each sample's work holds it
(decoding the screenshot, drawing a marking critic's marks, the PNG's rows, base64, the JSON body,
scoring): a run with a marking critic (pointwise, listwise) or ``model.refine=zoom`` is then bound by
one core's worth of that work, however many cores the machine has (DEVELOPERS.md: a py-spy
measurement found 49% of a pointwise sample's client work under the lock, 23% of a listwise one's,
25% of a zoom one's). With ``client_procs=N`` the run's parent process probes the server
(:mod:`gge.run.probe`) and then starts N processes (``spawn``: a fresh interpreter each, no copy of
the parent's threads); each builds the same policy from the run's configuration and asks the
samples it draws from one shared queue, through its own share of the request window:

- a fixed window (``model.concurrency=C``): C split as evenly as it goes (each process at least 1);
- an adaptive one: ``model.max_concurrency`` split so, and each process's window starts at its
  share of where the parent's started (the probe's start for a server that serves one at a time),
  each growing and shrinking on what its own requests meet (as TCP flows share a link);
- N is at most the window's start (a fixed window's size) and the samples to ask;
  ``client_procs=1`` (the default) runs in the parent, on threads, as before;
- where the parent may run on at least N cores, they are dealt out among the processes, none shared
  (:func:`core_sets`): a process's threads pass its interpreter lock among themselves on its own
  cores instead of across all of them.

The parent keeps what a run keeps, as with one process: each result is sent to it as it finishes
and it writes the prediction log and draws the progress line; the processes send what their backends
did every :data:`STATUS_EVERY_S` seconds and at their end (:meth:`OpenAIBackend.absorb
<gge.models.openai_api.OpenAIBackend.absorb>`), so results.json's usage, images, answers and window
(:mod:`gge.models.openai_parts`), invocations.json and the progress line cover the whole run; their
warnings come out through the parent's logging. A sample's budget-curve work is done in its process
and sent with its result (:func:`gge.scoring.budget.primed_hits`).

Stops are the one-process run's: a sample's request that failed for good is its ``server_error``
(the parent counts the share of them, :class:`~gge.run.windowed.ServerBroken`), unless
``strict_server``; the first failure of any process (the server gone past its wait, a configuration
every request meets, a process that died) stops every process from starting samples, cuts their
requests short and is raised once what they were asking has ended, what finished kept in the log.
Ctrl-C (which the processes ignore: the parent handles it) does the same; what finishes after it is
not logged. Results do not depend on N: each sample's answers are its own, and the list returned is
in sample order.
"""

from __future__ import annotations

import contextlib
import copy
import importlib.util
import logging
import logging.handlers
import multiprocessing
import os
import pickle
import queue
import signal
import sys
import threading
import time
import types
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, cast

from omegaconf import DictConfig, OmegaConf

from gge.errors import GgeError, TransientError
from gge.run.windowed import (
    MAX_SERVER_ERROR_SHARE,
    SERVER_ERROR_MIN_SAMPLES,
    ServerErrorShare,
    evaluate_windowed,
)
from gge.scoring.budget import keep_primed, primed_hits
from gge.types import Sample, SampleResult

STATUS_EVERY_S = 0.5
"""How often a client process sends what its backends did (the progress line and invocations.json)."""

HALT_POLL_S = 0.05
"""How often a client process looks whether the parent stopped the run."""

DEAD_CHECK_S = 0.5
"""How often the parent looks for a process that ended without saying it was done."""

DEAD_GRACE_S = 1.0
"""How long the messages of a process that ended are waited for before the run stops on it."""

STOP_WAIT_S = 30.0
"""How long a stopped run waits for its processes to end what they were asking before ending them."""

_BACKENDS = ("backend", "critic_backend")


def window_shares(total: int, procs: int) -> list[int]:
    """``total`` requests in flight split over ``procs`` processes, as evenly as it goes, each at least 1.

    Example:
        >>> window_shares(64, 3), window_shares(2, 4)
        ([22, 21, 21], [1, 1, 1, 1])
    """
    base, extra = divmod(int(total), procs)
    return [max(1, base + (i < extra)) for i in range(procs)]


def backends(policy: object) -> list[tuple[str, Any]]:
    """The policy's endpoint backends that can be split over processes, by attribute name."""
    found: list[tuple[str, Any]] = []
    for name in _BACKENDS:
        backend = getattr(policy, name, None)
        if callable(getattr(backend, "snapshot", None)) and all(backend is not b for _, b in found):
            found.append((name, backend))
    return found


def process_count(requested: int, policy: object, samples: int) -> int:
    """How many client processes a run uses: ``requested``, at most the window's start and the samples.

    A fixed window of C requests feeds at most C processes, an adaptive one at most as many as it
    starts with (each process starts with at least one request in flight: a server found to serve one
    request at a time, started at 2, is asked from at most 2 processes).

    Example:
        >>> class W:
        ...     adaptive, start, limit = True, 3, 3
        >>> class B:
        ...     window = W()
        ...     def snapshot(self): ...
        >>> class P:
        ...     backend = B()
        >>> process_count(8, P(), 100), process_count(8, P(), 2), process_count(2, object(), 100)
        (3, 2, 1)
    """
    found = backends(policy)
    if not found:
        return 1
    most = min(int(b.window.start if b.window.adaptive else b.window.limit) for _, b in found)
    return max(1, min(int(requested), most, int(samples)))


class _Flag:
    """The parent's stop, as its processes read it: one byte of shared memory (set once, never cleared)."""

    def __init__(self, shared: Any) -> None:
        self.shared = shared

    def set(self) -> None:
        self.shared.value = 1

    def is_set(self) -> bool:
        return bool(self.shared.value)


@dataclass(frozen=True)
class _Plan:
    """What one client process is given (pickled to it)."""

    index: int
    cfg: dict[str, Any]  # the run's configuration as plain data (its typed schema does not pickle)
    starts: dict[str, tuple[int, str | None]]  # an adaptive window's start and reason, by backend
    answered: dict[str, bool]  # whether the parent's backend had heard the server, by backend
    k: int
    cluster_radius: float
    decode_max_pixels: int | None
    strict_images: bool
    strict_server: bool
    exchangeable_from: int | None
    cpus: tuple[int, ...] | None  # the cores it runs on (None: the parent's, unchanged)


def core_sets(procs: int, allowed: Sequence[int]) -> list[tuple[int, ...] | None]:
    """The cores each client process runs on: the parent's allowed cores dealt out, none shared.

    A process's threads then hand its interpreter lock to each other on its own cores (measured on
    2 cores, DEVELOPERS.md: listwise's 2-process rate 1.68x one process's on 1 core pinned, 1.44x
    unpinned). With fewer cores than processes nothing is pinned.

    Example:
        >>> core_sets(2, [0, 1, 2, 3, 4]), core_sets(3, [0, 1])
        ([(0, 2, 4), (1, 3)], [None, None, None])
    """
    if procs > len(allowed):
        return [None] * procs
    cores = sorted(allowed)
    return [tuple(cores[i::procs]) for i in range(procs)]


def _allowed_cores() -> list[int]:
    getter = getattr(os, "sched_getaffinity", None)
    return sorted(getter(0)) if getter is not None else []


def _plans(
    cfg: DictConfig,
    policy: object,
    procs: int,
    *,
    k: int,
    cluster_radius: float,
    decode_max_pixels: int | None,
    strict_images: bool,
    strict_server: bool,
    exchangeable_from: int | None,
) -> list[_Plan]:
    """Each process's configuration: the run's, its window a share of the parent's."""
    window = backends(policy)[0][1].window
    key, total = ("max_concurrency", window.max_limit) if window.adaptive else ("concurrency", window.limit)
    limits = window_shares(int(total), procs)
    starts = {
        name: (window_shares(int(b.window.start), procs), b.window.start_reason)
        for name, b in backends(policy)
        if b.window.adaptive
    }
    answered = {name: bool(b.has_answered()) for name, b in backends(policy)}
    plain = cast(dict[str, Any], OmegaConf.to_container(cfg, resolve=True))
    cpus = core_sets(procs, _allowed_cores())
    plans: list[_Plan] = []
    for i in range(procs):
        child = copy.deepcopy(plain)
        child["model"][key] = limits[i]
        plans.append(
            _Plan(
                i,
                child,
                {name: (shares[i], reason) for name, (shares, reason) in starts.items()},
                answered,
                k,
                cluster_radius,
                decode_max_pixels,
                strict_images,
                strict_server,
                exchangeable_from,
                cpus[i],
            )
        )
    return plans


def _portable(error: BaseException) -> BaseException:
    """The error as it can cross to the parent: itself where it pickles, else its kind with its message."""
    try:
        pickle.loads(pickle.dumps(error))
        return error
    except Exception:
        kind = TransientError if isinstance(error, TransientError) else GgeError
        return kind(str(error) or type(error).__name__)


def _snapshots(policy: object) -> dict[str, Any]:
    """What a process's policy did so far: each backend's snapshot, and the policy's own counters."""
    snaps: dict[str, Any] = {name: backend.snapshot() for name, backend in backends(policy)}
    counters = getattr(policy, "counters", None)
    if callable(counters):
        snaps["policy"] = counters()
    return snaps


def _child(plan: _Plan, jobs: Any, out: Any, halt_all: Any) -> None:
    """One client process: build the policy, ask the samples drawn from ``jobs``, send each result."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    if plan.cpus is not None:
        os.sched_setaffinity(0, set(plan.cpus))
    root = logging.getLogger()
    root.handlers[:] = [logging.handlers.QueueHandler(out)]
    root.setLevel(logging.INFO)
    logging.captureWarnings(True)
    policy: object | None = None
    error: BaseException | None = None
    halt = threading.Event()
    reporter: threading.Thread | None = None
    try:
        from gge.models.registry import kind_of

        cfg = OmegaConf.create(plan.cfg)
        policy = kind_of(cfg.model).build(cfg)
        for name, backend in backends(policy):
            if name in plan.starts:
                start, reason = plan.starts[name]
                backend.window.start_at(start, reason or "default")
            if plan.answered.get(name):
                backend.assume_answered()

        def halt_with_parent() -> None:
            # a byte of shared memory, polled: no lock a process could die holding (a multiprocessing
            # Event's set() waits for every process waiting on it, one that ended included)
            while not halt_all.value and not halt.wait(HALT_POLL_S):
                pass
            halt.set()

        threading.Thread(target=halt_with_parent, name="gge-client-halt", daemon=True).start()
        built = policy

        def report() -> None:
            while not halt.wait(STATUS_EVERY_S):
                out.put(("status", plan.index, _snapshots(built)))

        reporter = threading.Thread(target=report, name="gge-client-status", daemon=True)
        reporter.start()

        def drawn() -> Iterator[Sample]:
            while not halt.is_set():
                try:
                    job = jobs.get(timeout=0.1)
                except queue.Empty:
                    continue
                if job is None:
                    return
                yield job

        primed: dict[int, Any] = {}  # id(result) -> its budget-curve hits, made in the sample's own thread

        def prime(result: SampleResult) -> None:
            primed[id(result)] = primed_hits(
                result, k=plan.k, exchangeable_from=plan.exchangeable_from, cluster_radius=plan.cluster_radius
            )

        def sent(result: SampleResult) -> None:
            out.put(("result", plan.index, result, primed.pop(id(result), None)))

        evaluate_windowed(
            policy,
            drawn(),
            k=plan.k,
            cluster_radius=plan.cluster_radius,
            decode_max_pixels=plan.decode_max_pixels,
            strict_images=plan.strict_images,
            on_result=sent,
            on_scored=prime,
            strict_server=plan.strict_server,
            max_server_error_share=1.0,  # the parent counts the share over every process's samples
            halt=halt,
        )
    except BaseException as e:  # sent to the parent, which raises it
        error = _portable(e)
    finally:
        halt.set()
        if reporter is not None:
            reporter.join()  # its last snapshot goes before the final one, never after
        if policy is not None:
            out.put(("status", plan.index, _snapshots(policy)))
        out.put(("done", plan.index, error))


def evaluate_in_processes(
    cfg: DictConfig,
    policy: object,
    samples: Sequence[Sample],
    procs: int,
    *,
    k: int,
    cluster_radius: float,
    decode_max_pixels: int | None = None,
    strict_images: bool = False,
    on_result: Callable[[SampleResult], None] | None = None,
    exchangeable_from: int | None = None,
    strict_server: bool = False,
    max_server_error_share: float = MAX_SERVER_ERROR_SHARE,
    server_error_min_samples: int = SERVER_ERROR_MIN_SAMPLES,
) -> list[SampleResult]:
    """Evaluate samples in ``procs`` client processes, as :func:`~gge.run.windowed.evaluate_windowed` in one.

    Args:
        cfg: The run's configuration (its model's defaults filled): each process builds its policy
            from it, with its share of the window.
        policy: The parent's policy (built from ``cfg``; it probed the server): its backends absorb
            what the processes' did, so its ``settings()``, ``status()`` and ``window_summary()``
            report the whole run.
        samples: The samples, in order.
        procs: Processes (:func:`process_count`).
        k: Candidates scored at most per sample.
        cluster_radius: Radius of the ``cluster`` selection strategy.
        decode_max_pixels: Downscale screenshots above this area while decoding.
        strict_images: Stop at the first unreadable screenshot instead.
        on_result: Called in the parent with each sample's result as it arrives (one call at a time).
        exchangeable_from: The run's first exchangeable slot: each sample's budget-curve hits are
            computed in its process (:func:`gge.scoring.budget.primed_hits`) and kept here.
        strict_server: Stop at the first request that failed for good instead.
        max_server_error_share: Stop once more than this share of the finished samples are server
            errors (1 never stops).
        server_error_min_samples: Finished samples before the share is checked.

    Returns:
        One result per sample, in sample order.

    Raises:
        ServerBroken: The server errors passed their share of the finished samples.
        GgeError: The first failure of any process (its own error, or that it died).
        KeyboardInterrupt: Ctrl-C, once the processes have ended.
    """
    order = {(s.benchmark, s.id): i for i, s in enumerate(samples)}
    plans = _plans(
        cfg,
        policy,
        procs,
        k=k,
        cluster_radius=cluster_radius,
        decode_max_pixels=decode_max_pixels,
        strict_images=strict_images,
        strict_server=strict_server,
        exchangeable_from=exchangeable_from,
    )
    ctx = multiprocessing.get_context("spawn")
    jobs = ctx.Queue(maxsize=4 * procs)
    out = ctx.Queue()
    halt = _Flag(ctx.RawValue("b", 0))
    children = [
        ctx.Process(
            target=_child, args=(plan, jobs, out, halt.shared), name=f"gge-client-{plan.index}", daemon=True
        )
        for plan in plans
    ]
    results: dict[int, SampleResult] = {}
    failures: list[BaseException] = []
    errors = ServerErrorShare(max_server_error_share, server_error_min_samples)  # over every process
    done: set[int] = set()
    logging_on = [True]

    def fail(error: BaseException) -> None:
        if not failures:
            failures.append(error)
        halt.set()

    def feed() -> None:
        """Every sample, then one end for each process, each put as a process has room (until a halt)."""
        for job in [*samples, *(None for _ in children)]:
            while not halt.is_set():
                try:
                    jobs.put(job, timeout=0.1)
                    break
                except queue.Full:
                    continue

    def handle(message: Any) -> None:
        if isinstance(message, logging.LogRecord):
            logging.getLogger(message.name).handle(message)
            return
        what, index = message[0], message[1]
        if what == "status":
            for name, snap in message[2].items():
                part: Any = policy if name == "policy" else getattr(policy, name, None)
                if callable(getattr(part, "absorb", None)):
                    part.absorb(f"proc{index}", snap)
        elif what == "result":
            result, hits = message[2], message[3]
            keep_primed(result, hits, k=k, exchangeable_from=exchangeable_from, cluster_radius=cluster_radius)
            if not logging_on[0]:
                return
            if on_result is not None:
                on_result(result)
            results[order[(result.benchmark, result.id)]] = result
            stopped_by = errors.add(result.server_error)
            if stopped_by is not None:
                fail(stopped_by)
        elif what == "done":
            done.add(index)
            if message[2] is not None:
                fail(message[2])

    def check_dead() -> None:
        """A process that ended without saying it was done (killed, crashed) stops the run at once."""
        dead = [i for i, c in enumerate(children) if i not in done and c.exitcode is not None]
        if not dead:
            return
        grace = time.monotonic() + DEAD_GRACE_S  # what it sent before it ended may still be on its way
        while any(i not in done for i in dead) and time.monotonic() < grace:
            with contextlib.suppress(queue.Empty):
                handle(out.get(timeout=0.1))
        for i in dead:
            if i not in done:
                done.add(i)
                code = children[i].exitcode
                fail(GgeError(f"client process {i} ended (exit code {code}) before its samples were done"))

    def drain(until: float | None) -> None:
        """Handle messages until every process is done (or, with ``until``, that many seconds pass)."""
        deadline = None if until is None else time.monotonic() + until
        checked = time.monotonic()
        while len(done) < len(children):
            if deadline is not None and time.monotonic() > deadline:
                return
            with contextlib.suppress(queue.Empty):
                handle(out.get(timeout=0.2))
            if time.monotonic() - checked >= DEAD_CHECK_S:
                checked = time.monotonic()
                check_dead()

    feeder = threading.Thread(target=feed, name="gge-client-feed", daemon=True)
    try:
        with _main_not_run_again(), _sigint_ignored():
            for child in children:
                child.start()
        feeder.start()
        drain(None)
    except BaseException:  # Ctrl-C: stop every process, log nothing more, wait for them a while
        logging_on[0] = False
        halt.set()
        done.update(i for i, c in enumerate(children) if c.pid is None)  # never started
        try:
            drain(STOP_WAIT_S)
        finally:
            _end(children, jobs, out)
        raise
    _end(children, jobs, out)
    if failures:
        raise failures[0]
    if len(results) != len(samples):  # a result lost on its way (one that could not be pickled)
        raise GgeError(
            f"{len(samples)} samples were asked by client processes but {len(results)} results came back"
        )
    return [results[i] for i in sorted(results)]


@contextlib.contextmanager
def _main_not_run_again() -> Iterator[None]:
    """Spawned processes do not run the parent's main script again while this is held.

    ``spawn`` starts each process by importing the parent's ``__main__`` (as ``__mp_main__``): a script
    that calls gge's ``main()`` without an ``if __name__ == "__main__":`` guard would start a whole run
    in every process. While held, the parent's main module is this module (definitions only), which
    is what the processes import instead.
    """
    main = sys.modules.get("__main__")
    stub = types.ModuleType("__main__")
    stub.__spec__ = importlib.util.find_spec(__name__)
    sys.modules["__main__"] = stub
    try:
        yield
    finally:
        if main is not None:
            sys.modules["__main__"] = main
        else:
            del sys.modules["__main__"]


def _end(children: Sequence[Any], jobs: Any, out: Any, wait_s: float = 5.0) -> None:
    """Join the processes (ending those still running after ``wait_s`` in all) and close the queues."""
    deadline = time.monotonic() + wait_s
    for child in children:
        if child.pid is not None:
            child.join(timeout=max(0.0, deadline - time.monotonic()))
    running = [c for c in children if c.pid is not None and c.exitcode is None]
    for child in running:
        child.terminate()
    for child in running:
        child.join(timeout=5.0)
    for q in (jobs, out):
        q.cancel_join_thread()
        q.close()


@contextlib.contextmanager
def _sigint_ignored() -> Iterator[None]:
    """Ctrl-C ignored while the processes start (the main thread only): they start with it ignored.

    A process starting with SIGINT ignored keeps it so (CPython installs its KeyboardInterrupt
    handler only over the default), so a Ctrl-C while it imports prints no traceback of its own.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)
