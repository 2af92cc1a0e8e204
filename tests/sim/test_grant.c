/* SPDX-License-Identifier: BSD-2-Clause */
/* test_grant.c: receiver grants (protocol.md §4.10) on the leaf-spine fabric simulator with real RD engines: an incast keeps its receiver's port queue bounded and its link busy, every byte arrives once and intact under loss, every sender finishes, and a lone flow runs at line rate. */
#include <stdlib.h>
#include <criterion/criterion.h>
#include <rdma/fi_errno.h>

#include "fabsim.h"

#define US	1000ULL
#define MS	1000000ULL
#define GBPS	1000000000ULL

/* the engines' packets on this fabric (sim/fabsim/fabsim_rd.c): a 4 KiB payload, braid's
 * header, and the framing each takes on a link */
#define PKT_WIRE	(4096 + 56 + 66)
/* the engine's default grant budget (256 KiB), in its 4 KiB packets */
#define BUDGET_PKTS	64

/* 4 ToRs x 8 hosts, 4 spines: bench/fabsim's fabric, smaller (100/200 Gbit/s, 1 us a link,
 * 512 KiB a port, ECN above 100 KiB) */
static struct braid_fabsim_cfg fabric_cfg(void)
{
	return (struct braid_fabsim_cfg){
		.tors = 4, .hosts_per_tor = 8, .spines = 4,
		.host = { .rate_bps = 100 * GBPS, .delay_ns = 1000, .queue_bytes = 512 << 10,
			  .ecn_bytes = 100 << 10 },
		.fabric = { .rate_bps = 200 * GBPS, .delay_ns = 1000, .queue_bytes = 512 << 10,
			    .ecn_bytes = 100 << 10 },
		.overhead = 66, .seed = 3,
	};
}

struct incast {
	struct braid_fabsim *net;
	struct fabsim_run run;
	struct fabsim_counters ctr;
	/** @port: the receiver's ToR port (ToR -> host 0). */
	const struct braid_fabsim_link_stats *port;
	/** @last_ns: when the last flow was delivered. */
	uint64_t last_ns;
};

/*
 * @senders hosts under the other ToRs each send @size bytes to host 0 at
 * once (each its own host), on fabric @c with random loss @loss on the
 * receiver's link both ways (data, and the ACKs that carry the grants).
 */
static void incast_run(struct incast *in, const struct braid_fabsim_cfg *c, int senders,
		       uint64_t size, double loss)
{
	struct fabsim_flow *f = calloc((size_t)senders, sizeof(*f));
	int i, down;

	cr_assert(f);
	cr_assert_leq(senders, (c->tors - 1) * c->hosts_per_tor);
	for (i = 0; i < senders; i++)
		f[i] = (struct fabsim_flow){ .src = c->hosts_per_tor + i, .dst = 0, .id = (uint32_t)i,
					     .size = size, .next = -1 };
	cr_assert_eq(braid_fabsim_open(c, &in->net), 0);
	down = braid_fabsim_link(in->net, BRAID_FABSIM_HOST_DOWN, 0, 0);
	if (loss > 0) {
		cr_assert_eq(braid_fabsim_set_loss(in->net, down, loss), 0);
		cr_assert_eq(braid_fabsim_set_loss(in->net,
				braid_fabsim_link(in->net, BRAID_FABSIM_HOST_UP, 0, 0), loss), 0);
	}
	cr_assert_eq(fabsim_run_open(&in->run, in->net, &fabsim_rd, f, (size_t)senders,
				     &(struct fabsim_opts){ .seed = 5 }), 0);
	free(f);
	cr_assert_eq(fabsim_run_go(&in->run, 1000 * MS), 0, "every flow finished");
	in->run.tp->counters(&in->run, &in->ctr);
	in->port = braid_fabsim_link_stats(in->net, down);
	in->last_ns = 0;
	for (i = 0; i < senders; i++) {
		const struct fabsim_flow *g = &in->run.flows[i];

		cr_assert_eq(g->err, 0, "flow %d delivered", i);
		cr_assert(g->intact, "flow %d: every byte once, as sent", i);
		if (g->recv_ns > in->last_ns)
			in->last_ns = g->recv_ns;
	}
	cr_assert_eq(in->run.corrupt, 0);
}

static void incast_close(struct incast *in)
{
	fabsim_run_close(&in->run);
	braid_fabsim_close(in->net);
}

/* line-rate time of @bytes of 4 KiB packets on a 100 Gbit/s link */
static uint64_t line_ns(uint64_t bytes)
{
	return (bytes + 4095) / 4096 * PKT_WIRE * 8 / 100;	/* 100 bits a ns */
}

/*
 * 24 senders x 256 KiB at once: their unscheduled packets and then their
 * grants together stay within the budget (plus a packet a sender), far
 * from the port's 512 KiB, so the port drops nothing and almost nothing is
 * resent; the receiver's link stays busy (the incast takes no longer than
 * its bytes at line rate and a few round trips).
 */
Test(grant, incast__bounded_queue_busy_link)
{
	struct braid_fabsim_cfg c = fabric_cfg();
	struct incast in;

	incast_run(&in, &c, 24, 256 << 10, 0);
	cr_assert_eq(in.port->drops_queue, 0, "the receiver's port dropped nothing");
	cr_assert_leq(in.port->max_backlog, (uint64_t)(BUDGET_PKTS + 24) * PKT_WIRE,
		      "the port's queue stayed within the grants: %lu bytes",
		      (unsigned long)in.port->max_backlog);
	cr_assert_leq(in.ctr.retx_pkts * 100, in.ctr.data_pkts,
		      "at most 1%% resent: %lu of %lu", (unsigned long)in.ctr.retx_pkts,
		      (unsigned long)in.ctr.data_pkts);
	cr_assert_leq(in.last_ns, line_ns(24ULL * (256 << 10)) * 10 / 9,
		      "the receiver's link busy: %lu ns for %lu ns at line rate",
		      (unsigned long)in.last_ns, (unsigned long)line_ns(24ULL * (256 << 10)));
	incast_close(&in);
}

/*
 * The same with 2% loss on the receiver's link both ways, data and the
 * ACKs that carry the grants: every byte arrives once and intact, and no
 * sender starves: each finishes within a few times the incast's line-rate
 * time, far below any peer timeout.
 */
Test(grant, incast__lossy_every_sender_finishes)
{
	struct braid_fabsim_cfg c = fabric_cfg();
	struct incast in;
	int i;

	incast_run(&in, &c, 24, 256 << 10, 0.02);
	cr_assert_gt(in.port->drops_loss, 0, "the loss happened");
	for (i = 0; i < 24; i++)
		cr_assert_leq(in.run.flows[i].recv_ns, 4 * line_ns(24ULL * (256 << 10)),
			      "flow %d finished at %lu ns", i,
			      (unsigned long)in.run.flows[i].recv_ns);
	cr_assert_eq(in.port->drops_queue, 0, "still no queue drop");
	incast_close(&in);
}

/*
 * A flow alone is not held by the grant: after its unscheduled packet's
 * round trip it runs at its congestion window, and 4 MiB take their
 * line-rate time and a few round trips.
 */
Test(grant, lone_flow__line_rate)
{
	struct braid_fabsim_cfg c = fabric_cfg();
	struct incast in;

	incast_run(&in, &c, 1, 4 << 20, 0);
	cr_assert_eq(in.ctr.retx_pkts, 0);
	cr_assert_leq(in.last_ns, line_ns(4 << 20) + 60 * US,
		      "%lu ns for %lu ns at line rate", (unsigned long)in.last_ns,
		      (unsigned long)line_ns(4 << 20));
	incast_close(&in);
}
