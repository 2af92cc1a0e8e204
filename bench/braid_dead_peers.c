/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * braid_dead_peers.c: unreachable peers cost only themselves.
 * One native RDM endpoint streams 4 KiB tagged messages to a live peer (a
 * second endpoint of its domain, on loopback) and, half a second in, sends
 * one message to each of N unreachable peers (127.78.x.y port 9: nothing
 * listens there). It reports how long posting them took (no send may wait
 * for another peer's timeout), when the last of them failed and with what
 * (FI_EHOSTUNREACH each, within about one peer timeout), the live stream's
 * rate before, while and after they were pending, and the resident memory
 * each pending unreachable peer held.
 *
 *   braid_dead_peers [-n N] [-t PEER_TIMEOUT_MS]
 * Run: FI_PROVIDER_PATH=build/providers build/bench/braid_dead_peers -n 10000 -t 2000
 */
#include <arpa/inet.h>
#include <getopt.h>
#include <string.h>
#include <unistd.h>

#include "bench_common.h"
#include "braid_cli.h"

#define MSG	4096
#define WIN	64
#define LIVE	((void *)1)

struct live {
	struct conn *a, *b;
	uint64_t done;
	int out;
};

static void live_fill(struct live *l)
{
	while (l->out < WIN) {
		ssize_t r = fi_tsend(l->a->ep, l->a->buf, MSG, NULL, l->a->peer, 7, LIVE);

		if (r == -FI_EAGAIN)
			return;
		TRY(r);
		l->out++;
	}
}

/* Drive both endpoints once: live completions counted, dead ones' errors tallied. */
static void step(struct live *l, long *dead_failed, long *dead_bad, double *t_last)
{
	struct fi_cq_tagged_entry e[64];
	struct fi_cq_err_entry err;
	ssize_t n, i;

	n = fi_cq_read(l->a->cq, e, 64);
	for (i = 0; i < n; i++) {
		if (e[i].op_context == LIVE) {
			l->out--;
			l->done++;
		} else {
			(*dead_bad)++;	/* a send to an unreachable peer succeeded */
		}
	}
	if (n == -FI_EAVAIL) {
		memset(&err, 0, sizeof(err));
		if (fi_cq_readerr(l->a->cq, &err, 0) == 1) {
			if (err.op_context == LIVE) {
				fprintf(stderr, "a send to the live peer failed: %s\n",
					fi_strerror(err.err));
				exit(BENCH_EXIT_FAIL);
			}
			if (err.err == FI_EHOSTUNREACH)
				(*dead_failed)++;
			else
				(*dead_bad)++;
			*t_last = now_s();
		}
	}
	n = fi_cq_read(l->b->cq, e, 64);
	for (i = 0; i < n; i++)
		trecv(l->b, FI_ADDR_UNSPEC, l->b->buf, MSG, 7, NULL);
	live_fill(l);
}

/* The live stream's rate over @secs (messages per second). */
static double rate_over(struct live *l, double secs, long *df, long *db, double *tl)
{
	double t0 = now_s();
	uint64_t d0 = l->done;

	while (now_s() - t0 < secs)
		step(l, df, db, tl);
	return (double)(l->done - d0) / (now_s() - t0);
}

static void usage(FILE *out)
{
	fprintf(out, "usage: braid_dead_peers [-n N] [-t PEER_TIMEOUT_MS]\n"
		"Streams to a live peer and sends one message to each of N unreachable peers beside\n"
		"it; reports how long posting took, when and how they failed, the live stream's rate\n"
		"before, while and after, and the memory each pending peer held. Needs\n"
		"FI_PROVIDER_PATH to find braid.\n"
		"  -n N                unreachable peers, 1 to 60,000 (default 10,000)\n"
		"  -t PEER_TIMEOUT_MS  FI_BRAID_PEER_TIMEOUT_MS, at least 100 (default 2,000)\n"
		"  -h, --help          this text\n");
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 },
	};
	long n = 10000, timeout_ms = 2000, dead_failed = 0, dead_bad = 0, i;
	double t_post0, t_post, t_last = 0, before, during, after, t_during0;
	long rss0, rss_peak = 0;
	struct conn a, b;
	struct live l = { &a, &b, 0, 0 };
	fi_addr_t *dead;
	uint8_t name[128];
	size_t len = sizeof(name);
	char env[32];
	int c;

	while ((c = getopt_long(argc, argv, "n:t:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'n':
			if (!braid_cli_long(optarg, 1, 60000, &n))
				return braid_cli_bad(usage, "braid_dead_peers", "-n", optarg,
						     "1 to 60,000 peers");
			break;
		case 't':
			if (!braid_cli_long(optarg, 100, 86400000, &timeout_ms))
				return braid_cli_bad(usage, "braid_dead_peers", "-t", optarg,
						     "100 ms or more");
			break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return BENCH_EXIT_USAGE;
		}
	}
	if (braid_cli_extra(usage, "braid_dead_peers", argc, argv))
		return BENCH_EXIT_USAGE;
	/* every unreachable peer's send in flight at once, beside the live window */
	snprintf(env, sizeof(env), "%ld", n + 2 * WIN);
	setenv("FI_BRAID_TX_SIZE", env, 0);
	snprintf(env, sizeof(env), "%ld", timeout_ms);
	setenv("FI_BRAID_PEER_TIMEOUT_MS", env, 1);
	conn_open(&a, "braid", "127.0.0.1", MSG);
	conn_open_in(&b, &a, MSG);
	conn_name(&b, name, &len);
	conn_insert(&a, name);
	len = sizeof(name);
	conn_name(&a, name, &len);
	conn_insert(&b, name);
	for (i = 0; i < WIN * 2; i++)
		trecv(&b, FI_ADDR_UNSPEC, b.buf, MSG, 7, NULL);
	dead = calloc((size_t)n, sizeof(*dead));
	if (!dead)
		return BENCH_EXIT_SETUP;
	for (i = 0; i < n; i++) {
		struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(9) };
		char ip[32];

		snprintf(ip, sizeof(ip), "127.78.%ld.%ld", i / 250, i % 250 + 1);
		inet_pton(AF_INET, ip, &sin.sin_addr);
		if (fi_av_insert(a.av, &sin, 1, &dead[i], 0, NULL) != 1)
			return BENCH_EXIT_SETUP;
	}
	live_fill(&l);
	before = rate_over(&l, 1.0, &dead_failed, &dead_bad, &t_last);
	rss0 = proc_status_kb("VmRSS:");

	/* one message to each unreachable peer, as fast as they are taken */
	t_post0 = now_s();
	for (i = 0; i < n; i++) {
		ssize_t r;

		while ((r = fi_tsend(a.ep, "anyone?", 8, NULL, dead[i], 9,
				     (void *)(uintptr_t)(i + 2))) == -FI_EAGAIN)
			step(&l, &dead_failed, &dead_bad, &t_last);
		TRY(r);
	}
	t_post = now_s() - t_post0;
	/* the live stream while they are pending (until the first fails) */
	t_during0 = now_s();
	{
		uint64_t d0 = l.done;

		while (!dead_failed && now_s() - t_post0 < 3.0 * (double)timeout_ms / 1000) {
			step(&l, &dead_failed, &dead_bad, &t_last);
			if (((l.done ^ d0) & 1023) == 0) {
				long rss = proc_status_kb("VmRSS:");

				if (rss > rss_peak)
					rss_peak = rss;
			}
		}
		during = (double)(l.done - d0) / (now_s() - t_during0);
	}
	{
		long rss = proc_status_kb("VmRSS:");

		if (rss > rss_peak)
			rss_peak = rss;
	}
	while (dead_failed + dead_bad < n && now_s() - t_post0 < 10.0 * (double)timeout_ms / 1000)
		step(&l, &dead_failed, &dead_bad, &t_last);
	after = rate_over(&l, 1.0, &dead_failed, &dead_bad, &t_last);

	printf("unreachable peers: %ld, peer timeout %ld ms\n", n, timeout_ms);
	printf("  posting a send to each: %.3f s (%.1f us a send)\n", t_post, t_post * 1e6 / (double)n);
	printf("  failed FI_EHOSTUNREACH: %ld; otherwise: %ld; the last %.3f s after the first post "
	       "(%.2fx the peer timeout)\n", dead_failed, dead_bad,
	       t_last ? t_last - t_post0 : -1.0, t_last ? (t_last - t_post0) * 1000 / (double)timeout_ms : -1.0);
	printf("  resident memory while they were pending: +%.1f MiB, %.1f KiB a peer\n",
	       (double)(rss_peak - rss0) / 1024, (double)(rss_peak - rss0) / (double)n);
	printf("live peer, 4 KiB messages (window %d): before %.0f msg/s, while pending %.0f msg/s "
	       "(%.2fx), after %.0f msg/s (%.2fx)\n", WIN, before, during, during / before, after,
	       after / before);
	printf("target: every send to an unreachable peer fails with "
	       "FI_EHOSTUNREACH within about one peer timeout: %s\n",
	       dead_failed == n && t_last - t_post0 <= 1.5 * (double)timeout_ms / 1000 ? "met" : "missed");
	conn_close(&b);
	conn_close(&a);
	free(dead);
	return dead_failed == n ? 0 : BENCH_EXIT_FAIL;
}
