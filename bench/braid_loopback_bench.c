/*
 * braid_loopback_bench.c: braid's native RDM against libfabric's tcp;ofi_rxm and
 * braid;ofi_rxd on loopback, in one run: latency (ping-pong, 8 B to 64 KiB),
 * bandwidth (windowed streaming, 4 KiB to 4 MiB) and small-message rate, with
 * the contenders alternating in every repetition, medians over the
 * repetitions and braid's ratio to each contender.
 *
 *   FI_PROVIDER_PATH=build/providers build/bench/braid_loopback_bench [-r REPS] [-q]
 *
 * Each measurement forks a server process; the two exchange endpoint names
 * over a socketpair, then talk only through libfabric (tagged messages).
 */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#define MAX_SIZE	(4u << 20)
#define WINDOW		64
#define RATE_WINDOW	256
#define TIMEOUT_S	20

static const char *const provs[] = { "braid", "tcp;ofi_rxm", "braid;ofi_rxd" };
#define NPROV 3
static const size_t lat_sizes[] = { 8, 64, 512, 4096, 65536 };
#define NLAT 5
static const size_t bw_sizes[] = { 4096, 65536, 1 << 20, 4 << 20 };
#define NBW 4

struct conn {
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
	fi_addr_t peer;
	uint8_t *buf;
	size_t max_inject;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

#define TRY(call)							\
	do {								\
		int _r = (int)(call);					\
		if (_r < 0) {						\
			fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, \
				#call, fi_strerror(-_r));		\
			exit(3);					\
		}							\
	} while (0)

static void conn_open(struct conn *c, const char *prov)
{
	struct fi_info *hints = fi_allocinfo(), *list, *cur;
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_TAGGED, .size = 4096 };
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };

	hints->ep_attr->type = FI_EP_RDM;
	hints->caps = FI_TAGGED;
	hints->mode = FI_CONTEXT;
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED |
				      FI_MR_PROV_KEY;
	hints->fabric_attr->prov_name = strdup(prov);
	TRY(fi_getinfo(FI_VERSION(1, 17), "127.0.0.1", "0", FI_SOURCE, hints, &list));
	c->info = NULL;
	for (cur = list; cur && !c->info; cur = cur->next)
		if (!strcmp(cur->fabric_attr->prov_name, prov))
			c->info = fi_dupinfo(cur);
	fi_freeinfo(list);
	fi_freeinfo(hints);
	if (!c->info) {
		fprintf(stderr, "no %s RDM endpoint\n", prov);
		exit(3);
	}
	TRY(fi_fabric(c->info->fabric_attr, &c->fabric, NULL));
	TRY(fi_domain(c->fabric, c->info, &c->domain, NULL));
	TRY(fi_cq_open(c->domain, &cq_attr, &c->cq, NULL));
	TRY(fi_av_open(c->domain, &av_attr, &c->av, NULL));
	TRY(fi_endpoint(c->domain, c->info, &c->ep, NULL));
	TRY(fi_ep_bind(c->ep, &c->cq->fid, FI_TRANSMIT | FI_RECV));
	TRY(fi_ep_bind(c->ep, &c->av->fid, 0));
	TRY(fi_enable(c->ep));
	c->buf = aligned_alloc(4096, MAX_SIZE * 2);
	memset(c->buf, 0xa5, MAX_SIZE * 2);
	c->max_inject = c->info->tx_attr->inject_size;
}

static void conn_close(struct conn *c)
{
	fi_close(&c->ep->fid);
	fi_close(&c->av->fid);
	fi_close(&c->cq->fid);
	fi_close(&c->domain->fid);
	fi_close(&c->fabric->fid);
	fi_freeinfo(c->info);
	free(c->buf);
}

/* Exchange names over the socketpair and insert the peer. */
static void conn_connect(struct conn *c, int sock)
{
	char mine[128], theirs[128];
	size_t len = sizeof(mine);

	TRY(fi_getname(&c->ep->fid, mine, &len));
	if (write(sock, &len, sizeof(len)) != sizeof(len) || write(sock, mine, len) != (ssize_t)len)
		exit(3);
	if (read(sock, &len, sizeof(len)) != sizeof(len) || len > sizeof(theirs) ||
	    read(sock, theirs, len) != (ssize_t)len)
		exit(3);
	if (fi_av_insert(c->av, theirs, 1, &c->peer, 0, NULL) != 1)
		exit(3);
}

/* Wait for @n completions; a timeout or error ends the process. */
static void wait_comps(struct conn *c, int n)
{
	struct fi_cq_tagged_entry e[64];
	double deadline = now_s() + TIMEOUT_S;
	ssize_t r;

	while (n > 0) {
		r = fi_cq_read(c->cq, e, n < 64 ? n : 64);
		if (r > 0) {
			n -= (int)r;
		} else if (r == -FI_EAVAIL) {
			struct fi_cq_err_entry err = { 0 };

			fi_cq_readerr(c->cq, &err, 0);
			fprintf(stderr, "completion error: %s\n", fi_strerror(err.err));
			exit(3);
		} else if (now_s() > deadline) {
			fprintf(stderr, "timeout\n");
			exit(3);
		}
	}
}

static void tsend(struct conn *c, void *buf, size_t len, uint64_t tag, struct fi_context *ctx)
{
	ssize_t r;

	while ((r = fi_tsend(c->ep, buf, len, NULL, c->peer, tag, ctx)) == -FI_EAGAIN)
		(void)fi_cq_read(c->cq, NULL, 0);
	TRY(r);
}

static void trecv(struct conn *c, void *buf, size_t len, uint64_t tag, struct fi_context *ctx)
{
	ssize_t r;

	while ((r = fi_trecv(c->ep, buf, len, NULL, c->peer, tag, 0, ctx)) == -FI_EAGAIN)
		(void)fi_cq_read(c->cq, NULL, 0);
	TRY(r);
}

enum test { T_LAT, T_BW, T_RATE };

/* One measurement: result in us (latency), MB/s (bandwidth) or Mmsg/s (rate). */
static double run_side(struct conn *c, bool server, enum test t, size_t size, int iters)
{
	static struct fi_context ctx[RATE_WINDOW + 2];
	uint8_t *sb = c->buf, *rb = c->buf + MAX_SIZE;
	double t0;
	int i, k, window = t == T_RATE ? RATE_WINDOW : WINDOW;

	/* warm-up and synchronisation: one round trip */
	if (server) {
		trecv(c, rb, 1, 1, &ctx[0]);
		wait_comps(c, 1);
		tsend(c, sb, 1, 2, &ctx[0]);
		wait_comps(c, 1);
	} else {
		trecv(c, rb, 1, 2, &ctx[0]);
		tsend(c, sb, 1, 1, &ctx[1]);
		wait_comps(c, 2);
	}
	/* latency: 100 untimed round trips of the measured size first (every contender) */
	t0 = now_s();
	for (i = (t == T_LAT ? -100 : 0); i < iters; i++) {
		if (i == 0)
			t0 = now_s();
		if (t == T_LAT) {
			if (server) {
				trecv(c, rb, size, 3, &ctx[0]);
				wait_comps(c, 1);
				tsend(c, sb, size, 4, &ctx[0]);
				wait_comps(c, 1);
			} else {
				trecv(c, rb, size, 4, &ctx[0]);
				tsend(c, sb, size, 3, &ctx[1]);
				wait_comps(c, 2);
			}
			continue;
		}
		/* streaming: a window of sends, then a 1-byte ack back */
		if (server) {
			for (k = 0; k < window; k++)
				trecv(c, rb, size, 5, &ctx[k]);
			wait_comps(c, window);
			tsend(c, sb, 1, 6, &ctx[window]);
			wait_comps(c, 1);
		} else {
			trecv(c, rb, 1, 6, &ctx[window]);
			for (k = 0; k < window; k++)
				tsend(c, sb, size, 5, &ctx[k]);
			wait_comps(c, window + 1);
		}
	}
	t0 = now_s() - t0;
	if (t == T_LAT)
		return t0 / iters / 2 * 1e6;
	if (t == T_BW)
		return (double)size * window * iters / t0 / 1e6;
	return (double)window * iters / t0 / 1e6;
}

static int iters_for(enum test t, size_t size, bool quick)
{
	int n;

	if (t == T_LAT)
		n = size <= 4096 ? 2000 : 500;
	else if (t == T_RATE)
		n = 200;
	else
		n = (int)((256u << 20) / (size * WINDOW)) + 2;
	return quick ? n / 4 + 1 : n;
}

/* Fork a server, run the client here; return the client's figure or -1. */
static double measure(const char *prov, enum test t, size_t size, bool quick)
{
	int sv[2], status;
	struct conn c;
	double r;
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		return -1;
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		close(sv[0]);
		alarm(TIMEOUT_S * 3);
		conn_open(&c, prov);
		conn_connect(&c, sv[1]);
		run_side(&c, true, t, size, iters_for(t, size, quick));
		/* wait until the client is done before closing (its last sends need our ACKs) */
		{
			char b;

			if (read(sv[1], &b, 1) != 1)
				_exit(3);
		}
		conn_close(&c);
		_exit(0);
	}
	close(sv[1]);
	conn_open(&c, prov);
	conn_connect(&c, sv[0]);
	r = run_side(&c, false, t, size, iters_for(t, size, quick));
	if (write(sv[0], "x", 1) != 1)
		r = -1;
	waitpid(pid, &status, 0);
	conn_close(&c);
	close(sv[0]);
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		return -1;
	return r;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv)
{
	int reps = 5, opt, r, p, s;
	bool quick = false;
	static double lat[NPROV][NLAT][16], bw[NPROV][NBW][16], rate[NPROV][16];
	double med_lat[NPROV][NLAT], med_bw[NPROV][NBW], med_rate[NPROV];

	while ((opt = getopt(argc, argv, "r:q")) != -1) {
		if (opt == 'r')
			reps = atoi(argv[optind - 1]);
		else if (opt == 'q')
			quick = true;
	}
	if (reps < 1 || reps > 16)
		reps = 5;
	signal(SIGPIPE, SIG_IGN);
	printf("braid loopback benchmark: %d repetitions, contenders alternating: braid (native RDM), "
	       "tcp;ofi_rxm, braid;ofi_rxd\n", reps);
	for (r = 0; r < reps; r++) {
		fprintf(stderr, "  repetition %d/%d\n", r + 1, reps);
		for (p = 0; p < NPROV; p++) {
			for (s = 0; s < NLAT; s++)
				lat[p][s][r] = measure(provs[p], T_LAT, lat_sizes[s], quick);
			for (s = 0; s < NBW; s++)
				bw[p][s][r] = measure(provs[p], T_BW, bw_sizes[s], quick);
			rate[p][r] = measure(provs[p], T_RATE, 8, quick);
		}
	}
	for (p = 0; p < NPROV; p++) {
		for (s = 0; s < NLAT; s++)
			med_lat[p][s] = median(lat[p][s], reps);
		for (s = 0; s < NBW; s++)
			med_bw[p][s] = median(bw[p][s], reps);
		med_rate[p] = median(rate[p], reps);
	}

	printf("\nlatency, half round trip in us (median; lower is better)\n");
	printf("  %-8s %10s %12s %14s %10s %10s\n", "size", "braid", "tcp;ofi_rxm", "braid;ofi_rxd",
	       "vs tcp", "vs rxd");
	for (s = 0; s < NLAT; s++)
		printf("  %-8zu %10.2f %12.2f %14.2f %9.2fx %9.2fx\n", lat_sizes[s], med_lat[0][s],
		       med_lat[1][s], med_lat[2][s], med_lat[0][s] / med_lat[1][s],
		       med_lat[0][s] / med_lat[2][s]);
	printf("\nbandwidth in MB/s, window %d (median; higher is better)\n", WINDOW);
	printf("  %-8s %10s %12s %14s %10s %10s\n", "size", "braid", "tcp;ofi_rxm", "braid;ofi_rxd",
	       "vs tcp", "vs rxd");
	for (s = 0; s < NBW; s++)
		printf("  %-8zu %10.0f %12.0f %14.0f %9.2fx %9.2fx\n", bw_sizes[s], med_bw[0][s],
		       med_bw[1][s], med_bw[2][s], med_bw[0][s] / med_bw[1][s],
		       med_bw[0][s] / med_bw[2][s]);
	printf("\nmessage rate, 8 B, window %d, in M msg/s (median)\n", RATE_WINDOW);
	printf("  braid %.3f   tcp;ofi_rxm %.3f   braid;ofi_rxd %.3f   braid vs rxd %.1fx\n",
	       med_rate[0], med_rate[1], med_rate[2], med_rate[0] / med_rate[2]);

	printf("\ntargets (ratios from this run):\n");
	printf("  small-message latency <= 0.9x tcp's:  8 B %.2fx  %s\n", med_lat[0][0] / med_lat[1][0],
	       med_lat[0][0] <= 0.9 * med_lat[1][0] ? "met" : "NOT met");
	printf("  1 MiB bandwidth >= 1.0x tcp's:        %.2fx  %s\n", med_bw[0][2] / med_bw[1][2],
	       med_bw[0][2] >= med_bw[1][2] ? "met" : "NOT met");
	printf("  small-message rate >= 10x rxd's:      %.1fx  %s\n", med_rate[0] / med_rate[2],
	       med_rate[0] >= 10 * med_rate[2] ? "met" : "NOT met");
	return 0;
}
