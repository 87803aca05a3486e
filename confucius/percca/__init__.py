# SPDX-License-Identifier: MIT
"""Per-CCA queue isolation (paper 003) measured on the lab's real kernel: bulk CCA mixes,
a classifier of chosen accuracy, tc filters that map flows to queues, and the models'
predictions beside the measurements."""
