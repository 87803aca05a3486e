# SPDX-License-Identifier: MIT
"""Models that predict what the lab measures, from the papers' own equations.

- `fluid`, `bounds`, `policies`, `cca`: the fluid model of a delay-sensitive flow facing a
  burst of N new flows (paper 000 Appx. B, paper 002 §IV-D and Table I): the closed-form
  approximations and a numerical solution of the delay-differential equations.
- `percca`, `presets`, `fitting`: the per-CCA queueing models of paper 003 §II (flow
  distribution from classifier accuracy, simple and advanced aggressiveness models, MinThr,
  service-rate optimisation).

Units inside the package are SI: seconds, bit/s and bits (sizes given in bytes by people are
converted to bits at the edge). `README.md` next to this file maps every function to the
equation it implements.
"""
