"""How a run that stops keeps its work: the stop's message, what the output folder keeps, the resume.

Every way a standalone run stops with samples finished (Ctrl-C, a server gone past its wait, a broken
server, ``strict_server=true``, a request error) says in one line why, how many samples the output
folder keeps, and that the same command resumes from them (:func:`kept_line`); the CLI prints the
rerun's arguments (:class:`Rerun`'s ``rerun``). Moved out of :mod:`gge.run.standalone`, which runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from gge.errors import GgeError, TransientError
from gge.run.predlog import existing_logs, read_records


class Rerun(GgeError):
    """Bad input a rerun with other arguments gets past: the error, and those arguments.

    Attributes:
        rerun: The ``key=value`` arguments to set in the same command (e.g. ``drop_malformed_lines``).
    """

    def __init__(self, message: str, rerun: Mapping[str, str]) -> None:
        super().__init__(message)
        self.rerun = dict(rerun)


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C during the evaluation: what is kept, and the arguments whose rerun resumes from it.

    A KeyboardInterrupt still (whoever catches Ctrl-C catches it); ``str()`` is the message.

    Attributes:
        kept: Samples of this run finished in the output folder's prediction logs.
        total: Samples this run evaluates.
        output_dir: The output folder.
        rerun: The ``key=value`` arguments a rerun of the same command needs to resume
            (``output_dir``, and ``resume=true``).
    """

    def __init__(self, kept: int, total: int, output_dir: Path, reask: int = 0) -> None:
        super().__init__(f"interrupted: {kept_line(kept, total, output_dir, reask)}")
        self.kept, self.total, self.output_dir = kept, total, output_dir
        self.rerun = resume_args(output_dir)

    def __str__(self) -> str:
        return str(self.args[0])


class RunStopped(Rerun, TransientError):
    """An endpoint run stopped by the server, with work kept: the failure, what is kept, and the resume.

    The server went away past ``model.server_wait_s``, the server errors passed
    ``max_server_error_share``, or ``strict_server=true`` met a request that failed for good. ``str()``
    says why, how many samples the output folder keeps, and that the same command resumes from them;
    :attr:`rerun` holds the arguments of that command (``output_dir``, ``resume=true``).

    Attributes:
        kept: Samples of this run answered in the output folder's prediction logs.
        total: Samples this run evaluates.
    """

    def __init__(self, why: str, kept: int, total: int, output_dir: Path, reask: int = 0) -> None:
        super().__init__(f"{why}: {kept_line(kept, total, output_dir, reask)}", resume_args(output_dir))
        self.kept, self.total = kept, total


def resume_args(output_dir: Path) -> dict[str, str]:
    """The ``key=value`` arguments whose rerun of the same command resumes into ``output_dir``."""
    return {"output_dir": str(output_dir), "resume": "true"}


def kept_line(kept: int, total: int, output_dir: Path, reask: int = 0) -> str:
    """What a stopped run keeps, and that the same command resumes: the end of every stop message.

    Args:
        kept: Samples answered in the output folder's prediction logs.
        total: Samples the run evaluates.
        output_dir: The output folder.
        reask: Server errors logged there, which a resume asks again.

    Example:
        >>> for part in kept_line(215, 216, Path("/nonexistent/out"), reask=1).split("; "):
        ...     print(part)
        215 of 216 samples are kept in /nonexistent/out (no prediction log)
        the same command resumes from them, asking the 1 server error again
    """
    logs = ", ".join(p.name for p in existing_logs(output_dir)) or "no prediction log"
    again = f", asking the {reask} server error{'s' if reask != 1 else ''} again" if reask else ""
    resumes = f"the same command resumes from them{again}"
    return f"{kept} of {total} samples are kept in {output_dir} ({logs}); {resumes}"


def kept(output_dir: Path, wanted: set[tuple[str, str]]) -> tuple[int, int, int]:
    """Of ``wanted``: the samples answered in the output folder's logs, all of them, the server errors."""
    try:
        records = read_records(
            existing_logs(output_dir), repair=False, drop_malformed=True, reask_server_errors=True
        )
        return sum(key in wanted for key in records), len(wanted), sum(key in wanted for key in records.reask)
    except GgeError:
        return 0, len(wanted), 0


def interrupted(output_dir: Path, wanted: set[tuple[str, str]]) -> RunInterrupted:
    """What an interrupted run kept: its samples finished in the output folder's logs."""
    answered, total, reask = kept(output_dir, wanted)
    return RunInterrupted(answered, total, output_dir, reask)


def stopped(output_dir: Path, wanted: set[tuple[str, str]], error: GgeError) -> GgeError:
    """The error that stops an endpoint run, saying what is kept and how to resume.

    A failure of the server (:class:`~gge.errors.TransientError`: gone past its wait, broken, or a
    request failed with ``strict_server=true``) is a :class:`RunStopped`, whose rerun command the CLI
    prints; any other error keeps its message, followed by what is kept where something is. Where
    nothing is kept (the probe found no server, the first requests failed) the error is said alone:
    there is nothing to resume from.
    """
    answered, total, reask = kept(output_dir, wanted)
    if not answered and not reask:
        return error
    if isinstance(error, TransientError):
        return RunStopped(str(error), answered, total, output_dir, reask)
    return GgeError(
        f"{error}; {answered} of {total} samples are kept in {output_dir}: a rerun into it resumes from them"
    )
