/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_cc.h: congestion control behind a small ops table (Swift-like delay-based by default). */
#ifndef BRAID_CC_H
#define BRAID_CC_H

#include <stdbool.h>
#include <stdint.h>

#define BRAID_CC_STATE_BYTES	96

/** struct braid_cc_state - opaque per-flow storage for the algorithm. */
struct braid_cc_state {
	uint64_t u[BRAID_CC_STATE_BYTES / 8];
};

/**
 * struct braid_cc_ops - one congestion control algorithm. Every call gets
 * the current time; none allocates. The window is in packets.
 */
struct braid_cc_ops {
	const char *name;
	/**
	 * @init: start a flow with @init_cwnd packets allowed (1 to @max_cwnd;
	 * an algorithm without a window ignores it); @max_cwnd is the flow's
	 * window, @target_ns the delay target.
	 */
	void (*init)(struct braid_cc_state *s, uint32_t init_cwnd, uint32_t max_cwnd,
		     uint64_t target_ns);
	/**
	 * @on_ack: @acked packets delivered; @rtt_ns a fresh sample (0 if none), of
	 * which @away_ns (<= @rtt_ns) the hosts were away from the wire (a receiver
	 * or sender descheduled, computing, delaying its ACK: protocol.md §4.5),
	 * which is no queueing; @base_rtt_ns the base RTT it is judged against; @ecn a CE echo.
	 */
	void (*on_ack)(struct braid_cc_state *s, uint32_t acked, uint64_t rtt_ns,
		       uint64_t away_ns, uint64_t base_rtt_ns, bool ecn, uint64_t now);
	/** @on_loss: a packet was declared lost (time-based detection). */
	void (*on_loss)(struct braid_cc_state *s, uint64_t srtt_ns, uint64_t now);
	/** @on_rto: the retransmission timer fired. */
	void (*on_rto)(struct braid_cc_state *s, uint64_t now);
	/**
	 * @rto_verdict: the first ACK after an RTO shows whether it was
	 * @spurious (it echoes a packet sent before the RTO: the packets were not
	 * lost, only late, as Eifel detects it, RFC 3522); a spurious RTO's cut is
	 * undone.
	 */
	void (*rto_verdict)(struct braid_cc_state *s, bool spurious);
	/** @cwnd: packets allowed in flight now (>= 1). */
	uint32_t (*cwnd)(const struct braid_cc_state *s);
};

/** Swift-like: additive increase below the target delay, multiplicative decrease above it. */
extern const struct braid_cc_ops braid_cc_swift;
/** No congestion control: the window is always the flow's maximum (for tests/benchmarks). */
extern const struct braid_cc_ops braid_cc_none;

#endif /* BRAID_CC_H */
