/* SPDX-License-Identifier: BSD-2-Clause */
/* fabsim_rc.c: RoCEv2 RC on the simulated fabric: a queue pair at each end of every pair of hosts that talk, each on the one route its UDP source port hashes to, as a RoCE NIC runs them. */
#include <stdlib.h>
#include <string.h>
#include <rdma/fi_errno.h>

#include "braid/braid_map.h"
#include "braid_iov.h"
#include "braid_rc.h"
#include "braid_roce.h"
#include "fabsim.h"

#define RC_BURST	4	/* packets taken from a QP per turn on an idle NIC */

/** struct rc_qp - one queue pair. */
struct rc_qp {
	/** @qp: the engine. */
	struct braid_rc_qp *qp;
	/** @host, @peer: where it is, whom it talks to. */
	int host, peer;
	/** @sport: its UDP source port: the route selector of every packet it sends. */
	uint16_t sport;
};

/** struct rc_host - a host's queue pairs. */
struct rc_host {
	/** @qps, @n, @cap: indexes into rc_state.qps. */
	uint32_t *qps;
	size_t n, cap;
	/** @rr: the queue pair the NIC serves next (round robin). */
	size_t rr;
};

/** struct rc_state - the transport's state. */
struct rc_state {
	/** @qps, @nqps, @cap: every queue pair; QPN = index + 1. */
	struct rc_qp *qps;
	size_t nqps, cap;
	/** @h: per host. */
	struct rc_host *h;
	/** @conns: (low host << 32 | high host) -> index + 1 of the low host's QP (the peer's is next). */
	struct braid_map conns;
	/** @buf: one packet being handed to the fabric. */
	uint8_t buf[BRAID_FABSIM_MAX_PKT];
};

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	return x ^ (x >> 33);
}

static int rc_open(struct fabsim_run *run)
{
	struct rc_state *st = calloc(1, sizeof(*st));

	if (!st)
		return -FI_ENOMEM;
	run->tp_state = st;
	braid_map_construct(&st->conns);
	st->h = calloc((size_t)run->hosts, sizeof(*st->h));
	return st->h ? 0 : -FI_ENOMEM;
}

static void rc_close(struct fabsim_run *run)
{
	struct rc_state *st = run->tp_state;
	size_t i;

	for (i = 0; i < st->nqps; i++)
		braid_rc_close(st->qps[i].qp);
	for (i = 0; st->h && i < (size_t)run->hosts; i++)
		free(st->h[i].qps);
	braid_map_destruct(&st->conns);
	free(st->qps);
	free(st->h);
	free(st);
	run->tp_state = NULL;
}

static int host_add_qp(struct rc_host *h, uint32_t q)
{
	if (h->n == h->cap) {
		size_t cap = h->cap ? 2 * h->cap : 4;
		uint32_t *qps = realloc(h->qps, cap * sizeof(*qps));

		if (!qps)
			return -FI_ENOMEM;
		h->qps = qps;
		h->cap = cap;
	}
	h->qps[h->n++] = q;
	return 0;
}

/* the connection between hosts @a and @b (made on first use): the index of @a's QP */
static int rc_conn(struct fabsim_run *run, int a, int b, uint32_t *qa)
{
	struct rc_state *st = run->tp_state;
	int lo = a < b ? a : b, hi = a < b ? b : a, side, ret;
	uint64_t key = ((uint64_t)lo << 32) | (uint64_t)hi;
	uintptr_t v = (uintptr_t)braid_map_get(&st->conns, key);
	size_t dgram = braid_fabsim_max_dgram(run->net);
	uint32_t q0, psn[2];

	if (v) {
		*qa = (uint32_t)(v - 1) + (a == lo ? 0 : 1);
		return 0;
	}
	if (st->nqps + 2 > st->cap) {
		size_t cap = st->cap ? 2 * st->cap : 64;
		struct rc_qp *qps = realloc(st->qps, cap * sizeof(*qps));

		if (!qps)
			return -FI_ENOMEM;
		st->qps = qps;
		st->cap = cap;
	}
	q0 = (uint32_t)st->nqps;
	for (side = 0; side < 2; side++) {
		struct rc_qp *q = &st->qps[q0 + side];

		q->host = side ? hi : lo;
		q->peer = side ? lo : hi;
		q->sport = (uint16_t)(49152 + mix(run->seed ^ ((uint64_t)(q0 + side + 1) << 20)) % 16384);
		q->qp = NULL;
		psn[side] = (uint32_t)mix(run->seed + q0 + side) & 0xffffff;
	}
	for (side = 0; side < 2; side++) {
		struct rc_qp *q = &st->qps[q0 + side], *p = &st->qps[q0 + 1 - side];
		struct braid_rc_config c;

		braid_rc_config_default(&c);
		if (dgram < BRAID_FABSIM_MAX_PKT)	/* else RoCE's 4096, the default */
			c.mtu = braid_roce_path_mtu(dgram);
		c.addr = (struct braid_roce_addr){ fabsim_ip(q->host), fabsim_ip(q->peer), q->sport,
						   BRAID_ROCE_UDP_PORT };
		c.rx_addr = (struct braid_roce_addr){ fabsim_ip(q->peer), fabsim_ip(q->host), p->sport,
						      BRAID_ROCE_UDP_PORT };
		c.local_qpn = q0 + side + 1;
		c.remote_qpn = q0 + (1 - side) + 1;
		c.sq_psn = psn[side];
		c.rq_psn = psn[1 - side];
		ret = braid_rc_open(&c, &q->qp);
		if (ret)
			return ret;
		st->nqps++;
		ret = host_add_qp(&st->h[q->host], q0 + side);
		if (ret)
			return ret;
	}
	ret = braid_map_insert(&st->conns, key, (void *)(uintptr_t)(q0 + 1));
	if (ret)
		return ret;
	*qa = q0 + (a == lo ? 0 : 1);
	return 0;
}

#define CTX_SEND(id)	((void *)(uintptr_t)((uint64_t)(id) << 1))
#define CTX_RECV(id)	((void *)(uintptr_t)(((uint64_t)(id) << 1) | 1))

static int rc_start(struct fabsim_run *run, struct fabsim_flow *f)
{
	struct rc_state *st = run->tp_state;
	struct iovec riov = { f->rbuf, f->size };
	struct iovec siov = { (void *)fabsim_flow_data(run, f), f->size };
	struct braid_rc_recv r = { .iov = &riov, .iov_count = 1, .context = CTX_RECV(f->id) };
	struct braid_rc_wr w = { .op = BRAID_RC_OP_SEND, .iov = &siov, .iov_count = 1,
				 .imm = f->id, .flags = BRAID_RC_IMM, .context = CTX_SEND(f->id) };
	uint32_t qs;
	int ret;

	ret = rc_conn(run, f->src, f->dst, &qs);
	if (ret)
		return ret;
	/* the receive first: RC would NAK a SEND that finds none (RNR) */
	ret = braid_rc_post_recv(st->qps[qs ^ 1].qp, &r);
	if (ret)
		return ret;
	ret = braid_rc_post_send(st->qps[qs].qp, &w, run->now);
	if (ret)
		return ret;
	fabsim_wake(run, f->src, run->now);
	fabsim_wake(run, f->dst, run->now);
	return 0;
}

static void rc_input(struct fabsim_run *run, const struct braid_fabsim_pkt *p)
{
	struct rc_state *st = run->tp_state;
	uint32_t qpn;

	if (braid_roce_dest_qp(p->data, p->len, &qpn) || qpn < 1 || qpn > st->nqps ||
	    st->qps[qpn - 1].host != p->dst)
		return;
	braid_rc_input(st->qps[qpn - 1].qp, p->data, p->len, run->now);
	fabsim_wake(run, p->dst, run->now);
}

/* one packet as the wire carries it: header, payload, pad + ICRC */
static size_t rc_packet(const struct braid_rc_out *o, uint8_t *buf)
{
	size_t len = o->hdr_len;

	memcpy(buf, o->hdr, o->hdr_len);
	len += braid_iov_gather(o->payload, (size_t)o->payload_iovcnt, buf + len);
	memcpy(buf + len, o->trailer, o->trailer_len);
	return len + o->trailer_len;
}

static void rc_completions(struct fabsim_run *run, struct braid_rc_qp *qp)
{
	struct braid_rc_comp comps[32];
	int n, k;

	while ((n = braid_rc_poll(qp, comps, 32)) > 0) {
		for (k = 0; k < n; k++) {
			uint64_t ctx = (uint64_t)(uintptr_t)comps[k].context;
			struct fabsim_flow *f = &run->flows[ctx >> 1];

			if (!(ctx & 1))
				fabsim_flow_sent(run, f, comps[k].err);
			else if (!comps[k].err && comps[k].imm != f->id)
				fabsim_flow_received(run, f, comps[k].len, FI_EIO);
			else
				fabsim_flow_received(run, f, comps[k].len, comps[k].err);
		}
	}
}

static void rc_service(struct fabsim_run *run, int host)
{
	struct rc_state *st = run->tp_state;
	struct rc_host *h = &st->h[host];
	struct braid_rc_out out[RC_BURST];
	uint64_t next = UINT64_MAX;
	bool nic_busy = false;
	size_t i, tried = 0;
	int n, k;

	for (i = 0; i < h->n; i++) {
		struct braid_rc_qp *qp = st->qps[h->qps[i]].qp;

		if (braid_rc_next_deadline(qp) <= run->now)
			braid_rc_timer(qp, run->now);
	}
	/* the NIC serves its QPs in turn while it is idle */
	while (h->n && tried < h->n) {
		struct rc_qp *q = &st->qps[h->qps[h->rr % h->n]];

		if (braid_fabsim_tx_free_at(run->net, host) > run->now) {
			nic_busy = true;
			break;
		}
		h->rr = (h->rr + 1) % h->n;
		n = braid_rc_output(q->qp, run->now, out, RC_BURST);
		if (!n) {
			tried++;
			continue;
		}
		tried = 0;
		for (k = 0; k < n; k++) {
			size_t len = rc_packet(&out[k], st->buf);

			braid_fabsim_send(run->net, run->now, host, q->peer, q->sport, st->buf, len);
		}
	}
	for (i = 0; i < h->n; i++) {
		struct braid_rc_qp *qp = st->qps[h->qps[i]].qp;
		uint64_t d;

		rc_completions(run, qp);
		d = braid_rc_next_deadline(qp);
		if (d < next)
			next = d;
	}
	fabsim_wake(run, host, next);
	if (nic_busy)
		fabsim_wake(run, host, braid_fabsim_tx_free_at(run->net, host));
}

static void rc_counters(struct fabsim_run *run, struct fabsim_counters *c)
{
	struct rc_state *st = run->tp_state;
	size_t i;

	*c = (struct fabsim_counters){ 0 };
	for (i = 0; i < st->nqps; i++) {
		const struct braid_rc_stats *s = braid_rc_get_stats(st->qps[i].qp);
		uint64_t ctrl = s->acks_tx + s->naks_seq_tx + s->rnr_naks_tx + s->naks_other_tx;

		c->data_pkts += s->tx_pkts - ctrl;
		c->retx_pkts += s->retx_pkts;
		c->timeouts += s->timeouts;
		c->ctrl_pkts += ctrl;
	}
}

const struct fabsim_transport fabsim_rc = {
	.name = "rc",
	.open = rc_open,
	.close = rc_close,
	.start = rc_start,
	.input = rc_input,
	.service = rc_service,
	.counters = rc_counters,
};
