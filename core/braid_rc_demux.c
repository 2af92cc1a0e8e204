/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_rc_demux.c: one RoCEv2 UDP port's queue pairs: each packet to the QP it names, from that QP's peer only (protocol.md §5.1). */
#include <rdma/fi_errno.h>

#include "braid_rc_demux.h"
#include "braid_roce.h"

void braid_rc_demux_construct(struct braid_rc_demux *d)
{
	braid_map_construct(&d->qps);
	d->unknown_qp = 0;
	d->wrong_source = 0;
}

void braid_rc_demux_destruct(struct braid_rc_demux *d)
{
	braid_map_destruct(&d->qps);
}

int braid_rc_demux_add(struct braid_rc_demux *d, uint32_t qpn, struct braid_rc_demux_entry *e)
{
	return braid_map_insert(&d->qps, qpn, e);
}

void braid_rc_demux_remove(struct braid_rc_demux *d, uint32_t qpn)
{
	braid_map_remove(&d->qps, qpn);
}

bool braid_rc_demux_has(const struct braid_rc_demux *d, uint32_t qpn)
{
	return braid_map_get(&d->qps, qpn) != NULL;
}

struct braid_rc_demux_entry *braid_rc_demux_input(struct braid_rc_demux *d, const uint8_t *pkt,
						  size_t len, bool truncated, uint32_t src_ip,
						  uint16_t src_port, uint64_t now, bool *established)
{
	struct braid_rc_demux_entry *e;
	uint32_t qpn;

	*established = false;
	if (truncated || braid_roce_dest_qp(pkt, len, &qpn)) {
		d->unknown_qp++;
		return NULL;
	}
	e = braid_map_get(&d->qps, qpn);
	if (!e || !e->qp) {
		d->unknown_qp++;
		return NULL;
	}
	/* a QP hears only its peer: the address and port it sends from */
	if (!braid_rc_from_peer(e->qp, src_ip, src_port)) {
		d->wrong_source++;
		return NULL;
	}
	if (braid_rc_input(e->qp, pkt, len, now) == 0 && e->cm &&
	    e->cm->state == BRAID_CM_REP_SENT) {
		/* RC traffic on the new QP: the RTU was lost, the connection
		 * is up all the same (IBTA: communication established) */
		braid_cm_comm_established(e->cm);
		*established = true;
	}
	return e;
}
