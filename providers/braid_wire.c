/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_wire.c: the table of built-in wires, chosen at run time by FI_BRAID_WIRE. */
#include <string.h>
#include <rdma/fi_errno.h>

#include "braid/braid_wire.h"

extern const struct braid_wire_ops braid_udp_wire_ops;
extern const struct braid_wire_ops braid_sim_wire_ops;
#ifdef BRAID_HAVE_DPDK
extern const struct braid_wire_ops braid_dpdk_wire_ops;
#endif

static const struct braid_wire_ops *const braid_wires[] = {
	&braid_udp_wire_ops,
	&braid_sim_wire_ops,
#ifdef BRAID_HAVE_DPDK
	&braid_dpdk_wire_ops,
#endif
};

const struct braid_wire_ops *braid_wire_find(const char *name)
{
	size_t i;

	if (!name)
		return NULL;
	for (i = 0; i < sizeof(braid_wires) / sizeof(braid_wires[0]); i++) {
		if (!strcmp(braid_wires[i]->name, name))
			return braid_wires[i];
	}
	return NULL;
}

#define WIRE_PORT_LO	32768	/* ports handed out when none is asked for: 32768 .. 65535 */

static int wire_port_take(struct braid_wire_ports *t, uint16_t want)
{
	int i;

	if (want)
		return t->owner[want] ? -FI_EADDRINUSE : want;
	for (i = 0; i < 65536 - WIRE_PORT_LO; i++) {
		uint16_t p = t->next < WIRE_PORT_LO ? WIRE_PORT_LO : t->next;

		t->next = p == 65535 ? WIRE_PORT_LO : (uint16_t)(p + 1);
		if (!t->owner[p])
			return p;
	}
	return -FI_EADDRINUSE;
}

int braid_wire_ports_bind(struct braid_wire_ports *t, void *owner, uint16_t home,
			  uint16_t *ports, int n)
{
	int i, p;

	for (i = 0; i < n; i++) {
		p = wire_port_take(t, i ? 0 : home);
		if (p < 0) {
			braid_wire_ports_unbind(t, ports, i);
			return p;
		}
		ports[i] = (uint16_t)p;
		t->sel[p] = (uint16_t)i;
		t->owner[p] = owner;
	}
	return 0;
}

void braid_wire_ports_unbind(struct braid_wire_ports *t, const uint16_t *ports, int n)
{
	int i;

	for (i = 0; i < n; i++)
		t->owner[ports[i]] = NULL;
}

void braid_wire_cleanup_all(void)
{
	size_t i;

	for (i = 0; i < sizeof(braid_wires) / sizeof(braid_wires[0]); i++)
		if (braid_wires[i]->cleanup)
			braid_wires[i]->cleanup();
}

void braid_wire_rx_reset(struct braid_wire *wire, struct braid_pkt *pkts, struct iovec *iovs,
			 uint8_t *bufs, int n)
{
	size_t max = braid_wire_rx_max(wire);
	int i;

	for (i = 0; i < n; i++) {
		pkts[i].iov = &iovs[i];
		pkts[i].iovcnt = 1;
		pkts[i].rx_ns = 0;	/* the wires that time arrivals set it */
		pkts[i].gso_size = 0;	/* a coalesced run: the wire sets it */
		iovs[i].iov_base = bufs + (size_t)i * max;	/* (a lending wire points it at its frame) */
		iovs[i].iov_len = max;
	}
}

static int wire_rx_set(struct braid_wire *wire, struct braid_pkt *pkts, int n)
{
	if (wire->ops->rx_lend)
		return wire->ops->rx_lend(wire, pkts, n);
	return wire->ops->rx_burst(wire, pkts, n);
}

int braid_wire_rx(struct braid_wire *wire, struct braid_pkt *pkts, struct iovec *iovs,
		  uint8_t *bufs, int n)
{
	braid_wire_rx_reset(wire, pkts, iovs, bufs, n);
	return wire_rx_set(wire, pkts, n);
}

int braid_wire_rx_kept(struct braid_wire *wire, struct braid_pkt *pkts, struct iovec *iovs,
		       uint8_t *bufs, uint8_t **set, int n)
{
	if (*set != bufs) {
		braid_wire_rx_reset(wire, pkts, iovs, bufs, n);
		*set = bufs;
	}
	return wire_rx_set(wire, pkts, n);
}

void braid_wire_rx_done(struct braid_wire *wire, struct braid_pkt *pkts, int n)
{
	if (wire->ops->rx_lend && n > 0)
		wire->ops->rx_return(wire, pkts, n);
}
