# SPDX-License-Identifier: MIT
"""Shared parts of the benchmark driver (bench/run.py): running a program
and collecting its JSON (runner), load accounting (load), the machine
(machine), statistics across configurations (stats), targets (targets),
tables (fmt), plots (plot), the report (report) and the experiment
interface (experiment)."""
