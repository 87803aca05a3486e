# SPDX-License-Identifier: MIT
"""Confucius: laboratory, simulation and models for the Confucius queue discipline."""

from importlib.metadata import version

__version__ = version("confucius")  # from VERSION, through pyproject.toml
