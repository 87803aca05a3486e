# SPDX-License-Identifier: MIT
"""Confucius: laboratory, simulation and models for the Confucius queue discipline."""

__version__ = "0.1.0"
