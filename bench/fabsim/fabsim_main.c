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
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <rdma/fi_errno.h>

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

static void usage(void)
{
	fprintf(stderr, "usage: braid_fabsim [--small] [--seed N] [--scenario NAME]... "
		"[--transport rd|rc] [--reroute-ms MS] [--no-drop] [--out DIR]\nscenarios:");
	for (int i = 0; fabsim_scenario_names[i]; i++)
		fprintf(stderr, " %s", fabsim_scenario_names[i]);
	fprintf(stderr, "\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *scen[16], *dir = "fabsim-out", *only_tp = NULL;
	const struct fabsim_transport *tps[] = { &fabsim_rd, &fabsim_rc };
	struct fabsim_result results[MAX_RUNS];
	struct fabsim_shape shape;
	uint64_t seed = 1;
	long reroute_ms = -1;
	size_t nres = 0;
	int nscen = 0, i, t, ret;
	bool small = false, no_drop = false;
	FILE *flows, *sum_csv, *sum_md;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--small"))
			small = true;
		else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
			seed = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--scenario") && i + 1 < argc && nscen < 16)
			scen[nscen++] = argv[++i];
		else if (!strcmp(argv[i], "--transport") && i + 1 < argc)
			only_tp = argv[++i];
		else if (!strcmp(argv[i], "--reroute-ms") && i + 1 < argc)
			reroute_ms = strtol(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--no-drop"))
			no_drop = true;
		else if (!strcmp(argv[i], "--out") && i + 1 < argc)
			dir = argv[++i];
		else
			usage();
	}
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
