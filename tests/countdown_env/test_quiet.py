"""The third-party noise defaults of every command (countdown_env.helpers.quiet): set unless the user chose."""

from __future__ import annotations

import warnings

from countdown_env.helpers.quiet import quiet_third_party


def test_vllm_logs_warnings_only_unless_the_user_chose(monkeypatch):
    monkeypatch.delenv("VLLM_LOGGING_LEVEL", raising=False)
    monkeypatch.delenv("PYTHONWARNINGS", raising=False)
    with warnings.catch_warnings():
        quiet_third_party()
    import os

    assert os.environ["VLLM_LOGGING_LEVEL"] == "WARNING"
    assert os.environ["PYTHONWARNINGS"] == "ignore::FutureWarning:vllm.triton_utils.dispatcher"
    monkeypatch.setenv("VLLM_LOGGING_LEVEL", "DEBUG")
    monkeypatch.setenv("PYTHONWARNINGS", "default")
    with warnings.catch_warnings():
        quiet_third_party()
    assert os.environ["VLLM_LOGGING_LEVEL"] == "DEBUG" and os.environ["PYTHONWARNINGS"] == "default"


def test_the_reduce_op_deprecation_is_ignored_and_nothing_else():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        quiet_third_party()
        warnings.warn("`torch.distributed.reduce_op` is deprecated, please use ReduceOp", FutureWarning, stacklevel=1)
        warnings.warn("something else is deprecated", FutureWarning, stacklevel=1)
    assert [str(w.message) for w in caught] == ["something else is deprecated"]


def test_hugging_face_bars_are_off_in_a_log_only(monkeypatch):
    import os

    from countdown_env.helpers import progress

    for is_terminal, expected in ((False, "1"), (True, None)):
        monkeypatch.delenv("HF_HUB_DISABLE_PROGRESS_BARS", raising=False)
        monkeypatch.setattr(progress, "terminal", lambda value=is_terminal: value)
        with warnings.catch_warnings():
            quiet_third_party()
        assert os.environ.get("HF_HUB_DISABLE_PROGRESS_BARS") == expected
