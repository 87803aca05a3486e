# SPDX-License-Identifier: MIT
"""Metrics, tables and plots from the lab's results database (`confucius report`)."""
