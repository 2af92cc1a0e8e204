/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_rc_demux.h: one RoCEv2 UDP port's queue pairs (protocol.md §5.1): which QP a packet is for, whether its sender is that QP's peer, and the connection a QP's first packet establishes; sans-I/O. */
#ifndef BRAID_RC_DEMUX_H
#define BRAID_RC_DEMUX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "braid/braid_map.h"
#include "braid_cm.h"
#include "braid_rc.h"

/*
 * Every MSG endpoint of a domain on one IP address receives its RoCEv2
 * packets on one UDP port, as the QPs of a RoCE NIC share UDP port 4791.
 * The caller reads the port's datagrams and hands each in with the address
 * it came from:
 *
 *   braid_rc_demux_add(d, qpn, entry)      a QP joins the port (its entry is the caller's)
 *   e = braid_rc_demux_input(d, pkt, ...)  one datagram: the QP that took it, or NULL
 *   braid_rc_demux_remove(d, qpn)          the QP leaves
 *
 * A datagram goes to the QP its BTH's DestQP names, and only when it came
 * from that QP's peer (the IP address and UDP port the peer sends from,
 * braid_rc_config.rx_addr): another host cannot reach a QP by guessing its
 * number. A QP whose connection is still waiting for the RTU takes its first
 * valid packet as the RTU (braid_cm_comm_established()).
 */

/** struct braid_rc_demux_entry - a QP on the port (the caller's memory, registered by QPN). */
struct braid_rc_demux_entry {
	struct braid_rc_qp *qp;
	/** @cm: its connection (its RTU may be lost), or NULL. */
	struct braid_cm_conn *cm;
	/** @owner: the caller's object for this QP. */
	void *owner;
};

/** struct braid_rc_demux - the port's QPs by number, and what it dropped. */
struct braid_rc_demux {
	struct braid_map qps;
	/** @unknown_qp: datagrams that were not RoCEv2 packets, or for a QP the port does not have. */
	uint64_t unknown_qp;
	/** @wrong_source: packets for a QP from an address other than its peer's. */
	uint64_t wrong_source;
};

void braid_rc_demux_construct(struct braid_rc_demux *d);
void braid_rc_demux_destruct(struct braid_rc_demux *d);

/** braid_rc_demux_add() - @e->qp receives as @qpn from now on. Return: 0, -FI_EALREADY (taken), -FI_ENOMEM. */
int braid_rc_demux_add(struct braid_rc_demux *d, uint32_t qpn, struct braid_rc_demux_entry *e);

/** braid_rc_demux_remove() - QP @qpn leaves the port (nothing if it is not there). */
void braid_rc_demux_remove(struct braid_rc_demux *d, uint32_t qpn);

/** braid_rc_demux_has() - is @qpn taken on this port? */
bool braid_rc_demux_has(const struct braid_rc_demux *d, uint32_t qpn);

/**
 * braid_rc_demux_input() - one datagram of @len bytes (the UDP payload) that
 * came from @src_ip:@src_port (host byte order); @truncated: the wire cut it.
 * Return: the entry of the QP it was for, which took it (braid_rc_input(),
 * whose own drops its counters keep), or NULL when the port dropped it
 * (counted in @d). *@established: its connection became established by it
 * (the caller acts on the connection's events).
 */
struct braid_rc_demux_entry *braid_rc_demux_input(struct braid_rc_demux *d, const uint8_t *pkt,
						  size_t len, bool truncated, uint32_t src_ip,
						  uint16_t src_port, uint64_t now, bool *established);

#endif
