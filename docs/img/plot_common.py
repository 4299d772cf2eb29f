# SPDX-License-Identifier: Apache-2.0
# What the *_plot.py scripts beside this file share: matplotlib without a display, reading a
# benchmark's CSV, the log-log axes of the solver timings, and writing the figure.
import csv
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402,F401 (after the backend is chosen; for the scripts)

here = os.path.dirname(os.path.abspath(__file__))


def read_rows(path):
    """The CSV's rows, each a dict by column name."""
    with open(path) as f:
        return list(csv.DictReader(f))


def time_axes(ax, xlabel, title, ylabel="ms", grid=True):
    """Matrix order on a log2 x axis against a log-scale time."""
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    if ylabel:
        ax.set_ylabel(ylabel)
    ax.set_title(title)
    if grid:
        ax.grid(True, which="both", alpha=0.3)


def save(fig, path, dpi):
    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
