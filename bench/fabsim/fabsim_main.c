/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fabsim_main.c: braid_fabsim, the fabric simulator's program: runs each
 * scenario with braid's RD and with RoCEv2 RC on a leaf-spine fabric in
 * virtual time (about 1,000 hosts, or the namespace fabric's 8) and writes
 * the flow completion times.
 *
 *   braid_fabsim [--profile dc|dc-small|wire-8] [--small] [--seed N]
 *                [--scenario NAME]... [--transport rd|rc] [--reroute-ms MS]
 *                [--no-drop] [--host-mbit M] [--spine-mbit M] [--link-us US]
 *                [--queue-ms MS] [--out DIR]
 *
 * DIR (default fabsim-out) gets flows.csv (every flow), summary.csv,
 * summary.md (the table and the targets, also printed) and
 * cdf_<scenario>_<transport>.dat for bench/fabsim.sh's plots; wire-8 also
 * figures.csv (goodput, resends, the incast receiver's link, the failure's
 * stall) and ticks_<scenario>_<transport>.dat (goodput timelines).
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <rdma/fi_errno.h>

#include "braid_cli.h"
#include "fabsim_bench.h"

#define MAX_RUNS	32

static double wall_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static FILE *out_open(const char *dir, const char *name)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f)
		fprintf(stderr, "braid_fabsim: cannot write %s: %s\n", path, strerror(errno));
	return f;
}

static int run_one(const struct fabsim_scenario *sc, const struct fabsim_transport *tp,
		   const char *dir, FILE *flows_csv, struct fabsim_result *r)
{
	struct braid_fabsim *net;
	struct fabsim_run run;
	char name[256];
	double t0 = wall_s();
	FILE *cdf, *ticks = NULL;
	int ret;

	ret = braid_fabsim_open(&sc->net, &net);
	if (ret)
		return ret;
	ret = fabsim_scenario_apply(sc, net);
	if (!ret)
		ret = fabsim_run_open(&run, net, tp, sc->flows, sc->nflows, &sc->opts);
	if (ret) {
		braid_fabsim_close(net);
		return ret;
	}
	ret = fabsim_run_go(&run, sc->limit_ns);
	if (ret && ret != -FI_ETIMEDOUT)
		fprintf(stderr, "braid_fabsim: %s/%s: driver error %d\n", sc->name, tp->name, ret);
	snprintf(name, sizeof(name), "cdf_%s_%s.dat", sc->name, tp->name);
	cdf = out_open(dir, name);
	if (sc->streams) {
		snprintf(name, sizeof(name), "ticks_%s_%s.dat", sc->name, tp->name);
		ticks = out_open(dir, name);
	}
	ret = fabsim_result_collect(r, sc, &run, flows_csv, cdf, ticks);
	if (cdf)
		fclose(cdf);
	if (ticks)
		fclose(ticks);
	r->wall_s = wall_s() - t0;
	fprintf(stderr, "  %-12s %s: %zu flows, %zu failed, p99 %.1f us, %.1f ms virtual, %.1f s wall\n",
		sc->name, tp->name, r->flows, r->failed,
		r->p99_ns == UINT64_MAX ? -1.0 : r->p99_ns / 1e3, r->virt_ns / 1e6, r->wall_s);
	fabsim_run_close(&run);
	braid_fabsim_close(net);
	return ret;
}

static void usage(FILE *out)
{
	fprintf(out, "usage: braid_fabsim [--profile NAME] [--small] [--seed N] [--scenario NAME]...\n"
		"                    [--transport rd|rc] [--reroute-ms MS] [--no-drop] [--host-mbit M]\n"
		"                    [--spine-mbit M] [--link-us US] [--queue-ms MS] [--out DIR]\n"
		"Runs each scenario with braid's RD and with RoCEv2 RC on a simulated leaf-spine\n"
		"fabric, in virtual time, and writes the flow completion times.\n"
		"  --profile NAME     dc: 32 ToRs x 32 hosts, 16 spines, 100/200 Gbit/s (default);\n"
		"                     dc-small: 8 x 8 hosts, 4 spines; wire-8: tools/fabric's\n"
		"                     leaf-spine, 2 leaves x 4 hosts, 4 spines, 50 Mbit/s links with\n"
		"                     20 ms queues, MTU 1500, 50 us a link, streams of 64 KiB messages\n"
		"  --small            the same as --profile dc-small\n"
		"  --seed N           the random seed (default 1)\n"
		"  --scenario NAME    this scenario of the profile (repeatable, up to 16; default: every one)\n"
		"  --transport rd|rc  this transport only (default: both)\n"
		"  --reroute-ms MS    routing around a failed link takes MS ms, 0: never (default: the\n"
		"                     profile's, dc 50, wire-8 0)\n"
		"  --no-drop          unlimited switch queues\n"
		"  --host-mbit M      host - ToR links at M Mbit/s (default: the profile's)\n"
		"  --spine-mbit M     ToR - spine links at M Mbit/s (default: the profile's)\n"
		"  --link-us US       US microseconds a link (default: the profile's, dc 1, wire-8 50)\n"
		"  --queue-ms MS      each port queues MS ms at its link's rate (default: the profile's,\n"
		"                     dc 512 KiB a port, wire-8 20 ms)\n"
		"  --out DIR          flows.csv, summary.csv, summary.md, cdf_*.dat (wire-8: figures.csv,\n"
		"                     ticks_*.dat) here (default fabsim-out)\n"
		"  -h, --help         this text\n"
		"scenarios: dc, dc-small:");
	for (int i = 0; fabsim_scenario_names[i]; i++)
		fprintf(out, " %s", fabsim_scenario_names[i]);
	fprintf(out, "; wire-8:");
	for (int i = 0; fabsim_wire_scenario_names[i]; i++)
		fprintf(out, " %s", fabsim_wire_scenario_names[i]);
	fprintf(out, "\n");
}

/* "100 Gbit/s", "200 Mbit/s" */
static const char *rate(uint64_t bps, char *buf, size_t len)
{
	if (bps % 1000000000ULL == 0)
		snprintf(buf, len, "%llu Gbit/s", (unsigned long long)(bps / 1000000000ULL));
	else
		snprintf(buf, len, "%g Mbit/s", bps / 1e6);
	return buf;
}

/* "1 us", "50 us", "1.5 ms" */
static const char *span(uint64_t ns, char *buf, size_t len)
{
	if (ns >= 1000000ULL)
		snprintf(buf, len, "%g ms", ns / 1e6);
	else
		snprintf(buf, len, "%g us", ns / 1e3);
	return buf;
}

/* the fabric in one line of summary.md */
static void fabric_line(FILE *md, const struct fabsim_shape *s, uint64_t seed)
{
	char h[32], f[32], d[32], q[64], e[64] = "", m[48] = "";

	if (s->no_drop)
		snprintf(q, sizeof(q), "unlimited queues (--no-drop) a port");
	else if (s->queue_ns)
		snprintf(q, sizeof(q), "a port's queue %s at its link's rate", span(s->queue_ns, d, sizeof(d)));
	else
		snprintf(q, sizeof(q), "%llu KiB a port", (unsigned long long)(s->queue_bytes >> 10));
	if (s->ecn_bytes)
		snprintf(e, sizeof(e), ", ECN above %llu KiB", (unsigned long long)(s->ecn_bytes >> 10));
	else
		snprintf(e, sizeof(e), ", no ECN");
	if (s->mtu)
		snprintf(m, sizeof(m), ", MTU %u, %u bytes of framing", s->mtu, s->overhead);
	fprintf(md, "Fabric: %d ToRs x %d hosts, %d spines (%d hosts); hosts %s, "
		"ToR-spine %s, %s a link, %s%s%s; seed %llu.\n\n",
		s->tors, s->hosts_per_tor, s->spines, s->tors * s->hosts_per_tor,
		rate(s->host_bps, h, sizeof(h)), rate(s->fabric_bps, f, sizeof(f)),
		span(s->link_delay_ns, d, sizeof(d)), q, e, m, (unsigned long long)seed);
}

int main(int argc, char **argv)
{
	enum { O_SMALL = 256, O_SEED, O_SCENARIO, O_TRANSPORT, O_REROUTE, O_NO_DROP, O_OUT,
	       O_PROFILE, O_HOST_MBIT, O_SPINE_MBIT, O_LINK_US, O_QUEUE_MS };
	static const struct option longopts[] = {
		{ "profile", required_argument, NULL, O_PROFILE },
		{ "small", no_argument, NULL, O_SMALL },
		{ "seed", required_argument, NULL, O_SEED },
		{ "scenario", required_argument, NULL, O_SCENARIO },
		{ "transport", required_argument, NULL, O_TRANSPORT },
		{ "reroute-ms", required_argument, NULL, O_REROUTE },
		{ "no-drop", no_argument, NULL, O_NO_DROP },
		{ "host-mbit", required_argument, NULL, O_HOST_MBIT },
		{ "spine-mbit", required_argument, NULL, O_SPINE_MBIT },
		{ "link-us", required_argument, NULL, O_LINK_US },
		{ "queue-ms", required_argument, NULL, O_QUEUE_MS },
		{ "out", required_argument, NULL, O_OUT },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *scen[16], *dir = "fabsim-out", *only_tp = NULL, *profile = NULL;
	const struct fabsim_transport *tps[] = { &fabsim_rd, &fabsim_rc };
	struct fabsim_result results[MAX_RUNS];
	struct fabsim_shape shape;
	uint64_t seed = 1;
	long reroute_ms = -1, host_mbit = 0, spine_mbit = 0, link_us = -1, queue_ms = 0, v;
	size_t nres = 0;
	int nscen = 0, i, t, ret, opt;
	bool small = false, no_drop = false;
	FILE *flows, *sum_csv, *sum_md, *fig_csv = NULL;

	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (opt) {
		case O_PROFILE:
			if (fabsim_shape_profile(&shape, optarg))
				return braid_cli_bad(usage, "braid_fabsim", "--profile", optarg,
						     "dc, dc-small or wire-8");
			profile = optarg;
			break;
		case O_SMALL: small = true; break;
		case O_SEED:
			if (!braid_cli_long(optarg, 0, LONG_MAX, &v))
				return braid_cli_bad(usage, "braid_fabsim", "--seed", optarg,
						     "a number, 0 or more");
			seed = (uint64_t)v;
			break;
		case O_SCENARIO:
			if (nscen == 16)
				return braid_cli_bad(usage, "braid_fabsim", "--scenario", optarg,
						     "at most 16 times");
			scen[nscen++] = optarg;
			break;
		case O_TRANSPORT:
			if (strcmp(optarg, fabsim_rd.name) && strcmp(optarg, fabsim_rc.name))
				return braid_cli_bad(usage, "braid_fabsim", "--transport", optarg,
						     "rd or rc");
			only_tp = optarg;
			break;
		case O_REROUTE:
			if (!braid_cli_long(optarg, 0, 3600000, &reroute_ms))
				return braid_cli_bad(usage, "braid_fabsim", "--reroute-ms", optarg,
						     "milliseconds, 0 or more");
			break;
		case O_NO_DROP: no_drop = true; break;
		case O_HOST_MBIT:
			if (!braid_cli_long(optarg, 1, 10000000, &host_mbit))
				return braid_cli_bad(usage, "braid_fabsim", "--host-mbit", optarg,
						     "Mbit/s, 1 to 10000000");
			break;
		case O_SPINE_MBIT:
			if (!braid_cli_long(optarg, 1, 10000000, &spine_mbit))
				return braid_cli_bad(usage, "braid_fabsim", "--spine-mbit", optarg,
						     "Mbit/s, 1 to 10000000");
			break;
		case O_LINK_US:
			if (!braid_cli_long(optarg, 0, 1000000, &link_us))
				return braid_cli_bad(usage, "braid_fabsim", "--link-us", optarg,
						     "microseconds, 0 to 1000000");
			break;
		case O_QUEUE_MS:
			if (!braid_cli_long(optarg, 1, 10000, &queue_ms))
				return braid_cli_bad(usage, "braid_fabsim", "--queue-ms", optarg,
						     "milliseconds, 1 to 10000");
			break;
		case O_OUT: dir = optarg; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return BRAID_CLI_EXIT_USAGE;
		}
	}
	if (braid_cli_extra(usage, "braid_fabsim", argc, argv))
		return BRAID_CLI_EXIT_USAGE;
	if (profile && small && strcmp(profile, "dc-small"))
		return braid_cli_bad(usage, "braid_fabsim", "--small", "with --profile",
				     "--profile dc-small, or no --profile");
	if (!profile)
		fabsim_shape_default(&shape, small);
	for (i = 0; i < nscen; i++)
		if (!fabsim_scenario_known(&shape, scen[i]))
			return braid_cli_bad(usage, "braid_fabsim", "--scenario", scen[i],
					     "one of the profile's scenarios below");
	if (!nscen)
		for (; shape.scenarios[nscen]; nscen++)
			scen[nscen] = shape.scenarios[nscen];
	shape.no_drop = no_drop;
	if (reroute_ms >= 0)
		shape.reroute_ns = (uint64_t)reroute_ms * 1000000ULL;
	if (host_mbit)
		shape.host_bps = (uint64_t)host_mbit * 1000000ULL;
	if (spine_mbit)
		shape.fabric_bps = (uint64_t)spine_mbit * 1000000ULL;
	if (link_us >= 0)
		shape.link_delay_ns = (uint64_t)link_us * 1000ULL;
	if (queue_ms)
		shape.queue_ns = (uint64_t)queue_ms * 1000000ULL;
	if (mkdir(dir, 0777) && errno != EEXIST) {
		fprintf(stderr, "braid_fabsim: mkdir %s: %s\n", dir, strerror(errno));
		return 1;
	}
	flows = out_open(dir, "flows.csv");
	sum_csv = out_open(dir, "summary.csv");
	sum_md = out_open(dir, "summary.md");
	if (!flows || !sum_csv || !sum_md)
		return 1;
	if (shape.scenarios == fabsim_wire_scenario_names && !(fig_csv = out_open(dir, "figures.csv")))
		return 1;
	fabsim_flows_csv_header(flows);
	fabric_line(sum_md, &shape, seed);
	printf("%d ToRs x %d hosts, %d spines; seed %llu\n", shape.tors, shape.hosts_per_tor,
	       shape.spines, (unsigned long long)seed);
	for (i = 0; i < nscen; i++) {
		struct fabsim_scenario sc;

		ret = fabsim_scenario_build(scen[i], &shape, seed, &sc);
		if (ret) {
			fprintf(stderr, "braid_fabsim: scenario %s: %s\n", scen[i], fi_strerror(-ret));
			return 1;
		}
		printf("%s: %s\n", sc.name, sc.what);
		fprintf(sum_md, "- %s: %s\n", sc.name, sc.what);
		for (t = 0; t < 2; t++) {
			if (only_tp && strcmp(only_tp, tps[t]->name))
				continue;
			if (nres == MAX_RUNS)
				break;
			ret = run_one(&sc, tps[t], dir, flows, &results[nres]);
			if (ret) {
				fprintf(stderr, "braid_fabsim: %s/%s: %s\n", sc.name, tps[t]->name,
					fi_strerror(-ret));
				return 1;
			}
			nres++;
			fflush(flows);
		}
		fabsim_scenario_free(&sc);
	}
	fprintf(sum_md, "\n");
	printf("\n");
	fabsim_report_summary(results, nres, sum_csv, sum_md, fig_csv);
	fclose(flows);
	fclose(sum_csv);
	fclose(sum_md);
	if (fig_csv)
		fclose(fig_csv);
	return 0;
}
