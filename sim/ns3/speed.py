# SPDX-License-Identifier: MIT
"""Prints a bottleneck run's speed (make bench-sim): simulated seconds per CPU and wall second."""
import json
import sys

run = json.load(open(sys.argv[1]))
print(f"{run['scheduler']}: simulated {run['simulated_s']:.0f} s in {run['cpu_s']:.2f} s CPU "
      f"({run['cpu_speed']:.0f}x real time), {run['wall_s']:.2f} s wall ({run['speed']:.0f}x)")
