# SPDX-License-Identifier: MIT
"""One module per experiment (see harness/experiment.py and bench/README.md)."""
