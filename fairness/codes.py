"""Activation codes: the on/off pattern of a network's hidden ReLUs.

One type, `ActivationCode`, with its three spellings: per-layer bool tuples
(what the forward pass produces and the geometry composes), a key string
"1011.01" (one group of bits per hidden layer; certificates, the store and
logs use it), and flat bits, neurons numbered layer by layer, packed
little-endian into one integer id (the statement circuit's form).
A neuron is on when its pre-activation is > 0.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Sequence


@dataclass(frozen=True)
class ActivationCode:
    layers: tuple[tuple[bool, ...], ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "layers", tuple(tuple(bool(b) for b in layer) for layer in self.layers))

    # ------------------------------------------------------------ spellings
    @classmethod
    def parse(cls, text: str, hidden_sizes: Sequence[int]) -> "ActivationCode":
        """The code spelled `text` ("1011.01"), which must match `hidden_sizes`."""
        groups = text.split(".") if isinstance(text, str) else []
        if len(groups) != len(hidden_sizes) or any(len(g) != n for g, n in zip(groups, hidden_sizes)) \
                or any(ch not in "01" for g in groups for ch in g):
            raise ValueError(f"activation code {text!r} does not match hidden sizes {tuple(hidden_sizes)}")
        return cls(tuple(tuple(ch == "1" for ch in g) for g in groups))

    @classmethod
    def from_bits(cls, bits: Sequence[int | bool], hidden_sizes: Sequence[int]) -> "ActivationCode":
        """The code of flat bits (layer by layer)."""
        if len(bits) != sum(hidden_sizes):
            raise ValueError(f"{len(bits)} bits do not match hidden sizes {tuple(hidden_sizes)}")
        layers, at = [], 0
        for n in hidden_sizes:
            layers.append(tuple(bool(b) for b in bits[at:at + n]))
            at += n
        return cls(tuple(layers))

    @property
    def key(self) -> str:
        return ".".join("".join("1" if b else "0" for b in layer) for layer in self.layers)

    def __str__(self) -> str:
        return self.key

    @property
    def bits(self) -> tuple[bool, ...]:
        """Flat bits, layer by layer."""
        return tuple(b for layer in self.layers for b in layer)

    @property
    def bit_ints(self) -> tuple[int, ...]:
        return tuple(int(b) for b in self.bits)

    @property
    def id(self) -> int:
        """sum_i bit_i 2^i over the flat bits (the statement circuit's code id)."""
        return sum(1 << i for i, b in enumerate(self.bits) if b)

    @property
    def hidden_sizes(self) -> tuple[int, ...]:
        return tuple(len(layer) for layer in self.layers)

    # ------------------------------------------------------------ neighbours
    def flip(self, k: int) -> "ActivationCode":
        """The code with flat neuron k's bit flipped."""
        if k < 0:
            raise IndexError("neuron index out of range")
        out = [list(layer) for layer in self.layers]
        for layer in out:
            if k < len(layer):
                layer[k] = not layer[k]
                return ActivationCode(tuple(tuple(x) for x in out))
            k -= len(layer)
        raise IndexError("neuron index out of range")

    # The per-layer view reads like the tuples it replaces.
    def __iter__(self) -> Iterator[tuple[bool, ...]]:
        return iter(self.layers)

    def __getitem__(self, layer: int) -> tuple[bool, ...]:
        return self.layers[layer]

    def __len__(self) -> int:
        return len(self.layers)
