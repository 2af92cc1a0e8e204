/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fabsim_main.c: braid_fabsim, the fabric simulator's program: runs each
 * scenario with braid's RD and with RoCEv2 RC on a leaf-spine fabric of
 * about 1,000 hosts in virtual time and writes the flow completion times.
 *
 *   braid_fabsim [--small] [--seed N] [--scenario NAME]... [--transport rd|rc]
 *                [--reroute-ms MS] [--no-drop] [--out DIR]
 *
 * DIR (default fabsim-out) gets flows.csv (every flow), summary.csv,
 * summary.md (the table and the targets, also printed) and
 * cdf_<scenario>_<transport>.dat for bench/fabsim.sh's plots.
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
		   uint64_t seed, const char *dir, FILE *flows_csv, struct fabsim_result *r)
{
	struct braid_fabsim *net;
	struct fabsim_run run;
	char name[256];
	double t0 = wall_s();
	FILE *cdf;
	int ret;

	ret = braid_fabsim_open(&sc->net, &net);
	if (ret)
		return ret;
	ret = fabsim_scenario_apply(sc, net);
	if (!ret)
		ret = fabsim_run_open(&run, net, tp, sc->flows, sc->nflows, seed);
	if (ret) {
		braid_fabsim_close(net);
		return ret;
	}
	ret = fabsim_run_go(&run, sc->limit_ns);
	if (ret && ret != -FI_ETIMEDOUT)
		fprintf(stderr, "braid_fabsim: %s/%s: driver error %d\n", sc->name, tp->name, ret);
	snprintf(name, sizeof(name), "cdf_%s_%s.dat", sc->name, tp->name);
	cdf = out_open(dir, name);
	fabsim_result_collect(r, sc, &run, flows_csv, cdf);
	if (cdf)
		fclose(cdf);
	r->wall_s = wall_s() - t0;
	fprintf(stderr, "  %-12s %s: %zu flows, %zu failed, p99 %.1f us, %.1f ms virtual, %.1f s wall\n",
		sc->name, tp->name, r->flows, r->failed,
		r->p99_ns == UINT64_MAX ? -1.0 : r->p99_ns / 1e3, r->virt_ns / 1e6, r->wall_s);
	fabsim_run_close(&run);
	braid_fabsim_close(net);
	return 0;
}

static void usage(FILE *out)
{
	fprintf(out, "usage: braid_fabsim [--small] [--seed N] [--scenario NAME]... [--transport rd|rc]\n"
		"                    [--reroute-ms MS] [--no-drop] [--out DIR]\n"
		"Runs each scenario with braid's RD and with RoCEv2 RC on a simulated leaf-spine\n"
		"fabric of about 1,000 hosts, in virtual time, and writes the flow completion times.\n"
		"  --small            a smaller fabric (quick runs)\n"
		"  --seed N           the random seed (default 1)\n"
		"  --scenario NAME    this scenario (repeatable, up to 16; default: every one)\n"
		"  --transport rd|rc  this transport only (default: both)\n"
		"  --reroute-ms MS    routing around a failed link takes MS ms (default: the scenario's)\n"
		"  --no-drop          unlimited switch queues\n"
		"  --out DIR          flows.csv, summary.csv, summary.md, cdf_*.dat here\n"
		"                     (default fabsim-out)\n"
		"  -h, --help         this text\n"
		"scenarios:");
	for (int i = 0; fabsim_scenario_names[i]; i++)
		fprintf(out, " %s", fabsim_scenario_names[i]);
	fprintf(out, "\n");
}

/* @name is one of fabsim_scenario_names */
static bool scenario_known(const char *name)
{
	for (int i = 0; fabsim_scenario_names[i]; i++)
		if (!strcmp(name, fabsim_scenario_names[i]))
			return true;
	return false;
}

int main(int argc, char **argv)
{
	enum { O_SMALL = 256, O_SEED, O_SCENARIO, O_TRANSPORT, O_REROUTE, O_NO_DROP, O_OUT };
	static const struct option longopts[] = {
		{ "small", no_argument, NULL, O_SMALL },
		{ "seed", required_argument, NULL, O_SEED },
		{ "scenario", required_argument, NULL, O_SCENARIO },
		{ "transport", required_argument, NULL, O_TRANSPORT },
		{ "reroute-ms", required_argument, NULL, O_REROUTE },
		{ "no-drop", no_argument, NULL, O_NO_DROP },
		{ "out", required_argument, NULL, O_OUT },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *scen[16], *dir = "fabsim-out", *only_tp = NULL;
	const struct fabsim_transport *tps[] = { &fabsim_rd, &fabsim_rc };
	struct fabsim_result results[MAX_RUNS];
	struct fabsim_shape shape;
	uint64_t seed = 1;
	long reroute_ms = -1, v;
	size_t nres = 0;
	int nscen = 0, i, t, ret, opt;
	bool small = false, no_drop = false;
	FILE *flows, *sum_csv, *sum_md;

	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (opt) {
		case O_SMALL: small = true; break;
		case O_SEED:
			if (!braid_cli_long(optarg, 0, LONG_MAX, &v))
				return braid_cli_bad(usage, "braid_fabsim", "--seed", optarg,
						     "a number, 0 or more");
			seed = (uint64_t)v;
			break;
		case O_SCENARIO:
			if (!scenario_known(optarg) || nscen == 16)
				return braid_cli_bad(usage, "braid_fabsim", "--scenario", optarg,
						     "one of the scenarios below, at most 16 times");
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
		case O_OUT: dir = optarg; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return BRAID_CLI_EXIT_USAGE;
		}
	}
	if (braid_cli_extra(usage, "braid_fabsim", argc, argv))
		return BRAID_CLI_EXIT_USAGE;
	if (!nscen)
		for (; fabsim_scenario_names[nscen]; nscen++)
			scen[nscen] = fabsim_scenario_names[nscen];
	fabsim_shape_default(&shape, small);
	shape.no_drop = no_drop;
	if (reroute_ms >= 0)
		shape.reroute_ns = (uint64_t)reroute_ms * 1000000ULL;
	if (mkdir(dir, 0777) && errno != EEXIST) {
		fprintf(stderr, "braid_fabsim: mkdir %s: %s\n", dir, strerror(errno));
		return 1;
	}
	flows = out_open(dir, "flows.csv");
	sum_csv = out_open(dir, "summary.csv");
	sum_md = out_open(dir, "summary.md");
	if (!flows || !sum_csv || !sum_md)
		return 1;
	fabsim_flows_csv_header(flows);
	fprintf(sum_md, "Fabric: %d ToRs x %d hosts, %d spines (%d hosts); hosts 100 Gbit/s, "
		"ToR-spine 200 Gbit/s, 1 us a link, %s a port, ECN above 100 KiB; seed %llu.\n\n",
		shape.tors, shape.hosts_per_tor, shape.spines, shape.tors * shape.hosts_per_tor,
		no_drop ? "unlimited queues (--no-drop)" : "512 KiB", (unsigned long long)seed);
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
			ret = run_one(&sc, tps[t], seed, dir, flows, &results[nres]);
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
	fabsim_report_summary(results, nres, sum_csv, sum_md);
	fclose(flows);
	fclose(sum_csv);
	fclose(sum_md);
	return 0;
}
