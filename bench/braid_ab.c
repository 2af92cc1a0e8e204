/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * braid_ab.c: one side of an A/B measurement over any libfabric RDM provider,
 * between two hosts (or namespaces), with a TCP control channel: ping-pong
 * latency percentiles, streaming goodput (optionally with a timeline) and
 * message rate, every payload byte optionally checked. tools/ab drives it.
 *
 *   server: braid_ab -p PROV -a LOCAL_IP -C CTRL_PORT [-k NCLIENTS]
 *   client: braid_ab -p PROV -a LOCAL_IP -c SERVER_IP -C CTRL_PORT -m lat|bw|rate|write
 *                    [-s SIZE] [-n ITERS] [-t SECONDS] [-w WINDOW] [-i INTERVAL_MS]
 *                    [-o SAMPLES_FILE] [-v] [-T TIMEOUT_S]
 *
 * write: RMA goodput: fi_writedata of SIZE into the server's registered
 * buffer, WINDOW at a time, each write's id as its remote CQ data; the
 * server counts the writes by their CQ entries (exactly once) and, with -v,
 * checks the last write of every buffer slot byte by byte.
 *
 * The client chooses the measurement and tells the server. Both print one
 * line "result key=value ..."; bw/rate with -i also "tick t_ms=.. bytes=..
 * gbps=.." lines (the server's receive timeline). Exit: 0, 1 (a failed check,
 * an error completion, a timeout), 2 (usage), 3 (no such provider, setup).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <rdma/fi_rma.h>

#include "bench_common.h"
#include "braid_cli.h"

#define TAG_DATA	5
#define TAG_PING	3
#define TAG_PONG	4
#define MAX_CLIENTS	16
#define MAX_WINDOW	1024
#define MAX_TICKS	100000
#define WARMUP		100

enum mode { M_LAT, M_BW, M_RATE, M_WRITE };

static const char *const mode_names[] = { "lat", "bw", "rate", "write" };

/* what the client asks of the server (sent once over the control channel) */
struct request {
	uint32_t mode, window, interval_ms, verify, client_id, iters;
	uint64_t size;
	double seconds;
	size_t name_len;
	char name[128];
};

/* what the server answers at the end of a bw/rate run */
struct reply {
	uint64_t bytes, msgs, errors, dups;
	/* t0: CLOCK_MONOTONIC at the first receive (namespaces share the clock: tools/ab
	 * places the ticks, which count from it, on its own timeline) */
	double seconds, t0;
	uint32_t nticks, interval_ms;
};

static void die(const char *what)
{
	perror(what);
	exit(BENCH_EXIT_SETUP);
}

static void xwrite(int fd, const void *p, size_t n)
{
	const uint8_t *b = p;

	while (n) {
		ssize_t r = write(fd, b, n);

		if (r <= 0)
			die("control write");
		b += r;
		n -= (size_t)r;
	}
}

static void xread(int fd, void *p, size_t n)
{
	uint8_t *b = p;

	while (n) {
		ssize_t r = read(fd, b, n);

		if (r <= 0) {
			fprintf(stderr, "control channel closed\n");
			exit(BENCH_EXIT_FAIL);
		}
		b += r;
		n -= (size_t)r;
	}
}

/*
 * ctl_read() - read @n bytes of the control channel while driving the
 * endpoint's progress. braid's progress is manual (FI_PROGRESS_MANUAL): the
 * peer's operations move only while we call into libfabric, e.g. its last
 * rendezvous message waiting for our RC ACK (a lost ACK is answered only
 * when the retransmission finds us polling); blocking in read() here failed
 * the peer's QP after its retries. Completions read here are not counted
 * (the data phase decided the result); an error entry is reported, not
 * fatal. Returns false when the channel closed first.
 */
static bool ctl_read(struct conn *c, int fd, void *p, size_t n)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	uint8_t *b = p;

	while (n) {
		struct fi_cq_tagged_entry e[16];
		ssize_t r = bench_cq_next(c, e, 16);

		if (r == -FI_EAVAIL) {
			struct fi_cq_err_entry err = { 0 };

			fi_cq_readerr(c->cq, &err, 0);
			fprintf(stderr, "after the data phase: completion error: %s\n",
				fi_strerror(err.err));
		}
		if (poll(&pfd, 1, 0) <= 0)
			continue;
		r = read(fd, b, n);
		if (r <= 0)
			return false;
		b += r;
		n -= (size_t)r;
	}
	return true;
}

/* ctl_read() that ends the process when the channel closed */
static void ctl_xread(struct conn *c, int fd, void *p, size_t n)
{
	if (!ctl_read(c, fd, p, n)) {
		fprintf(stderr, "control channel closed\n");
		exit(BENCH_EXIT_FAIL);
	}
}

/* ---- payload pattern: 8 bytes of (client << 40 | index), then bytes derived from both ---- */

static uint8_t pat(uint64_t id, size_t j)
{
	return (uint8_t)(id * 7 + j * 13 + (id >> 40));
}

static void fill(uint8_t *b, size_t size, uint64_t id)
{
	size_t j = 0;

	if (size >= 8) {
		memcpy(b, &id, 8);
		j = 8;
	}
	for (; j < size; j++)
		b[j] = pat(id, j);
}

/* Check a received message; return its id, or UINT64_MAX when a byte is wrong. */
static uint64_t check(const uint8_t *b, size_t size, size_t expect)
{
	uint64_t id;
	size_t j;

	if (size != expect || size < 8)
		return UINT64_MAX;
	memcpy(&id, b, 8);
	for (j = 8; j < size; j++)
		if (b[j] != pat(id, j))
			return UINT64_MAX;
	return id;
}

/* exactly-once: one bit per (client, index) */
struct seen {
	uint8_t *bits[MAX_CLIENTS];
	size_t cap[MAX_CLIENTS];
};

/* Mark @id; return false if it was already marked (a duplicate). */
static bool seen_mark(struct seen *s, uint64_t id)
{
	unsigned c = (unsigned)(id >> 40) % MAX_CLIENTS;
	uint64_t i = id & ((1ULL << 40) - 1);

	if (i / 8 >= s->cap[c]) {
		size_t n = s->cap[c] ? s->cap[c] * 2 : 4096;

		while (n <= i / 8)
			n *= 2;
		s->bits[c] = realloc(s->bits[c], n);
		if (!s->bits[c])
			die("realloc");
		memset(s->bits[c] + s->cap[c], 0, n - s->cap[c]);
		s->cap[c] = n;
	}
	if (s->bits[c][i / 8] & (1u << (i % 8)))
		return false;
	s->bits[c][i / 8] |= (uint8_t)(1u << (i % 8));
	return true;
}

/* ---- server ---- */

static int listen_on(const char *ip, int port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;

	if (fd < 0 || inet_pton(AF_INET, ip, &sin.sin_addr) != 1)
		die("control socket");
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) || listen(fd, MAX_CLIENTS))
		die("control bind/listen");
	return fd;
}

static void server_lat(struct conn *c, const struct request *rq)
{
	struct fi_context ctx[2];
	uint8_t *sb = c->buf, *rb = c->buf + rq->size;
	uint32_t i;

	for (i = 0; i < rq->iters + WARMUP; i++) {
		trecv(c, c->peer, rb, rq->size, TAG_PING, &ctx[0]);
		wait_comps(c, 1, NULL);
		tsend(c, c->peer, sb, rq->size, TAG_PONG, &ctx[1]);
		wait_comps(c, 1, NULL);
	}
}

static void server_stream(struct conn *c, const struct request *rq, int *socks, int k,
			  bool print)
{
	static struct fi_context ctx[MAX_WINDOW];
	static uint64_t ticks[MAX_TICKS];
	size_t size = rq->size, slot;
	uint32_t window = rq->window;
	struct reply rp = { .interval_ms = rq->interval_ms };
	uint64_t expected = 0;
	int done = 0, i;
	double t0 = 0, tlast = 0, deadline;
	struct seen seen = { { 0 } };
	struct pollfd pfd[MAX_CLIENTS];

	bool rma = rq->mode == M_WRITE;
	static uint64_t last[MAX_WINDOW];

	for (slot = 0; slot < window && !rma; slot++)
		trecv(c, FI_ADDR_UNSPEC, c->buf + slot * size, size, TAG_DATA, &ctx[slot]);
	for (i = 0; i < k; i++)
		pfd[i] = (struct pollfd){ .fd = socks[i], .events = POLLIN };
	deadline = now_s() + rq->seconds + 60;
	/* until every client said how many it sent, and all of it arrived */
	while (done < k || rp.msgs + rp.errors < expected) {
		struct fi_cq_tagged_entry e[64];
		ssize_t n = bench_cq_next(c, e, 64);

		if (n == -FI_EAVAIL) {
			struct fi_cq_err_entry err = { 0 };

			fi_cq_readerr(c->cq, &err, 0);
			fprintf(stderr, "server: completion error: %s\n", fi_strerror(err.err));
			exit(BENCH_EXIT_FAIL);
		}
		for (i = 0; i < n; i++) {
			double t = now_s();

			if (!t0)
				t0 = t;
			tlast = t;
			if (rma) {
				/* a remote write's CQ entry: its id is the CQ data */
				if (!(e[i].flags & FI_REMOTE_CQ_DATA))
					continue;
				if (!seen_mark(&seen, e[i].data))
					rp.dups++;
				rp.msgs++;
				rp.bytes += size;
				if (rq->interval_ms) {
					uint64_t b = (uint64_t)((t - t0) * 1000 / rq->interval_ms);

					if (b < MAX_TICKS) {
						ticks[b] += size;
						if (b + 1 > rp.nticks)
							rp.nticks = (uint32_t)(b + 1);
					}
				}
				continue;
			}
			slot = (size_t)((struct fi_context *)e[i].op_context - ctx);
			if (rq->verify) {
				uint64_t id = check(e[i].buf, e[i].len, size);

				if (id == UINT64_MAX)
					rp.errors++;
				else if (!seen_mark(&seen, id))
					rp.dups++;
			}
			rp.msgs++;
			rp.bytes += e[i].len;
			if (rq->interval_ms) {
				uint64_t b = (uint64_t)((t - t0) * 1000 / rq->interval_ms);

				if (b < MAX_TICKS) {
					ticks[b] += e[i].len;
					if (b + 1 > rp.nticks)
						rp.nticks = (uint32_t)(b + 1);
				}
			}
			trecv(c, FI_ADDR_UNSPEC, c->buf + slot * size, size, TAG_DATA, &ctx[slot]);
		}
		if (n <= 0 && done < k && poll(pfd, (nfds_t)k, 0) > 0) {
			for (i = 0; i < k; i++) {
				uint64_t sent;

				if (!(pfd[i].revents & POLLIN) || pfd[i].fd < 0)
					continue;
				xread(socks[i], &sent, sizeof(sent));
				if (rma)	/* the id of the last write into each slot */
					xread(socks[i], last, window * sizeof(last[0]));
				expected += sent;
				pfd[i].fd = -1;
				done++;
			}
		}
		if (now_s() > deadline) {
			fprintf(stderr, "server: timeout: %lu of %lu messages\n",
				(unsigned long)rp.msgs, (unsigned long)expected);
			exit(BENCH_EXIT_FAIL);
		}
	}
	rp.seconds = tlast > t0 ? tlast - t0 : 0;
	rp.t0 = t0;
	/* every write is delivered (its CQ entry came after its bytes): the last of each slot holds */
	for (slot = 0; rma && rq->verify && slot < window; slot++)
		if (last[slot] != UINT64_MAX && check(c->buf + slot * size, size, size) != last[slot])
			rp.errors++;
	for (i = 0; i < k; i++) {
		xwrite(socks[i], &rp, sizeof(rp));
		xwrite(socks[i], ticks, rp.nticks * sizeof(ticks[0]));
	}
	if (print) {
		for (uint32_t b = 0; b < rp.nticks; b++)
			printf("tick t_ms=%u bytes=%lu gbps=%.3f\n", b * rq->interval_ms,
			       (unsigned long)ticks[b], ticks[b] * 8.0 / (rq->interval_ms * 1e6));
		printf("result role=server mode=%s clients=%d size=%lu seconds=%.3f bytes=%lu "
		       "goodput_gbps=%.3f msgs=%lu msgs_per_s=%.0f errors=%lu dups=%lu\n",
		       mode_names[rq->mode], k, (unsigned long)size, rp.seconds,
		       (unsigned long)rp.bytes, rp.seconds ? rp.bytes * 8 / rp.seconds / 1e9 : 0,
		       (unsigned long)rp.msgs, rp.seconds ? rp.msgs / rp.seconds : 0,
		       (unsigned long)rp.errors, (unsigned long)rp.dups);
	}
	for (i = 0; i < MAX_CLIENTS; i++)
		free(seen.bits[i]);
	if (rp.errors || rp.dups)
		exit(BENCH_EXIT_FAIL);
}

static int run_server(const char *prov, const char *ip, int port, int k)
{
	int lfd = listen_on(ip, port), socks[MAX_CLIENTS], i;
	struct request rq[MAX_CLIENTS];
	struct conn c;
	char name[128];
	size_t len = sizeof(name);

	for (i = 0; i < k; i++) {
		socks[i] = accept(lfd, NULL, NULL);
		if (socks[i] < 0)
			die("accept");
		xread(socks[i], &rq[i], sizeof(rq[i]));
	}
	if (rq[0].size > (1u << 30) || rq[0].window > MAX_WINDOW || !rq[0].window)
		return BENCH_EXIT_USAGE;
	if (rq[0].mode == M_WRITE && k != 1)
		return BENCH_EXIT_USAGE;
	conn_open_caps(&c, prov, ip, (size_t)rq[0].size * (rq[0].window + 1) + 64,
		       FI_TAGGED | (rq[0].mode == M_WRITE ? FI_RMA : 0));
	conn_name(&c, name, &len);
	for (i = 0; i < k; i++) {
		conn_insert(&c, rq[i].name);
		xwrite(socks[i], &len, sizeof(len));
		xwrite(socks[i], name, len);
	}
	if (rq[0].mode == M_WRITE) {
		/* the target: its key, and its address as the provider names it (virtual or offset) */
		uint64_t target[2] = { c.key, (c.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR) ?
					      (uint64_t)(uintptr_t)c.buf : 0 };

		xwrite(socks[0], target, sizeof(target));
	}
	if (rq[0].mode == M_LAT) {
		char b;

		/* our last send is acknowledged; the client's may wait for our ACK */
		server_lat(&c, &rq[0]);
		ctl_xread(&c, socks[0], &b, 1);
		xwrite(socks[0], "d", 1);
	} else {
		server_stream(&c, &rq[0], socks, k, true);
	}
	/* the clients close first (their last sends may need our acknowledgements) */
	for (i = 0; i < k; i++) {
		char b;

		(void)ctl_read(&c, socks[i], &b, 1);
		close(socks[i]);
	}
	conn_close(&c);
	return 0;
}

/* ---- client ---- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double pct(const double *v, uint32_t n, double p)
{
	size_t i = (size_t)ceil(p * n) - 1;

	return v[i < n ? i : n - 1];
}

static int client_lat(struct conn *c, const struct request *rq, const char *prov,
		      const char *samples)
{
	struct fi_context ctx[2];
	uint8_t *sb = c->buf, *rb = c->buf + rq->size;
	double *v = malloc(rq->iters * sizeof(*v)), sum = 0;
	uint32_t i;

	if (!v)
		die("malloc");
	for (i = 0; i < rq->iters + WARMUP; i++) {
		double t = now_s();

		trecv(c, c->peer, rb, rq->size, TAG_PONG, &ctx[0]);
		tsend(c, c->peer, sb, rq->size, TAG_PING, &ctx[1]);
		wait_comps(c, 2, NULL);
		if (i >= WARMUP)
			v[i - WARMUP] = (now_s() - t) / 2 * 1e6;
	}
	if (samples) {
		FILE *f = fopen(samples, "w");

		if (!f)
			die(samples);
		for (i = 0; i < rq->iters; i++)
			fprintf(f, "%.3f\n", v[i]);
		fclose(f);
	}
	for (i = 0; i < rq->iters; i++)
		sum += v[i];
	qsort(v, rq->iters, sizeof(*v), cmp_double);
	printf("result mode=lat prov=%s size=%lu iters=%u p50_us=%.2f p99_us=%.2f p999_us=%.2f "
	       "mean_us=%.2f min_us=%.2f max_us=%.2f\n", prov, (unsigned long)rq->size, rq->iters,
	       pct(v, rq->iters, 0.5), pct(v, rq->iters, 0.99), pct(v, rq->iters, 0.999),
	       sum / rq->iters, v[0], v[rq->iters - 1]);
	free(v);
	return 0;
}

/* Send slot @slot's buffer: a tagged message, or (write) an RMA write with its id as CQ data. */
static void stream_post(struct conn *c, const struct request *rq, size_t slot, uint64_t id,
			struct fi_context *ctx, const uint64_t *target, uint64_t *last)
{
	size_t size = rq->size;
	ssize_t r;

	if (rq->mode != M_WRITE) {
		tsend(c, c->peer, c->buf + slot * size, size, TAG_DATA, ctx);
		return;
	}
	last[slot] = id;
	while ((r = fi_writedata(c->ep, c->buf + slot * size, size, c->desc, id, c->peer,
				 target[1] + slot * size, target[0], ctx)) == -FI_EAGAIN)
		(void)fi_cq_read(c->cq, NULL, 0);
	TRY(r);
}

static int client_stream(struct conn *c, const struct request *rq, const char *prov, int sock,
			 const uint64_t *target)
{
	static struct fi_context ctx[MAX_WINDOW];
	static uint64_t ticks[MAX_TICKS], last[MAX_WINDOW];
	uint64_t sent = 0, id = (uint64_t)rq->client_id << 40;
	size_t size = rq->size, slot;
	uint32_t outstanding = 0, b;
	struct reply rp;
	double t_end = now_s() + rq->seconds;

	for (slot = 0; slot < rq->window; slot++)
		last[slot] = UINT64_MAX;
	for (slot = 0; slot < rq->window; slot++) {
		if (rq->verify)
			fill(c->buf + slot * size, size, id + sent);
		stream_post(c, rq, slot, id + sent, &ctx[slot], target, last);
		sent++;
		outstanding++;
	}
	while (outstanding) {
		struct fi_cq_tagged_entry e[64];
		ssize_t n = bench_cq_next(c, e, 64), i;

		if (n == -FI_EAVAIL) {
			struct fi_cq_err_entry err = { 0 };

			fi_cq_readerr(c->cq, &err, 0);
			fprintf(stderr, "client: completion error: %s\n", fi_strerror(err.err));
			return BENCH_EXIT_FAIL;
		}
		for (i = 0; i < n; i++) {
			outstanding--;
			if (now_s() >= t_end)
				continue;
			slot = (size_t)((struct fi_context *)e[i].op_context - ctx);
			if (rq->verify)
				fill(c->buf + slot * size, size, id + sent);
			stream_post(c, rq, slot, id + sent, &ctx[slot], target, last);
			sent++;
			outstanding++;
		}
		if (now_s() > t_end + c->timeout_s) {
			fprintf(stderr, "client: timeout: %u sends outstanding\n", outstanding);
			return BENCH_EXIT_FAIL;
		}
	}
	xwrite(sock, &sent, sizeof(sent));
	if (rq->mode == M_WRITE)
		xwrite(sock, last, rq->window * sizeof(last[0]));
	/* the server may still need us: its last rendezvous messages wait for our ACKs */
	ctl_xread(c, sock, &rp, sizeof(rp));
	if (rp.nticks > MAX_TICKS)
		return BENCH_EXIT_FAIL;
	ctl_xread(c, sock, ticks, rp.nticks * sizeof(ticks[0]));
	for (b = 0; b < rp.nticks; b++)
		printf("tick t_ms=%u bytes=%lu gbps=%.3f\n", b * rp.interval_ms,
		       (unsigned long)ticks[b], ticks[b] * 8.0 / (rp.interval_ms * 1e6));
	printf("result mode=%s prov=%s size=%lu seconds=%.3f t0=%.6f bytes=%lu goodput_gbps=%.3f "
	       "msgs=%lu msgs_per_s=%.0f sent=%lu errors=%lu dups=%lu\n",
	       mode_names[rq->mode], prov, (unsigned long)size, rp.seconds, rp.t0,
	       (unsigned long)rp.bytes, rp.seconds ? rp.bytes * 8 / rp.seconds / 1e9 : 0,
	       (unsigned long)rp.msgs, rp.seconds ? rp.msgs / rp.seconds : 0, (unsigned long)sent,
	       (unsigned long)rp.errors, (unsigned long)rp.dups);
	return rp.errors || rp.dups ? BENCH_EXIT_FAIL : 0;
}

static int run_client(const char *prov, const char *ip, const char *server, int port,
		      struct request *rq, const char *samples, double timeout)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	struct conn c;
	char theirs[128];
	uint64_t target[2] = { 0, 0 };
	size_t len;
	int sock = -1, tries, ret;

	if (inet_pton(AF_INET, server, &sin.sin_addr) != 1)
		return BENCH_EXIT_USAGE;
	/* the server may still be starting: retry for a few seconds */
	for (tries = 0; tries < 100; tries++) {
		sock = socket(AF_INET, SOCK_STREAM, 0);
		if (!connect(sock, (struct sockaddr *)&sin, sizeof(sin)))
			break;
		close(sock);
		sock = -1;
		usleep(50000);
	}
	if (sock < 0)
		die("control connect");
	conn_open_caps(&c, prov, ip, (size_t)rq->size * (rq->window + 1) + 64,
		       FI_TAGGED | (rq->mode == M_WRITE ? FI_RMA : 0));
	c.timeout_s = timeout;
	rq->name_len = sizeof(rq->name);
	conn_name(&c, rq->name, &rq->name_len);
	xwrite(sock, rq, sizeof(*rq));
	xread(sock, &len, sizeof(len));
	if (len > sizeof(theirs))
		return BENCH_EXIT_SETUP;
	xread(sock, theirs, len);
	conn_insert(&c, theirs);
	if (rq->mode == M_WRITE)
		xread(sock, target, sizeof(target));
	if (rq->mode == M_LAT) {
		char b;

		ret = client_lat(&c, rq, prov, samples);
		/* the server's last send waits for our ACK: close only when it is done */
		xwrite(sock, "d", 1);
		ctl_xread(&c, sock, &b, 1);
	} else {
		ret = client_stream(&c, rq, prov, sock, target);
	}
	fflush(stdout);
	conn_close(&c);
	xwrite(sock, "x", 1);
	close(sock);
	return ret;
}

static void usage(FILE *out)
{
	fprintf(out, "usage: braid_ab -p PROV -a LOCAL_IP -C CTRL_PORT [-k NCLIENTS]   (server)\n"
		"       braid_ab -p PROV -a LOCAL_IP -c SERVER_IP -C CTRL_PORT -m lat|bw|rate|write\n"
		"                [-s SIZE] [-n ITERS] [-t SECONDS] [-w WINDOW] [-i INTERVAL_MS]\n"
		"                [-o SAMPLES_FILE] [-v] [-I CLIENT_ID] [-T TIMEOUT_S]   (client)\n"
		"       either side: [-b]\n"
		"One side of an A/B measurement over a libfabric RDM provider, with a TCP control\n"
		"channel; the client chooses the measurement. Both print a line \"result key=value ...\".\n"
		"  -p PROV         the provider (\"tcp\" means tcp;ofi_rxm)\n"
		"  -a LOCAL_IP     the local address of the endpoint and control channel\n"
		"  -C CTRL_PORT    the server's TCP control port\n"
		"  -k NCLIENTS     server: clients to serve, 1 to %d (default 1)\n"
		"  -c SERVER_IP    client: the server to measure against\n"
		"  -m MODE         lat (ping-pong percentiles), bw (streaming goodput, default),\n"
		"                  rate (8-byte message rate), write (RMA goodput)\n"
		"  -s SIZE         message size in bytes, up to 1 GiB (default 65536)\n"
		"  -n ITERS        lat: round trips (default 10,000)\n"
		"  -t SECONDS      bw/rate/write: streaming seconds (default 2)\n"
		"  -w WINDOW       sends in flight, 1 to %d (default 64)\n"
		"  -i INTERVAL_MS  bw/rate: the server's receive timeline in ticks of this many ms\n"
		"  -o FILE         lat: every round trip's time, one a line\n"
		"  -v              check every payload byte\n"
		"  -b              wait for completions in fi_cq_sread (1 ms at a time) rather than\n"
		"                  spinning on fi_cq_read: for many processes on few cores\n"
		"  -I CLIENT_ID    this client's number, which tells its messages apart (default 0)\n"
		"  -T TIMEOUT_S    give up after this long without a completion (default 20)\n"
		"  -h, --help      this text\n"
		"Exit: 0, 1 a failed check, an error completion or a timeout, 2 usage, 3 setup.\n",
		MAX_CLIENTS, MAX_WINDOW);
}

/* a bad value of option @opt: said with the usage; BENCH_EXIT_USAGE */
static int bad(char opt, const char *arg, const char *want)
{
	const char name[3] = { '-', opt, '\0' };

	return braid_cli_bad(usage, "braid_ab", name, arg, want);
}

/* options that do not go together (@why): said with the usage; BENCH_EXIT_USAGE */
static int conflict(const char *why)
{
	fprintf(stderr, "braid_ab: %s\n", why);
	usage(stderr);
	return BENCH_EXIT_USAGE;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 },
	};
	struct request rq = { .mode = M_BW, .window = 64, .iters = 10000, .size = 65536,
			      .seconds = 2 };
	const char *prov = NULL, *ip = NULL, *server = NULL, *samples = NULL;
	int port = 0, k = 1, opt;
	double timeout = 20;
	long v;

	while ((opt = getopt_long(argc, argv, "p:a:c:C:k:m:s:n:t:w:i:o:vbI:T:h", longopts,
				  NULL)) != -1) {
		switch (opt) {
		case 'p': prov = optarg; break;
		case 'a': ip = optarg; break;
		case 'c': server = optarg; break;
		case 'C':
			if (!braid_cli_long(optarg, 1, 65535, &v))
				return bad('C', optarg, "a TCP port, 1 to 65535");
			port = (int)v;
			break;
		case 'k':
			if (!braid_cli_long(optarg, 1, MAX_CLIENTS, &v))
				return bad('k', optarg, "1 to 16 clients");
			k = (int)v;
			break;
		case 'm':
			for (v = 0; v < 4 && strcmp(optarg, mode_names[v]); v++)
				;
			if (v == 4)
				return bad('m', optarg, "lat, bw, rate or write");
			rq.mode = (uint32_t)v;
			break;
		case 's':
			if (!braid_cli_long(optarg, 0, 1L << 30, &v))
				return bad('s', optarg, "bytes, 0 to 1 GiB");
			rq.size = (uint64_t)v;
			break;
		case 'n':
			if (!braid_cli_long(optarg, 1, UINT32_MAX, &v))
				return bad('n', optarg, "1 or more iterations");
			rq.iters = (uint32_t)v;
			break;
		case 't':
			if (!braid_cli_double(optarg, 1e-3, 1e6, &rq.seconds))
				return bad('t', optarg, "seconds, more than 0");
			break;
		case 'w':
			if (!braid_cli_long(optarg, 1, MAX_WINDOW, &v))
				return bad('w', optarg, "1 to 1024 sends");
			rq.window = (uint32_t)v;
			break;
		case 'i':
			if (!braid_cli_long(optarg, 0, 3600000, &v))
				return bad('i', optarg, "milliseconds (0: no timeline)");
			rq.interval_ms = (uint32_t)v;
			break;
		case 'o': samples = optarg; break;
		case 'v': rq.verify = 1; break;
		case 'b': bench_block(); break;
		case 'I':
			if (!braid_cli_long(optarg, 0, UINT32_MAX, &v))
				return bad('I', optarg, "a client number, 0 or more");
			rq.client_id = (uint32_t)v;
			break;
		case 'T':
			if (!braid_cli_double(optarg, 1e-3, 1e6, &timeout))
				return bad('T', optarg, "seconds, more than 0");
			break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return BENCH_EXIT_USAGE;
		}
	}
	if (braid_cli_extra(usage, "braid_ab", argc, argv))
		return BENCH_EXIT_USAGE;
	if (!prov || !ip || !port)
		return conflict("-p, -a and -C are needed");
	if (rq.mode == M_RATE)
		rq.size = 8;
	if (rq.verify && rq.size < 8)
		return conflict("-v checks messages of 8 bytes or more");
	if (rq.mode == M_LAT && rq.iters > 10000000)
		return conflict("-m lat takes at most 10,000,000 round trips (-n)");
	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!server)
		return run_server(prov, ip, port, k);
	return run_client(prov, ip, server, port, &rq, samples, timeout);
}
