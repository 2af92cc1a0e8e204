/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_fabsim.h: a leaf-spine fabric in virtual time: hosts, ToRs and spines joined by rate-limited links with drop-tail, ECN-marking queues, ECMP on each packet's entropy, loss and link failures at given times. */
#ifndef BRAID_FABSIM_H
#define BRAID_FABSIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * @tors ToRs with @hosts_per_tor hosts each; every ToR has one link to each
 * of @spines spines. Host h sits under ToR h / hosts_per_tor. Every link is
 * two directed links, each fed by its own FIFO output queue: the host's NIC
 * (host -> ToR), the ToR's port to the host, the ToR's uplink to a spine,
 * the spine's downlink to a ToR.
 *
 * A packet a host sends crosses its NIC link, then at its ToR either goes
 * straight down to a host of the same ToR or up to the spine ECMP picks:
 * a hash of (the two hosts, unordered, and the packet's 16-bit entropy)
 * over the spines both of whose links (up from the source ToR, down to
 * the destination ToR) are in the routing tables; then down to the
 * destination ToR and its host. The hash is symmetric, so a reply sent
 * with the entropy of the packet it answers crosses the same spine back,
 * and one entropy always takes one spine: a different route selector is a
 * different route only when it hashes to another spine.
 *
 * A queue is modelled exactly for a FIFO at the link's rate: a packet that
 * enters at time t waits behind the bytes ahead of it (its backlog), is
 * serialised in (len + overhead) * 8 / rate, then propagates for the
 * link's delay. A packet is dropped when it enters a link that is down,
 * by the link's random loss, or when its bytes would take the backlog past
 * the queue's limit (drop-tail); it is marked ECN CE when the backlog it
 * finds exceeds the marking threshold. A packet in flight on a link (queued
 * or on the wire) when the link goes down is lost.
 *
 * Every link carries IP packets of up to @mtu bytes: a datagram (the UDP
 * payload) of at most @mtu - 28 bytes (braid_fabsim_max_dgram()); @mtu 0:
 * up to BRAID_FABSIM_MAX_PKT. The transports on the fabric size their
 * packets from it, as braid's UDP wire does from its interface's MTU.
 *
 * Routing: a link that went down stays in the ECMP tables (packets hashed
 * to it are black-holed) until @reroute_ns after it failed; then routes
 * avoid it until it comes back up (at once). @reroute_ns 0: routing never
 * reacts during a run.
 *
 * Virtual time only: the fabric reads no clock. Every random draw (loss)
 * comes from one generator seeded with @seed, and events at equal times are
 * handled in the order they were made, so a run repeats exactly.
 */

/** struct braid_fabsim_link_cfg - one kind of link (both directions alike). */
struct braid_fabsim_link_cfg {
	/** @rate_bps: bits per second (> 0). */
	uint64_t rate_bps;
	/** @delay_ns: propagation delay, switch latency included. */
	uint64_t delay_ns;
	/** @queue_bytes: drop-tail limit of the queue in front of the link; 0: unlimited. */
	uint64_t queue_bytes;
	/** @ecn_bytes: mark CE when a packet finds more than this backlog; 0: never. */
	uint64_t ecn_bytes;
};

/** struct braid_fabsim_cfg - the topology and its links. */
struct braid_fabsim_cfg {
	/** @tors, @hosts_per_tor, @spines: the shape (each >= 1, spines <= BRAID_FABSIM_MAX_SPINES). */
	int tors, hosts_per_tor, spines;
	/** @host: host <-> ToR links (the host's NIC queue, host -> ToR, is never limited). */
	struct braid_fabsim_link_cfg host;
	/** @fabric: ToR <-> spine links. */
	struct braid_fabsim_link_cfg fabric;
	/** @overhead: bytes each packet takes on a link beyond the datagram (Ethernet, IP, UDP, gaps). */
	uint32_t overhead;
	/** @reroute_ns: how long after a link fails routing avoids it (0: never). */
	uint64_t reroute_ns;
	/** @seed: for the random loss. */
	uint64_t seed;
	/** @mtu: the IP MTU of every link (0, or 576..65535; 0: datagrams up to BRAID_FABSIM_MAX_PKT). */
	uint32_t mtu;
};

#define BRAID_FABSIM_MAX_SPINES	256
#define BRAID_FABSIM_MAX_PKT	65536

/** struct braid_fabsim_pkt - a packet delivered to a host (braid_fabsim_step). */
struct braid_fabsim_pkt {
	/** @data, @len: the datagram; valid until the next braid_fabsim_step(). */
	const uint8_t *data;
	size_t len;
	/** @src, @dst: sending and receiving host. */
	int src, dst;
	/** @entropy: the route selector it was sent with. */
	uint16_t entropy;
	/** @spine: the spine it crossed, -1 when it stayed under one ToR. */
	int spine;
	/** @ecn_ce: marked congestion-experienced on the way. */
	bool ecn_ce;
	/** @at: its arrival time. */
	uint64_t at;
};

/** struct braid_fabsim_link_stats - counters of one directed link. */
struct braid_fabsim_link_stats {
	/** @pkts, @bytes: packets (and their datagram bytes) that entered the link's queue. */
	uint64_t pkts, bytes;
	/** @drops_queue: dropped by the full queue (drop-tail). */
	uint64_t drops_queue;
	/** @drops_down: dropped because the link was down, or went down under them. */
	uint64_t drops_down;
	/** @drops_loss: dropped by the link's random loss. */
	uint64_t drops_loss;
	/** @ecn_marks: packets marked CE by this link's queue. */
	uint64_t ecn_marks;
	/** @max_backlog: the largest backlog (bytes) a packet found. */
	uint64_t max_backlog;
	/** @busy_ns: time spent serialising the packets it took (framing included). */
	uint64_t busy_ns;
};

/** directed links, named by braid_fabsim_link() */
enum braid_fabsim_link_kind {
	BRAID_FABSIM_HOST_UP,		/* host a -> its ToR (@b unused) */
	BRAID_FABSIM_HOST_DOWN,		/* ToR -> host a */
	BRAID_FABSIM_TOR_UP,		/* ToR a -> spine b */
	BRAID_FABSIM_SPINE_DOWN,	/* spine b -> ToR a */
};

struct braid_fabsim;

/**
 * braid_fabsim_open() - build the fabric described by @cfg (copied).
 * Return: 0, -FI_EINVAL (a bad shape or rate), -FI_ENOMEM.
 * The caller must eventually call braid_fabsim_close().
 */
int braid_fabsim_open(const struct braid_fabsim_cfg *cfg, struct braid_fabsim **fs);

/** braid_fabsim_close() - free the fabric and every packet in it. NULL is a no-op. */
void braid_fabsim_close(struct braid_fabsim *fs);

/** braid_fabsim_hosts() - how many hosts (tors * hosts_per_tor). */
int braid_fabsim_hosts(const struct braid_fabsim *fs);

/** braid_fabsim_max_dgram() - the largest datagram a link carries (the UDP payload of an @mtu packet). */
size_t braid_fabsim_max_dgram(const struct braid_fabsim *fs);

/** braid_fabsim_tor_of() - the ToR of host @host. */
int braid_fabsim_tor_of(const struct braid_fabsim *fs, int host);

/**
 * braid_fabsim_link() - the index of a directed link (see the enum), or
 * -FI_EINVAL for an index out of range.
 */
int braid_fabsim_link(const struct braid_fabsim *fs, enum braid_fabsim_link_kind kind, int a, int b);

/** braid_fabsim_set_loss() - random loss probability (0..1) of link @link from now on. 0 or -FI_EINVAL. */
int braid_fabsim_set_loss(struct braid_fabsim *fs, int link, double loss);

/**
 * braid_fabsim_schedule() - take link @link down (@up false) or bring it
 * up at virtual time @at_ns (not before the fabric's current time).
 * Return: 0, -FI_EINVAL, -FI_ENOMEM.
 */
int braid_fabsim_schedule(struct braid_fabsim *fs, uint64_t at_ns, int link, bool up);

/**
 * braid_fabsim_send() - host @src sends @len bytes (copied) to host @dst
 * with route selector @entropy at time @now (>= the fabric's current
 * time): the packet enters @src's NIC queue.
 * Return: 0 (it may still be lost on the way), -FI_EINVAL (bad hosts, len
 * 0, @now in the past), -FI_EMSGSIZE (@len over braid_fabsim_max_dgram()),
 * -FI_ENOMEM.
 */
int braid_fabsim_send(struct braid_fabsim *fs, uint64_t now, int src, int dst, uint16_t entropy,
		      const void *data, size_t len);

/**
 * braid_fabsim_tx_free_at() - when host @host's NIC has sent everything
 * queued on it (a time <= now: it is idle). A sender that keeps this near
 * now keeps its NIC busy without a standing queue.
 */
uint64_t braid_fabsim_tx_free_at(const struct braid_fabsim *fs, int host);

/** braid_fabsim_next() - the time of the fabric's next event, UINT64_MAX when none. */
uint64_t braid_fabsim_next(const struct braid_fabsim *fs);

/**
 * braid_fabsim_step() - handle the fabric's events due by @until, in time
 * order, until one delivers a packet to a host: then fill *@pkt and return
 * 1. Return 0 when no event is due by @until. The fabric's time moves to
 * each event handled.
 */
int braid_fabsim_step(struct braid_fabsim *fs, uint64_t until, struct braid_fabsim_pkt *pkt);

/** braid_fabsim_now() - the fabric's current time (the last event handled or packet sent). */
uint64_t braid_fabsim_now(const struct braid_fabsim *fs);

/**
 * braid_fabsim_route() - the spine a packet from @src to @dst with @entropy
 * takes now (-1: the hosts share a ToR; -FI_EHOSTUNREACH: routing has no
 * spine left; -FI_EINVAL: bad hosts).
 */
int braid_fabsim_route(const struct braid_fabsim *fs, int src, int dst, uint16_t entropy);

/** braid_fabsim_link_stats() - counters of link @link (NULL for a bad index). */
const struct braid_fabsim_link_stats *braid_fabsim_link_stats(const struct braid_fabsim *fs, int link);

/** braid_fabsim_links() - how many directed links (indexes 0..n-1). */
int braid_fabsim_links(const struct braid_fabsim *fs);

/** braid_fabsim_in_flight() - packets in the fabric (queued or on a wire). */
size_t braid_fabsim_in_flight(const struct braid_fabsim *fs);

#endif /* BRAID_FABSIM_H */
