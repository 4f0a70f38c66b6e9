"""``countdown serve``: a model of the project over HTTP with vLLM's OpenAI-compatible server, started as ``trl
vllm-serve`` starts it, on the CPU or the GPU build of vLLM (:mod:`learners.sampling.vllm_serve`)."""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from . import add_precision_option

HELP = "serve a model over HTTP with vLLM (OpenAI API + TRL's VLLMClient); CPU or GPU build"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--model",
        required=True,
        help="'warm-start', 'warm-start-multistep', a model folder or a Hub id (the name clients send as `model`)",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (0.0.0.0: every interface)")
    parser.add_argument("--port", type=int, default=8000, help="port")
    parser.add_argument(
        "--kv-cache-gib",
        type=float,
        help="CPU build: KV cache in GiB (VLLM_CPU_KVCACHE_SPACE; default: the variable, else 1; vLLM's own default "
        "takes most of the machine's memory)",
    )
    parser.add_argument("--max-model-len", type=int, help="longest prompt + completion (default: the model's)")
    add_precision_option(parser, "the served weights' precision")
    parser.add_argument("--dtype", help="vLLM's own --dtype, which overrides --precision (e.g. float16 on a GPU)")
    parser.add_argument(
        "--startup-timeout", type=float, default=300.0, help="seconds to wait for the server to answer /health"
    )
    parser.add_argument("--log", help="the server's own log (default: countdown-serve-PORT.log in the temp folder)")
    parser.add_argument(
        "vllm_args", nargs=argparse.REMAINDER, help="after --: more `vllm serve` options, passed on as they are"
    )


def run(args: argparse.Namespace) -> int:
    # user errors (ValueError, OSError, RuntimeError) reach countdown_env.cli.main: one line, exit status 2
    from ..pipeline.models import check_model, resolve_model
    from ..sampling.vllm_serve import check_port, serve, serve_command, vllm_version

    if not 0 < args.port < 65536:
        raise ValueError(f"--port must be in 1..65535, got {args.port}")
    if args.kv_cache_gib is not None and not args.kv_cache_gib > 0:
        raise ValueError(f"--kv-cache-gib must be > 0, got {args.kv_cache_gib}")
    if not args.startup_timeout > 0:
        raise ValueError(f"--startup-timeout must be > 0, got {args.startup_timeout}")
    check_model(args.model)  # a missing folder, or a Hub id offline, fails here in one line
    check_port(args.host, args.port)  # a port in use: one line now, not vLLM's traceback in its log after 35 s
    vllm_version()  # vLLM not installed: one line
    import torch

    from ..pipeline.precision import engine_dtype, model_precision

    gpu = torch.cuda.is_available()
    extra = [a for a in args.vllm_args if a != "--"]
    dtype = args.dtype or engine_dtype(model_precision(args.precision, resolve_model(args.model)))
    command = serve_command(
        resolve_model(args.model), served_name=args.model, host=args.host, port=args.port, dtype=dtype,
        max_model_len=args.max_model_len, gpu=gpu, extra_args=extra,
    )  # fmt: skip
    log = Path(args.log) if args.log else Path(tempfile.gettempdir()) / f"countdown-serve-{args.port}.log"
    host = "127.0.0.1" if args.host in ("0.0.0.0", "::") else args.host
    url = f"http://{host}:{args.port}"
    print(f"countdown serve: starting vLLM ({'GPU' if gpu else 'CPU'} build) on {args.model}; log: {log}",
          file=sys.stderr, flush=True)  # fmt: skip

    def ready(seconds: float) -> None:
        print(
            f"countdown serve: ready in {seconds:.0f} s at {url} (model name {args.model!r}): OpenAI API {url}/v1, "
            f"TRL: VLLMServerSampler.connect('{url}', tokenizer); Ctrl-C stops it",
            flush=True,
        )

    return serve(
        command, url=url, log_path=log, startup_timeout=args.startup_timeout, kv_cache_gib=args.kv_cache_gib,
        gpu=gpu, on_ready=ready,
    )  # fmt: skip
