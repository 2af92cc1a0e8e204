/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fabric_delay.c: the delay stage of the emulated fabric (tools/fabric): it
 * holds every packet of one NFQUEUE for a delay plus uniform jitter, then
 * lets it go on (NF_ACCEPT).
 *
 * The kernel here has no netem, so a path's delay is made in user space: the
 * router's netfilter rule sends the path's forwarded packets to queue Q, this
 * program takes them (metadata only: the packet itself stays in the kernel),
 * stamps each with its release time and gives the verdict when that time
 * comes. Without jitter the release times only grow, so packets leave in
 * the order they came; with jitter a packet may overtake another, as on
 * netem. Memory is bounded: the kernel holds at most --limit packets for the
 * queue (more are dropped, like a full link buffer, and counted in
 * /proc/net/netfilter/nfnetlink_queue), and the held list is sized for that
 * at start.
 *
 * usage: braid_fabric_delay -q QUEUE -d DELAY_MS [-j JITTER_MS] [-n LIMIT]
 *                           [-f FILE] [-p PIDFILE]
 *   -f FILE     read "DELAY_MS [JITTER_MS]" from FILE at start and on SIGHUP
 *   -p PIDFILE  written once the queue is bound (tools/fabric waits for it)
 * SIGTERM or SIGINT: every held packet is let go at once, then it exits 0.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <linux/netfilter.h>
#include <libnetfilter_queue/libnetfilter_queue.h>

#define DELAY_LIMIT_DEFAULT	10000		/* packets held, as netem's default limit */
#define DELAY_LIMIT_MAX		1000000
#define DELAY_MS_MAX		60000.0
#define DELAY_RCVBUF		(8 << 20)	/* netlink receive buffer, bytes */
#define NS_PER_MS		1000000.0

/* One held packet: its queue id and when it may go. */
struct held {
	uint64_t release_ns;	/* CLOCK_MONOTONIC time of the verdict */
	uint64_t seq;		/* arrival order: ties keep it */
	uint32_t id;		/* the kernel's packet id in this queue */
};

/* The stage's state: the queue, the held packets as a min-heap on
 * (release_ns, seq), the settings and the counters. */
struct stage {
	struct nfq_handle *h;
	struct nfq_q_handle *qh;
	uint16_t queue;
	uint64_t delay_ns;
	uint64_t jitter_ns;
	const char *file;	/* settings file reread on SIGHUP, or NULL */

	struct held *heap;
	size_t n, cap;
	uint64_t seq;
	uint64_t last_release_ns;	/* largest release time pushed while fifo */
	int fifo;		/* the heap's order is the arrival order */

	uint64_t rng;		/* xorshift64* state for the jitter */

	uint64_t packets, max_held, overflow, verdict_errors, recv_errors;
};

static volatile sig_atomic_t stop_signal;
static volatile sig_atomic_t reload_signal;

static void on_signal(int sig)
{
	if (sig == SIGHUP)
		reload_signal = 1;
	else
		stop_signal = sig;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t rng_next(struct stage *s)
{
	s->rng ^= s->rng >> 12;
	s->rng ^= s->rng << 25;
	s->rng ^= s->rng >> 27;
	return s->rng * 0x2545f4914f6cdd1dull;
}

/* Parse milliseconds (decimals allowed) into nanoseconds; -1 if malformed. */
static int64_t parse_ms(const char *str)
{
	char *end;
	double ms;

	errno = 0;
	ms = strtod(str, &end);
	if (errno || end == str || *end != '\0' || !(ms >= 0.0) || ms > DELAY_MS_MAX)
		return -1;
	return (int64_t)(ms * NS_PER_MS + 0.5);
}

static int held_before(const struct held *a, const struct held *b)
{
	return a->release_ns < b->release_ns ||
	       (a->release_ns == b->release_ns && a->seq < b->seq);
}

static void heap_push(struct stage *s, struct held item)
{
	size_t i = s->n++;

	while (i > 0) {
		size_t parent = (i - 1) / 2;

		if (!held_before(&item, &s->heap[parent]))
			break;
		s->heap[i] = s->heap[parent];
		i = parent;
	}
	s->heap[i] = item;
}

static struct held heap_pop(struct stage *s)
{
	struct held top = s->heap[0];
	struct held last = s->heap[--s->n];
	size_t i = 0;

	for (;;) {
		size_t child = 2 * i + 1;

		if (child >= s->n)
			break;
		if (child + 1 < s->n && held_before(&s->heap[child + 1], &s->heap[child]))
			child++;
		if (!held_before(&s->heap[child], &last))
			break;
		s->heap[i] = s->heap[child];
		i = child;
	}
	if (s->n > 0)
		s->heap[i] = last;
	return top;
}

static void verdict(struct stage *s, uint32_t id, int batch)
{
	int ret = batch ? nfq_set_verdict_batch(s->qh, id, NF_ACCEPT)
			: nfq_set_verdict(s->qh, id, NF_ACCEPT, 0, NULL);

	if (ret < 0)
		s->verdict_errors++;
}

/* Let go every packet due at @now (all of them if @all). While the heap is
 * in arrival order the due packets are the oldest ones the kernel holds, so
 * one batch verdict (every id up to the last) lets them all go. */
static void release_due(struct stage *s, uint64_t now, int all)
{
	uint32_t last = 0;
	int any = 0;

	while (s->n > 0 && (all || s->heap[0].release_ns <= now)) {
		struct held item = heap_pop(s);

		if (s->fifo) {
			last = item.id;
			any = 1;
		} else {
			verdict(s, item.id, 0);
		}
	}
	if (any)
		verdict(s, last, 1);
	if (s->n == 0)
		s->fifo = 1;
}

/* nfq callback: one packet entered the queue. */
static int on_packet(struct nfq_q_handle *qh, struct nfgenmsg *msg,
		     struct nfq_data *nfa, void *data)
{
	struct stage *s = data;
	struct nfqnl_msg_packet_hdr *ph = nfq_get_msg_packet_hdr(nfa);
	uint64_t now = now_ns();
	int64_t delay = (int64_t)s->delay_ns;
	struct held item;

	if (!ph)
		return 0;
	if (s->jitter_ns > 0) {
		/* uniform in [-jitter, +jitter], never before now */
		double u = (double)(rng_next(s) >> 11) / (double)(1ull << 53);

		delay += (int64_t)((2.0 * u - 1.0) * (double)s->jitter_ns);
		if (delay < 0)
			delay = 0;
	}
	item.release_ns = now + (uint64_t)delay;
	item.seq = s->seq++;
	item.id = ntohl(ph->packet_id);
	s->packets++;
	if (s->n == s->cap) {
		/* cannot happen while the kernel keeps to the limit; never grow */
		s->overflow++;
		verdict(s, item.id, 0);
		return 0;
	}
	if (item.release_ns < s->last_release_ns)
		s->fifo = 0;
	else
		s->last_release_ns = item.release_ns;
	heap_push(s, item);
	if (s->n > s->max_held)
		s->max_held = s->n;
	return 0;
}

/* Read "DELAY_MS [JITTER_MS]" from s->file; keeps the old settings on error. */
static int settings_read(struct stage *s)
{
	char line[128], d[64], j[64] = "0";
	int64_t delay, jitter;
	FILE *f = fopen(s->file, "r");

	if (!f) {
		fprintf(stderr, "braid_fabric_delay: %s: %s\n", s->file, strerror(errno));
		return -1;
	}
	if (!fgets(line, sizeof(line), f) || sscanf(line, "%63s %63s", d, j) < 1) {
		fclose(f);
		fprintf(stderr, "braid_fabric_delay: %s: expected \"DELAY_MS [JITTER_MS]\"\n",
			s->file);
		return -1;
	}
	fclose(f);
	delay = parse_ms(d);
	jitter = parse_ms(j);
	if (delay < 0 || jitter < 0) {
		fprintf(stderr, "braid_fabric_delay: %s: bad delay or jitter\n", s->file);
		return -1;
	}
	s->delay_ns = (uint64_t)delay;
	s->jitter_ns = (uint64_t)jitter;
	return 0;
}

static int pidfile_write(const char *path)
{
	char tmp[4096];
	FILE *f;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
		return -1;
	f = fopen(tmp, "w");
	if (!f)
		return -1;
	fprintf(f, "%ld\n", (long)getpid());
	if (fclose(f) != 0 || rename(tmp, path) != 0) {
		unlink(tmp);
		return -1;
	}
	return 0;
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: braid_fabric_delay -q QUEUE -d DELAY_MS [-j JITTER_MS] [-n LIMIT]\n"
		"                          [-f FILE] [-p PIDFILE]\n"
		"  holds each packet of NFQUEUE QUEUE for DELAY_MS plus uniform jitter in\n"
		"  [-JITTER_MS, +JITTER_MS], then accepts it; at most LIMIT packets held\n"
		"  (default %d). -f: read \"DELAY_MS [JITTER_MS]\" from FILE, again on SIGHUP\n"
		"  (then -d may be left out). -p: write the pid to PIDFILE once the queue is\n"
		"  bound. -h, --help: this text. SIGTERM or SIGINT: every held packet goes at\n"
		"  once, then it exits 0.\n",
		DELAY_LIMIT_DEFAULT);
}

/* Receive everything the socket has and hand it to the callback. */
static void drain(struct stage *s, int fd, char *buf, size_t len)
{
	for (;;) {
		ssize_t got = recv(fd, buf, len, MSG_DONTWAIT);

		if (got > 0) {
			nfq_handle_packet(s->h, buf, (int)got);
			continue;
		}
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0 && errno == ENOBUFS) {
			/* the kernel could not queue a message to us: that packet is lost */
			s->recv_errors++;
			continue;
		}
		return;		/* EAGAIN, or an error the next poll shows again */
	}
}

int main(int argc, char **argv)
{
	static char buf[1 << 16] __attribute__((aligned(8)));
	struct stage s = { .fifo = 1 };
	const char *pidfile = NULL;
	long queue = -1, limit = DELAY_LIMIT_DEFAULT;
	int64_t delay = -1, jitter = 0;
	struct sigaction sa;
	sigset_t block, orig;
	struct pollfd pfd;
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' }, { NULL, 0, NULL, 0 },
	};
	int opt, fd, ret = 1;
	char *end;

	while ((opt = getopt_long(argc, argv, "q:d:j:n:f:p:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'q':
			queue = strtol(optarg, &end, 10);
			if (*end != '\0' || queue < 0 || queue > 65535) {
				fprintf(stderr, "braid_fabric_delay: bad queue number '%s'\n", optarg);
				usage(stderr);
				return 2;
			}
			break;
		case 'd':
		case 'j':
			if (parse_ms(optarg) < 0) {
				fprintf(stderr, "braid_fabric_delay: bad milliseconds '%s' (0..%.0f)\n",
					optarg, DELAY_MS_MAX);
				usage(stderr);
				return 2;
			}
			*(opt == 'd' ? &delay : &jitter) = parse_ms(optarg);
			break;
		case 'n':
			limit = strtol(optarg, &end, 10);
			if (*end != '\0' || limit < 1 || limit > DELAY_LIMIT_MAX) {
				fprintf(stderr, "braid_fabric_delay: bad limit '%s' (1..%d)\n",
					optarg, DELAY_LIMIT_MAX);
				usage(stderr);
				return 2;
			}
			break;
		case 'f':
			s.file = optarg;
			break;
		case 'p':
			pidfile = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (queue < 0 || (delay < 0 && !s.file) || optind != argc) {
		usage(stderr);
		return 2;
	}
	s.queue = (uint16_t)queue;
	s.delay_ns = delay < 0 ? 0 : (uint64_t)delay;
	s.jitter_ns = (uint64_t)jitter;
	if (s.file && settings_read(&s) < 0)
		return 1;
	/* it outlives its caller: hold none of the caller's pipes or locks open */
	close_range(3, ~0U, 0);
	s.rng = now_ns() ^ ((uint64_t)getpid() << 32) ^ 0x9e3779b97f4a7c15ull;
	if (s.rng == 0)
		s.rng = 1;
	s.cap = (size_t)limit;
	s.heap = calloc(s.cap, sizeof(*s.heap));
	if (!s.heap) {
		fprintf(stderr, "braid_fabric_delay: out of memory for %ld packets\n", limit);
		return 1;
	}

	/* The signals wake the loop only inside ppoll: no race with the checks. */
	sigemptyset(&block);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGHUP);
	sigprocmask(SIG_BLOCK, &block, &orig);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	prctl(PR_SET_TIMERSLACK, 1000UL);	/* 1 us: release times are in ns */

	s.h = nfq_open();
	if (!s.h) {
		fprintf(stderr, "braid_fabric_delay: nfq_open: %s (root? nfnetlink_queue?)\n",
			strerror(errno));
		goto out;
	}
	s.qh = nfq_create_queue(s.h, s.queue, on_packet, &s);
	if (!s.qh) {
		fprintf(stderr, "braid_fabric_delay: cannot bind queue %u: %s "
			"(another listener on it?)\n", s.queue, strerror(errno));
		goto out;
	}
	if (nfq_set_mode(s.qh, NFQNL_COPY_META, 0) < 0 ||
	    nfq_set_queue_maxlen(s.qh, (uint32_t)limit) < 0) {
		fprintf(stderr, "braid_fabric_delay: cannot configure queue %u: %s\n",
			s.queue, strerror(errno));
		goto out;
	}
	/* GSO packets whole: only the metadata comes up, no need to segment */
	nfq_set_queue_flags(s.qh, NFQA_CFG_F_GSO, NFQA_CFG_F_GSO);
	fd = nfq_fd(s.h);
	nfnl_rcvbufsiz(nfq_nfnlh(s.h), DELAY_RCVBUF);
	if (pidfile && pidfile_write(pidfile) < 0) {
		fprintf(stderr, "braid_fabric_delay: cannot write %s: %s\n", pidfile,
			strerror(errno));
		goto out;
	}

	pfd.fd = fd;
	pfd.events = POLLIN;
	while (!stop_signal) {
		struct timespec ts, *timeout = NULL;
		uint64_t now = now_ns();
		int n;

		release_due(&s, now, 0);
		if (s.n > 0) {
			uint64_t wait = s.heap[0].release_ns - now;

			ts.tv_sec = (time_t)(wait / 1000000000u);
			ts.tv_nsec = (long)(wait % 1000000000u);
			timeout = &ts;
		}
		n = ppoll(&pfd, 1, timeout, &orig);
		if (n < 0 && errno != EINTR) {
			fprintf(stderr, "braid_fabric_delay: poll: %s\n", strerror(errno));
			break;
		}
		if (reload_signal) {
			reload_signal = 0;
			if (s.file)
				settings_read(&s);
		}
		if (n > 0)
			drain(&s, fd, buf, sizeof(buf));
	}
	release_due(&s, 0, 1);
	ret = stop_signal ? 0 : 1;
	fprintf(stderr, "braid_fabric_delay: queue %u: %" PRIu64 " packets, at most %" PRIu64
		" held, %" PRIu64 " overflow, %" PRIu64 " verdict errors, %" PRIu64
		" lost to a full socket\n", s.queue, s.packets, s.max_held, s.overflow,
		s.verdict_errors, s.recv_errors);
out:
	if (s.qh)
		nfq_destroy_queue(s.qh);
	if (s.h)
		nfq_close(s.h);
	if (pidfile)
		unlink(pidfile);
	free(s.heap);
	return ret;
}
