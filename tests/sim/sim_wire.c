/*
 * sim_wire.c: the whole provider through the libfabric API over the sim wire
 * (FI_BRAID_WIRE=sim): two native RDM endpoints of one process on a
 * simulated fabric of 4 paths that loses, duplicates and reorders packets
 * (FI_BRAID_SIM, seeded), exchanging tagged messages of 8 B to 600 KiB both
 * ways at once (eager, multi-packet and rendezvous), every byte checked,
 * every message exactly once, within a bound.
 *
 *   sim_wire [SEED]
 *
 * It sets the wire before its first libfabric call and asserts that what ran
 * is braid's own RDM on the sim ("braid", domain "sim0"). Then the wait
 * objects of a polled wire: no FI_WAIT_FD, FI_WAIT_UNSPEC is FI_WAIT_YIELD,
 * a blocking read polls and times out. Exit 0 passed, 1
 * failed (said why). tests/sim/run_sim_wire.sh also checks, from braid's
 * log, that the sim did lose and duplicate packets and braid recovered them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"

#define NMSG	240
#define TIMEOUT	60.0

static const size_t sizes[] = { 8, 1000, 1472, 5000, 70000, 300000, 600000 };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

#define CHECK(cond, ...)						\
	do {								\
		if (!(cond)) {						\
			fprintf(stderr, "sim_wire: FAIL: ");		\
			fprintf(stderr, __VA_ARGS__);			\
			fprintf(stderr, "\n");				\
			exit(1);					\
		}							\
	} while (0)

static uint8_t pattern(int side, int i, size_t k)
{
	return (uint8_t)(side * 71 + i * 13 + k * 7 + (k >> 9));
}

struct side {
	struct conn c;
	uint8_t *tx, *rx;	/* NMSG slots of the largest size each */
	int sent, recvd;
	int seen[NMSG];
};

static size_t size_of(int i)
{
	return sizes[(size_t)i % NSIZES];
}

/* message i's place in a side's tx and rx areas: the messages before it, back to back */
static size_t off[NMSG + 1];

/* Drain one side's CQ: check each receive, count sends. */
static int drain(struct side *s, int self)
{
	struct fi_cq_tagged_entry e[16];
	ssize_t r = fi_cq_read(s->c.cq, e, 16);

	if (r == -FI_EAVAIL) {
		struct fi_cq_err_entry err = { 0 };

		fi_cq_readerr(s->c.cq, &err, 0);
		CHECK(0, "side %d: completion error %s", self, fi_strerror(err.err));
	}
	if (r <= 0)
		return 0;
	for (ssize_t k = 0; k < r; k++) {
		if (e[k].flags & FI_SEND) {
			s->sent++;
			continue;
		}
		int i = (int)e[k].tag;
		size_t len = size_of(i);
		const uint8_t *p;

		CHECK(i >= 0 && i < NMSG, "side %d: tag %d", self, i);
		p = s->rx + off[i];
		CHECK(!s->seen[i], "side %d: message %d completed twice", self, i);
		CHECK(e[k].len == len, "side %d: message %d: %zu bytes, not %zu", self, i, e[k].len, len);
		for (size_t b = 0; b < len; b++)
			CHECK(p[b] == pattern(!self, i, b), "side %d: message %d corrupt at byte %zu",
			      self, i, b);
		s->seen[i] = 1;
		s->recvd++;
	}
	return (int)r;
}

int main(int argc, char **argv)
{
	static struct side s[2];
	char sim[256], name[2][128];
	size_t len;
	double deadline;

	snprintf(sim, sizeof(sim), "seed=%s,paths=4,loss=0.03,dup=0.02,reorder=0.1,reorder_us=40,"
		 "delay_us=20,jitter_us=10", argc > 1 ? argv[1] : "7");
	setenv("FI_BRAID_WIRE", "sim", 1);
	setenv("FI_BRAID_SIM", sim, 1);
	setenv("BENCH_NODE", "10.99.0.1", 1);
	for (int m = 0; m < NMSG; m++)
		off[m + 1] = off[m] + size_of(m);
	for (int i = 0; i < 2; i++) {
		conn_open(&s[i].c, "braid", NULL, 2 * off[NMSG]);
		CHECK(!strcmp(s[i].c.info->fabric_attr->prov_name, "braid") &&
		      !strcmp(s[i].c.info->domain_attr->name, "sim0"),
		      "ran %s on %s, not braid on the sim wire", s[i].c.info->fabric_attr->prov_name,
		      s[i].c.info->domain_attr->name);
		s[i].tx = s[i].c.buf;
		s[i].rx = s[i].c.buf + off[NMSG];
		len = sizeof(name[i]);
		conn_name(&s[i].c, name[i], &len);
	}
	conn_insert(&s[0].c, name[1]);
	conn_insert(&s[1].c, name[0]);
	for (int i = 0; i < 2; i++) {
		for (int m = 0; m < NMSG; m++) {
			uint8_t *p = s[i].tx + off[m];

			for (size_t b = 0; b < size_of(m); b++)
				p[b] = pattern(i, m, b);
			trecv(&s[i].c, s[i].c.peer, s[i].rx + off[m], size_of(m),
			      (uint64_t)m, NULL);
		}
	}
	/* both ways at once, in windows of 16 sends, both CQs driven by this thread */
	deadline = now_s() + TIMEOUT;
	for (int m = 0; m < NMSG || s[0].sent < NMSG || s[1].sent < NMSG ||
			s[0].recvd < NMSG || s[1].recvd < NMSG;) {
		for (int i = 0; i < 2 && m < NMSG; i++)
			if (m - s[i].sent >= 16)
				goto poll;
		for (int i = 0; i < 2 && m < NMSG; i++) {
			ssize_t r;

			while ((r = fi_tsend(s[i].c.ep, s[i].tx + off[m], size_of(m), NULL,
					     s[i].c.peer, (uint64_t)m, NULL)) == -FI_EAGAIN) {
				drain(&s[0], 0);
				drain(&s[1], 1);
				CHECK(now_s() < deadline, "send %d stuck", m);
			}
			CHECK(r == 0, "fi_tsend: %s", fi_strerror((int)-r));
		}
		if (m < NMSG)
			m++;
poll:
		drain(&s[0], 0);
		drain(&s[1], 1);
		CHECK(now_s() < deadline, "after %.0f s: sent %d/%d, received %d/%d", TIMEOUT,
		      s[0].sent, s[1].sent, s[0].recvd, s[1].recvd);
	}
	/*
	 * A polled wire has no fd: a CQ offers no FI_WAIT_FD, FI_WAIT_UNSPEC is
	 * FI_WAIT_YIELD and says so, and a blocking read on it polls and times out.
	 */
	{
		struct fi_cq_attr attr = { .format = FI_CQ_FORMAT_TAGGED, .wait_obj = FI_WAIT_FD };
		struct fi_cq_tagged_entry e;
		enum fi_wait_obj obj = FI_WAIT_NONE;
		struct fid_cq *cq = NULL;
		double t0;
		int ret;

		ret = fi_cq_open(s[0].c.domain, &attr, &cq, NULL);
		CHECK(ret == -FI_ENOSYS, "a CQ with FI_WAIT_FD on a polled wire: %d, not -FI_ENOSYS", ret);
		attr.wait_obj = FI_WAIT_UNSPEC;
		ret = fi_cq_open(s[0].c.domain, &attr, &cq, NULL);
		CHECK(!ret, "a CQ with FI_WAIT_UNSPEC: %s", fi_strerror(-ret));
		ret = fi_control(&cq->fid, FI_GETWAITOBJ, &obj);
		CHECK(!ret && obj == FI_WAIT_YIELD, "FI_GETWAITOBJ: %d, wait object %d, not FI_WAIT_YIELD",
		      ret, (int)obj);
		t0 = now_s();
		ret = (int)fi_cq_sread(cq, &e, 1, NULL, 50);
		CHECK(ret == -FI_EAGAIN && now_s() - t0 >= 0.045 && now_s() - t0 < 2,
		      "fi_cq_sread of an empty CQ for 50 ms: %d after %.3f s", ret, now_s() - t0);
		fi_close(&cq->fid);
	}
	for (int i = 0; i < 2; i++)
		conn_close(&s[i].c);
	printf("sim_wire: %d messages each way (8 B to 600 KiB) over a lossy, duplicating, "
	       "reordering 4-path sim (%s): every byte checked, each exactly once\n", NMSG, sim);
	return 0;
}
