/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * braid_av_bench.c: the address vector at scale: insert,
 * look up and remove N entries (default 1,000,000) in one braid RDM
 * endpoint's AV while a second thread keeps sending 8-byte messages through
 * that same AV to a live peer (each send looks its destination up in it).
 *
 *   braid_av_bench [-n N] [-c]
 *
 * -c: open the AV with fi_av_attr.count = N (the application says how many
 * addresses it will insert; braid then makes room at open).
 *
 * Prints, per phase, its time and the sends that completed meanwhile with the
 * longest gap between two of them; then its targets
 * (each phase under 2 s; sends flowing: no gap over 100 ms).
 * Run: FI_PROVIDER_PATH=build/providers build/bench/braid_av_bench
 */
#include <arpa/inet.h>
#include <getopt.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "bench_common.h"
#include "braid_cli.h"

static struct conn a, b;
static fi_addr_t to_b;
static atomic_bool stop;
static atomic_ulong sent;
/* the longest gap between two send completions since the last reset (ns), and
 * when the latest completed (ns since start): a sender blocked through a whole
 * phase shows as a gap from its last completion to the phase's end */
static atomic_ulong max_gap_ns, last_ns;
static double t_start;

static void *sender(void *arg)
{
	struct fi_cq_tagged_entry e[16];
	double last = now_s();
	int out = 0;

	(void)arg;
	trecv(&b, FI_ADDR_UNSPEC, b.buf, 64, 1, NULL);
	while (!atomic_load(&stop)) {
		ssize_t n;

		while (out < 8) {
			tsend(&a, to_b, a.buf, 8, 1, NULL);
			out++;
		}
		n = fi_cq_read(a.cq, e, 16);
		if (n > 0) {
			double t = now_s();
			unsigned long gap = (unsigned long)((t - last) * 1e9);

			if (gap > atomic_load(&max_gap_ns))
				atomic_store(&max_gap_ns, gap);
			atomic_store(&last_ns, (unsigned long)((t - t_start) * 1e9));
			last = t;
			out -= (int)n;
			atomic_fetch_add(&sent, (unsigned long)n);
		}
		while ((n = fi_cq_read(b.cq, e, 16)) > 0)
			for (ssize_t i = 0; i < n; i++)
				trecv(&b, FI_ADDR_UNSPEC, b.buf, 64, 1, NULL);
	}
	return NULL;
}

struct phase {
	const char *name;
	double secs, gap_ms;
	unsigned long sends;
};

static void phase_start(double *t0, unsigned long *s0)
{
	atomic_store(&max_gap_ns, 0);
	*s0 = atomic_load(&sent);
	*t0 = now_s();
}

static void phase_end(struct phase *p, const char *name, double t0, unsigned long s0)
{
	double t = now_s();
	unsigned long tail = (unsigned long)((t - t_start) * 1e9) - atomic_load(&last_ns);
	unsigned long gap = atomic_load(&max_gap_ns);

	p->name = name;
	p->secs = t - t0;
	p->sends = atomic_load(&sent) - s0;
	p->gap_ms = (double)(tail > gap ? tail : gap) / 1e6;
}

static void usage(FILE *out)
{
	fprintf(out, "usage: braid_av_bench [-n N] [-c]\n"
		"Inserts, looks up and removes N addresses in one braid RDM endpoint's AV while a\n"
		"second thread sends through that AV to a live peer; prints each phase's time and\n"
		"the longest gap between two sends. Needs FI_PROVIDER_PATH to find braid.\n"
		"  -n N        addresses (default 1,000,000)\n"
		"  -c          open the AV with fi_av_attr.count = N\n"
		"  -h, --help  this text\n");
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 },
	};
	long v;
	size_t n = 1000000, i;
	struct sockaddr_in *sins;
	fi_addr_t *fa;
	struct phase ph[3];
	unsigned long s0;
	pthread_t th;
	uint8_t name[64];
	size_t len = sizeof(name);
	struct fid_av *av;
	double t0;
	int c, ok = 1;
	bool counted = false;

	while ((c = getopt_long(argc, argv, "n:ch", longopts, NULL)) != -1) {
		switch (c) {
		case 'c': counted = true; break;
		case 'n':
			if (!braid_cli_long(optarg, 1, 100000000, &v))
				return braid_cli_bad(usage, "braid_av_bench", "-n", optarg,
						     "1 to 100,000,000 addresses");
			n = (size_t)v;
			break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return BENCH_EXIT_USAGE;
		}
	}
	if (braid_cli_extra(usage, "braid_av_bench", argc, argv))
		return BENCH_EXIT_USAGE;
	sins = calloc(n, sizeof(*sins));
	fa = calloc(n, sizeof(*fa));
	if (!sins || !fa)
		return BENCH_EXIT_SETUP;
	for (i = 0; i < n; i++) {
		sins[i].sin_family = AF_INET;
		sins[i].sin_addr.s_addr = htonl(0x0a000000u + (uint32_t)(i / 60000));
		sins[i].sin_port = htons((uint16_t)(1024 + i % 60000));
	}
	t_start = now_s();
	if (counted)
		bench_av_count = n + 1;	/* and the live peer */
	conn_open(&a, "braid", "127.0.0.1", 4096);
	bench_av_count = 0;
	conn_open_in(&b, &a, 4096);
	conn_name(&b, name, &len);
	to_b = conn_insert(&a, name);
	/* the AV of this benchmark: a second one would not be on the send path; use a's */
	av = a.av;
	if (pthread_create(&th, NULL, sender, NULL))
		return BENCH_EXIT_SETUP;
	usleep(200 * 1000);

	phase_start(&t0, &s0);
	if (fi_av_insert(av, sins, n, fa, 0, NULL) != (int)n) {
		fprintf(stderr, "insert failed\n");
		ok = 0;
	}
	phase_end(&ph[0], "insert", t0, s0);

	phase_start(&t0, &s0);
	for (i = 0; i < n; i++) {
		struct sockaddr_in out;
		size_t olen = sizeof(out);

		if (fi_av_lookup(av, fa[i], &out, &olen) || out.sin_port != sins[i].sin_port) {
			fprintf(stderr, "lookup %zu failed\n", i);
			ok = 0;
			break;
		}
	}
	phase_end(&ph[1], "lookup", t0, s0);

	phase_start(&t0, &s0);
	if (fi_av_remove(av, fa, n, 0)) {
		fprintf(stderr, "remove failed\n");
		ok = 0;
	}
	phase_end(&ph[2], "remove", t0, s0);

	atomic_store(&stop, true);
	pthread_join(th, NULL);
	printf("braid AV (FI_AV_TABLE, the endpoint's own%s), %zu entries, while one thread sends "
	       "8-byte messages through it:\n", counted ? ", fi_av_attr.count given" : "", n);
	for (i = 0; i < 3; i++)
		printf("  %-6s %7.3f s (%6.0f ns each); sends meanwhile %lu, longest gap %.1f ms\n",
		       ph[i].name, ph[i].secs, ph[i].secs * 1e9 / (double)n, ph[i].sends, ph[i].gap_ms);
	printf("targets:\n");
	for (i = 0; i < 3; i++) {
		bool met = ph[i].secs < 2.0;

		printf("  %s of %zu entries under 2 s: %.3f s  %s\n", ph[i].name, n, ph[i].secs,
		       met ? "met" : "NOT met");
	}
	for (i = 0; i < 3; i++) {
		bool met = ph[i].sends > 0 && ph[i].gap_ms < 100;

		printf("  sends flowing during %s (completions, no gap over 100 ms): %lu, %.1f ms  %s\n",
		       ph[i].name, ph[i].sends, ph[i].gap_ms, met ? "met" : "NOT met");
	}
	conn_close(&b);
	conn_close(&a);
	free(sins);
	free(fa);
	return ok ? 0 : BENCH_EXIT_FAIL;
}
