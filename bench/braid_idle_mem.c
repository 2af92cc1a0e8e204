/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * braid_idle_mem.c: a receiver that heard from N peers once returns to its
 * size when they go quiet. A native RDM endpoint on
 * loopback takes one 64-byte message from each of N peers (endpoints of
 * P child processes, one path each) and reports its resident memory (and
 * its engine's pools) at start, when every message was in, after the
 * peers were quiet for the idle timeout (FI_BRAID_IDLE_MS, 2000 here: each
 * peer kept as an idle record), and once the records were forgotten
 * (FI_BRAID_FORGET_MS, 1000 here unless set: the peers, closed, do not
 * answer the asks, so their records go alone after about four forget times).
 *
 *   braid_idle_mem [-n N] [-P PROCS]
 * Run: FI_PROVIDER_PATH=build/providers build/bench/braid_idle_mem -n 10000 -P 4
 * -x: an exchange: each message carries its sender's name, which the
 *     receiver inserts into its AV (FI_AV_TABLE) and answers (e.g.
 *     build/bench/braid_idle_mem -x -n 100000 -P 12)
 * (BRAID_IDLE_MEM_STATS=1: glibc's malloc_stats() at the end, on stderr)
 */
#include <arpa/inet.h>
#include <getopt.h>
#include <ifaddrs.h>
#include <malloc.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <rdma/fi_braid.h>

#include "bench_common.h"
#include "braid_cli.h"

#define IDLE_MS	2000
#define RX_POSTED	512
#define REPLY		((uintptr_t)1 << 40)

static const char thanks[8] = "thanks";

static uint64_t value(struct conn *c, const char *name)
{
	struct fi_braid_stat_ops *ops;
	uint64_t v = 0;

	if (!fi_open_ops(&c->ep->fid, FI_BRAID_STAT_OPS, 0, (void **)&ops, NULL))
		(void)ops->value(&c->ep->fid, name, &v);
	return v;
}

/* Is @ip an address of one of this host's interfaces (what braid's fi_getinfo serves)? */
static bool have_addr(const char *ip)
{
	struct ifaddrs *list, *i;
	struct in_addr want;
	bool found = false;

	if (inet_pton(AF_INET, ip, &want) != 1 || getifaddrs(&list))
		return false;
	for (i = list; i && !found; i = i->ifa_next)
		found = i->ifa_addr && i->ifa_addr->sa_family == AF_INET &&
			((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr == want.s_addr;
	freeifaddrs(list);
	return found;
}

/*
 * A child (forked before the receiver opened anything): reads the receiver's
 * name from @fd, then @n sender endpoints in one domain send a message each
 * to it, and go.
 */
static int child(int fd, long n, bool exchange, int idx)
{
	char ip[32];
	struct conn base, *eps = calloc((size_t)n, sizeof(*eps));
	uint8_t name[128];
	long i;

	if (!eps || read(fd, name, sizeof(name)) != (ssize_t)sizeof(name))
		return BENCH_EXIT_SETUP;
	/* a loopback address of its own where there is one (bench/braid_peers.sh adds them:
	 * 100,000 endpoints' ports would not fit one address), else 127.0.0.1 */
	snprintf(ip, sizeof(ip), "127.10.%d.1", idx);
	if (!have_addr(ip))
		snprintf(ip, sizeof(ip), "127.0.0.1");
	/* a peer is a host of its own: it sleeps until one of its endpoints has a packet
	 * (each CQ's FI_WAIT_FD in one epoll set), so that thousands of peers on the
	 * receiver's two cores do not spin against it */
	bench_cq_wait = FI_WAIT_FD;
	/* nor does a progress thread drive thousands of endpoints on them: a peer's
	 * timers run in its own loop below (this process's first braid call reads it) */
	if (!getenv("BRAID_PEERS_PROGRESS_US"))
		setenv("FI_BRAID_PROGRESS_US", "0", 1);
	conn_open(&base, "braid", ip, 128);
	for (i = 0; i < n; i++) {
		size_t len = 64;

		conn_open_in(&eps[i], &base, 128);
		eps[i].timeout_s = 600;	/* the receiver serves the whole herd in turn */
		conn_insert(&eps[i], name);
		memset(eps[i].buf, 0, 128);
		/* -x: the message carries the sender's name, for the receiver's answer */
		conn_name(&eps[i], eps[i].buf, &len);
		if (exchange)
			trecv(&eps[i], FI_ADDR_UNSPEC, eps[i].buf + 64, 64, 2, NULL);
		tsend(&eps[i], eps[i].peer, eps[i].buf, 64, 1, NULL);
	}
	/* an endpoint is progressed when its sockets have a packet, and every endpoint
	 * once a second for its timers (a peer is a process of its own: none waits on
	 * another), done or not: a done peer still acknowledges what it receives (the
	 * receiver's answer, resent if our ACK was held or lost), as a live process does.
	 * Then a second more of the same before the endpoints close. */
	{
		long left = n * (exchange ? 2 : 1);
		double linger_from = 0;
		int *need = calloc((size_t)n, sizeof(*need));
		int *wfd = calloc((size_t)n, sizeof(*wfd));
		int epfd = epoll_create1(EPOLL_CLOEXEC);
		double t0 = now_s(), swept = 0;

		if (!need || !wfd || epfd < 0)
			return BENCH_EXIT_SETUP;
		for (i = 0; i < n; i++) {
			struct epoll_event ev = { .events = EPOLLIN, .data.u64 = (uint64_t)i };

			need[i] = exchange ? 2 : 1;
			if (fi_control(&eps[i].cq->fid, FI_GETWAIT, &wfd[i]) ||
			    epoll_ctl(epfd, EPOLL_CTL_ADD, wfd[i], &ev))
				return BENCH_EXIT_SETUP;
		}
		while (left > 0 || now_s() - linger_from < 1.0) {
			struct epoll_event evs[256];
			int k, got = epoll_wait(epfd, evs, 256, 100);
			bool sweep = now_s() - swept >= 1.0;

			for (k = 0; k < (sweep ? (int)n : got); k++) {
				struct fi_cq_tagged_entry e;
				ssize_t r;

				i = sweep ? k : (long)evs[k].data.u64;
				r = fi_cq_read(eps[i].cq, &e, 1);
				if (r == 1) {
					need[i]--;
					if (!--left)
						linger_from = now_s();
				} else if (r != -FI_EAGAIN) {
					struct fi_cq_err_entry err = { 0 };

					(void)fi_cq_readerr(eps[i].cq, &err, 0);
					fprintf(stderr, "a peer's completion failed: %s (%s)\n",
						fi_strerror((int)-r), fi_strerror(err.err));
					return BENCH_EXIT_FAIL;
				}
			}
			if (sweep)
				swept = now_s();
			if (now_s() - t0 > 900) {
				fprintf(stderr, "a peer: %ld completions missing after 900 s\n", left);
				return BENCH_EXIT_FAIL;
			}
		}
		free(need);
		free(wfd);
		close(epfd);
	}
	for (i = 0; i < n; i++)
		conn_close(&eps[i]);
	conn_close(&base);
	free(eps);
	return 0;
}

/* BRAID_IDLE_MEM_SMAPS=DIR: /proc/self/smaps into DIR/smaps.@when (where the memory is) */
static void smaps_save(const char *when)
{
	const char *dir = getenv("BRAID_IDLE_MEM_SMAPS");
	char path[512], buf[4096];
	FILE *in, *out;
	size_t k;

	if (!dir)
		return;
	snprintf(path, sizeof(path), "%s/smaps.%s", dir, when);
	in = fopen("/proc/self/smaps", "r");
	out = fopen(path, "w");
	while (in && out && (k = fread(buf, 1, sizeof(buf), in)) > 0)
		fwrite(buf, 1, k, out);
	if (in)
		fclose(in);
	if (out)
		fclose(out);
}

static void usage(FILE *out)
{
	fprintf(out, "usage: braid_idle_mem [-n N] [-P PROCS] [-x]\n"
		"A braid RDM endpoint takes one message from each of N peers (endpoints of PROCS\n"
		"child processes) and reports its memory at start, with every message in, once the\n"
		"peers were idle and once their records were forgotten. Needs FI_PROVIDER_PATH to\n"
		"find braid.\n"
		"  -n N        peers, at least PROCS (default 10,000)\n"
		"  -P PROCS    sending processes, 1 to 64 (default 4)\n"
		"  -x          an exchange: the receiver inserts each sender into its AV and answers\n"
		"  -h, --help  this text\n");
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 },
	};
	long n = 10000, procs = 4, i, got = 0, rss0, rss1, rss2, rss3;
	uint64_t flows1, flows2, peers2, idle2, peers3;
	struct conn rx;
	uint8_t name[128];
	size_t len = sizeof(name);
	pid_t *kids;
	int (*pipes)[2];
	double t0, t1, t2, t3;
	long peer_timeout_ms, forget_ms;
	char env[32];
	int c, status, fails = 0;
	bool exchange = false;
	long replies = 0;

	while ((c = getopt_long(argc, argv, "n:P:xh", longopts, NULL)) != -1) {
		switch (c) {
		case 'n':
			if (!braid_cli_long(optarg, 1, 100000000, &n))
				return braid_cli_bad(usage, "braid_idle_mem", "-n", optarg,
						     "1 to 100,000,000 peers");
			break;
		case 'P':
			if (!braid_cli_long(optarg, 1, 64, &procs))
				return braid_cli_bad(usage, "braid_idle_mem", "-P", optarg,
						     "1 to 64 processes");
			break;
		case 'x': exchange = true; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return BENCH_EXIT_USAGE;
		}
	}
	if (braid_cli_extra(usage, "braid_idle_mem", argc, argv))
		return BENCH_EXIT_USAGE;
	if (n < procs) {
		fprintf(stderr, "braid_idle_mem: -n %ld is fewer peers than -P %ld processes\n",
			n, procs);
		usage(stderr);
		return BENCH_EXIT_USAGE;
	}
	setenv("FI_BRAID_PATHS", "1", 0);
	snprintf(env, sizeof(env), "%d", IDLE_MS);
	setenv("FI_BRAID_IDLE_MS", env, 1);
	setenv("FI_BRAID_MAX_PEERS", "0", 0);
	setenv("FI_BRAID_FORGET_MS", "1000", 0);
	forget_ms = strtol(getenv("FI_BRAID_FORGET_MS"), NULL, 0);
	/* every sender starts at once: the receiver serves the herd's first contacts in turn,
	 * and a sender must not give up on it meanwhile */
	setenv("FI_BRAID_PEER_TIMEOUT_MS", "60000", 0);
	peer_timeout_ms = strtol(getenv("FI_BRAID_PEER_TIMEOUT_MS"), NULL, 0);
	kids = calloc((size_t)procs, sizeof(*kids));
	pipes = calloc((size_t)procs, sizeof(*pipes));
	for (i = 0; i < procs; i++) {
		if (pipe(pipes[i]))
			return BENCH_EXIT_SETUP;
		kids[i] = fork();
		if (kids[i] == 0)
			_exit(child(pipes[i][0], n / procs + (i < n % procs), exchange, (int)i));
	}
	conn_open(&rx, "braid", "127.0.0.1", 64 * RX_POSTED);
	memset(name, 0, sizeof(name));
	conn_name(&rx, name, &len);
	memset(rx.buf, 0, 64 * RX_POSTED);	/* the application's buffer is not braid's state */
	for (i = 0; i < RX_POSTED; i++)
		trecv(&rx, FI_ADDR_UNSPEC, rx.buf + 64 * i, 64, 1, (void *)(uintptr_t)i);
	usleep(200 * 1000);
	(void)fi_cq_read(rx.cq, NULL, 0);
	rss0 = proc_status_kb("VmRSS:");
	smaps_save("start");

	t0 = now_s();
	for (i = 0; i < procs; i++)
		if (write(pipes[i][1], name, sizeof(name)) != (ssize_t)sizeof(name))
			return BENCH_EXIT_SETUP;
	rx.timeout_s = 120;
	while (got < n || replies < (exchange ? n : 0)) {
		struct fi_cq_tagged_entry e[64];
		ssize_t r = fi_cq_read(rx.cq, e, 64);

		for (ssize_t k = 0; k < r; k++) {
			uintptr_t slot = (uintptr_t)e[k].op_context;
			fi_addr_t from;

			if (slot == REPLY) {
				replies++;
				continue;
			}
			got++;
			/* -x: the sender into the AV, and an answer to it */
			if (exchange) {
				if (fi_av_insert(rx.av, rx.buf + 64 * slot, 1, &from, 0, NULL) != 1)
					return BENCH_EXIT_FAIL;
				tsend(&rx, from, thanks, sizeof(thanks), 2, (void *)REPLY);
			}
			/* the receive goes back (a receiver keeps a fixed number posted) */
			trecv(&rx, FI_ADDR_UNSPEC, rx.buf + 64 * slot, 64, 1, e[k].op_context);
		}
		if (r < 0 && r != -FI_EAGAIN) {
			fprintf(stderr, "receive failed: %s\n", fi_strerror((int)-r));
			return BENCH_EXIT_FAIL;
		}
		if (now_s() - t0 > 300) {
			fprintf(stderr, "only %ld of %ld messages in 300 s\n", got, n);
			return BENCH_EXIT_FAIL;
		}
	}
	t1 = now_s();
	rss1 = proc_status_kb("VmRSS:");
	flows1 = value(&rx, "rd.flows_active");
	for (i = 0; i < procs; i++) {
		waitpid(kids[i], &status, 0);
		fails += !WIFEXITED(status) || WEXITSTATUS(status);
	}
	/* quiet: the endpoint is progressed (its CQ read) while the idle time passes, and
	 * longer while peers keep more than their idle records: an unproven peer that
	 * delivered data is kept for the peer timeout (its copies must not be taken again) */
	while (now_s() - t1 < (double)IDLE_MS / 1000 * 1.6 ||
	       (value(&rx, "rd.peers") > value(&rx, "rd.peers_idle") &&
		now_s() - t1 < (double)peer_timeout_ms / 1000 * 1.6)) {
		(void)fi_cq_read(rx.cq, NULL, 0);
		usleep(1000);
	}
	t2 = now_s();
	rss2 = proc_status_kb("VmRSS:");
	flows2 = value(&rx, "rd.flows_active");
	peers2 = value(&rx, "rd.peers");
	idle2 = value(&rx, "rd.peers_idle");
	/* the records rest for the forget time, their peers are asked twice (a forget time
	 * apart) and, closed, do not answer: forgotten alone (FI_BRAID_FORGET_MS 0: kept) */
	while (forget_ms && value(&rx, "rd.peers") &&
	       now_s() - t2 < (double)forget_ms / 1000 * 6 + 1) {
		(void)fi_cq_read(rx.cq, NULL, 0);
		usleep(1000);
	}
	(void)fi_cq_read(rx.cq, NULL, 0);
	t3 = now_s();
	rss3 = proc_status_kb("VmRSS:");
	smaps_save("forgotten");
	peers3 = value(&rx, "rd.peers");
	if (getenv("BRAID_IDLE_MEM_STATS"))
		malloc_stats();

	printf("receiver %s %ld peers (%ld processes, one path each) in %.2f s: "
	       "%.0f first contacts a second\n", exchange ? "exchanged a message each way with" :
	       "heard once from", n, procs, t1 - t0, (double)n / (t1 - t0));
	printf("  resident: start %ld KiB, all in %ld KiB (+%ld, %ld traffic states), after %.0f ms "
	       "quiet %ld KiB (+%ld: %.1f%% over start; %lu traffic states, %lu peers kept, %lu of them "
	       "idle records)\n",
	       rss0, rss1, rss1 - rss0, (long)flows1, (t2 - t1) * 1000, rss2, rss2 - rss0,
	       100.0 * (double)(rss2 - rss0) / (double)rss0, (unsigned long)flows2,
	       (unsigned long)peers2, (unsigned long)idle2);
	printf("  idle state per peer kept: %.0f bytes\n", 1024.0 * (double)(rss2 - rss0) / (double)n);
	printf("  records forgotten after %.0f ms more (FI_BRAID_FORGET_MS %ld): %ld KiB (+%ld: %.1f%% "
	       "over start; %lu peers kept, %lu forgotten)\n", (t3 - t2) * 1000, forget_ms, rss3,
	       rss3 - rss0, 100.0 * (double)(rss3 - rss0) / (double)rss0, (unsigned long)peers3,
	       (unsigned long)value(&rx, "rd.peers_forgotten"));
	/* (-x: the receiver's AV keeps every sender, as the application asked) */
	if (!exchange)
		printf("target: back within 10%% of its starting memory after the "
		       "idle and forget timeouts: %s\n",
		       forget_ms && rss3 - rss0 <= rss0 / 10 ? "met" : "missed");
	conn_close(&rx);
	free(kids);
	free(pipes);
	return fails ? BENCH_EXIT_FAIL : 0;
}
