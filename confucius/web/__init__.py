# SPDX-License-Identifier: MIT
"""Web page loads for the laboratory: page descriptions, the synthetic corpus, load results."""
