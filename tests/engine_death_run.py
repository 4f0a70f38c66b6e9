"""Run by tests/test_vllm_engine_death.py (a script: vLLM's engine core is a child process, so the ``__main__``
guard is needed): ``countdown eval --backend vllm`` whose engine core process is SIGKILLed at the first wait for
generated tokens. Prints the exit status, then ``countdown eval`` prints its one error line on stderr."""

from __future__ import annotations

import os
import signal
import sys


def main(model_dir: str, split: str, out: str) -> int:
    from countdown_env.cli import main as countdown
    from learners.sampling import vllm_engine

    build = vllm_engine.build_llm

    def build_and_arm(*args, **kwargs):
        llm = build(*args, **kwargs)
        core = llm.llm_engine.engine_core
        pid = core.resources.engine_manager.processes[0].pid
        wait = core.get_output

        def first_wait_kills_the_engine():
            if pid is not None:
                os.kill(pid, signal.SIGKILL)
            return wait()

        core.get_output = first_wait_kills_the_engine
        return llm

    vllm_engine.build_llm = build_and_arm
    code = countdown(["eval", "--model", model_dir, "--split", split, "--backend", "vllm", "--samples", "2",
                      "--max-new-tokens", "32", "--out", out, "--no-progress"])  # fmt: skip
    print(f"exit {code}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
