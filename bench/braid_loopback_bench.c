/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * braid_loopback_bench.c: braid's native RDM against libfabric's tcp;ofi_rxm,
 * braid;ofi_rxd and braid;ofi_rxm (RDM over braid's RoCEv2 RC) on loopback, in one run: latency (ping-pong, 8 B to 64 KiB),
 * bandwidth (windowed streaming, 4 KiB to 4 MiB) and small-message rate, with
 * the contenders alternating in every repetition, medians over the
 * repetitions and braid's ratio to each contender.
 *
 *   FI_PROVIDER_PATH=build/providers build/bench/braid_loopback_bench [-r REPS] [-q] [-R]
 *   ... braid_loopback_bench -1 PROV,TEST,SIZE [-r REPS]   one measurement, each repetition
 *       (then, with REPS > 1, the median and the worst repetition)
 *       (TEST: lat, bw, rate, wlat, rlat, wbw, rbw, floor, rate2 (two threads, one domain),
 *       rate2d (a domain each), ceiling (raw UDP stream); for tuning, not for the tables)
 *   ... braid_loopback_bench -W [-r REPS]   braid's UDP wire against its DPDK wire (net_memif
 *       between the two processes): 8 B latency, 8 B rate (with bundles and, FI_BRAID_BUNDLE=0,
 *       without), 1 MiB bandwidth
 *   -I ITERS: that many round trips in every latency measurement (default 2,000 up to 4 KiB,
 *       500 above; -W: 20,000)
 *
 * RMA (fi_write, fi_read) is measured for braid, tcp;ofi_rxm and
 * braid;ofi_rxm: the time from posting one operation to its completion
 * (a full round trip: braid completes a write when the target has it) and
 * windowed bandwidth. The 1 MiB write runs braid and
 * tcp;ofi_rxm interleaved in bursts in one run (measure_pair). -R: the RMA
 * part only.
 *
 * Each measurement forks a server process; the two exchange endpoint names
 * over a socketpair, then talk only through libfabric (tagged messages).
 */
#include <errno.h>
#include <getopt.h>
#include <sched.h>
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
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <poll.h>
#include <pthread.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include "bench_common.h"
#include "bench_hmem.h"
#include "braid_cli.h"

#define MAX_SIZE	(4u << 20)
#define WINDOW		64
#define RATE_WINDOW	256
#define TIMEOUT_S	20

/* braid's RD first; braid;ofi_rxm is RDM over braid's RoCEv2 RC (what MPI runs on RoCE) */
static const char *const provs[] = { "braid", "tcp;ofi_rxm", "braid;ofi_rxd", "braid;ofi_rxm" };
#define NPROV 4
static const size_t lat_sizes[] = { 8, 64, 512, 4096, 65536 };
#define NLAT 5
static const size_t bw_sizes[] = { 4096, 65536, 1 << 20, 4 << 20 };
#define NBW 4

/* Exchange names over the socketpair and insert the peer. */
static void conn_connect(struct conn *c, int sock)
{
	char mine[128], theirs[128];
	size_t len = sizeof(mine);

	conn_name(c, mine, &len);
	if (write(sock, &len, sizeof(len)) != sizeof(len) || write(sock, mine, len) != (ssize_t)len)
		exit(3);
	if (read(sock, &len, sizeof(len)) != sizeof(len) || len > sizeof(theirs) ||
	    read(sock, theirs, len) != (ssize_t)len)
		exit(3);
	conn_insert(c, theirs);
}

enum test { T_LAT, T_BW, T_RATE, T_WLAT, T_RLAT, T_WBW, T_RBW };

/* RMA contenders: braid;ofi_rxd is left out (its RMA is not what is compared) */
static const char *const rma_provs[] = { "braid", "tcp;ofi_rxm", "braid;ofi_rxm" };
#define NRMA 3
static const enum test rma_tests[] = { T_WLAT, T_RLAT, T_WBW, T_WBW, T_RBW };
static const size_t rma_sizes[] = { 8, 8, 65536, 1 << 20, 1 << 20 };
static const char *const rma_names[] = { "write 8 B, us", "read 8 B, us", "write 64 KiB, MB/s",
					  "write 1 MiB, MB/s", "read 1 MiB, MB/s" };
#define NRMAT 5
#define PAIR_TEST 3	/* write 1 MiB: braid and tcp;ofi_rxm interleaved in one run (the target) */

static bool is_rma(enum test t)
{
	return t >= T_WLAT;
}

/* Post @n RMA operations (contexts ctx[0..n-1]), driving progress while the provider says -FI_EAGAIN. */
static void post_rma(struct conn *c, bool write, size_t size, int n, uint64_t key, uint64_t raddr,
		     struct fi_context *ctx)
{
	ssize_t r;
	int k;

	for (k = 0; k < n; k++) {
		do {
			r = write ? fi_write(c->ep, c->buf, size, c->desc, c->peer, raddr, key, &ctx[k]) :
				    fi_read(c->ep, c->buf + MAX_SIZE, size, c->desc, c->peer, raddr, key,
					    &ctx[k]);
			if (r == -FI_EAGAIN)
				(void)fi_cq_read(c->cq, NULL, 0);
		} while (r == -FI_EAGAIN);
		TRY(r);
	}
}

/* --check: every message and RMA checked, every byte (-1 only; the figures then mean nothing) */
static bool check;

/* --check's RMA: a pattern written to the target, read back into the other half, compared */
static void check_rma(struct conn *c, size_t size, int iters, uint64_t key, uint64_t raddr)
{
	struct fi_context ctx;
	int i;

	for (i = 0; i < iters; i++) {
		bench_fill(c->buf, size, (unsigned int)i);
		bench_fill(c->buf + MAX_SIZE, size, (unsigned int)i + 1);
		post_rma(c, true, size, 1, key, raddr, &ctx);
		wait_comps(c, 1, NULL);
		post_rma(c, false, size, 1, key, raddr, &ctx);
		wait_comps(c, 1, NULL);
		if (!bench_check(c->buf + MAX_SIZE, size, (unsigned int)i)) {
			fprintf(stderr, "RMA %zu B, round %d: the bytes read back differ\n", size, i);
			exit(BENCH_EXIT_FAIL);
		}
	}
}

/* --check: the message just received at @buf is pattern @seed, or the process ends */
static void check_msg(const void *buf, size_t size, unsigned int seed)
{
	if (check && !bench_check(buf, size, seed)) {
		fprintf(stderr, "message of %zu B (pattern %u): bytes differ\n", size, seed);
		exit(BENCH_EXIT_FAIL);
	}
}

/* The RMA initiator: one operation at a time (latency) or windows of them. */
static double run_rma(struct conn *c, enum test t, size_t size, int iters, uint64_t key,
		      uint64_t raddr)
{
	static struct fi_context ctx[WINDOW];
	bool write = t == T_WLAT || t == T_WBW;
	int window = (t == T_WLAT || t == T_RLAT) ? 1 : WINDOW, i;
	double t0 = now_s();

	if (check) {
		check_rma(c, size, iters, key, raddr);
		return 0;
	}
	for (i = -10; i < iters; i++) {
		if (i == 0)
			t0 = now_s();
		post_rma(c, write, size, window, key, raddr, ctx);
		wait_comps(c, window, NULL);
	}
	t0 = now_s() - t0;
	if (window == 1)
		return t0 / iters * 1e6;
	return (double)size * window * iters / t0 / 1e6;
}

/* The RMA target: progress until the initiator says it is done. */
static void serve_rma(struct conn *c, int sock)
{
	struct pollfd pfd = { .fd = sock, .events = POLLIN };

	while (poll(&pfd, 1, 0) == 0)
		(void)fi_cq_read(c->cq, NULL, 0);
}

/* One measurement: result in us (latency), MB/s (bandwidth) or Mmsg/s (rate). */
static double run_side(struct conn *c, bool server, enum test t, size_t size, int iters)
{
	static __thread struct fi_context ctx[RATE_WINDOW + 2];	/* a thread each (rate2) */
	uint8_t *sb = c->buf, *rb = c->buf + MAX_SIZE;
	double t0;
	int i, k, window = t == T_RATE ? RATE_WINDOW : WINDOW;
	/* --check: each message of a window into a place of its own */
	size_t slot = check ? size : 0;

	if (check && size && window > (int)(MAX_SIZE / size))
		window = (int)(MAX_SIZE / size);

	/* warm-up and synchronisation: one round trip */
	if (server) {
		trecv(c, c->peer, rb, 1, 1, &ctx[0]);
		wait_comps(c, 1, NULL);
		tsend(c, c->peer, sb, 1, 2, &ctx[0]);
		wait_comps(c, 1, NULL);
	} else {
		trecv(c, c->peer, rb, 1, 2, &ctx[0]);
		tsend(c, c->peer, sb, 1, 1, &ctx[1]);
		wait_comps(c, 2, NULL);
	}
	/* latency: 100 untimed round trips of the measured size first (every contender) */
	t0 = now_s();
	for (i = (t == T_LAT ? -100 : 0); i < iters; i++) {
		if (i == 0)
			t0 = now_s();
		if (t == T_LAT) {
			/* (--check: the client's pattern is 2i, the server's answer 2i + 1) */
			unsigned int seed = 2 * (unsigned int)(i + 100);

			if (server) {
				trecv(c, c->peer, rb, size, 3, &ctx[0]);
				wait_comps(c, 1, NULL);
				check_msg(rb, size, seed);
				if (check)
					bench_fill(sb, size, seed + 1);
				tsend(c, c->peer, sb, size, 4, &ctx[0]);
				wait_comps(c, 1, NULL);
			} else {
				trecv(c, c->peer, rb, size, 4, &ctx[0]);
				if (check)
					bench_fill(sb, size, seed);
				tsend(c, c->peer, sb, size, 3, &ctx[1]);
				wait_comps(c, 2, NULL);
				check_msg(rb, size, seed + 1);
			}
			continue;
		}
		/* streaming: a window of sends, then a 1-byte ack back */
		if (server) {
			for (k = 0; k < window; k++)
				trecv(c, c->peer, rb + k * slot, size, 5, &ctx[k]);
			wait_comps(c, window, NULL);
			for (k = 0; check && k < window; k++)
				check_msg(rb + k * slot, size, (unsigned int)i);
			tsend(c, c->peer, sb, 1, 6, &ctx[window]);
			wait_comps(c, 1, NULL);
		} else {
			trecv(c, c->peer, rb, 1, 6, &ctx[window]);
			if (check)
				bench_fill(sb, size, (unsigned int)i);
			for (k = 0; k < window; k++)
				tsend(c, c->peer, sb, size, 5, &ctx[k]);
			wait_comps(c, window + 1, NULL);
		}
	}
	t0 = now_s() - t0;
	if (t == T_LAT)
		return t0 / iters / 2 * 1e6;
	if (t == T_BW)
		return (double)size * window * iters / t0 / 1e6;
	return (double)window * iters / t0 / 1e6;
}

static int lat_iters;	/* -I: round trips per latency measurement */

static int iters_for(enum test t, size_t size, bool quick)
{
	int n;

	if (lat_iters > 0 && t == T_LAT)
		return lat_iters;
	if (t == T_WLAT || t == T_RLAT)
		n = 2000;
	else if (is_rma(t))
		n = (int)((256u << 20) / (size * WINDOW)) + 2;
	else if (t == T_LAT)
		n = size <= 4096 ? 2000 : 500;
	else if (t == T_RATE)
		n = 200;
	else
		n = (int)((256u << 20) / (size * WINDOW)) + 2;
	return quick ? n / 4 + 1 : n;
}

/*
 * Fork the server of a measurement, joined to us by a socketpair: in the
 * server (0 returned) sv[1] is its end, in the client sv[0]. -1: failed.
 */
static pid_t fork_server(int sv[2])
{
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		return -1;
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		close(sv[0]);
		alarm(TIMEOUT_S * 3);
	} else {
		close(sv[1]);
	}
	return pid;
}

/* Fork a server, run the client here; return the client's figure or -1. */
static double measure(const char *prov, enum test t, size_t size, bool quick)
{
	int sv[2], status;
	struct conn c;
	double r;
	pid_t pid;

	pid = fork_server(sv);
	if (pid < 0)
		return -1;
	if (pid == 0) {
		conn_open_caps(&c, prov, NULL, MAX_SIZE * 2, FI_TAGGED | (is_rma(t) ? FI_RMA : 0));
		conn_connect(&c, sv[1]);
		if (is_rma(t)) {
			/* the address as the provider names it: virtual, or an offset (0) */
			uint64_t target[2] = { c.key, (c.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) ?
						      (uint64_t)(uintptr_t)c.buf : 0 };

			if (write(sv[1], target, sizeof(target)) != sizeof(target))
				_exit(3);
			serve_rma(&c, sv[1]);
		} else {
			run_side(&c, true, t, size, iters_for(t, size, quick));
		}
		/* wait until the client is done before closing (its last sends need our ACKs) */
		{
			char b;

			if (read(sv[1], &b, 1) != 1)
				_exit(3);
		}
		conn_close(&c);
		_exit(0);
	}
	conn_open_caps(&c, prov, NULL, MAX_SIZE * 2, FI_TAGGED | (is_rma(t) ? FI_RMA : 0));
	conn_connect(&c, sv[0]);
	if (is_rma(t)) {
		uint64_t target[2];

		if (read(sv[0], target, sizeof(target)) != sizeof(target))
			exit(3);
		r = run_rma(&c, t, size, iters_for(t, size, quick), target[0], target[1]);
	} else {
		r = run_side(&c, false, t, size, iters_for(t, size, quick));
	}
	if (write(sv[0], "x", 1) != 1)
		r = -1;
	waitpid(pid, &status, 0);
	conn_close(&c);
	close(sv[0]);
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		return -1;
	return r;
}

/*
 * The 1 MiB write target's measurement: braid and tcp;ofi_rxm in one run,
 * interleaved. Both servers are up at once and each progresses only during
 * its own bursts (told 'g' and 's' over its socketpair, 'x' to end); the
 * client streams PAIR_ROUNDS bursts to each in turn, which one goes first
 * turning every round. A burst is PAIR_WINDOWS windows of writes, timed from
 * the server's 'g' to the last completion, as measure() times a run (braid
 * completes a write when the target has it; tcp;ofi_rxm once its bytes are in
 * the socket, so a burst may leave up to a socket buffer for its target's next
 * burst, and the last one's stays uncounted: under 1% of the run, in tcp's
 * favour). Both contenders sample the same stretch of time on this machine,
 * whose speed moves 2x from one 15 ms burst to the next and between levels
 * held for a second or more. The client runs on one CPU and both servers on
 * another: unpinned, waking a gated server often puts it on its client's CPU,
 * which measures the scheduler.
 * out[0]: braid's MB/s, out[1]: tcp;ofi_rxm's (-1: failed); @r: the repetition.
 */
#define PAIR_ROUNDS	32
#define PAIR_WINDOWS	1

static void pin_cpu(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	(void)sched_setaffinity(0, sizeof(set), &set);
}

static void serve_rma_gated(struct conn *c, int sock)
{
	struct pollfd pfd = { .fd = sock, .events = POLLIN };
	char cmd;

	while (read(sock, &cmd, 1) == 1 && cmd != 'x')
		while (cmd == 'g' && poll(&pfd, 1, 0) == 0)
			(void)fi_cq_read(c->cq, NULL, 0);
}

static double pair_burst(struct conn *c, int sock, const uint64_t target[2], size_t size,
			 int windows)
{
	static struct fi_context ctx[WINDOW];
	double t0;
	int w;

	if (write(sock, "g", 1) != 1)
		return -1;
	t0 = now_s();
	for (w = 0; w < windows; w++) {
		post_rma(c, true, size, WINDOW, target[0], target[1], ctx);
		wait_comps(c, WINDOW, NULL);
	}
	t0 = now_s() - t0;
	return write(sock, "s", 1) == 1 ? t0 : -1;
}

static void measure_pair(size_t size, bool quick, int r, double out[2])
{
	int sv[2][2], rounds = quick ? 2 : PAIR_ROUNDS, k, i, p, status;
	uint64_t target[2][2];
	double secs[2] = { 0, 0 };
	struct conn c[2];
	pid_t pid[2] = { -1, -1 };
	int cpus[2] = { -1, -1 };
	cpu_set_t saved;

	out[0] = out[1] = -1;
	/* the first two CPUs we may run on: the client on one, both servers on the other */
	if (sched_getaffinity(0, sizeof(saved), &saved) == 0)
		for (k = 0, i = 0; k < CPU_SETSIZE && i < 2; k++)
			if (CPU_ISSET(k, &saved))
				cpus[i++] = k;
	for (p = 0; p < 2; p++) {
		pid[p] = fork_server(sv[p]);
		if (pid[p] < 0)
			goto reap;
		if (pid[p] == 0) {
			struct conn s;

			if (p == 1)
				close(sv[0][0]);	/* braid's client end, inherited */
			if (cpus[1] >= 0)
				pin_cpu(cpus[1]);
			conn_open_caps(&s, rma_provs[p], NULL, MAX_SIZE * 2, FI_TAGGED | FI_RMA);
			conn_connect(&s, sv[p][1]);
			target[p][0] = s.key;
			target[p][1] = (s.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) ?
					       (uint64_t)(uintptr_t)s.buf : 0;
			if (write(sv[p][1], target[p], sizeof(target[p])) != sizeof(target[p]))
				_exit(3);
			serve_rma_gated(&s, sv[p][1]);
			conn_close(&s);
			_exit(0);
		}
	}
	if (cpus[1] >= 0)
		pin_cpu(cpus[0]);
	for (p = 0; p < 2; p++) {
		conn_open_caps(&c[p], rma_provs[p], NULL, MAX_SIZE * 2, FI_TAGGED | FI_RMA);
		conn_connect(&c[p], sv[p][0]);
		if (read(sv[p][0], target[p], sizeof(target[p])) != sizeof(target[p]))
			exit(3);
	}
	/* warm-up: two untimed windows each */
	for (p = 0; p < 2; p++)
		if (pair_burst(&c[p], sv[p][0], target[p], size, 2) < 0)
			secs[p] = -1;
	for (k = 0; k < rounds && secs[0] >= 0 && secs[1] >= 0; k++)
		for (i = 0; i < 2; i++) {
			double t;

			p = (i + k + r) % 2;
			t = pair_burst(&c[p], sv[p][0], target[p], size, PAIR_WINDOWS);
			secs[p] = t < 0 ? -1 : secs[p] + t;
		}
	for (p = 0; p < 2; p++) {
		if (write(sv[p][0], "x", 1) != 1)
			secs[p] = -1;
		conn_close(&c[p]);
	}
reap:
	if (cpus[1] >= 0)
		(void)sched_setaffinity(0, sizeof(saved), &saved);
	for (p = 0; p < 2; p++) {
		if (pid[p] <= 0)
			continue;
		close(sv[p][0]);
		waitpid(pid[p], &status, 0);
		if (WIFEXITED(status) && !WEXITSTATUS(status) && secs[p] > 0)
			out[p] = (double)size * WINDOW * PAIR_WINDOWS * rounds / secs[p] / 1e6;
	}
}

/*
 * Two threads, each with its own endpoint of one domain (or a domain each,
 * @shared false), each streaming 8-byte messages to its own endpoint of the
 * server process (which mirrors it): the sum of their rates in M msg/s, or
 * -1. Against one thread's rate (T_RATE) it shows whether threads serialise.
 */
struct rate2_arg {
	struct conn c;
	bool server;
	int iters;
	double rate;
};

static void *rate2_main(void *p)
{
	struct rate2_arg *a = p;

	a->rate = run_side(&a->c, a->server, T_RATE, 8, a->iters);
	return NULL;
}

static double rate2_side(const char *prov, bool server, bool shared, int sock, int iters)
{
	struct rate2_arg a[2];
	pthread_t th[2];
	int i;

	conn_open_caps(&a[0].c, prov, NULL, MAX_SIZE * 2, FI_TAGGED);
	if (shared)
		conn_open_in(&a[1].c, &a[0].c, MAX_SIZE * 2);
	else
		conn_open_caps(&a[1].c, prov, NULL, MAX_SIZE * 2, FI_TAGGED);
	for (i = 0; i < 2; i++) {
		conn_connect(&a[i].c, sock);
		a[i].server = server;
		a[i].iters = iters;
	}
	for (i = 0; i < 2; i++)
		if (pthread_create(&th[i], NULL, rate2_main, &a[i]))
			exit(3);
	for (i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	/* the client's last sends need the server's ACKs: close after it is done */
	if (server) {
		char b;

		if (read(sock, &b, 1) != 1)
			_exit(3);
	} else if (write(sock, "x", 1) != 1) {
		return -1;
	}
	conn_close(&a[1].c);
	conn_close(&a[0].c);
	return a[0].rate + a[1].rate;
}

static double measure_rate2(const char *prov, bool shared, bool quick)
{
	int sv[2], status;
	double r;
	pid_t pid;

	pid = fork_server(sv);
	if (pid < 0)
		return -1;
	if (pid == 0) {
		rate2_side(prov, true, shared, sv[1], iters_for(T_RATE, 8, quick));
		_exit(0);
	}
	r = rate2_side(prov, false, shared, sv[0], iters_for(T_RATE, 8, quick));
	waitpid(pid, &status, 0);
	close(sv[0]);
	return WIFEXITED(status) && !WEXITSTATUS(status) ? r : -1;
}

/*
 * The floor: a plain UDP ping-pong of @size bytes between two processes on
 * loopback (one socket each, busy-polling with MSG_DONTWAIT as the providers
 * poll), half round trip in us, or -1. What any provider over UDP sockets
 * pays at least per message.
 */
static ssize_t recv_spin(int fd, void *buf, size_t len)
{
	double deadline = now_s() + TIMEOUT_S;
	ssize_t r;

	while ((r = recv(fd, buf, len, MSG_DONTWAIT)) < 0 && errno == EAGAIN && now_s() < deadline)
		;
	return r;
}

static double raw_udp(size_t size, int iters)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct sockaddr_in b = a;
	socklen_t len = sizeof(a);
	int sa = socket(AF_INET, SOCK_DGRAM, 0), sb = socket(AF_INET, SOCK_DGRAM, 0), i, status;
	static char buf[65536];
	double t0 = 0;
	pid_t pid;

	if (sa < 0 || sb < 0 || bind(sa, (struct sockaddr *)&a, sizeof(a)) ||
	    bind(sb, (struct sockaddr *)&b, sizeof(b)) ||
	    getsockname(sa, (struct sockaddr *)&a, &len) ||
	    getsockname(sb, (struct sockaddr *)&b, &len) ||
	    connect(sa, (struct sockaddr *)&b, sizeof(b)) || connect(sb, (struct sockaddr *)&a, sizeof(a)))
		return -1;
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		alarm(TIMEOUT_S);
		for (i = 0; i < iters + 100; i++)
			if (recv_spin(sb, buf, sizeof(buf)) < 0 || send(sb, buf, size, 0) < 0)
				_exit(3);
		_exit(0);
	}
	for (i = -100; i < iters; i++) {
		if (i == 0)
			t0 = now_s();
		if (send(sa, buf, size, 0) < 0 || recv_spin(sa, buf, sizeof(buf)) < 0)
			break;
	}
	t0 = now_s() - t0;
	waitpid(pid, &status, 0);
	close(sa);
	close(sb);
	if (i < iters || !WIFEXITED(status) || WEXITSTATUS(status))
		return -1;
	return t0 / iters / 2 * 1e6;
}

/*
 * The ceiling for bandwidth: a plain UDP stream of the largest datagrams
 * (65507 bytes) from one process to another for @secs seconds, the sender
 * never waiting for the receiver (datagrams the receiver cannot keep up
 * with are dropped by the kernel), the receiver reading them into a 4 MiB
 * buffer as fast as it can. Bytes received per second, in MB/s, or -1: what
 * the kernel's UDP path delivers at most, whatever a transport does above it.
 */
static double raw_udp_bw(double secs)
{
	enum { DGRAM = 65507, AREA = 4 << 20 };
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int rs = socket(AF_INET, SOCK_DGRAM, 0), ss = socket(AF_INET, SOCK_DGRAM, 0);
	int pfd[2], status, big = 8 << 20, i;
	struct timeval tv = { .tv_sec = 1 };
	double result = -1;
	pid_t pid;

	if (rs < 0 || ss < 0 || pipe(pfd) ||
	    setsockopt(rs, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big)) ||
	    setsockopt(ss, SOL_SOCKET, SO_SNDBUF, &big, sizeof(big)) ||
	    setsockopt(rs, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) ||
	    bind(rs, (struct sockaddr *)&a, sizeof(a)) ||
	    getsockname(rs, (struct sockaddr *)&a, &len) ||
	    connect(ss, (struct sockaddr *)&a, sizeof(a)))
		return -1;
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		uint8_t *dst = aligned_alloc(4096, AREA);
		double t0 = 0, t1 = 0, bytes = 0, rate;
		size_t off = 0;
		ssize_t n;

		alarm(TIMEOUT_S);
		if (!dst)
			_exit(3);
		memset(dst, 0, AREA);
		/* until the sender's end mark (a 1-byte datagram) or a second of silence */
		while ((n = recv(rs, dst + off, DGRAM, 0)) > 1) {
			t1 = now_s();
			if (!t0)
				t0 = t1;
			else
				bytes += (double)n;	/* counted from the second: t0 is the first's arrival */
			off = (off + DGRAM) % (AREA - DGRAM);
		}
		rate = t1 > t0 ? bytes / (t1 - t0) / 1e6 : -1;
		if (write(pfd[1], &rate, sizeof(rate)) != sizeof(rate))
			_exit(3);
		_exit(0);
	}
	{
		uint8_t *src = aligned_alloc(4096, AREA);
		double end = now_s() + secs;
		size_t off = 0;

		if (src) {
			memset(src, 0x5a, AREA);
			while (now_s() < end) {
				if (send(ss, src + off, DGRAM, MSG_DONTWAIT) == DGRAM)
					off = (off + DGRAM) % (AREA - DGRAM);
			}
			free(src);
		}
		usleep(10000);
		for (i = 0; i < 10; i++)
			(void)send(ss, "x", 1, 0);
	}
	if (read(pfd[0], &result, sizeof(result)) != sizeof(result))
		result = -1;
	waitpid(pid, &status, 0);
	close(rs);
	close(ss);
	close(pfd[0]);
	close(pfd[1]);
	return WIFEXITED(status) && !WEXITSTATUS(status) ? result : -1;
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

/* The worst repetition: the highest latency or the lowest bandwidth; -1 when one failed. */
static double worst(const double *v, int n, bool lower_better)
{
	double w = v[0];
	int i;

	for (i = 0; i < n; i++) {
		if (v[i] < 0)
			return -1;
		if (lower_better ? v[i] > w : v[i] < w)
			w = v[i];
	}
	return w;
}

static void print_worst(const char *what, const char *const *names, int np, const double *v,
			int stride, int reps, bool lower_better, const char *fmt)
{
	int p;

	printf("  %-8s", what);
	for (p = 0; p < np; p++) {
		double w = worst(v + (size_t)p * stride, reps, lower_better);

		if (w < 0)
			printf(" %14s", "FAILED");
		else
			printf(fmt, w);
	}
	printf("   (worst repetition: %s)\n", names == provs ? "every contender" : "RMA");
}

static void print_head(void)
{
	int p;

	printf("  %-8s", "size");
	for (p = 0; p < NPROV; p++)
		printf(" %14s", provs[p]);
	for (p = 1; p < NPROV; p++)
		printf(" %9s", p == 1 ? "vs tcp" : p == 2 ? "vs rxd" : "vs RC");
	printf("\n");
}

/* -1 PROV,TEST,SIZE: one measurement, every repetition printed */
/* ---- -W: braid's UDP wire against its DPDK wire (net_memif), both sides forked ---- */

static char wire_dir[64];

/*
 * Side @side's wire, set before this process's first libfabric call: the UDP
 * wire on loopback, or the DPDK wire on a net_memif port (side 0 the memif
 * server at 10.78.0.1, side 1 the client at .2), no hugepages, no PCI.
 */
static void wire_env(bool dpdk, int side, bool bundles)
{
	char args[512];

	setenv("FI_BRAID_BUNDLE", bundles ? "1" : "0", 1);
	if (!dpdk) {
		setenv("FI_BRAID_WIRE", "udp", 1);
		return;
	}
	snprintf(args, sizeof(args),
		 "--no-huge --no-shconf -m 512 --no-pci --no-telemetry --log-level=3 "
		 "--file-prefix=braid_bench%d_%d --vdev=net_memif0,role=%s,socket=%s/memif.sock",
		 side, (int)getppid(), side ? "client" : "server", wire_dir);
	setenv("FI_BRAID_WIRE", "dpdk", 1);
	setenv("FI_BRAID_DPDK_ARGS", args, 1);
	setenv("FI_BRAID_DPDK_IP", side ? "10.78.0.2/24" : "10.78.0.1/24", 1);
	setenv("BENCH_NODE", side ? "10.78.0.2" : "10.78.0.1", 1);
}

/*
 * One measurement with braid's native RDM over the UDP or the DPDK wire:
 * both sides are forked (the EAL starts once per process and libfabric reads
 * FI_BRAID_WIRE once, so this process never calls libfabric), the server
 * first (a memif client connects once, when its port starts). The client's
 * figure, or -1.
 */
static double measure_wire(bool dpdk, enum test t, size_t size, bool quick, bool bundles)
{
	int sv[2], go[2], res[2], st[2];
	pid_t pid[2];
	double r = -1;
	char b = 'x';
	struct conn c;

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) || pipe(go) || pipe(res))
		return -1;
	fflush(stdout);
	for (int side = 0; side < 2; side++) {
		pid[side] = fork();
		if (pid[side] < 0)
			return -1;
		if (pid[side])
			continue;
		alarm(TIMEOUT_S * 3);
		if (side == 1 && read(go[0], &b, 1) != 1)
			_exit(3);
		wire_env(dpdk, side, bundles);
		conn_open_caps(&c, "braid", NULL, MAX_SIZE * 2, FI_TAGGED);
		if (side == 0 && write(go[1], &b, 1) != 1)
			_exit(3);
		conn_connect(&c, sv[side]);
		r = run_side(&c, side == 0, t, size, iters_for(t, size, quick));
		/* the client's last sends need the server's ACKs: close after both are done */
		if (write(sv[side], &b, 1) != 1 || read(sv[side], &b, 1) != 1)
			_exit(3);
		conn_close(&c);
		if (side == 1 && write(res[1], &r, sizeof(r)) != sizeof(r))
			_exit(3);
		_exit(0);
	}
	close(go[0]);
	close(go[1]);
	close(res[1]);
	if (read(res[0], &r, sizeof(r)) != sizeof(r))
		r = -1;
	for (int side = 0; side < 2; side++)
		if (waitpid(pid[side], &st[side], 0) < 0 || !WIFEXITED(st[side]) ||
		    WEXITSTATUS(st[side]))
			r = -1;
	close(res[0]);
	close(sv[0]);
	close(sv[1]);
	return r;
}

static int measure_wires(int reps, bool quick)
{
	static const char *const what[] = { "8 B latency, us", "8 B rate, M msg/s",
					    "8 B rate, no bundles", "1 MiB bandwidth, MB/s" };
	static const enum test tests[] = { T_LAT, T_RATE, T_RATE, T_BW };
	static const size_t sizes[] = { 8, 8, 8, 1 << 20 };
	double v[2][4][16], med[2][4];
	int r, w, k;

	/*
	 * 20,000 round trips, not 2,000, for both wires: a latency figure is the
	 * mean of a run, and over memif 2,000 take 4 ms, in which the first
	 * round trips of a new port (cold buffer caches, the first ARP exchange)
	 * weigh: 2.2 us at 2,000 against 1.5 to 1.6 us at 20,000 (this machine)
	 */
	if (lat_iters <= 0)
		lat_iters = 20000;
	snprintf(wire_dir, sizeof(wire_dir), "/tmp/braid-bench.XXXXXX");
	if (!mkdtemp(wire_dir))
		return 3;
	printf("braid's native RDM over its two wires, %d repetitions alternating: udp (kernel "
	       "sockets, loopback) and dpdk (a net_memif port pair between the two processes, "
	       "no hugepages); each process busy-polls its own core\n", reps);
	for (r = 0; r < reps; r++) {
		fprintf(stderr, "  repetition %d/%d\n", r + 1, reps);
		for (k = 0; k < 4; k++)
			for (w = 0; w < 2; w++)
				v[w][k][r] = measure_wire(w == 1, tests[k], sizes[k], quick, k != 2);
	}
	rmdir(wire_dir);
	printf("\n  %-24s %12s %12s %9s %22s\n", "(median; worst)", "udp", "dpdk", "dpdk/udp",
	       "worst udp, dpdk");
	for (k = 0; k < 4; k++) {
		for (w = 0; w < 2; w++)
			med[w][k] = median(v[w][k], reps);
		printf("  %-24s %12.3f %12.3f %8.2fx %10.3f, %10.3f\n", what[k], med[0][k], med[1][k],
		       med[1][k] / med[0][k], worst(v[0][k], reps, k == 0),
		       worst(v[1][k], reps, k == 0));
	}
	printf("  (no bundles: FI_BRAID_BUNDLE=0, a datagram per message, as braid was before bundles "
	       "set its rate target)\n");
	printf("\ntargets (ratios from this run):\n");
	printf("  8 B rate on memif >= 5x the UDP wire's:  %.1fx  %s  (a datagram per message; with "
	       "bundles %.1fx)\n", med[1][2] / med[0][2],
	       med[1][2] >= 5 * med[0][2] ? "met" : "NOT met", med[1][1] / med[0][1]);
	printf("  8 B rate on memif >= 2 M msg/s:          %.2f  %s\n", med[1][1],
	       med[1][1] >= 2 ? "met" : "NOT met");
	printf("  8 B latency <= 0.5x the UDP wire's:      %.2fx  %s\n", med[1][0] / med[0][0],
	       med[1][0] > 0 && med[1][0] <= 0.5 * med[0][0] ? "met" : "NOT met");
	return 0;
}

/* the tests of -1 PROV,TEST,SIZE: measure()'s (enum test order), then the others */
static const char *const one_tests[] = { "lat", "bw", "rate", "wlat", "rlat", "wbw", "rbw",
					 "floor", "rate2", "rate2d", "ceiling" };
#define NONE_TESTS	11

/* -1's PROV,TEST,SIZE into @prov, @test (an index of one_tests) and @size; false when it is not that. */
static bool one_parse(const char *spec, char prov[64], int *test, size_t *size)
{
	const char *c1 = strchr(spec, ','), *c2 = c1 ? strchr(c1 + 1, ',') : NULL;
	long v;
	int t;

	if (!c1 || !c2 || c1 == spec || (size_t)(c1 - spec) >= 64 ||
	    !braid_cli_long(c2 + 1, 0, MAX_SIZE, &v))
		return false;
	for (t = 0; t < NONE_TESTS; t++)
		if (strlen(one_tests[t]) == (size_t)(c2 - c1 - 1) &&
		    !strncmp(one_tests[t], c1 + 1, (size_t)(c2 - c1 - 1)))
			break;
	if (t == NONE_TESTS)
		return false;
	memcpy(prov, spec, (size_t)(c1 - spec));
	prov[c1 - spec] = '\0';
	*test = t;
	*size = (size_t)v;
	return true;
}

static int measure_one(const char *prov, int t, size_t size, int reps, bool quick)
{
	const char *test = one_tests[t];
	double vals[16];
	int r;

	for (r = 0; r < reps; r++) {
		double v;

		if (!strcmp(test, "floor")) {
			v = raw_udp(size, quick ? 500 : 2000);
		} else if (!strcmp(test, "ceiling")) {
			v = raw_udp_bw(quick ? 0.2 : 0.5);
		} else if (!strcmp(test, "rate2") || !strcmp(test, "rate2d")) {
			v = measure_rate2(prov, !strcmp(test, "rate2"), quick);
		} else {
			v = measure(prov, (enum test)t, size, quick);
		}
		printf("%s %s %zu: %.3f\n", prov, test, size, v);
		fflush(stdout);
		vals[r] = v;
	}
	/* the worst repetition beside the median: a run that collapses shows */
	if (reps > 1) {
		bool lower = !strcmp(test, "floor") || !strcmp(test, "lat") || !strcmp(test, "wlat") ||
			     !strcmp(test, "rlat");
		double w = worst(vals, reps, lower);

		printf("%s %s %zu: median %.3f, worst %s %.3f (%d repetitions)\n", prov, test, size,
		       median(vals, reps), lower ? "highest" : "lowest", w, reps);
	}
	return 0;
}

static void usage(FILE *out)
{
	fprintf(out, "usage: braid_loopback_bench [-r REPS] [-q] [-R] [-I ITERS]\n"
		"       braid_loopback_bench -1 PROV,TEST,SIZE [-r REPS] [-q] [-I ITERS]\n"
		"                            [--hmem cuda] [--check]\n"
		"       braid_loopback_bench -W [-r REPS] [-q] [-I ITERS]\n"
		"braid's native RDM against tcp;ofi_rxm, braid;ofi_rxd and braid;ofi_rxm on loopback:\n"
		"latency, bandwidth, message rate and RMA, contenders alternating, medians over the\n"
		"repetitions. Needs FI_PROVIDER_PATH to find braid (e.g. build/providers).\n"
		"  -r REPS  repetitions, 1 to 16 (default 5)\n"
		"  -q       quick: shorter measurements\n"
		"  -R       the RMA part only\n"
		"  -I ITERS round trips in every latency measurement (default 2,000 up to 4 KiB,\n"
		"           500 above; -W: 20,000)\n"
		"  -1 PROV,TEST,SIZE  one measurement per repetition, then the median and the worst\n"
		"           (TEST: lat, bw, rate, wlat, rlat, wbw, rbw, floor, rate2, rate2d, ceiling)\n"
		"  -W       braid's UDP wire against its DPDK wire (net_memif): 8 B latency and rate,\n"
		"           1 MiB bandwidth\n"
		"  --hmem cuda  with -1 and -r 1: both sides' buffers in GPU memory (FI_HMEM), the\n"
		"           CUDA driver loaded at run time (FI_BRAID_CUDA_LIB, else libcuda.so.1);\n"
		"           TEST lat, bw, wlat, rlat, wbw or rbw\n"
		"  --check  with -1: every message's bytes checked (RMA: written, read back,\n"
		"           compared); the figure then means nothing\n"
		"  -h, --help  this text\n");
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' }, { "hmem", required_argument, NULL, 'H' },
		{ "check", no_argument, NULL, 'C' }, { NULL, 0, NULL, 0 },
	};
	int reps = 5, opt, r, p, s, i;
	bool quick = false, rma_only = false;
	const char *one = NULL;
	static double lat[NPROV][NLAT][16], bw[NPROV][NBW][16], rate[NPROV][16], floor8[16];
	static double ceiling[16], rate2[2][16];
	static double rma[NRMA][NRMAT][16], pair[16], pair_run[16];
	const char *failed_who = NULL;
	int failed_rep = 0;
	double med_lat[NPROV][NLAT], med_bw[NPROV][NBW], med_rate[NPROV], med_rma[NRMA][NRMAT];
	char one_prov[64];
	int one_test = 0;
	size_t one_size = 0;
	long v;

	bool wires = false;

	while ((opt = getopt_long(argc, argv, "r:qRW1:I:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'r':
			if (!braid_cli_long(optarg, 1, 16, &v))
				return braid_cli_bad(usage, "braid_loopback_bench", "-r", optarg,
						     "repetitions, 1 to 16");
			reps = (int)v;
			break;
		case '1':
			if (!one_parse(optarg, one_prov, &one_test, &one_size))
				return braid_cli_bad(usage, "braid_loopback_bench", "-1", optarg,
						     "PROV,TEST,SIZE (SIZE up to 4 MiB)");
			one = optarg;
			break;
		case 'q': quick = true; break;
		case 'R': rma_only = true; break;
		case 'W': wires = true; break;
		case 'I':
			if (!braid_cli_long(optarg, 1, 100000000, &v))
				return braid_cli_bad(usage, "braid_loopback_bench", "-I", optarg,
						     "round trips, 1 or more");
			lat_iters = (int)v;
			break;
		case 'H':
			bench_mem = bench_hmem_named(optarg);
			if (!bench_mem)
				return braid_cli_bad(usage, "braid_loopback_bench", "--hmem", optarg,
						     "cuda");
			break;
		case 'C': check = true; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return BRAID_CLI_EXIT_USAGE;
		}
	}
	if (braid_cli_extra(usage, "braid_loopback_bench", argc, argv))
		return BRAID_CLI_EXIT_USAGE;
	/* device buffers: one measurement in this process and its server (CUDA does not
	 * survive the fork of another), of a test that moves the buffer */
	if ((bench_mem && (!one || reps != 1 || one_test == T_RATE || one_test >= NONE_TESTS - 4)) ||
	    (check && !one)) {
		fprintf(stderr, "braid_loopback_bench: --hmem goes with -1 (lat, bw, wlat, rlat, wbw, "
			"rbw) and -r 1; --check with -1\n");
		usage(stderr);
		return BRAID_CLI_EXIT_USAGE;
	}
	if ((one && (wires || rma_only)) || (wires && rma_only)) {
		fprintf(stderr, "braid_loopback_bench: -1, -W and -R go alone\n");
		usage(stderr);
		return BRAID_CLI_EXIT_USAGE;
	}
	signal(SIGPIPE, SIG_IGN);
	if (one)
		return measure_one(one_prov, one_test, one_size, reps, quick);
	if (wires)
		return measure_wires(reps, quick);
	printf("braid loopback benchmark: %d repetitions, contenders alternating: braid (native RDM), "
	       "tcp;ofi_rxm, braid;ofi_rxd, braid;ofi_rxm (RDM over braid's RoCEv2 RC)\n", reps);
	for (r = 0; r < reps; r++) {
		fprintf(stderr, "  repetition %d/%d\n", r + 1, reps);
		/* each RMA measurement's braid and tcp;ofi_rxm runs back to back, which
		 * goes first turning with the repetition, then braid;ofi_rxm; the 1 MiB
		 * write (the target) interleaves the two in one run (measure_pair): a
		 * ratio compares the same fraction of a second (this machine's speed
		 * moves 2x within seconds, both contenders alike) */
		for (s = 0; s < NRMAT; s++)
			for (i = 0; i < NRMA; i++) {
				p = i < 2 ? (i + r) % 2 : i;
				if (s == PAIR_TEST && i < 2) {
					double two[2];

					if (i == 0) {
						measure_pair(rma_sizes[s], quick, r, two);
						rma[0][s][r] = two[0];
						rma[1][s][r] = two[1];
					}
					continue;
				}
				rma[p][s][r] = measure(rma_provs[p], rma_tests[s], rma_sizes[s], quick);
			}
		for (p = 0; p < NPROV && !rma_only; p++) {
			for (s = 0; s < NLAT; s++)
				lat[p][s][r] = measure(provs[p], T_LAT, lat_sizes[s], quick);
			for (s = 0; s < NBW; s++)
				bw[p][s][r] = measure(provs[p], T_BW, bw_sizes[s], quick);
			rate[p][r] = measure(provs[p], T_RATE, 8, quick);
		}
		if (!rma_only) {
			floor8[r] = raw_udp(8, quick ? 500 : 2000);
			/* braid's threads: two endpoints of one domain, then a domain each */
			rate2[0][r] = measure_rate2(provs[0], true, quick);
			rate2[1][r] = measure_rate2(provs[0], false, quick);
		}
		ceiling[r] = raw_udp_bw(quick ? 0.2 : 0.5);
	}
	/* the target: each repetition's ratio of its interleaved run, then the
	 * median of those (before median() sorts the columns apart) */
	for (r = 0; r < reps; r++) {
		pair[r] = rma[0][3][r] > 0 && rma[1][3][r] > 0 ? rma[0][3][r] / rma[1][3][r] : -1;
		pair_run[r] = pair[r];
		if (pair[r] < 0 && !failed_who) {
			failed_rep = r + 1;
			failed_who = rma[0][3][r] <= 0 ? "braid" : "tcp;ofi_rxm";
		}
	}
	for (p = 0; p < NRMA; p++)
		for (s = 0; s < NRMAT; s++)
			med_rma[p][s] = median(rma[p][s], reps);
	printf("\nRMA (median; time from post to completion, a full round trip; windowed bandwidth, window %d)\n",
	       WINDOW);
	printf("  %-20s %12s %12s %14s %9s %9s\n", "", rma_provs[0], rma_provs[1], rma_provs[2],
	       "vs tcp", "vs RC");
	for (s = 0; s < NRMAT; s++) {
		bool lower = s < 2;	/* latency: lower is better; ratios are braid's speed-up */

		printf("  %-20s %12.2f %12.2f %14.2f %8.2fx %8.2fx\n", rma_names[s], med_rma[0][s],
		       med_rma[1][s], med_rma[2][s],
		       lower ? med_rma[1][s] / med_rma[0][s] : med_rma[0][s] / med_rma[1][s],
		       lower ? med_rma[2][s] / med_rma[0][s] : med_rma[0][s] / med_rma[2][s]);
	}
	printf("  worst repetition:\n");
	for (s = 0; s < NRMAT; s++) {
		printf("  %-20s", rma_names[s]);
		for (p = 0; p < NRMA; p++) {
			double w = worst(rma[p][s], reps, s < 2);

			if (w < 0)
				printf(" %12s", "FAILED");
			else
				printf(" %12.2f", w);
		}
		printf("\n");
	}
	printf("  (ratios: braid's speed over the contender; > 1: braid faster)\n");
	printf("  the ceiling: a raw UDP stream of 65507-byte datagrams, received: %.0f MB/s "
	       "(median; lowest %.0f)\n", median(ceiling, reps), worst(ceiling, reps, false));
	if (failed_who) {
		printf("  target: 1 MiB write bandwidth >= 1.0x tcp;ofi_rxm's: NOT met (repetition %d: "
		       "the run of %s failed)\n", failed_rep, failed_who);
	} else {
		double lo = worst(pair, reps, false), mp = median(pair, reps);

		printf("  target: 1 MiB write bandwidth >= 1.0x tcp;ofi_rxm's: %.2fx  %s  (the median of "
		       "the repetitions' ratios, each from one run interleaving the two in %d bursts "
		       "each; lowest %.2fx; the table's ratios divide its medians)\n", mp,
		       mp >= 1.0 ? "met" : "NOT met", quick ? 2 : PAIR_ROUNDS, lo);
		printf("  the repetitions' ratios:");
		for (r = 0; r < reps; r++)
			printf(" %.2f", pair_run[r]);
		printf("\n");
	}
	if (rma_only)
		return 0;
	for (p = 0; p < NPROV; p++) {
		for (s = 0; s < NLAT; s++)
			med_lat[p][s] = median(lat[p][s], reps);
		for (s = 0; s < NBW; s++)
			med_bw[p][s] = median(bw[p][s], reps);
		med_rate[p] = median(rate[p], reps);
	}

	printf("\nlatency, half round trip in us (median; lower is better)\n");
	print_head();
	for (s = 0; s < NLAT; s++) {
		printf("  %-8zu", lat_sizes[s]);
		for (p = 0; p < NPROV; p++)
			printf(" %14.2f", med_lat[p][s]);
		for (p = 1; p < NPROV; p++)
			printf(" %8.2fx", med_lat[0][s] / med_lat[p][s]);
		printf("\n");
	}
	printf("  worst repetition (highest):\n");
	for (s = 0; s < NLAT; s++) {
		char what[16];

		snprintf(what, sizeof(what), "%zu", lat_sizes[s]);
		print_worst(what, provs, NPROV, &lat[0][s][0], NLAT * 16, reps, true, " %14.2f");
	}
	printf("\nbandwidth in MB/s, window %d (median; higher is better)\n", WINDOW);
	print_head();
	for (s = 0; s < NBW; s++) {
		printf("  %-8zu", bw_sizes[s]);
		for (p = 0; p < NPROV; p++)
			printf(" %14.0f", med_bw[p][s]);
		for (p = 1; p < NPROV; p++)
			printf(" %8.2fx", med_bw[0][s] / med_bw[p][s]);
		printf("\n");
	}
	printf("  worst repetition (lowest):\n");
	for (s = 0; s < NBW; s++) {
		char what[16];

		snprintf(what, sizeof(what), "%zu", bw_sizes[s]);
		print_worst(what, provs, NPROV, &bw[0][s][0], NBW * 16, reps, false, " %14.0f");
	}
	printf("\nmessage rate, 8 B, window %d, in M msg/s (median)\n ", RATE_WINDOW);
	for (p = 0; p < NPROV; p++)
		printf(" %s %.3f ", provs[p], med_rate[p]);
	printf("\n");
	print_worst("rate", provs, NPROV, &rate[0][0], 16, reps, false, " %14.3f");

	printf("  braid, two threads, each its own endpoint and peer: one domain %.3f, a domain "
	       "each %.3f (median; lowest %.3f, %.3f)\n", median(rate2[0], reps),
	       median(rate2[1], reps), worst(rate2[0], reps, false), worst(rate2[1], reps, false));

	printf("\nthe floor: raw UDP ping-pong, 8 B, two processes busy-polling: %.2f us "
	       "half round trip (median; worst %.2f)\n", median(floor8, reps), worst(floor8, reps, true));
	printf("the ceiling: a raw UDP stream of 65507-byte datagrams, received: %.0f MB/s "
	       "(median; lowest %.0f)\n", median(ceiling, reps), worst(ceiling, reps, false));
	printf("\ntargets (ratios from this run):\n");
	printf("  8 B latency <= 0.8x tcp;ofi_rxm's:      %.2fx  %s\n", med_lat[0][0] / med_lat[1][0],
	       med_lat[0][0] <= 0.8 * med_lat[1][0] ? "met" : "NOT met");
	printf("  8 B latency <= 1.3x the raw UDP floor:  %.2fx  %s\n", med_lat[0][0] / median(floor8, reps),
	       med_lat[0][0] <= 1.3 * median(floor8, reps) ? "met" : "NOT met");
	printf("  8 B rate >= 10x braid;ofi_rxd's:        %.1fx  %s\n", med_rate[0] / med_rate[2],
	       med_rate[0] >= 10 * med_rate[2] ? "met" : "NOT met");
	printf("  8 B rate >= 3x tcp;ofi_rxm's:           %.1fx  %s\n", med_rate[0] / med_rate[1],
	       med_rate[0] >= 3 * med_rate[1] ? "met" : "NOT met");
	printf("  1 MiB bandwidth >= 1.5x tcp;ofi_rxm's:  %.2fx  %s\n", med_bw[0][2] / med_bw[1][2],
	       med_bw[0][2] >= 1.5 * med_bw[1][2] ? "met" : "NOT met");
	printf("  two threads, one domain >= 1.7x one:    %.2fx  %s\n", median(rate2[0], reps) / med_rate[0],
	       median(rate2[0], reps) >= 1.7 * med_rate[0] ? "met" : "NOT met");
	/* a competent RC is within 20% of braid RD on a clean link */
	printf("  RC (braid;ofi_rxm) within 20%% of RD:  8 B latency %.2fx, 1 MiB bandwidth %.2fx  %s\n",
	       med_lat[3][0] / med_lat[0][0], med_bw[3][2] / med_bw[0][2],
	       med_lat[3][0] <= 1.2 * med_lat[0][0] && med_bw[3][2] >= 0.8 * med_bw[0][2] ?
	       "met" : "NOT met");
	return 0;
}
