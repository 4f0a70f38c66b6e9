"""Observation spaces whose batches Gymnasium's ``AsyncVectorEnv`` can keep in shared memory.

``AsyncVectorEnv(shared_memory=True)`` (the default of ``gym.make_vec(..., vectorization_mode="async")``) reads
the batch of observations once, when it is built, through ``read_from_shared_memory``; then the workers write
every new observation into the shared buffer. That works for ``Box`` (the read returns a numpy view of the
buffer) but not for variable-length observations: Gymnasium 1.4 refuses ``Sequence`` spaces outright ("dynamic
shape", so ``CountdownTokens-v0`` could only run with ``shared_memory=False``) and reads ``Text`` into a tuple of
strings at build time, so ``Countdown-v0`` returned the initial blank prompts forever.

The two spaces here register Gymnasium's extension points (``functools.singledispatch`` on the space class, as
Gymnasium asks of custom spaces) so that the read returns :class:`SharedBatch`, a live view of the buffer, as
for ``Box``: ``copy=True`` (the default) hands out a tuple snapshot (``deepcopy`` of the view), ``copy=False`` the
view itself.

- :class:`PromptText` (``Countdown-v0``): Gymnasium's ``Text`` buffer (character indices, padded); only the read
  is new.
- :class:`TokenSequence` (``CountdownTokens-v0``): a 1-D int64 id sequence of at most ``max_length`` ids; the
  buffer holds per env ``[length, id_0, ..., id_{max_length-1}]``.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Sequence as SequenceABC
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.vector.utils import create_shared_memory, read_from_shared_memory, write_to_shared_memory


class SharedBatch(SequenceABC):
    """The ``n`` observations in a shared buffer, decoded on access; ``deepcopy`` gives a tuple snapshot."""

    def __init__(self, n: int, decode: Callable[[int], Any]) -> None:
        self._n = n
        self._decode = decode

    def __len__(self) -> int:
        return self._n

    def __getitem__(self, index):
        if isinstance(index, slice):
            return tuple(self._decode(i) for i in range(*index.indices(self._n)))
        if not -self._n <= index < self._n:
            raise IndexError(f"observation index {index} out of range for {self._n} envs")
        return self._decode(index % self._n)

    def __deepcopy__(self, memo: dict) -> tuple:
        return tuple(self)

    def __repr__(self) -> str:
        return f"SharedBatch({tuple(self)!r})"


class PromptText(spaces.Text):
    """``Text`` whose vector batches are live views of ``AsyncVectorEnv``'s shared buffer (module docstring)."""


class TokenSequence(spaces.Sequence):
    """``Sequence(Discrete(vocab_size), stack=True)`` of at most ``max_length`` ids (so it fits shared memory)."""

    def __init__(self, vocab_size: int, max_length: int, seed: Any = None) -> None:
        super().__init__(spaces.Discrete(vocab_size), stack=True, seed=seed)
        self.max_length = int(max_length)

    def contains(self, x: Any) -> bool:
        return super().contains(x) and len(x) <= self.max_length

    def sample(self, mask: Any = None, probability: Any = None) -> np.ndarray:
        return super().sample(mask, probability)[: self.max_length]

    def __repr__(self) -> str:
        return f"TokenSequence({self.feature_space.n}, max_length={self.max_length})"

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, TokenSequence) and super().__eq__(other) and self.max_length == other.max_length


def _rows(shared_memory: Any, dtype: type, n: int) -> np.ndarray:
    return np.frombuffer(shared_memory.get_obj(), dtype=dtype).reshape(n, -1)


@read_from_shared_memory.register(PromptText)
def _read_prompts(space: PromptText, shared_memory: Any, n: int = 1) -> SharedBatch:
    rows = _rows(shared_memory, np.int32, n)
    pad = len(space.character_set)

    def decode(i: int) -> str:
        row = rows[i]
        end = int(np.argmax(row == pad)) if (row == pad).any() else len(row)
        return "".join(space.character_list[c] for c in row[:end])

    return SharedBatch(n, decode)


@create_shared_memory.register(TokenSequence)
def _create_token_memory(space: TokenSequence, n: int = 1, ctx: Any = None) -> Any:
    import multiprocessing

    return (ctx or multiprocessing).Array(np.dtype(np.int64).char, n * (space.max_length + 1))


@read_from_shared_memory.register(TokenSequence)
def _read_tokens(space: TokenSequence, shared_memory: Any, n: int = 1) -> SharedBatch:
    rows = _rows(shared_memory, np.int64, n)
    return SharedBatch(n, lambda i: rows[i, 1 : 1 + rows[i, 0]].copy())


@write_to_shared_memory.register(TokenSequence)
def _write_tokens(space: TokenSequence, index: int, value: np.ndarray, shared_memory: Any) -> None:
    if len(value) > space.max_length:
        raise ValueError(f"an observation of {len(value)} ids exceeds the space's max_length {space.max_length}")
    row = np.frombuffer(shared_memory.get_obj(), dtype=np.int64).reshape(-1, space.max_length + 1)[index]
    row[0] = len(value)
    row[1 : 1 + len(value)] = value
