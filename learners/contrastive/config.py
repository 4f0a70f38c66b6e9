"""The contrastive learner's config: a GRPO learner preset (``base_learner``) plus the shaping hyperparameters."""

from __future__ import annotations

import inspect
from dataclasses import MISSING, dataclass, field

from ..grpo.config import GRPOPresetConfig
from ..grpo.presets import PRESETS
from .answer_bank import GROUND_TRUTH_MODES
from .scoring import ENGINES

SCORERS = ("frozen", "moving")

_FROM_PRESET = "None: from base_learner's preset."


def _base_default(name: str):
    spec = GRPOPresetConfig.__dataclass_fields__[name]
    return spec.default_factory() if spec.default is MISSING else spec.default


@dataclass
class ContrastiveConfig(GRPOPresetConfig):
    r"""A GRPO learner config (``base_learner``'s preset) plus the shaping post's hyperparameters.

    The shaping is added to the advantages of the GRPO learner named by ``base_learner`` (a key of
    :data:`learners.grpo.PRESETS`): ``"prime_rl"`` by default, as in the shaping post, which ran on prime-rl's defaults;
    ``"grpo"`` gives TRL-default GRPO (std-scaled advantages, PPO clip) for ablation. Every field a preset sets
    (:data:`PRESET_FIELDS`) defaults to ``None`` here, meaning "from the preset, else the GRPO learner's default";
    a value given explicitly wins. Names avoid GRPO's own ``beta`` (the KL weight).

    Parameters:
        base_learner (`str`, defaults to "prime_rl"): the GRPO preset the shaping sits on.
        shaping_beta (`float`, defaults to 0.1): β, the scale of the shaping term.
        shaping_gamma (`float`, defaults to 0.99): γ, the PBRS-style discount.
        potential_tau (`float`, defaults to 1.0): τ of LSE_τ (not given in the seed; 1 = log mean probability).
        potential_clip (`float`, defaults to 5.0): Φ̄ = clip(Φ, −clip, clip).
        max_paragraph_len (`int`, defaults to 128): split a paragraph every this many tokens.
        ground_truth_mode (`str`, defaults to "never"): "never", "always" or "when_all_wrong" (a* joins B+).
        scorer (`str`, defaults to "frozen"): "frozen" or "moving".
        scorer_model_name_or_path (`str`, optional): the frozen scorer's checkpoint; default a copy of the
            initial policy.
        scorer_engine (`str`, defaults to "prefix_shared"): "prefix_shared", "naive" or "vllm".
        scorer_prefix_batch_size (`int`, defaults to 16): rollouts per prefix forward (prefix_shared).
        scorer_max_batch_tokens (`int`, defaults to 32768): token budget of one continuation batch (prefix_shared).
        scorer_kv_slack (`float`, defaults to 0.25): a continuation batch holds prefixes within (1 + slack) × its
            shortest one (prefix_shared).
        scorer_vllm_block_size (`int`, *optional*): KV block size of the frozen scorer's vLLM engine (32 on the CPU).
        scorer_vllm_gpu_memory_utilization (`float`, defaults to 0.3): the frozen scorer's vLLM engine share.
    """

    base_learner: str = field(default="prime_rl", metadata={"help": "GRPO preset under the shaping."})
    loss_type: str | None = field(default=None, metadata={"help": _FROM_PRESET})
    scale_rewards: str | None = field(default=None, metadata={"help": _FROM_PRESET})
    epsilon: float | None = field(default=None, metadata={"help": _FROM_PRESET})
    epsilon_high: float | None = field(default=None, metadata={"help": _FROM_PRESET})
    beta: float | None = field(default=None, metadata={"help": _FROM_PRESET})
    vllm_importance_sampling_correction: bool | None = field(default=None, metadata={"help": _FROM_PRESET})
    dynamic_sampling: bool | None = field(default=None, metadata={"help": _FROM_PRESET})
    overlong_buffer_fraction: float | None = field(default=None, metadata={"help": _FROM_PRESET})
    dppo_mask_low: float | None = field(default=None, metadata={"help": _FROM_PRESET})
    dppo_mask_high: float | None = field(default=None, metadata={"help": _FROM_PRESET})
    adv_tau: float | None = field(default=None, metadata={"help": _FROM_PRESET})
    kl_tau: float | None = field(default=None, metadata={"help": _FROM_PRESET})
    filter_zero_advantages: bool | None = field(default=None, metadata={"help": _FROM_PRESET})
    shaping_beta: float = field(default=0.1, metadata={"help": "β: scale of the per-paragraph shaping term."})
    shaping_gamma: float = field(default=0.99, metadata={"help": "γ: discount of the potential difference."})
    potential_tau: float = field(default=1.0, metadata={"help": "τ of LSE_τ (> 0; inf = mean)."})
    potential_clip: float = field(default=5.0, metadata={"help": "Clip the potential to [-clip, clip]."})
    max_paragraph_len: int = field(default=128, metadata={"help": "Split paragraphs every this many tokens."})
    ground_truth_mode: str = field(default="never", metadata={"help": "never | always | when_all_wrong."})
    scorer: str = field(default="frozen", metadata={"help": "frozen (fixed model) | moving (current policy)."})
    scorer_model_name_or_path: str | None = field(
        default=None, metadata={"help": "Frozen scorer checkpoint; default: a copy of the initial policy."}
    )
    scorer_engine: str = field(default="prefix_shared", metadata={"help": "prefix_shared | naive | vllm."})
    scorer_prefix_batch_size: int = field(default=16, metadata={"help": "Rollouts per prefix forward pass."})
    scorer_max_batch_tokens: int = field(default=32768, metadata={"help": "Token budget of a continuation batch."})
    scorer_kv_slack: float = field(
        default=0.25, metadata={"help": "Prefix-length spread allowed within a continuation batch (prefix_shared)."}
    )
    scorer_vllm_block_size: int | None = field(
        default=None,
        metadata={
            "help": "KV block size of the frozen scorer's vLLM engine (the prefix cache serves whole blocks); "
            "default 32 on the CPU (the smallest its attention accepts), vLLM's own on a GPU."
        },
    )
    scorer_vllm_gpu_memory_utilization: float = field(
        default=0.3, metadata={"help": "GPU memory share of the frozen scorer's vLLM engine."}
    )

    def __post_init__(self):
        if self.base_learner not in BASE_LEARNERS:
            raise ValueError(f"base_learner must be one of {sorted(BASE_LEARNERS)}, got {self.base_learner!r}")
        preset = PRESETS[self.base_learner]
        for name in PRESET_FIELDS:
            if getattr(self, name) is None:
                setattr(self, name, preset[name] if name in preset else _base_default(name))
        super().__post_init__()
        if not self.potential_tau > 0:
            raise ValueError(f"potential_tau must be > 0, got {self.potential_tau}")
        if not self.potential_clip > 0:
            raise ValueError(f"potential_clip must be > 0, got {self.potential_clip}")
        if not 0.0 < self.shaping_gamma <= 1.0:
            raise ValueError(f"shaping_gamma must lie in (0, 1], got {self.shaping_gamma}")
        if self.max_paragraph_len < 1:
            raise ValueError(f"max_paragraph_len must be >= 1, got {self.max_paragraph_len}")
        if self.ground_truth_mode not in GROUND_TRUTH_MODES:
            raise ValueError(f"ground_truth_mode must be one of {GROUND_TRUTH_MODES}, got {self.ground_truth_mode!r}")
        if self.scorer not in SCORERS:
            raise ValueError(f"scorer must be one of {SCORERS}, got {self.scorer!r}")
        if self.scorer_engine not in ENGINES:
            raise ValueError(f"scorer_engine must be one of {ENGINES}, got {self.scorer_engine!r}")
        if self.scorer_prefix_batch_size < 1 or self.scorer_max_batch_tokens < 1 or self.scorer_kv_slack < 0:
            raise ValueError("scorer_prefix_batch_size and scorer_max_batch_tokens must be >= 1, scorer_kv_slack >= 0")
        if self.scorer_engine == "vllm" and self.scorer == "frozen" and not self.scorer_model_name_or_path:
            raise ValueError("a frozen vLLM scorer needs scorer_model_name_or_path")


PRESET_FIELDS = tuple(
    name for name in inspect.get_annotations(ContrastiveConfig) if name in GRPOPresetConfig.__dataclass_fields__
)
"""The GRPO fields this config redeclares, defaulting to None = "take it from base_learner's preset, else
GRPOPresetConfig's default", so that an explicit value always wins (even one equal to a default)."""

BASE_LEARNERS = tuple(name for name, preset in PRESETS.items() if set(preset) <= set(PRESET_FIELDS))
"""The presets the shaping can sit on: those that set only :data:`PRESET_FIELDS` (grpo, dr_grpo, dapo, prime_rl,
cispo); the other TRL-loss presets set fields (``importance_sampling_level``, ``delta`` ...) this config does not
defer to a preset."""
