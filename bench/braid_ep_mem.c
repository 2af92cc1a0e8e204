/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * braid_ep_mem.c: what an idle braid RDM endpoint costs:
 * opens N endpoints (default 1,000) in one domain, each enabled with its own
 * CQ and AV, and prints the process's virtual and resident memory per
 * endpoint (from /proc/self/status): the slope between the first quarter
 * of the endpoints and all of them, so that what the process pays once (the
 * domain's receive buffers, a thread's malloc arena) is not counted.
 *
 *   braid_ep_mem [-n N]
 * Run: FI_PROVIDER_PATH=build/providers build/bench/braid_ep_mem -n 1000
 */
#include <dirent.h>
#include <getopt.h>
#include <string.h>
#include <unistd.h>

#include "bench_common.h"
#include "braid_cli.h"

/* The process's open file descriptors (the endpoints' sockets, epoll sets, eventfds). */
static long open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	long n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n - 1;	/* not the directory's own */
}

static void usage(FILE *out)
{
	fprintf(out, "usage: braid_ep_mem [-n N]\n"
		"Opens N idle braid RDM endpoints in one domain (each with its CQ and AV) and prints\n"
		"the virtual and resident memory and the descriptors each costs. Needs\n"
		"FI_PROVIDER_PATH to find braid.\n"
		"  -n N        endpoints, at least 4 (default 1,000)\n"
		"  -h, --help  this text\n");
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 },
	};
	long v;
	struct conn base, *eps;
	long vm0 = 0, rss0 = 0, fd0 = 0, vm1, rss1, fd1;
	size_t n = 1000, i, q;
	int c;

	while ((c = getopt_long(argc, argv, "n:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'n':
			if (!braid_cli_long(optarg, 4, 10000000, &v))
				return braid_cli_bad(usage, "braid_ep_mem", "-n", optarg,
						     "4 to 10,000,000 endpoints");
			n = (size_t)v;
			break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return BENCH_EXIT_USAGE;
		}
	}
	if (braid_cli_extra(usage, "braid_ep_mem", argc, argv))
		return BENCH_EXIT_USAGE;
	eps = calloc(n, sizeof(*eps));
	if (!eps)
		return BENCH_EXIT_SETUP;
	conn_open(&base, "braid", "127.0.0.1", 4096);
	q = n / 4;
	for (i = 0; i < n; i++) {
		if (i == q) {
			usleep(100 * 1000);	/* the progress thread has been round them all */
			vm0 = proc_status_kb("VmSize:");
			rss0 = proc_status_kb("VmRSS:");
			fd0 = open_fds();
		}
		conn_open_in(&eps[i], &base, 4096);
	}
	usleep(100 * 1000);
	vm1 = proc_status_kb("VmSize:");
	rss1 = proc_status_kb("VmRSS:");
	fd1 = open_fds();
	printf("braid RDM endpoints, idle (enabled, a CQ, an AV and a 4 KiB buffer each): %zu;\n"
	       "the cost of each of the last %zu (what the process pays once not counted)\n", n, n - q);
	printf("  virtual  %8.1f KiB per endpoint\n", (double)(vm1 - vm0) / (double)(n - q));
	printf("  resident %8.1f KiB per endpoint\n", (double)(rss1 - rss0) / (double)(n - q));
	printf("  files    %8.1f descriptors per endpoint (%ld open)\n",
	       (double)(fd1 - fd0) / (double)(n - q), fd1);
	printf("target: an idle endpoint under 1 MiB of virtual memory: %s\n",
	       (double)(vm1 - vm0) / (double)(n - q) < 1024 ? "met" : "NOT met");
	for (i = n; i-- > 0;)
		conn_close(&eps[i]);
	conn_close(&base);
	free(eps);
	return 0;
}
