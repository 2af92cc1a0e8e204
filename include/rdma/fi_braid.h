/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * fi_braid.h: the braid provider's extension to libfabric: its counters,
 * read through fi_open_ops(3) (fi_braid(7), "COUNTERS").
 *
 *	struct fi_braid_stat_ops *ops;
 *	fi_open_ops(&ep->fid, FI_BRAID_STAT_OPS, 0, (void **)&ops, NULL);
 *	n = ops->table(&descs);			// what each value is
 *	len = ops->snapshot(&ep->fid, buf, sizeof(buf));	// the endpoint, its peers, their paths
 *	ops->value(&ep->fid, "rd.retx_pkts", &v);	// one endpoint value by name
 *
 * fi_open_ops takes a braid domain or endpoint; the ops read endpoints.
 * Installed with the provider; this header needs nothing but libfabric's.
 */
#ifndef FI_BRAID_H
#define FI_BRAID_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <rdma/fabric.h>

#ifdef __cplusplus
extern "C" {
#endif

/* the name fi_open_ops takes */
#define FI_BRAID_STAT_OPS	"braid_stat_ops_v1"

/* where a value is kept (fi_braid_stat_desc.scopes, a mask) */
#define FI_BRAID_SCOPE_EP	1u	/* the endpoint (totals) */
#define FI_BRAID_SCOPE_PEER	2u	/* a peer with traffic state (RDM) */
#define FI_BRAID_SCOPE_PATH	4u	/* one of that peer's paths (RDM) */

/* what a value is (fi_braid_stat_desc.kind) */
#define FI_BRAID_COUNTER	0	/* counts events; only grows */
#define FI_BRAID_GAUGE		1	/* a level, read when the snapshot was taken */

/** struct fi_braid_stat_desc - one entry of braid's counter table. */
struct fi_braid_stat_desc {
	/** @name: "ep.rx_dgrams", "rd.retx_pkts", "rd.drop.duplicate", "rd.path.srtt_ns", "rc.timeouts" ... */
	const char *name;
	/** @unit: "packets", "bytes", "ns", ... */
	const char *unit;
	/** @help: what it counts. */
	const char *help;
	/** @scopes: FI_BRAID_SCOPE_* bits: the rows it is in. */
	uint8_t scopes;
	/** @kind: FI_BRAID_COUNTER or FI_BRAID_GAUGE. */
	uint8_t kind;
};

/*
 * A snapshot of one endpoint, as ops->snapshot writes it (and as braid
 * publishes it for braid-stat(1)). A row of a scope holds one value for each
 * table entry with that scope's bit, in table order: n_ep values for the
 * endpoint, then @peers peer records, each with n_peer values and then
 * @paths rows of n_path values.
 */
struct fi_braid_stat_ep {
	/** @size: bytes of the snapshot, peer records included. */
	uint32_t size;
	/** @ep_type: enum fi_ep_type (FI_EP_RDM, FI_EP_DGRAM, FI_EP_MSG). */
	uint32_t ep_type;
	/** @n_ep, @n_peer, @n_path: values in a row of each scope. */
	uint32_t n_ep, n_peer, n_path;
	/** @peers: peer records that follow the endpoint's values. */
	uint32_t peers;
	/** @peers_total: peers with traffic state (more than @peers when the buffer was short). */
	uint32_t peers_total;
	/** @id: the endpoint's number in its process (in the order they were opened). */
	uint32_t id;
	/** @time_ns: when it was taken (CLOCK_MONOTONIC). */
	uint64_t time_ns;
	/** @addr: the endpoint's address, "a.b.c.d:port". */
	char addr[64];
	uint64_t v[];
};

/** struct fi_braid_stat_peer - a peer record of a snapshot. */
struct fi_braid_stat_peer {
	/** @size: bytes of the record, its path rows included. */
	uint32_t size;
	/** @paths: path rows after the peer's values. */
	uint32_t paths;
	/** @addr: the peer's address, "a.b.c.d:port". */
	char addr[32];
	uint64_t v[];
};

/** struct fi_braid_stat_ops - what fi_open_ops(FI_BRAID_STAT_OPS) returns. */
struct fi_braid_stat_ops {
	size_t size;
	/**
	 * @table: the counter table.
	 * Return: the number of entries; *@descs points at them (static).
	 */
	size_t (*table)(const struct fi_braid_stat_desc **descs);
	/**
	 * @snapshot: the counters of endpoint @ep (an enabled braid endpoint)
	 * into @buf (8-byte aligned): a struct fi_braid_stat_ep with as many
	 * peer records as fit (peers with traffic state, in the order it was made).
	 * Return: bytes written; -FI_ETOOSMALL if not even the endpoint's row
	 * fits; -FI_EINVAL for another fid or a NULL @buf.
	 */
	ssize_t (*snapshot)(struct fid *ep, void *buf, size_t len);
	/**
	 * @value: one of endpoint @ep's values by its table name.
	 * Return: 0; -FI_ENOENT for a name not in the table or not kept per
	 * endpoint; -FI_EINVAL for another fid.
	 */
	int (*value)(struct fid *ep, const char *name, uint64_t *value);
};

#ifdef __cplusplus
}
#endif

#endif /* FI_BRAID_H */
