# SPDX-License-Identifier: BSD-2-Clause
"""The contenders, the hosts, and the names and number formats every part of tools/ab uses."""

import os

# the repository: tools/abkit/common.py -> tools/abkit -> tools -> the top
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

CONTENDERS = ["braid", "braid;ofi_rxm", "braid;ofi_rxd", "tcp;ofi_rxm"]
SHORT = {"braid": "braid", "braid;ofi_rxm": "RoCE RC (braid;ofi_rxm)",
         "braid;ofi_rxd": "braid;ofi_rxd", "tcp;ofi_rxm": "tcp;ofi_rxm"}
RC = "braid;ofi_rxm"
# behind different routers: every packet crosses a path
SERVER_HOST, CLIENT_HOST = "h2", "h1"
HOST_IP = {"h%d" % i: "10.77.%d.2" % i for i in range(1, 9)}
LOSS_OF = {"clean": 0.0, "loss0.1": 0.1, "loss1": 1.0, "loss5": 5.0}

EXIT_SKIP = 77


def fname(contender):
    """A contender's name as a file name: braid;ofi_rxm -> braid_ofi_rxm."""
    return contender.replace(";", "_")


def human_size(n):
    if n >= 1 << 20 and n % (1 << 20) == 0:
        return "%d MiB" % (n >> 20)
    if n >= 1 << 10 and n % (1 << 10) == 0:
        return "%d KiB" % (n >> 10)
    return "%d B" % n


def human_time(s):
    s = int(round(s))
    return "%dm%02ds" % (s // 60, s % 60) if s >= 60 else "%ds" % s


def log(msg=""):
    # a reader that went away (`tools/ab ... | head`) must not stop the clean-up at exit:
    # the fabric's namespaces would be left behind
    try:
        print(msg, flush=True)
    except (BrokenPipeError, ValueError):
        pass


def num(d, k):
    """d[k] as a float: None when it is missing, empty or not a number (a results.csv row's
    cell, a braid_ab result's field)."""
    try:
        return float(d[k])
    except (KeyError, TypeError, ValueError):
        return None


def fmt(v, unit=""):
    """A figure with 3 or so significant digits (thousands separated), "-" for None."""
    if v is None:
        return "-"
    a = abs(v)
    if a >= 1000:
        s = "{:,.0f}".format(v)
    elif a >= 100:
        s = "%.0f" % v
    elif a >= 10:
        s = "%.1f" % v
    elif a >= 1:
        s = "%.2f" % v
    else:
        s = "%.3f" % v
    return s + unit
