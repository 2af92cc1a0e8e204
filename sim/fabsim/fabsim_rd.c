/* SPDX-License-Identifier: BSD-2-Clause */
/* fabsim_rd.c: braid's reliable datagrams on the simulated fabric: one RD engine per host, sprayed over the spines by its route selectors. */
#include <stdlib.h>
#include <rdma/fi_errno.h>

#include "braid_peer.h"
#include "braid_rd.h"
#include "fabsim.h"
#include "rd_dgram.h"

#define RD_PORT		7000
#define RD_BURST	16	/* packets taken from an engine per idle NIC */

/** struct rd_host - one host's endpoint. */
struct rd_host {
	/** @rd: its engine. */
	struct braid_rd *rd;
	/** @peers: its domain's peer table. */
	struct braid_peer_table *peers;
};

/** struct rd_state - the transport's state. */
struct rd_state {
	/** @h: a record per host. */
	struct rd_host *h;
	/** @buf: one datagram being handed to the fabric. */
	uint8_t buf[BRAID_FABSIM_MAX_PKT];
};

/*
 * The engine as a NIC would run it over this fabric: braid's defaults but
 * for the packet size, the fabric's whole datagram as braid's UDP wire
 * takes its interface's (without an MTU: a 4 KiB payload, RC's), and the
 * timer floors the run asks for.
 */
static void rd_config(struct fabsim_run *run, int host, struct braid_rd_config *c)
{
	size_t dgram = braid_fabsim_max_dgram(run->net);

	braid_rd_config_default(c);
	c->local_ip = fabsim_ip(host);
	c->local_port = RD_PORT;
	c->epoch = 1000 + (uint32_t)host;
	c->seed = run->seed * 31 + (uint64_t)host + 1;
	c->mtu = dgram < BRAID_FABSIM_MAX_PKT ? (uint32_t)dgram : 4096 + 64;	/* + braid's headers */
	if (run->opts.rd_rto_min_ns)
		c->rto_min_ns = run->opts.rd_rto_min_ns;
	if (run->opts.rd_tlp_min_ns)
		c->tlp_min_ns = run->opts.rd_tlp_min_ns;
}

static int rd_open(struct fabsim_run *run)
{
	struct rd_state *st = calloc(1, sizeof(*st));
	int i, ret;

	if (!st)
		return -FI_ENOMEM;
	run->tp_state = st;
	st->h = calloc((size_t)run->hosts, sizeof(*st->h));
	if (!st->h)
		return -FI_ENOMEM;
	for (i = 0; i < run->hosts; i++) {
		struct braid_rd_config c;

		rd_config(run, i, &c);
		ret = braid_peer_table_open(&st->h[i].peers, 64, NULL);
		if (ret)
			return ret;
		ret = braid_rd_open(&c, st->h[i].peers, &st->h[i].rd);
		if (ret)
			return ret;
	}
	return 0;
}

static void rd_close(struct fabsim_run *run)
{
	struct rd_state *st = run->tp_state;
	int i;

	for (i = 0; st->h && i < run->hosts; i++) {
		if (st->h[i].rd)
			braid_rd_close(st->h[i].rd);
		if (st->h[i].peers)
			braid_peer_table_close(st->h[i].peers);
	}
	free(st->h);
	free(st);
	run->tp_state = NULL;
}

/* contexts: the flow id, and which side */
#define CTX_SEND(id)	((void *)(uintptr_t)((uint64_t)(id) << 1))
#define CTX_RECV(id)	((void *)(uintptr_t)(((uint64_t)(id) << 1) | 1))

static int rd_start(struct fabsim_run *run, struct fabsim_flow *f)
{
	struct rd_state *st = run->tp_state;
	struct iovec riov = { f->rbuf, f->size };
	struct iovec siov = { (void *)fabsim_flow_data(run, f), f->size };
	struct braid_rd_recv r = { .iov = &riov, .iov_count = 1,
				   .peer = braid_peer_key(fabsim_ip(f->src), RD_PORT),
				   .tag = f->id, .flags = BRAID_RD_TAGGED, .context = CTX_RECV(f->id) };
	struct braid_rd_send s = { .iov = &siov, .iov_count = 1,
				   .peer = braid_peer_key(fabsim_ip(f->dst), RD_PORT),
				   .tag = f->id, .flags = BRAID_RD_TAGGED, .context = CTX_SEND(f->id) };
	int ret;

	ret = braid_rd_post_recv(st->h[f->dst].rd, &r, run->now);
	if (ret)
		return ret;
	ret = braid_rd_send(st->h[f->src].rd, &s, run->now);
	if (ret)
		return ret;
	fabsim_wake(run, f->src, run->now);
	fabsim_wake(run, f->dst, run->now);
	return 0;
}

static void rd_input(struct fabsim_run *run, const struct braid_fabsim_pkt *p)
{
	struct rd_state *st = run->tp_state;

	/* the route back is the entropy it came with: the fabric's hash is symmetric */
	braid_rd_input_from(st->h[p->dst].rd, p->data, p->len, fabsim_ip(p->src), p->entropy,
			    p->ecn_ce, run->now);
	fabsim_wake(run, p->dst, run->now);
}

static void rd_completions(struct fabsim_run *run, struct braid_rd *rd)
{
	struct braid_rd_comp comps[64];
	int n, k;

	while ((n = braid_rd_poll(rd, comps, 64)) > 0) {
		for (k = 0; k < n; k++) {
			uint64_t ctx = (uint64_t)(uintptr_t)comps[k].context;
			struct fabsim_flow *f = &run->flows[ctx >> 1];

			if (ctx & 1)
				fabsim_flow_received(run, f, comps[k].len, comps[k].err);
			else
				fabsim_flow_sent(run, f, comps[k].err);
		}
	}
}

static void rd_service(struct fabsim_run *run, int host)
{
	struct rd_state *st = run->tp_state;
	struct braid_rd *rd = st->h[host].rd;
	struct braid_rd_out out[RD_BURST];
	bool nic_busy = false;
	int n, k;

	if (braid_rd_next_deadline(rd) <= run->now)
		braid_rd_timer(rd, run->now);
	for (;;) {
		if (braid_fabsim_tx_free_at(run->net, host) > run->now) {
			nic_busy = true;
			break;
		}
		n = braid_rd_output(rd, run->now, out, RD_BURST);
		if (!n)
			break;
		for (k = 0; k < n;) {
			const struct braid_rd_out *o = &out[k];
			int dst = fabsim_host_of_ip(run, o->dst_ip);
			size_t len = rd_dgram_copy(o, n - k, st->buf, &k);
			uint16_t route = o->reply_route >= 0 ? (uint16_t)o->reply_route : o->entropy;

			if (dst >= 0)
				braid_fabsim_send(run->net, run->now, host, dst, route, st->buf, len);
		}
	}
	rd_completions(run, rd);
	fabsim_wake(run, host, braid_rd_next_deadline(rd));
	if (nic_busy)
		fabsim_wake(run, host, braid_fabsim_tx_free_at(run->net, host));
}

static void rd_counters(struct fabsim_run *run, struct fabsim_counters *c)
{
	struct rd_state *st = run->tp_state;
	int i;

	*c = (struct fabsim_counters){ 0 };
	for (i = 0; i < run->hosts; i++) {
		const struct braid_rd_stats *s = braid_rd_get_stats(st->h[i].rd);

		c->data_pkts += s->tx_data;
		c->retx_pkts += s->retx_pkts;
		c->timeouts += s->rto_fires;
		c->ctrl_pkts += s->tx_acks + s->cts_tx + s->chal_tx;
	}
}

const struct fabsim_transport fabsim_rd = {
	.name = "rd",
	.open = rd_open,
	.close = rd_close,
	.start = rd_start,
	.input = rd_input,
	.service = rd_service,
	.counters = rd_counters,
};
