"""Writes that a hostile or careless path cannot turn against the machine or the package (issue 67 item 2): no command
writes through a device node or FIFO, the server's log replaces only an earlier server log (never a planted symlink or
the shipped weights), and ``countdown eval`` never writes a report into the package's own folders."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
STEP_COMPLETIONS = ROOT / "tests" / "fixtures" / "step_completions.jsonl"


def _special(tmp_path: Path, kind: str) -> Path:
    path = tmp_path / kind
    if kind == "fifo":
        os.mkfifo(path)
    else:
        if os.geteuid() != 0:
            pytest.skip("mknod of a device node needs root")
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # /dev/null's numbers
    return path


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_no_writer_replaces_a_device_node_or_a_fifo(tmp_path, capsys, kind):
    from countdown_env.cli import main
    from countdown_env.helpers.atomic import OutputError, write_text

    target = _special(tmp_path, kind)
    before = os.lstat(target)
    assert main(["label-steps", "--in", str(STEP_COMPLETIONS), "--out", str(target)]) == 2
    err = capsys.readouterr().err
    assert ("a FIFO" if kind == "fifo" else "a device node") in err and "not a file" in err
    with pytest.raises(OutputError, match="not a file"):
        write_text(target, "x")
    link = tmp_path / "link"
    link.symlink_to(target)  # through a symlink too
    with pytest.raises(OutputError, match="not a file"):
        write_text(link, "x")
    after = os.lstat(target)
    assert stat.S_IFMT(after.st_mode) == stat.S_IFMT(before.st_mode) and after.st_ino == before.st_ino


def test_the_server_log_replaces_only_an_earlier_server_log(tmp_path):
    from countdown_env.helpers.atomic import OutputError
    from learners.sampling.vllm_serve import LOG_HEADER, open_server_log

    weights = tmp_path / "model.safetensors"
    weights.write_bytes(b"\x01" * 64)
    with pytest.raises(OutputError, match="is not a countdown serve log"):
        open_server_log(weights)
    assert weights.read_bytes() == b"\x01" * 64
    planted = tmp_path / "countdown-serve-8000.log"
    planted.symlink_to(weights)  # a symlink planted at the default temp path
    with pytest.raises(OutputError, match="link, device node or FIFO"):
        open_server_log(planted)
    assert weights.read_bytes() == b"\x01" * 64
    fresh = tmp_path / "serve.log"
    with open_server_log(fresh) as log:
        log.write("first run\n")
    with open_server_log(fresh) as log:  # the next run's server replaces its own earlier log
        log.write("second run\n")
    assert fresh.read_text() == LOG_HEADER + "second run\n"


def test_eval_never_writes_into_the_package(tmp_path, capsys):
    from countdown_env.cli import main

    shipped = ROOT / "learners" / "pipeline" / "tiny_warm_start" / "eval_report.json"
    before = shipped.read_bytes()
    argv = ["eval", "--model", "warm-start", "--split", str(ROOT / "datasets" / "tiny_n3.jsonl"), "--limit", "2",
            "--out", str(shipped)]  # fmt: skip
    assert main(argv) == 2
    assert "lies in the package's own folder" in capsys.readouterr().err
    assert shipped.read_bytes() == before


def test_a_plain_install_removes_a_killed_installs_leftovers(tmp_path):
    """`models install --force` killed while unpacking left a 94 MB `.NAME.gguf.tmp-PID`; the next plain install
    said "installed and intact" and kept it."""
    import subprocess
    import sys

    from learners.core.checkpoints import write_checkpoint_manifest
    from learners.pipeline.models.pretrained import install, model_folder

    target = model_folder("smollm2-135m", tmp_path)
    target.mkdir(parents=True)
    (target / "model.safetensors").write_bytes(b"\0" * 128)
    write_checkpoint_manifest(target)  # an installed, intact folder: the install itself is skipped
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    pid = int(dead.stdout)
    leftovers = [target.with_name(f".{target.name}.gguf.tmp-{pid}"), target.with_name(f".{target.name}.tmp-{pid}")]
    for folder in leftovers:
        folder.mkdir()
        (folder / "part").write_bytes(b"\0" * 1024)
    said = []
    assert install("smollm2-135m", cache=tmp_path, log=said.append) == target
    assert said == ["smollm2-135m is installed and intact"]
    assert not any(folder.exists() for folder in leftovers)


def test_compare_refuses_an_eval_puzzle_in_its_train_file_before_any_run(tmp_path, capsys):
    """`compare --train-file` holding an eval puzzle (here with its numbers reordered) was caught per run after ~7 s,
    exit 1, with a summary of an empty table written: it is refused before the output folder exists."""
    import json

    from countdown_env.cli import main

    first = json.loads((ROOT / "datasets" / "tiny_n3.jsonl").read_text().splitlines()[0])
    train = tmp_path / "train.jsonl"
    reordered = {"numbers": list(reversed(first["numbers"])), "target": first["target"]}
    rows = [{"numbers": [1, 2, 3], "target": 6}, reordered]
    train.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "cmp"
    argv = ["compare", "--quick", "--seeds", "0", "--learners", "grpo", "--train-file", str(train), "--out", str(out)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"{train} line 2" in err and "is an eval puzzle" in err
    assert not out.exists()


def test_a_train_file_committed_compressed_is_read_under_its_printed_name(tmp_path, capsys):
    """R2's and R3's registered commands name ``band.jsonl``, which the repository now holds as ``band.jsonl.gz``:
    ``--train-file X.jsonl`` reads ``X.jsonl.gz`` when only that exists (here the same refusal as above proves the
    rows were read), and a name with neither form is still "no such file"."""
    import gzip
    import json

    from countdown_env.cli import main

    first = json.loads((ROOT / "datasets" / "tiny_n3.jsonl").read_text().splitlines()[0])
    (tmp_path / "band.jsonl.gz").write_bytes(gzip.compress((json.dumps(first) + "\n").encode()))
    out = tmp_path / "cmp"
    argv = ["compare", "--quick", "--seeds", "0", "--learners", "grpo", "--train-file", str(tmp_path / "band.jsonl"),
            "--out", str(out)]  # fmt: skip
    assert main(argv) == 2
    assert "line 1" in capsys.readouterr().err and not out.exists()
    argv[argv.index("--train-file") + 1] = str(tmp_path / "missing.jsonl")
    assert main(argv) == 2
    assert "no such file" in capsys.readouterr().err
