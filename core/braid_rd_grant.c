/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_rd_grant.c: receiver grants (protocol.md §4.10): the senders with data on the way count as active, and each is granted a share of the receiver's budget in its ACKs' rwnd. */
#include "braid_rd_int.h"

/*
 * The receiver side only. A sender joins the active set with a data packet
 * that is not the last of its message (it has more of it to send now; a
 * rendezvous message's first packet does not count: the rest waits for the
 * CTS) and leaves it once nothing has come from it for its active time. The
 * set is a list by the time of each sender's latest packet, oldest first:
 * expiry looks at its head only, so a flow whose active time is longer may
 * hold back one behind it that is over (it is counted a little longer: a
 * smaller share for the others, never a larger one).
 */

/*
 * How long a sender stays active after its latest packet: four of its RTTs
 * as the receiver knows them (the time from its join to the data the grant
 * released, else its RTT as our own flow's peer or rendezvous CTS, else a
 * quarter of the RTO floor), and at least twice the ACK delay. A sender
 * whose window is full sends when an ACK comes back, once an RTT at least.
 */
static uint64_t grant_active_ns(const struct braid_rd *rd, const struct rd_flow *f)
{
	uint64_t r = f->grant_rtt ? f->grant_rtt : f->min_rtt ? f->min_rtt :
		     f->cts_rtt ? f->cts_rtt : rd->cfg.rto_min_ns / 4;
	uint64_t t = 4 * r;

	return t < 2 * rd->cfg.ack_delay_ns ? 2 * rd->cfg.ack_delay_ns : t;
}

static void grant_leave(struct braid_rd *rd, struct rd_flow *f)
{
	braid_dlist_remove(&f->grant_node);
	f->grant_on = false;
	rd->grant_total -= f->grant_given;
	f->grant_given = 0;
	rd->stats.grant_senders--;
}

/* Senders whose active time is over leave the set (from the oldest). */
static void grant_expire(struct braid_rd *rd, uint64_t now)
{
	while (!braid_dlist_empty(&rd->granted)) {
		struct rd_flow *f = braid_container_of(rd->granted.next, struct rd_flow, grant_node);

		if (now - f->grant_seen < grant_active_ns(rd, f))
			return;
		grant_leave(rd, f);
	}
}

/* rd_grant_note()'s work, for a sender active or timed, or one with more to send. */
bool rd_grant_arrive(struct braid_rd *rd, struct rd_flow *f, const struct braid_rd_data_view *v,
		     uint64_t now)
{
	/* the first packet beyond the sender's unscheduled window after its grant
	 * left: the time since is a round trip (its RTT, as far as we can see it) */
	if (f->grant_at && braid_seq_gt(v->psn, f->grant_psn) && !(v->flags & BRAID_RD_F_RETX)) {
		uint64_t r = now - f->grant_at;

		f->grant_rtt = f->grant_rtt ? f->grant_rtt - f->grant_rtt / 8 + r / 8 : r;
		f->grant_at = 0;
	}
	if (f->grant_on) {
		f->grant_seen = now;
		braid_dlist_remove(&f->grant_node);
		braid_dlist_insert_tail(&f->grant_node, &rd->granted);
		return false;
	}
	if (!rd_grant_more(v))
		return false;
	f->grant_on = true;
	f->grant_seen = now;
	braid_dlist_insert_tail(&f->grant_node, &rd->granted);
	rd->stats.grant_senders++;
	/* its grant's round trip is timed from the ACK that carries it (rd_grant_sent) */
	f->grant_join = true;
	f->grant_psn = v->psn + (rd->cfg.unsched_pkts ? rd->cfg.unsched_pkts : 1) - 1;
	RD_COUNT(rd, f, grant_joins, 1);
	return true;
}

uint32_t rd_grant_peek(const struct braid_rd *rd, const struct rd_flow *f)
{
	uint64_t n = rd->stats.grant_senders + (f->grant_on ? 0 : 1);
	uint64_t others = rd->grant_total - f->grant_given, g;

	if (!rd->grant_pkts || n <= 1)
		return rd->cfg.window;	/* a sender alone: its CC and our buffer are its limits */
	/* an equal share; to an active sender, of what the others' grants leave:
	 * those given while fewer senders were counted (the first of an incast to
	 * join got more) hold their part until their next ACK lowers them. (A
	 * sender of one-packet messages is not counted, nor cut to what is left:
	 * it would get a packet a round trip while bulk senders fill the budget.) */
	g = rd->grant_pkts / n;
	if (f->grant_on && g + others > rd->grant_pkts)
		g = others < rd->grant_pkts ? rd->grant_pkts - others : 0;
	return g ? (uint32_t)g : 1;
}

uint32_t rd_grant_sent(struct braid_rd *rd, struct rd_flow *f, uint32_t room, uint64_t now)
{
	uint32_t g;

	if (!rd->grant_pkts)
		return room;
	grant_expire(rd, now);
	g = rd_grant_peek(rd, f);
	if (f->grant_on) {
		rd->grant_total = rd->grant_total - f->grant_given + g;
		f->grant_given = g;
	}
	if (f->grant_join) {
		f->grant_join = false;
		f->grant_at = now;
	}
	if (g >= room)
		return room;
	RD_COUNT(rd, f, grants_tx, 1);
	return g;
}

void rd_grant_forget(struct braid_rd *rd, struct rd_flow *f)
{
	if (f->grant_on)
		grant_leave(rd, f);
	f->grant_join = false;
	f->grant_at = 0;
}
