/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_cc.c: congestion control algorithms: Swift-like delay-based, and none. */
#include <string.h>

#include "braid_cc.h"

/*
 * Swift-like (Kumar et al., SIGCOMM 2020), simplified to one window per
 * flow. The signal is queueing delay: an RTT sample less the base RTT the
 * engine gives with it (the flow's lowest sample of a packet of its size
 * class, so serialization on a slow link is not read as congestion), judged
 * against a target of max(target_ns, base RTT / 2, 2 RTT / cwnd): the target
 * scales with the fabric's RTT, as Swift's hop scaling does, and is never
 * less than two of the flow's packets at its own rate (RTT / cwnd each), so
 * a flow keeps two packets queued where one packet's serialization outlasts
 * the other terms (1500 bytes take 240 us at 50 Mbit/s: a 25 us target
 * would hold the flow to one packet and its link part idle), and a flow
 * with a small window gets a larger target, as Swift's flow scaling gives,
 * so flows that misjudge their base RTT still share. The time the hosts were
 * away from the wire during a sample (a receiver or sender descheduled or
 * computing: the endpoint delay Swift takes from NIC timestamps) is no
 * queueing: it is left out of the delay, not out of the round's length.
 *  - Judged once per RTT on the smallest queueing delay seen in that RTT: a
 *    standing queue raises every sample, a host's scheduling jitter only
 *    some, so jitter alone never cuts the window.
 *  - below target: additive increase of AI packets per RTT; before the
 *    first congestion signal of the flow (delay over target, ECN, an RTO),
 *    slow start: the window doubles each RTT, so a long path fills its
 *    window in a few RTTs, not hundreds;
 *  - above target: multiplicative decrease proportional to the excess,
 *    beta * (queue - target) / rtt, at most MAX_MDF, once per RTT;
 *  - ECN CE echo: a decrease of MAX_MDF / 2, at most once per RTT;
 *  - loss: decreases only when the delay is over target too (random loss
 *    on a sprayed fabric is not congestion: the time-based loss detector
 *    retransmits it; backing off would only cost goodput);
 *  - RTO: halve, to no fewer than 4 packets; undone when the RTO proves
 *    spurious.
 */
struct swift {
	double cwnd;
	double max_cwnd;
	uint64_t target_ns;
	uint64_t last_decrease;
	/** @last_rtt: the latest sample (the length of an RTT round). */
	uint64_t last_rtt;
	/** @round_start, @round_minq, @round_base: the current round: its smallest
	 * queueing delay (UINT64_MAX: no sample yet) and the base RTT it was taken against. */
	uint64_t round_start, round_minq, round_base;
	/** @prior_cwnd: the window before the RTOs of a timeout episode (0: none pending). */
	double prior_cwnd;
	/** @over: the last round ended above the target. */
	bool over;
	/** @slow_start: no congestion signal yet: the window doubles each RTT. */
	bool slow_start;
	/** @prior_slow_start: @slow_start before the RTOs of a timeout episode. */
	bool prior_slow_start;
};
_Static_assert(sizeof(struct swift) <= BRAID_CC_STATE_BYTES, "swift state fits");

#define SWIFT_AI	1.0
#define SWIFT_BETA	0.8
#define SWIFT_MAX_MDF	0.5
#define SWIFT_MIN_CWND	1.0
#define SWIFT_RTO_MIN_CWND	4.0
#define SWIFT_OWN_PKTS	2.0

static struct swift *sw(struct braid_cc_state *s) { return (struct swift *)s->u; }
static const struct swift *csw(const struct braid_cc_state *s) { return (const struct swift *)s->u; }

static void swift_clamp(struct swift *w)
{
	if (w->cwnd < SWIFT_MIN_CWND)
		w->cwnd = SWIFT_MIN_CWND;
	if (w->cwnd > w->max_cwnd)
		w->cwnd = w->max_cwnd;
}

static void swift_init(struct braid_cc_state *s, uint32_t init_cwnd, uint32_t max_cwnd,
		       uint64_t target_ns)
{
	struct swift *w = sw(s);

	memset(s, 0, sizeof(*s));
	w->max_cwnd = max_cwnd ? max_cwnd : 1;
	w->cwnd = init_cwnd;
	w->target_ns = target_ns;
	w->round_minq = UINT64_MAX;
	w->slow_start = true;
	swift_clamp(w);
}

/* The queueing delay a flow may build above the base RTT @base_rtt_ns. */
static uint64_t swift_target(const struct swift *w, uint64_t base_rtt_ns)
{
	uint64_t t = base_rtt_ns / 2;

	return t > w->target_ns ? t : w->target_ns;
}

static void swift_decrease(struct swift *w, double factor, uint64_t now)
{
	w->slow_start = false;	/* the first congestion signal ends it */
	/* once per RTT at most */
	if (w->last_decrease && now - w->last_decrease < w->last_rtt)
		return;
	w->cwnd *= factor;
	w->last_decrease = now;
	swift_clamp(w);
}

/* The end of a round: judge its smallest queueing delay against the target. */
static void swift_round_end(struct swift *w, uint64_t now)
{
	uint64_t q = w->round_minq, t = swift_target(w, w->round_base);

	if (q != UINT64_MAX) {
		/* at least SWIFT_OWN_PKTS of the flow's packets at its own rate (the
		 * round's RTT over the window each) */
		uint64_t own = (uint64_t)(SWIFT_OWN_PKTS * (double)(q + w->round_base) / w->cwnd);

		if (own > t)
			t = own;
	}
	w->over = q != UINT64_MAX && q > t;
	if (w->over) {
		double mdf = SWIFT_BETA * (double)(q - t) / (double)(q + w->round_base);

		if (mdf > SWIFT_MAX_MDF)
			mdf = SWIFT_MAX_MDF;
		swift_decrease(w, 1.0 - mdf, now);
	}
	w->round_start = now;
	w->round_minq = UINT64_MAX;
	w->round_base = 0;
}

static void swift_on_ack(struct braid_cc_state *s, uint32_t acked, uint64_t rtt_ns,
			 uint64_t away_ns, uint64_t base_rtt_ns, bool ecn, uint64_t now)
{
	struct swift *w = sw(s);

	if (rtt_ns) {
		/* the hosts' absence is no queue: a smaller window would not shorten it
		 * (the round still lasts the whole RTT) */
		uint64_t fab = rtt_ns > away_ns ? rtt_ns - away_ns : 0;
		uint64_t q = fab > base_rtt_ns ? fab - base_rtt_ns : 0;

		w->last_rtt = rtt_ns;
		if (q < w->round_minq) {
			w->round_minq = q;
			w->round_base = base_rtt_ns;
		}
		if (!w->round_start)
			w->round_start = now;
	}
	if (ecn)
		swift_decrease(w, 1.0 - SWIFT_MAX_MDF / 2, now);
	else if (!w->over)
		w->cwnd += w->slow_start ? (double)acked : SWIFT_AI * acked / w->cwnd;
	if (w->round_start && w->last_rtt && now - w->round_start >= w->last_rtt)
		swift_round_end(w, now);
	swift_clamp(w);
}

static void swift_on_loss(struct braid_cc_state *s, uint64_t srtt_ns, uint64_t now)
{
	struct swift *w = sw(s);

	if (w->over)
		swift_decrease(w, 1.0 - SWIFT_MAX_MDF / 2, now);
}

static void swift_on_rto(struct braid_cc_state *s, uint64_t now)
{
	struct swift *w = sw(s);

	if (!w->prior_cwnd) {
		w->prior_cwnd = w->cwnd;
		w->prior_slow_start = w->slow_start;
	}
	w->slow_start = false;
	w->cwnd /= 2;
	/* keep a few packets going: with one in flight, every loss (of it or
	 * of its ACK) is a silence and another RTO */
	if (w->cwnd < SWIFT_RTO_MIN_CWND)
		w->cwnd = SWIFT_RTO_MIN_CWND < w->max_cwnd ? SWIFT_RTO_MIN_CWND : w->max_cwnd;
	w->last_decrease = now;
	swift_clamp(w);
}

static void swift_rto_verdict(struct braid_cc_state *s, bool spurious)
{
	struct swift *w = sw(s);

	if (spurious && w->prior_cwnd) {
		if (w->prior_cwnd > w->cwnd)
			w->cwnd = w->prior_cwnd;
		w->slow_start = w->prior_slow_start;
	}
	w->prior_cwnd = 0;
}

static uint32_t swift_cwnd(const struct braid_cc_state *s)
{
	return (uint32_t)csw(s)->cwnd;
}

const struct braid_cc_ops braid_cc_swift = {
	.name = "swift",
	.init = swift_init,
	.on_ack = swift_on_ack,
	.on_loss = swift_on_loss,
	.on_rto = swift_on_rto,
	.rto_verdict = swift_rto_verdict,
	.cwnd = swift_cwnd,
};

/* ---- none: always the full window ---- */

static void none_init(struct braid_cc_state *s, uint32_t init_cwnd, uint32_t max_cwnd,
		      uint64_t target_ns)
{
	(void)init_cwnd;
	memset(s, 0, sizeof(*s));
	s->u[0] = max_cwnd ? max_cwnd : 1;
}

static void none_on_ack(struct braid_cc_state *s, uint32_t acked, uint64_t rtt_ns,
			uint64_t away_ns, uint64_t base_rtt_ns, bool ecn, uint64_t now)
{
}

static void none_on_loss(struct braid_cc_state *s, uint64_t srtt_ns, uint64_t now)
{
}

static void none_on_rto(struct braid_cc_state *s, uint64_t now)
{
}

static void none_rto_verdict(struct braid_cc_state *s, bool spurious)
{
}

static uint32_t none_cwnd(const struct braid_cc_state *s)
{
	return (uint32_t)s->u[0];
}

const struct braid_cc_ops braid_cc_none = {
	.name = "none",
	.init = none_init,
	.on_ack = none_on_ack,
	.on_loss = none_on_loss,
	.on_rto = none_on_rto,
	.rto_verdict = none_rto_verdict,
	.cwnd = none_cwnd,
};
