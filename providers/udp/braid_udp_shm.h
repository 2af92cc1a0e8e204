/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_udp_shm.h: local peers through shared memory, under the UDP wire (fi_braid(7), LOCAL PEERS). */
#ifndef BRAID_UDP_SHM_H
#define BRAID_UDP_SHM_H

#include <stdbool.h>
#include <stdint.h>
#include <netinet/in.h>

#include "braid/braid_wire.h"

struct braid_udp_shm;

/**
 * udp_shm_open() - the shared-memory side of a UDP wire endpoint: its own
 * inbound segment, named after its home address (@name) in this user's and
 * this network namespace's scope, with @rings rings of @ring_bytes each
 * (rounded up to a power of two large enough for two datagrams of @rx_max);
 * @ports are the endpoint's UDP ports (ports[0] the home one), @doorbell_fd
 * the socket that wakes a sleeping local peer; @st the counters it keeps.
 * Payloads the engine lends (BRAID_PKT_LEND) of @lend_min bytes or more (0:
 * none) go by reference: the receiver reads them from our memory
 * (process_vm_readv), one copy. Return 0 and *@shm, or a
 * negative FI_E* (then the wire goes without: every datagram by UDP).
 */
int udp_shm_open(struct braid_udp_shm **shm, const struct sockaddr_in *name, const uint16_t *ports,
		 int nports, uint32_t rings, size_t ring_bytes, size_t rx_max, size_t lend_min,
		 int doorbell_fd, struct braid_wire_local *st);
void udp_shm_close(struct braid_udp_shm *shm);

/**
 * udp_shm_tx() - send @pkt to its destination's ring if the destination is
 * a local endpoint, from route selector @path (source port @src_port).
 * Return: 1 handled (written, or dropped where the local peer is gone or has
 * not read its ring for a while: the engine resends); 2 written with its
 * payload lent; 0 not local (send it by UDP); -1 the ring is full for now
 * (try again later).
 */
int udp_shm_tx(struct braid_udp_shm *shm, struct braid_pkt *pkt, uint16_t src_port);

/**
 * udp_shm_tx_msg() - a message handed whole (protocol.md §7.4): @hdr and
 * @iov's bytes as one SHM_REC_MSG record in the ring of the local peer
 * whose home address is @ip:@port (host order). Return 1 written; 0 not
 * (not local, gone, its ring full, its staging over, too long).
 */
int udp_shm_tx_msg(struct braid_udp_shm *shm, uint32_t ip, uint16_t port, const void *hdr,
		   size_t hdr_len, const struct iovec *iov, int iovcnt);

/**
 * udp_shm_rx_msgs() - the message records at the heads of our rings, up to
 * @max, each to @fn (as the wire's rx_msgs); @refuse: our staging ran over,
 * senders are asked to hand us no message whole until a call without it;
 * *@more (if not NULL): a datagram is next in a ring we took from.
 * Return: records taken.
 */
int udp_shm_rx_msgs(struct braid_udp_shm *shm,
		    int (*fn)(void *ctx, uint32_t ip, uint16_t port, const void *rec, size_t len),
		    void *ctx, int max, bool refuse, bool *more);

/** udp_shm_local() - @pkt's destination is a local peer udp_shm_tx() writes to. */
bool udp_shm_local(struct braid_udp_shm *shm, const struct braid_pkt *pkt);

/** udp_shm_tx_done() - after a burst: wake the local peers written to that sleep. */
void udp_shm_tx_done(struct braid_udp_shm *shm);

/** udp_shm_rx() - up to @n datagrams from the rings into @pkts' buffers. Return how many. */
int udp_shm_rx(struct braid_udp_shm *shm, struct braid_pkt *pkts, int n);

/**
 * udp_shm_idle() - every ring empty: udp_shm_rx and udp_shm_rx_msgs would take
 * nothing (@refuse: as udp_shm_rx_msgs takes it). False when something is
 * there, or the rings are not mapped yet.
 */
bool udp_shm_idle(struct braid_udp_shm *shm, bool refuse);

/**
 * udp_shm_peek() - the next datagram in the rings, left there: as the wire's
 * rx_peek. Return its length, 0 when the rings are empty.
 */
size_t udp_shm_peek(struct braid_udp_shm *shm, void *buf, size_t cap, struct sockaddr_in *from,
		    uint64_t *rx_ns);

/**
 * udp_shm_take() - after udp_shm_peek() found one: that datagram into @pkt's
 * buffers, its first bytes exactly those the peek saw. Return 1, or 0 when
 * the ring no longer holds it as peeked (dropped).
 */
int udp_shm_take(struct braid_udp_shm *shm, struct braid_pkt *pkt);

/** udp_shm_peeked() - a udp_shm_peek() found a datagram that no take has taken yet. */
bool udp_shm_peeked(const struct braid_udp_shm *shm);

/**
 * udp_shm_arm() - before the caller sleeps on the wire's fd: ask local
 * peers to wake it (a doorbell datagram to its home socket) when they
 * write. Return true when a ring has something already (do not sleep).
 */
bool udp_shm_arm(struct braid_udp_shm *shm);

#endif
