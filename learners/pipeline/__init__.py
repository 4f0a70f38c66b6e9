"""The training pipeline around the learners: ``countdown train`` (:mod:`.train`), ``countdown eval``
(:mod:`.evaluate`), the demo (:mod:`.demo`), SFT (:mod:`.sft`), the embedded tiny model (:mod:`.tiny`), prompt
datasets (:mod:`.data`), plots (:mod:`.plotting`) and the YAML presets (``configs/``).

Nothing here is an algorithm: learners live in their own packages (``learners.grpo``, ``learners.ps_ppo``, ...)
and are found through :mod:`learners.core.registry`.
"""
