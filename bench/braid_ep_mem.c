/*
 * braid_ep_mem.c: what an idle braid RDM endpoint costs (issue 16 item 2):
 * opens N endpoints (default 1,000) in one domain, each enabled with its own
 * CQ and AV, and prints the process's virtual and resident memory per
 * endpoint (from /proc/self/status, before and after).
 *
 *   braid_ep_mem [-n N]
 * Run: FI_PROVIDER_PATH=build/providers build/bench/braid_ep_mem -n 1000
 */
#include <string.h>
#include <unistd.h>

#include "bench_common.h"

static long status_kb(const char *field)
{
	char line[256];
	long kb = -1;
	FILE *f = fopen("/proc/self/status", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, field, strlen(field)))
			kb = strtol(line + strlen(field), NULL, 10);
	fclose(f);
	return kb;
}

int main(int argc, char **argv)
{
	struct conn base, *eps;
	long vm0, rss0, vm1, rss1;
	size_t n = 1000, i;
	int c;

	while ((c = getopt(argc, argv, "n:")) != -1) {
		if (c == 'n')
			n = strtoul(optarg, NULL, 0);
		else
			return BENCH_EXIT_USAGE;
	}
	eps = calloc(n, sizeof(*eps));
	if (!eps)
		return BENCH_EXIT_SETUP;
	conn_open(&base, "braid", "127.0.0.1", 4096);
	vm0 = status_kb("VmSize:");
	rss0 = status_kb("VmRSS:");
	for (i = 0; i < n; i++)
		conn_open_in(&eps[i], &base, 4096);
	vm1 = status_kb("VmSize:");
	rss1 = status_kb("VmRSS:");
	printf("braid RDM endpoints, idle (enabled, a CQ, an AV and a 4 KiB buffer each): %zu\n", n);
	printf("  virtual  %8.1f KiB per endpoint (%ld MiB for all)\n",
	       (double)(vm1 - vm0) / (double)n, (vm1 - vm0) / 1024);
	printf("  resident %8.1f KiB per endpoint (%ld MiB for all)\n",
	       (double)(rss1 - rss0) / (double)n, (rss1 - rss0) / 1024);
	printf("target (issue 16 item 2): an idle endpoint under 1 MiB of virtual memory: %s\n",
	       (double)(vm1 - vm0) / (double)n < 1024 ? "met" : "NOT met");
	for (i = n; i-- > 0;)
		conn_close(&eps[i]);
	conn_close(&base);
	free(eps);
	return 0;
}
