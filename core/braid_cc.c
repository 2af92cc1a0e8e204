/* braid_cc.c: congestion control algorithms: Swift-like delay-based, and none. */
#include <string.h>

#include "braid_cc.h"

/*
 * Swift-like (Kumar et al., SIGCOMM 2020), simplified to one window per
 * flow: the signal is the RTT of acknowledged packets against a target of
 * base RTT + target_ns.
 *  - below target: additive increase of AI packets per RTT;
 *  - above target: multiplicative decrease proportional to the excess,
 *    beta * (rtt - target) / rtt, at most MAX_MDF, at most once per RTT;
 *  - ECN CE echo: treated as over target;
 *  - loss: decreases only when the delay is over target too (random loss
 *    on a sprayed fabric is not congestion: the time-based loss detector
 *    retransmits it; backing off would only cost goodput);
 *  - RTO: halve.
 */
struct swift {
	double cwnd;
	double max_cwnd;
	uint64_t target_ns;
	uint64_t last_decrease;
	uint64_t last_rtt;
	uint64_t last_base;
};
_Static_assert(sizeof(struct swift) <= BRAID_CC_STATE_BYTES, "swift state fits");

#define SWIFT_AI	1.0
#define SWIFT_BETA	0.8
#define SWIFT_MAX_MDF	0.5
#define SWIFT_MIN_CWND	1.0
#define SWIFT_INIT_CWND	32.0

static struct swift *sw(struct braid_cc_state *s) { return (struct swift *)s->u; }
static const struct swift *csw(const struct braid_cc_state *s) { return (const struct swift *)s->u; }

static void swift_clamp(struct swift *w)
{
	if (w->cwnd < SWIFT_MIN_CWND)
		w->cwnd = SWIFT_MIN_CWND;
	if (w->cwnd > w->max_cwnd)
		w->cwnd = w->max_cwnd;
}

static void swift_init(struct braid_cc_state *s, uint32_t max_cwnd, uint64_t target_ns)
{
	struct swift *w = sw(s);

	memset(s, 0, sizeof(*s));
	w->max_cwnd = max_cwnd ? max_cwnd : 1;
	w->cwnd = SWIFT_INIT_CWND;
	w->target_ns = target_ns;
	swift_clamp(w);
}

static void swift_decrease(struct swift *w, double factor, uint64_t now)
{
	/* once per RTT at most */
	if (w->last_decrease && now - w->last_decrease < w->last_rtt)
		return;
	w->cwnd *= factor;
	w->last_decrease = now;
	swift_clamp(w);
}

static void swift_on_ack(struct braid_cc_state *s, uint32_t acked, uint64_t rtt_ns,
			 uint64_t base_rtt_ns, bool ecn, uint64_t now)
{
	struct swift *w = sw(s);
	uint64_t target = base_rtt_ns + w->target_ns;

	if (rtt_ns) {
		w->last_rtt = rtt_ns;
		w->last_base = base_rtt_ns;
	}
	if (ecn) {
		swift_decrease(w, 1.0 - SWIFT_MAX_MDF / 2, now);
		return;
	}
	if (!rtt_ns || rtt_ns <= target) {
		w->cwnd += SWIFT_AI * acked / w->cwnd;
	} else {
		double mdf = SWIFT_BETA * (double)(rtt_ns - target) / (double)rtt_ns;

		if (mdf > SWIFT_MAX_MDF)
			mdf = SWIFT_MAX_MDF;
		swift_decrease(w, 1.0 - mdf, now);
	}
	swift_clamp(w);
}

static void swift_on_loss(struct braid_cc_state *s, uint64_t srtt_ns, uint64_t now)
{
	struct swift *w = sw(s);

	if (w->last_rtt > w->last_base + w->target_ns)
		swift_decrease(w, 1.0 - SWIFT_MAX_MDF / 2, now);
}

static void swift_on_rto(struct braid_cc_state *s, uint64_t now)
{
	struct swift *w = sw(s);

	w->cwnd /= 2;
	w->last_decrease = now;
	swift_clamp(w);
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
	.cwnd = swift_cwnd,
};

/* ---- none: always the full window ---- */

static void none_init(struct braid_cc_state *s, uint32_t max_cwnd, uint64_t target_ns)
{
	memset(s, 0, sizeof(*s));
	s->u[0] = max_cwnd ? max_cwnd : 1;
}

static void none_on_ack(struct braid_cc_state *s, uint32_t acked, uint64_t rtt_ns,
			uint64_t base_rtt_ns, bool ecn, uint64_t now)
{
}

static void none_on_loss(struct braid_cc_state *s, uint64_t srtt_ns, uint64_t now)
{
}

static void none_on_rto(struct braid_cc_state *s, uint64_t now)
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
	.cwnd = none_cwnd,
};
