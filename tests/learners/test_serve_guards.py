"""``countdown serve``'s guards that need no vLLM (issue 44 item 6): a port already in use is refused in one line
before any engine starts, and a server that exits 0 after its engine process was killed says how the engine ended."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from learners.sampling.vllm_serve import serve

ROOT = Path(__file__).resolve().parents[2]


def test_serve_on_a_port_in_use_is_one_line_before_the_engine(tmp_path):
    """It took 35 s, then an excerpt of vLLM's traceback, with the cause only in the server's log."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen(1)
        port = holder.getsockname()[1]
        log = tmp_path / "vllm.log"
        result = subprocess.run(
            [sys.executable, "-m", "countdown_env.cli", "serve", "--model", "warm-start", "--port", str(port),
             "--log", str(log)],
            capture_output=True, text=True, cwd=ROOT, timeout=120,
            env={**os.environ, "PYTHONPATH": str(ROOT), "COUNTDOWN_DEBUG": ""},
        )  # fmt: skip
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1, result.stderr
    assert lines[0] == (
        f"countdown serve: error: cannot listen on 127.0.0.1:{port} (in use by another server): pick another --port"
    )
    assert not log.exists()  # no engine was started


# A stand-in server process, run for real: it answers /health like vLLM's, starts a child process the way vLLM starts
# its engine core (multiprocessing, inside recorded_children as learners.sampling.vllm_serve runs vLLM's CLI), has
# the child killed with SIGKILL, and exits 0 as vLLM's API server does when its engine dies.
SERVER = """
import http.server, multiprocessing, os, signal, sys, threading, time
from learners.sampling.vllm_serve import ENGINE_STATUS_ENV, recorded_children

class Health(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.end_headers()
    def log_message(self, *args):
        pass

def engine():
    time.sleep(120)

if __name__ == "__main__":
    with recorded_children(os.environ[ENGINE_STATUS_ENV]):
        child = multiprocessing.get_context("fork").Process(target=engine, name="EngineCore_DP0")
        child.start()
        if sys.argv[2] == "ready":
            http_server = http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Health)
            threading.Thread(target=http_server.serve_forever, daemon=True).start()
            time.sleep(2)
        os.kill(child.pid, signal.SIGKILL)
        child.join()
    print("server: bye", flush=True)
"""


@pytest.mark.parametrize("when", ["ready", "starting"])
def test_a_server_whose_engine_was_killed_says_so(tmp_path, when):
    """The server exits 0 after its engine was killed: serve said "stopped with status 0"; it now names the engine
    process and the signal that ended it, whether the server was ready or still starting."""
    script = tmp_path / "server.py"
    script.write_text(textwrap.dedent(SERVER))
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    log = tmp_path / "server.log"
    ready = []
    with pytest.raises(RuntimeError) as info:
        serve([sys.executable, str(script), str(port), when], url=f"http://127.0.0.1:{port}", log_path=log,
              startup_timeout=60, on_ready=ready.append)  # fmt: skip
    message = str(info.value)
    exited = "the vLLM server exited with status 0" + (" while starting" if when == "starting" else "")
    assert message.startswith(exited + "; its process EngineCore_DP0 (pid "), message
    assert ") was killed by SIGKILL; its log " in message and "server: bye" in message
    assert len(ready) == (1 if when == "ready" else 0)
