# SPDX-License-Identifier: MIT
"""Aggressiveness parameters of the per-CCA models (paper 003 §II-B, §II-E, §III-G), and the
JSON file that carries them so the lab can feed its own fits in.

g_i is CCA i's training aggressiveness: a flow's throughput over its fair share in a shared
buffer with equal flow counts (Eq. 6). g_ij(x_i) = w·e^(m·x_i) is CCA i's relative
aggressiveness against CCA j, the ratio of their per-flow throughputs when a proportion x_i
of the flows uses i (§II-E). A fit is stored for one order of each pair; the other order
follows from the definition: in a buffer where x_i of the flows use i, a proportion
1 − x_i uses j, so g_ji(x_j) = 1 / g_ij(1 − x_j).
"""

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from .validate import ModelInputError, finite, positive, unknown


@dataclass(frozen=True)
class AggressivenessParams:
    ccas: tuple
    g: dict = field(default_factory=dict)          # cca -> g_i (Eq. 6)
    relative: dict = field(default_factory=dict)   # (i, j) -> (w, m): g_ij(x) = w·e^(m·x)

    def __post_init__(self):
        names = tuple(str(c).lower() for c in self.ccas)
        if len(names) < 2 or len(set(names)) != len(names):
            raise ModelInputError(f"need at least two distinct CCAs, got {list(self.ccas)}")
        object.__setattr__(self, "ccas", names)
        g = {str(c).lower(): positive(f"g[{c}]", v) for c, v in self.g.items()}
        relative = {}
        for (i, j), (w, m) in self.relative.items():
            i, j = str(i).lower(), str(j).lower()
            if i == j:
                raise ModelInputError(f"relative aggressiveness of {i} against itself is 1 "
                                      "by definition; do not give it")
            if (j, i) in relative:
                raise ModelInputError(f"give one of g_{i},{j} and g_{j},{i}, not both")
            relative[(i, j)] = (positive(f"w of g_{i},{j}", w), finite(f"m of g_{i},{j}", m))
        unknown = (set(g) | {c for pair in relative for c in pair}) - set(names)
        if unknown:
            raise ModelInputError(f"parameters name CCAs not in the list {list(names)}: "
                                  f"{sorted(unknown)}")
        object.__setattr__(self, "g", g)
        object.__setattr__(self, "relative", relative)

    def index(self, cca: str) -> int:
        try:
            return self.ccas.index(cca.lower())
        except ValueError:
            raise unknown("CCA", cca, self.ccas, "these parameters know")

    def training_g(self) -> list:
        """g_i in the order of `ccas`; the simple model and Eq. 7 need every one."""
        missing = [c for c in self.ccas if c not in self.g]
        if missing:
            raise ModelInputError(f"no training aggressiveness g for {', '.join(missing)}")
        return [self.g[c] for c in self.ccas]

    def relative_aggressiveness(self, i: str, j: str, x_i: float) -> float:
        """g_ij(x_i): the per-flow throughput ratio of CCA i to CCA j (§II-E)."""
        if i == j:
            return 1.0
        if (i, j) in self.relative:
            w, m = self.relative[(i, j)]
            return w * math.exp(m * x_i)
        if (j, i) in self.relative:
            w, m = self.relative[(j, i)]
            return 1.0 / (w * math.exp(m * (1.0 - x_i)))
        raise ModelInputError(f"no relative aggressiveness fit for the pair ({i}, {j}): the "
                              "advanced model needs one for every pair of CCAs with flows")

    def to_json(self) -> dict:
        return {
            "ccas": list(self.ccas),
            "g": dict(self.g),
            "relative": [{"i": i, "j": j, "w": w, "m": m}
                         for (i, j), (w, m) in self.relative.items()],
        }

    @classmethod
    def from_json(cls, data: dict) -> "AggressivenessParams":
        try:
            relative = {(r["i"], r["j"]): (r["w"], r["m"]) for r in data.get("relative", [])}
            return cls(tuple(data["ccas"]), dict(data.get("g", {})), relative)
        except (KeyError, TypeError, AttributeError) as err:
            raise ModelInputError(f"malformed aggressiveness parameters ({err!r}): expected "
                                  '{"ccas": [...], "g": {cca: g}, "relative": '
                                  '[{"i": .., "j": .., "w": .., "m": ..}]}')

    def merged_over(self, base: "AggressivenessParams") -> "AggressivenessParams":
        """These parameters, with whatever they lack taken from `base`."""
        ccas = base.ccas + tuple(c for c in self.ccas if c not in base.ccas)
        relative = {pair: fit for pair, fit in base.relative.items()
                    if pair not in self.relative and pair[::-1] not in self.relative}
        relative.update(self.relative)
        return AggressivenessParams(ccas, {**base.g, **self.g}, relative)


def load(path: Path) -> AggressivenessParams:
    try:
        data = json.loads(Path(path).read_text())
    except OSError as err:
        raise ModelInputError(f"cannot read parameters {path}: {err.strerror}")
    except json.JSONDecodeError as err:
        raise ModelInputError(f"{path} is not JSON: {err}")
    return AggressivenessParams.from_json(data)
