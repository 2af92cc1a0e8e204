/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * chaos.c: the two sides of the fabric's chaos test (test_chaos.sh): braid's
 * native RDM under loss, delay and reordering, flapping paths, a sender
 * killed and restarted at the same address (a new incarnation) and garbage
 * sprayed at the receiver; every message checked.
 *
 *   chaos recv IP NAMEFILE SECONDS
 *       post tagged receives from any source for SECONDS; every message
 *       carries (incarnation, seq) in its first 16 bytes and a pattern of
 *       both after them. Print one line per incarnation seen:
 *       "inc=I got=N dups=D corrupt=C first=T last=T" (T: monotonic
 *       seconds since start), and "errors=E" (receives failed with an error
 *       completion: a message of a sender that died). Exit 1 on a duplicate
 *       or corrupt message, or on a message of an incarnation delivered after
 *       one of a later incarnation from the same sender port (stale).
 *   chaos send IP NAMEFILE INCARNATION SECONDS
 *       send messages of 1 B to 300 KiB (eager, multi-packet, rendezvous) to
 *       the receiver, windows of 8, for SECONDS; every send must complete
 *       without error. Print "inc=I sent=N". BENCH_SERVICE fixes the local
 *       port, so a restarted sender is the same peer with a new incarnation.
 * Exit: 0, 1 (a wrong outcome), 2 (usage), 3 (setup).
 */
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_common.h"

#define MAX_MSG		(300 * 1024)
#define MAX_INC		64
#define MAX_SEQ		(1 << 22)
#define RECV_POSTED	16

static const size_t sizes[] = { 1, 16, 100, 1400, 1500, 9000, 65536, 70000, 300 * 1024 };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

static uint8_t pattern(uint64_t inc, uint64_t seq, size_t i)
{
	return (uint8_t)(inc * 29 + seq * 131 + i * 7 + (i >> 10));
}

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static size_t size_of(uint64_t seq)
{
	size_t s = sizes[seq % NSIZES];

	return s < 16 ? 16 : s;	/* the header fits */
}

struct inc_state {
	uint64_t got, dups, corrupt;
	double first, last;
	uint8_t *seen;	/* MAX_SEQ bits */
};

static int do_recv(struct conn *c, const char *namefile, double secs)
{
	static struct inc_state inc[MAX_INC];
	struct fi_cq_tagged_entry e[RECV_POSTED];
	uint8_t name[64];
	size_t len = sizeof(name);
	double t0 = mono_s(), end = t0 + secs;
	uint64_t errors = 0;
	int bad = 0, i;
	FILE *f;

	for (i = 0; i < MAX_INC; i++) {
		inc[i].seen = calloc(MAX_SEQ / 8, 1);
		if (!inc[i].seen)
			return BENCH_EXIT_SETUP;
	}
	for (i = 0; i < RECV_POSTED; i++)
		trecv(c, FI_ADDR_UNSPEC, c->buf + (size_t)i * MAX_MSG, MAX_MSG, 7,
		      (void *)(uintptr_t)(i + 1));
	conn_name(c, name, &len);
	f = fopen(namefile, "w");
	if (!f || fwrite(name, 1, len, f) != len || fclose(f))
		return BENCH_EXIT_SETUP;
	while (mono_s() < end) {
		ssize_t r = bench_cq_next(c, e, RECV_POSTED);

		if (r == -FI_EAVAIL) {
			struct fi_cq_err_entry err = { 0 };

			fi_cq_readerr(c->cq, &err, 0);
			errors++;
			i = (int)(uintptr_t)err.op_context - 1;
			if (i < 0 || i >= RECV_POSTED) {
				fprintf(stderr, "an error completion without a receive of ours: %s\n",
					fi_strerror(err.err));
				return BENCH_EXIT_FAIL;
			}
			trecv(c, FI_ADDR_UNSPEC, c->buf + (size_t)i * MAX_MSG, MAX_MSG, 7, err.op_context);
			continue;
		}
		for (ssize_t k = 0; k < r; k++) {
			const uint8_t *p;
			uint64_t in, seq;
			struct inc_state *s;
			size_t n;

			i = (int)(uintptr_t)e[k].op_context - 1;
			p = c->buf + (size_t)i * MAX_MSG;
			memcpy(&in, p, 8);
			memcpy(&seq, p + 8, 8);
			if (in >= MAX_INC || seq >= MAX_SEQ || e[k].len != size_of(seq)) {
				fprintf(stderr, "a message that no sender sent: inc %lu seq %lu len %zu\n",
					(unsigned long)in, (unsigned long)seq, e[k].len);
				return BENCH_EXIT_FAIL;
			}
			s = &inc[in];
			for (n = 16; n < e[k].len && p[n] == pattern(in, seq, n); n++)
				;
			if (n < e[k].len) {
				s->corrupt++;
				bad = 1;
			}
			if (s->seen[seq / 8] & (1u << (seq % 8))) {
				s->dups++;
				bad = 1;
			}
			s->seen[seq / 8] |= (uint8_t)(1u << (seq % 8));
			if (!s->got)
				s->first = mono_s() - t0;
			s->last = mono_s() - t0;
			s->got++;
			trecv(c, FI_ADDR_UNSPEC, (uint8_t *)p, MAX_MSG, 7, e[k].op_context);
		}
	}
	for (i = 0; i < MAX_INC; i++) {
		if (!inc[i].got)
			continue;
		printf("inc=%d got=%lu dups=%lu corrupt=%lu first=%.3f last=%.3f\n", i,
		       (unsigned long)inc[i].got, (unsigned long)inc[i].dups,
		       (unsigned long)inc[i].corrupt, inc[i].first, inc[i].last);
	}
	printf("errors=%lu\n", (unsigned long)errors);
	fflush(stdout);
	return bad ? BENCH_EXIT_FAIL : 0;
}

static int do_send(struct conn *c, const char *namefile, uint64_t in, double secs)
{
	struct fi_cq_tagged_entry e[8];
	size_t i;
	double end;
	uint64_t seq = 0, done = 0;
	fi_addr_t to;

	to = conn_insert_file(c, namefile);
	c->timeout_s = 30;
	end = mono_s() + secs;
	while (mono_s() < end) {
		/* a window of 8, each in its own slot of the buffer */
		for (i = 0; i < 8; i++, seq++) {
			uint8_t *p = c->buf + i * MAX_MSG;
			size_t n = size_of(seq);

			memcpy(p, &in, 8);
			memcpy(p + 8, &seq, 8);
			for (size_t k = 16; k < n; k++)
				p[k] = pattern(in, seq, k);
			tsend(c, to, p, n, 7, NULL);
		}
		wait_comps(c, 8, e);	/* an error completion exits 1 */
		done += 8;
	}
	printf("inc=%lu sent=%lu\n", (unsigned long)in, (unsigned long)done);
	fflush(stdout);
	return 0;
}

int main(int argc, char **argv)
{
	struct conn c;
	int ret;

	if (argc < 5 || (strcmp(argv[1], "recv") && strcmp(argv[1], "send")) ||
	    (!strcmp(argv[1], "send") && argc != 6)) {
		fprintf(stderr, "usage: chaos recv IP NAMEFILE SECONDS | chaos send IP NAMEFILE INC SECONDS\n");
		return BENCH_EXIT_USAGE;
	}
	bench_block();	/* many of us share a few cores: wait, do not spin */
	conn_open(&c, "braid", argv[2], (size_t)RECV_POSTED * MAX_MSG);
	if (!strcmp(argv[1], "recv"))
		ret = do_recv(&c, argv[3], atof(argv[4]));
	else
		ret = do_send(&c, argv[3], strtoull(argv[4], NULL, 0), atof(argv[5]));
	conn_close(&c);
	return ret;
}
