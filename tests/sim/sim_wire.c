/* SPDX-License-Identifier: BSD-2-Clause */
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
 * a blocking read polls and times out. Then the other endpoint types the
 * sim wire offers, over the same fabric: FI_EP_MSG (RoCEv2 RC, 100 checked
 * echoes) and FI_EP_DGRAM (200 datagrams, each that comes intact). Exit 0 passed, 1
 * failed (said why). tests/sim/run_sim_wire.sh also checks, from braid's
 * log, that the sim did lose and duplicate packets and braid recovered them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <netinet/in.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_eq.h>

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

/*
 * FI_EP_MSG (braid's RoCEv2 RC) over the same lossy sim, in this process:
 * a passive endpoint, a connection, 100 checked messages of 1 to 4000 bytes
 * echoed back, shutdown. What fi_info offers on the sim wire, it carries.
 */
static struct fid_eq *m_eq;
static struct fid_cq *m_cq[2];

static void m_eq_expect(uint32_t want, struct fi_eq_cm_entry *entry)
{
	uint32_t event;
	ssize_t r = fi_eq_sread(m_eq, &event, entry, sizeof(*entry), 20000, 0);

	CHECK(r >= (ssize_t)sizeof(*entry) && event == want, "MSG: EQ gave %zd, event %u, not %u",
	      r, event, want);
}

/*
 * A completion of @want (FI_SEND or FI_RECV) on side @side's CQ, driving both
 * sides; one of the other kind met first is kept for the next call.
 */
static struct fi_cq_msg_entry m_kept[2];
static bool m_has_kept[2];

static void m_cq_wait(int side, uint64_t want, struct fi_cq_msg_entry *out)
{
	double end = now_s() + TIMEOUT;

	if (m_has_kept[side] && (m_kept[side].flags & want)) {
		m_has_kept[side] = false;
		if (out)
			*out = m_kept[side];
		return;
	}
	while (now_s() < end) {
		struct fi_cq_msg_entry e;
		ssize_t r = fi_cq_read(m_cq[side], &e, 1);

		(void)fi_cq_read(m_cq[!side], NULL, 0);
		if (r == -FI_EAVAIL) {
			struct fi_cq_err_entry err = { 0 };

			fi_cq_readerr(m_cq[side], &err, 0);
			CHECK(0, "MSG: completion error on side %d: %s", side, fi_strerror(err.err));
		}
		if (r == 1 && !(e.flags & want)) {
			CHECK(!m_has_kept[side], "MSG: side %d: two completions of flags %#lx", side,
			      (unsigned long)e.flags);
			m_kept[side] = e;
			m_has_kept[side] = true;
		} else if (r == 1) {
			if (out)
				*out = e;
			return;
		}
	}
	CHECK(0, "MSG: no completion on side %d in %.0f s", side, TIMEOUT);
}

static void msg_over_sim(void)
{
	struct fi_info *hints = fi_allocinfo(), *info, *ci;
	struct fi_eq_attr eq_attr = { .wait_obj = FI_WAIT_UNSPEC };
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_MSG, .size = 64 };
	struct fi_eq_cm_entry entry;
	struct fi_cq_msg_entry e;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_ep *ep[2];	/* 0: accepted, 1: client */
	struct fid_pep *pep;
	struct fid_mr *mr;
	struct sockaddr_in la;
	size_t alen = sizeof(la);
	static uint8_t buf[4][4096];
	void *desc;

	hints->ep_attr->type = FI_EP_MSG;
	hints->caps = FI_MSG;
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	hints->fabric_attr->prov_name = strdup("braid");
	bench_auth_hints(hints);
	CHECK(!fi_getinfo(FI_VERSION(1, 17), "10.99.0.1", "0", FI_SOURCE, hints, &info),
	      "MSG: fi_getinfo on the sim wire");
	CHECK(!strcmp(info->domain_attr->name, "sim0"), "MSG: domain %s", info->domain_attr->name);
	CHECK(!fi_fabric(info->fabric_attr, &fabric, NULL) && !fi_eq_open(fabric, &eq_attr, &m_eq, NULL) &&
	      !fi_domain(fabric, info, &domain, NULL) && !fi_passive_ep(fabric, info, &pep, NULL) &&
	      !fi_pep_bind(pep, &m_eq->fid, 0) && !fi_listen(pep) &&
	      !fi_getname(&pep->fid, &la, &alen), "MSG: listening");
	hints->dest_addr = malloc(sizeof(la));
	memcpy(hints->dest_addr, &la, sizeof(la));
	hints->dest_addrlen = sizeof(la);
	CHECK(!fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &ci), "MSG: client fi_getinfo");
	CHECK(!fi_endpoint(domain, ci, &ep[1], NULL), "MSG: client endpoint");
	fi_freeinfo(ci);
	CHECK(!fi_mr_reg(domain, buf, sizeof(buf), FI_SEND | FI_RECV, 0, 0, 0, &mr, NULL), "MSG: mr");
	desc = fi_mr_desc(mr);
	for (int k = 1; k >= 0; k--) {
		if (k == 0) {
			CHECK(!fi_connect(ep[1], hints->dest_addr, NULL, 0), "MSG: fi_connect");
			m_eq_expect(FI_CONNREQ, &entry);
			CHECK(!fi_endpoint(domain, entry.info, &ep[0], NULL), "MSG: accepted endpoint");
			fi_freeinfo(entry.info);
		}
		CHECK(!fi_cq_open(domain, &cq_attr, &m_cq[k], NULL) &&
		      !fi_ep_bind(ep[k], &m_eq->fid, 0) &&
		      !fi_ep_bind(ep[k], &m_cq[k]->fid, FI_TRANSMIT | FI_RECV) && !fi_enable(ep[k]),
		      "MSG: endpoint %d set up", k);
	}
	CHECK(!fi_recv(ep[0], buf[0], 4096, desc, 0, NULL), "MSG: recv");
	CHECK(!fi_accept(ep[0], NULL, 0), "MSG: accept");
	m_eq_expect(FI_CONNECTED, &entry);
	m_eq_expect(FI_CONNECTED, &entry);
	for (int i = 0; i < 100; i++) {
		size_t len = 1 + (size_t)(i * 397) % 4000;

		for (size_t b = 0; b < len; b++)
			buf[2][b] = pattern(3, i, b);
		CHECK(!fi_recv(ep[1], buf[1], 4096, desc, 0, NULL), "MSG: client recv");
		CHECK(!fi_send(ep[1], buf[2], len, desc, 0, NULL), "MSG: send %d", i);
		m_cq_wait(0, FI_RECV, &e);
		CHECK(e.len == len && !memcmp(buf[0], buf[2], len), "MSG: message %d came wrong", i);
		memcpy(buf[3], buf[0], len);
		CHECK(!fi_recv(ep[0], buf[0], 4096, desc, 0, NULL), "MSG: server recv");
		CHECK(!fi_send(ep[0], buf[3], len, desc, 0, NULL), "MSG: echo %d", i);
		m_cq_wait(1, FI_SEND, NULL);
		m_cq_wait(1, FI_RECV, &e);
		CHECK(e.len == len && !memcmp(buf[1], buf[2], len), "MSG: echo %d came wrong", i);
		m_cq_wait(0, FI_SEND, NULL);
	}
	fi_shutdown(ep[1], 0);
	for (int k = 0; k < 2; k++) {
		fi_close(&ep[k]->fid);
		fi_close(&m_cq[k]->fid);
	}
	fi_close(&mr->fid);
	fi_close(&pep->fid);
	fi_close(&domain->fid);
	fi_close(&m_eq->fid);
	fi_close(&fabric->fid);
	fi_freeinfo(info);
	fi_freeinfo(hints);
	printf("sim_wire: FI_EP_MSG (RoCEv2 RC): 100 messages of 1 to 4000 bytes echoed over the same sim, "
	       "every byte checked\n");
}

/*
 * FI_EP_DGRAM over the same sim: 200 datagrams of 1 to 1400 bytes from one
 * endpoint to another. Unreliable, so some are lost or come twice; every one
 * that comes must be one that was sent, intact, and most must come.
 */
static void dgram_over_sim(void)
{
	struct fi_info *hints = fi_allocinfo(), *info;
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_MSG, .size = 512 };
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_ep *ep[2];
	struct fid_cq *cq[2];
	struct fid_av *av[2];
	static uint8_t tx[1400], rx[64][1408];
	struct sockaddr_in name;
	size_t alen = sizeof(name);
	fi_addr_t to;
	int got = 0, sent = 0;
	double end;

	hints->ep_attr->type = FI_EP_DGRAM;
	hints->caps = FI_MSG;
	hints->fabric_attr->prov_name = strdup("braid");
	bench_auth_hints(hints);
	CHECK(!fi_getinfo(FI_VERSION(1, 17), "10.99.0.1", "0", FI_SOURCE, hints, &info),
	      "DGRAM: fi_getinfo on the sim wire");
	CHECK(!strcmp(info->domain_attr->name, "sim0"), "DGRAM: domain %s", info->domain_attr->name);
	CHECK(!fi_fabric(info->fabric_attr, &fabric, NULL) && !fi_domain(fabric, info, &domain, NULL),
	      "DGRAM: domain");
	for (int k = 0; k < 2; k++)
		CHECK(!fi_endpoint(domain, info, &ep[k], NULL) && !fi_cq_open(domain, &cq_attr, &cq[k], NULL) &&
		      !fi_av_open(domain, &av_attr, &av[k], NULL) &&
		      !fi_ep_bind(ep[k], &cq[k]->fid, FI_TRANSMIT | FI_RECV) &&
		      !fi_ep_bind(ep[k], &av[k]->fid, 0) && !fi_enable(ep[k]), "DGRAM: endpoint %d", k);
	CHECK(!fi_getname(&ep[1]->fid, &name, &alen) && fi_av_insert(av[0], &name, 1, &to, 0, NULL) == 1,
	      "DGRAM: address");
	for (int b = 0; b < 64; b++)
		CHECK(!fi_recv(ep[1], rx[b], sizeof(rx[b]), NULL, FI_ADDR_UNSPEC, (void *)(uintptr_t)b),
		      "DGRAM: recv");
	/* sends until all 200 are out, then 1 s more for what is still on its way */
	end = now_s() + TIMEOUT;
	while (now_s() < end && got < sent + (sent < 200)) {
		struct fi_cq_msg_entry e;

		if (sent < 200 && sent - got < 32) {
			size_t len = 1 + (size_t)(sent * 131) % 1400;

			tx[0] = (uint8_t)sent;
			for (size_t k = 1; k < len; k++)
				tx[k] = pattern(5, tx[0], k);
			if (!fi_send(ep[0], tx, len, NULL, to, NULL) && ++sent == 200)
				end = now_s() + 1;
		}
		(void)fi_cq_read(cq[0], &e, 1);
		if (fi_cq_read(cq[1], &e, 1) == 1) {
			int b = (int)(uintptr_t)e.op_context;
			size_t k;

			CHECK(e.len >= 1 && e.len <= 1400, "DGRAM: a datagram of %zu bytes", e.len);
			for (k = 1; k < e.len && rx[b][k] == pattern(5, rx[b][0], k); k++)
				;
			CHECK(k == e.len, "DGRAM: datagram %u corrupt at byte %zu", rx[b][0], k);
			got++;
			CHECK(!fi_recv(ep[1], rx[b], sizeof(rx[b]), NULL, FI_ADDR_UNSPEC, e.op_context),
			      "DGRAM: repost");
		}
	}
	CHECK(sent == 200 && got >= 160, "DGRAM: %d of %d datagrams arrived", got, sent);
	for (int k = 0; k < 2; k++) {
		fi_close(&ep[k]->fid);
		fi_close(&av[k]->fid);
		fi_close(&cq[k]->fid);
	}
	fi_close(&domain->fid);
	fi_close(&fabric->fid);
	fi_freeinfo(info);
	fi_freeinfo(hints);
	printf("sim_wire: FI_EP_DGRAM: %d datagrams received (duplicates count) for %d sent over the "
	       "same sim, each intact\n", got, sent);
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
	msg_over_sim();
	dgram_over_sim();
	printf("sim_wire: %d messages each way (8 B to 600 KiB) over a lossy, duplicating, "
	       "reordering 4-path sim (%s): every byte checked, each exactly once\n", NMSG, sim);
	return 0;
}
