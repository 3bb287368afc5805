"""The windowed run of an endpoint policy: one request window for the whole run, sample by sample.

A policy that declares ``concurrent`` (:class:`gge.models.policy.GroundingPolicy` over an
OpenAI-compatible endpoint) is not evaluated batch by batch. Every sample moves through its own
stages on its own thread: its screenshot is decoded, its proposer requests go out (a sampling
proposer's greedy and sampled requests together), its critic requests as soon as its candidates are
in (a pointwise critic's judges together), its refine request after them; then it is scored and
handed to ``on_result`` (the prediction log), whatever the other samples are doing. No sample waits
for a batch, a stage or a benchmark: the endpoint's request window (:mod:`gge.models.window`) is the
only limit, and it is kept full from the first request to the last.

Memory stays bounded: a sample starts only while fewer than :data:`PREFETCH` requests are waiting
for a place in the window (the demand beyond it), and never more than the window's limit plus
:data:`PREFETCH` samples are in progress. So the next samples are decoded and their images encoded
while the window's requests are out, and no more: a stage that sends several requests per sample (a
pointwise critic's K judges) fills the window with fewer samples in memory. (Bounding the samples
being prepared to a few more than the requests out, tried too, halved the requests a greedy run kept
in flight: preparing a sample waits for the GIL among the others.)

Results are order-independent: each sample's result depends on its own answers only, and the list
returned is in sample order whatever order the samples finished in (the log's order may differ).

A request that fails for good (:class:`gge.errors.RequestFailed`: its retries ran out, or the server
refused or garbled that request) is its sample's failure, not the run's: the sample is scored as a
``server_error`` miss carrying the error and the run goes on (``strict_server`` stops at the first
instead). A server that fails most samples is broken, not flaky: once :data:`SERVER_ERROR_MIN_SAMPLES`
samples have finished, more than ``max_server_error_share`` of them server errors stops the run
(:class:`ServerBroken`), keeping what finished.

Example:
    >>> import os, tempfile
    >>> from PIL import Image
    >>> from gge.types import Box, Candidate, Prediction, Sample
    >>> path = os.path.join(tempfile.mkdtemp(), "s.png")
    >>> Image.new("RGB", (10, 10)).save(path)
    >>> class Centre:
    ...     needs_images = True
    ...     concurrent = True
    ...     def predict(self, samples): raise AssertionError("not called")
    ...     def predict_images(self, samples, images):
    ...         return [Prediction(s.benchmark, s.id, (Candidate((5.0, 5.0)),)) for s in samples]
    >>> samples = [Sample("b", str(i), path, (10, 10), "click", Box(0, 0, 9, 9)) for i in range(3)]
    >>> [(r.id, r.top1["first"]) for r in evaluate_windowed(Centre(), samples, k=1)]
    [('0', True), ('1', True), ('2', True)]
"""

from __future__ import annotations

import ctypes
import functools
import queue
import threading
from collections.abc import Callable, Iterable, Sized
from typing import Any

from PIL import Image

from gge.benchmarks.images import check_size, decode_image, open_image
from gge.errors import GgeError, RequestFailed, TransientError
from gge.models.base import Capabilities, capabilities
from gge.scoring.scoring import score_sample
from gge.scoring.selection import DEFAULT_CLUSTER_RADIUS
from gge.types import Prediction, Sample, SampleResult

PREFETCH = 8
"""Samples in progress beyond the window's limit: decoded and encoded ahead, ready when a place frees."""

_NO_WINDOW = 16
"""Samples in progress for a concurrent policy that shows no request window."""

MAX_SERVER_ERROR_SHARE = 0.1
"""The share of finished samples that may be server errors before the run stops (the default)."""

SERVER_ERROR_MIN_SAMPLES = 20
"""Finished samples before the server-error share is checked: one or two flaky requests among the
first few samples do not stop a run; a server that fails every request stops it at the 20th sample."""

_ERROR_CHARS = 500
"""A server error's text is kept to one line of at most this many characters."""


class ServerBroken(TransientError):
    """More than ``max_server_error_share`` of the finished samples were server errors: the run stops.

    Attributes:
        errors: Server errors among the finished samples.
        finished: Samples finished in this evaluation.
        share: The share allowed.
    """

    def __init__(self, errors: int, finished: int, share: float, last: str) -> None:
        super().__init__(
            f"{errors} of the {finished} samples finished failed at the server (more than "
            f"max_server_error_share={share:g}): the server looks broken, not flaky; last error: {last}"
        )
        self.errors, self.finished, self.share = errors, finished, share


def server_error_text(error: BaseException) -> str:
    r"""A failed request's error as a ``server_error`` keeps it: one line, at most 500 characters.

    Example:
        >>> server_error_text(RequestFailed("POST http://h/v1/chat/completions: HTTP 500:\n  oops"))
        'POST http://h/v1/chat/completions: HTTP 500: oops'
    """
    text = " ".join(str(error).split()) or type(error).__name__
    return text if len(text) <= _ERROR_CHARS else text[: _ERROR_CHARS - 3] + "..."


def broken(errors: int, finished: int, share: float, min_samples: int = SERVER_ERROR_MIN_SAMPLES) -> bool:
    """Whether the server errors among the finished samples stop the run (the server is broken).

    Example:
        >>> broken(2, 20, 0.1), broken(3, 20, 0.1), broken(19, 19, 0.1)
        (False, True, False)
    """
    return finished >= max(1, min_samples) and errors > share * finished


class ServerErrorShare:
    """The server errors among an evaluation's finished samples, and when they stop it (:func:`broken`).

    One count for a run in one process (:func:`evaluate_windowed`, under its lock) and for the parent
    of client processes (:mod:`gge.run.client_procs`), checked after every finished sample: a share
    passed at the ``min_samples``-th sample stops the run there, whichever kind of sample that is.

    Example:
        >>> share = ServerErrorShare(0.1, min_samples=4)
        >>> [share.add(e) is not None for e in ("HTTP 500", None, "HTTP 500", None)]
        [False, False, False, True]
        >>> (share.errors, share.finished, share.last)
        (2, 4, 'HTTP 500')
    """

    def __init__(self, share: float, min_samples: int = SERVER_ERROR_MIN_SAMPLES) -> None:
        self.share, self.min_samples = share, min_samples
        self.errors = self.finished = 0
        self.last = ""

    def add(self, server_error: str | None) -> ServerBroken | None:
        """Count one finished sample (its ``server_error``, or None); the stop it brings, if any."""
        self.finished += 1
        if server_error is not None:
            self.errors, self.last = self.errors + 1, server_error
        if broken(self.errors, self.finished, self.share, self.min_samples):
            return ServerBroken(self.errors, self.finished, self.share, self.last)
        return None


_MALLOC_ARENAS = 2


@functools.cache
def _fewer_malloc_arenas() -> bool:
    """Have glibc keep at most two malloc arenas, so freed request buffers are reused across threads.

    A windowed run with a marking critic makes each marked view's PNG, data URL and request body
    (1-5 MB each) in whichever of hundreds of threads sends it; with glibc's default of up to eight
    arenas per core each thread's arena keeps what it freed. Measured on 300 samples of sampling +
    pointwise at C=64 (DEVELOPERS.md): peak RSS 5.7 GB with the defaults, 4.2 GB with two arenas,
    at the same client CPU (13.5 and 13.3 ms per 1080p request). A fixed 128 KiB mmap threshold (every
    large buffer its own mapping, returned when freed) held 3.0 GB but cost 19.8 ms: a fresh
    mapping's page faults on every buffer. Once per process, and for the rest of it (an evaluation in
    a training process leaves the limit on); it bounds the arenas created after it, so it is set
    before the run's request threads start. Nothing where the C library is not glibc.

    Returns:
        Whether the limit was set.
    """
    try:
        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    return bool(mallopt(-8, _MALLOC_ARENAS))  # M_ARENA_MAX


def is_windowed(policy: object) -> bool:
    """Whether a policy runs windowed: it declares ``concurrent`` and takes decoded screenshots."""
    caps = capabilities(policy)
    return caps.concurrent and caps.predict_images is not None


def _window(policy: object) -> Any:
    """The policy's request window (its proposer backend's), or None."""
    backend = getattr(policy, "backend", None)
    return getattr(backend, "window", getattr(policy, "window", None))


def evaluate_windowed(
    policy: object,
    samples: Iterable[Sample],
    *,
    k: int,
    cluster_radius: float = DEFAULT_CLUSTER_RADIUS,
    decode_max_pixels: int | None = None,
    strict_images: bool = False,
    on_result: Callable[[SampleResult], None] | None = None,
    prefetch: int = PREFETCH,
    on_scored: Callable[[SampleResult], None] | None = None,
    strict_server: bool = False,
    max_server_error_share: float = MAX_SERVER_ERROR_SHARE,
    server_error_min_samples: int = SERVER_ERROR_MIN_SAMPLES,
    halt: threading.Event | None = None,
) -> list[SampleResult]:
    """Evaluate samples each on its own thread, as many at once as the request window keeps busy.

    An unreadable screenshot is that sample's counted failure (scored as a miss carrying its
    ``image_error``), unless ``strict_images`` stops the run there. So is a request that failed for
    good (:class:`~gge.errors.RequestFailed`: a miss carrying its ``server_error``), unless
    ``strict_server`` stops the run there, or the server errors pass ``max_server_error_share`` of the
    finished samples (checked from ``server_error_min_samples`` on: :class:`ServerBroken`). The first
    failure of any other kind (the server gone past its wait, a configuration every request meets)
    stops the run: no new sample starts, the policy is told to stop sending (``cancel()``), and the
    failure is raised once the samples in progress have ended; the samples finished before it are
    already handed to ``on_result`` (a request cut short by the stop makes no server error). So is
    Ctrl-C (KeyboardInterrupt in the calling thread).

    Args:
        policy: A policy that declares ``concurrent`` (:func:`is_windowed`).
        samples: The samples, of one benchmark or several, in order; any iterable (a client process
            of :mod:`gge.run.client_procs` draws them from its parent's queue as it has room).
        k: Candidates scored at most per sample.
        cluster_radius: Radius of the ``cluster`` selection strategy.
        decode_max_pixels: Downscale screenshots above this area while decoding.
        strict_images: Raise on the first unreadable screenshot instead.
        on_result: Called with each sample's result as it finishes (from the sample's thread, one
            call at a time): the prediction log.
        prefetch: Samples in progress beyond the window's limit.
        on_scored: Called with each sample's result in its own thread, before ``on_result`` and not
            one call at a time: work on the finished sample that the report would otherwise do at
            the end (:func:`gge.scoring.budget.prime_budget`).
        strict_server: Raise on the first request that failed for good instead (its message ends
            with ``(strict_server=true)``).
        max_server_error_share: Stop once more than this share of the finished samples are server
            errors (1 never stops).
        server_error_min_samples: Finished samples before the share is checked.
        halt: Set from outside (another process of the run stopped it): no new sample starts, the
            policy is told to stop sending, and a request cut short makes no server error; what
            finished is returned and nothing is raised for the halt itself.

    Returns:
        One result per sample, in sample order.

    Raises:
        GgeError: The policy does not declare ``concurrent``, or the first failure of a sample.
        ServerBroken: The server errors passed their share of the finished samples.
        RequestFailed: With ``strict_server``, the first request that failed for good.
    """
    caps = capabilities(policy)
    if not (caps.concurrent and caps.predict_images is not None):
        raise GgeError(f"{caps.type_name} does not declare concurrent: it cannot run windowed")
    window = _window(policy)
    if caps.critic_mode in ("pointwise", "listwise"):  # marked views: MBs per request, from many threads
        _fewer_malloc_arenas()

    def room(in_progress: int) -> bool:
        """Whether another sample may start: the window's demand is short of its limit plus prefetch."""
        if window is None:
            return in_progress < _NO_WINDOW + max(0, prefetch)
        waiting = int(getattr(window, "waiting", 0))
        return in_progress < int(window.limit) + max(0, prefetch) and waiting < max(1, prefetch)

    most = (int(window.max_limit) if window is not None else _NO_WINDOW) + max(0, prefetch)
    results: dict[int, SampleResult] = {}
    cond = threading.Condition()
    logged = threading.Lock()
    state = {"in_progress": 0}
    errors = ServerErrorShare(max_server_error_share, server_error_min_samples)  # this evaluation's samples
    failures: list[BaseException] = []
    stopped = threading.Event()  # Ctrl-C: what finishes now is not logged (the caller closed the log)
    stopping = threading.Event()  # set before the policy is cancelled: a request cut short is no answer
    _cancel(policy, False)  # a policy an earlier evaluation stopped sends again

    def halted() -> bool:
        return halt is not None and halt.is_set()

    def stop(e: BaseException) -> None:
        """Keep the first failure and stop sending (the caller holds ``cond``)."""
        if not failures:
            failures.append(e)
        stopping.set()

    def run(i: int, sample: Sample) -> None:
        try:
            try:
                result = _one(caps, sample, k, cluster_radius, decode_max_pixels, strict_images)
            except RequestFailed as e:
                if stopping.is_set() or halted():
                    raise
                if strict_server:
                    raise RequestFailed(f"{e} (strict_server=true)") from e
                pred = Prediction(sample.benchmark, sample.id, server_error=server_error_text(e))
                result = score_sample(sample, pred, k=k, cluster_radius=cluster_radius)
            if on_scored is not None:
                on_scored(result)
            with logged:
                if stopped.is_set():
                    return
                if on_result is not None:
                    on_result(result)
            results[i] = result
            with cond:
                stopped_by = errors.add(result.server_error)
                if stopped_by is not None:
                    stop(stopped_by)
            if stopping.is_set():
                _cancel(policy)
        except BaseException as e:
            with cond:
                if not halted():  # a request the halt cut short is no failure of the run's
                    stop(e)
            _cancel(policy)
        finally:
            with cond:
                state["in_progress"] -= 1
                cond.notify_all()

    # The sample threads start before any work: a thread started while others decode and encode
    # waits for the GIL, which made a submit loop spend seconds starting its threads.
    todo: queue.SimpleQueue[tuple[int, Sample] | None] = queue.SimpleQueue()

    def work() -> None:
        while (job := todo.get()) is not None:
            run(*job)

    count = len(samples) if isinstance(samples, Sized) else most
    threads = [
        threading.Thread(target=work, name=f"gge-sample-{n}", daemon=True)
        for n in range(max(1, min(most, count)))
    ]
    halting = threading.Thread(target=_halt_when, args=(halt, policy, cond), name="gge-halt", daemon=True)
    if halt is not None:
        halting.start()
    for thread in threads:
        thread.start()
    try:
        for i, sample in enumerate(samples):
            with cond:
                while not failures and not halted() and not room(state["in_progress"]):
                    cond.wait(0.05)
                if failures or halted():
                    break
                state["in_progress"] += 1
            todo.put((i, sample))
        with cond:
            while state["in_progress"] > 0:
                cond.wait(0.05)
    except BaseException:  # Ctrl-C: stop sending, leave what is in flight
        stopping.set()
        _cancel(policy)
        with logged:
            stopped.set()
        raise
    finally:
        for _ in threads:
            todo.put(None)
    for thread in threads:
        thread.join()
    if failures:
        raise failures[0]
    return [results[i] for i in sorted(results)]


def _halt_when(halt: threading.Event | None, policy: object, cond: threading.Condition) -> None:
    """Tell the policy to stop sending once ``halt`` is set (its requests waiting fail at once)."""
    if halt is None:
        return
    halt.wait()
    _cancel(policy)
    with cond:
        cond.notify_all()


def _cancel(policy: object, on: bool = True) -> None:
    stop = getattr(policy, "cancel", None)
    if callable(stop):
        stop(on)


def _open(sample: Sample, max_pixels: int | None) -> Image.Image:
    """The sample's screenshot: an RGB file opened lazily (decoded when first needed), else decoded now.

    An endpoint that sends the screenshot unchanged sends its file's bytes
    (:mod:`gge.models.encoding`): its pixels are then never decoded at all. A file in another mode, or
    one to downscale (``decode_max_pixels``), is decoded as the batched loop decodes it
    (:func:`gge.benchmarks.images.decode_image`), so the model sees the same pixels either way.

    Raises:
        GgeError: The screenshot cannot be read (naming the benchmark, the sample and the path).
    """
    if max_pixels is None:
        try:
            image = open_image(sample.image_path)
        except (OSError, ValueError, SyntaxError, Image.DecompressionBombError):
            image = None  # decode_image says why, as the batched loop does
        if image is not None:
            if image.mode == "RGB":
                try:
                    check_size(sample, image.size)
                except GgeError:
                    image.close()
                    raise
                return image
            image.close()
    return decode_image(sample, max_pixels=max_pixels)


def _fails_to_load(image: Image.Image) -> bool:
    """Whether a lazily opened screenshot is what failed: its pixels cannot be decoded."""
    try:
        image.load()
    except (OSError, SyntaxError, ValueError):
        return True
    return False


def _unreadable(sample: Sample, what: str, k: int, cluster_radius: float, strict: bool) -> SampleResult:
    """The counted failure of a sample whose screenshot cannot be read (or the run's, when strict)."""
    if strict:
        raise GgeError(f"{what} (strict_images=true)")
    pred = Prediction(sample.benchmark, sample.id, image_error=what)
    return score_sample(sample, pred, k=k, cluster_radius=cluster_radius)


def _one(
    caps: Capabilities,
    sample: Sample,
    k: int,
    cluster_radius: float,
    decode_max_pixels: int | None,
    strict_images: bool,
) -> SampleResult:
    """Open, ask and score one sample."""
    assert caps.predict_images is not None
    try:
        image = _open(sample, decode_max_pixels)
    except GgeError as e:
        return _unreadable(sample, str(e), k, cluster_radius, strict_images)
    try:
        out = caps.predict_images([sample], [image])
    except (OSError, SyntaxError, ValueError) as e:
        if not _fails_to_load(image):
            raise
        what = f"{sample.benchmark}: sample {sample.id}: cannot read image {sample.image_path}: {e}"
        return _unreadable(sample, what, k, cluster_radius, strict_images)
    finally:
        image.close()
    if len(out) != 1:
        raise GgeError(f"the model returned {len(out)} predictions for 1 sample")
    pred = out[0]
    if (pred.benchmark, pred.id) != (sample.benchmark, sample.id):
        raise GgeError(
            f"the model answered {pred.benchmark}/{pred.id} for sample {sample.benchmark}/{sample.id}"
        )
    return score_sample(sample, pred, k=k, cluster_radius=cluster_radius)
