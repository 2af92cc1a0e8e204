# SPDX-License-Identifier: BSD-2-Clause
"""braid's own view of its paths across a path failure: the sender's per-path counters from two
braid-stat --json snapshots, one just before the path went down, one just before it came back."""

import json
import os


def sender(endpoints):
    """The sending endpoint of a snapshot's endpoints: of those with peers, the one that sent
    the most data (None: none has peers)."""
    eps = [e for e in endpoints if e.get("peers")]
    return max(eps, key=lambda e: e["counters"]["rd.tx_data"]) if eps else None


def paths_view(b, a):
    """The sender's paths between its snapshots b (before) and a (after): (totals, text) with
    totals {path_deaths, retx_dead, redraws} and text a Markdown table with a line on the
    resends by cause; None when b and a are not the same endpoint and peer."""
    if b["addr"] != a["addr"] or b["peers"][0]["addr"] != a["peers"][0]["addr"]:
        return None
    pb, pa = b["peers"][0], a["peers"][0]

    def c(k):
        return a["counters"][k] - b["counters"][k]
    totals = {"path_deaths": c("rd.path_deaths"), "retx_dead": c("rd.retx_dead"),
              "redraws": c("rd.path_redraws")}
    out = ["braid's paths from %s to %s across the failure (braid-stat, the sender's "
           "view: from just before the path went down to just before it came back)" %
           (a["addr"], pa["addr"]), "",
           "| path | entropy before -> after | sent | resent | lost | deaths | re-draws | "
           "srtt after | state after |", "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for i, (rb, ra) in enumerate(zip(pb["paths"], pa["paths"])):
        def d(k):
            return ra[k] - rb[k]
        ent = "%d" % rb["rd.path.entropy"] if rb["rd.path.entropy"] == ra["rd.path.entropy"] \
            else "%d -> %d" % (rb["rd.path.entropy"], ra["rd.path.entropy"])
        out.append("| %d | %s | %d | %d | %d | %d | %d | %.0f us | %s |" % (
            i, ent, d("rd.tx_data"), d("rd.retx_pkts"), d("rd.lost_pkts"),
            d("rd.path_deaths"), d("rd.path_redraws"), ra["rd.path.srtt_ns"] / 1000,
            "sick" if ra["rd.path.state"] else "ok"))
    out += ["", "Resends by cause meanwhile: %d time-based, %d tail probe, %d RTO, "
            "%d of a dead path's packets." % (
                c("rd.retx_rack"), c("rd.retx_tlp"), c("rd.retx_rto"), totals["retx_dead"]), ""]
    return totals, "\n".join(out)


def braid_paths(rundir, tag, row):
    """The path failure run tag's view from rundir/tag.stat_before.json and .stat_after.json:
    the table into rundir/tag.paths.md, the totals into row. Nothing when a snapshot is
    missing or unreadable, or has no sender."""
    snaps = []
    for when in ("before", "after"):
        try:
            with open(os.path.join(rundir, "%s.stat_%s.json" % (tag, when))) as f:
                eps = json.load(f)["endpoints"]
        except (OSError, ValueError, KeyError):
            return
        s = sender(eps)
        if s is None:
            return
        snaps.append(s)
    view = paths_view(*snaps)
    if view is None:
        return
    totals, text = view
    row.update(totals)
    with open(os.path.join(rundir, tag + ".paths.md"), "w") as f:
        f.write(text)
