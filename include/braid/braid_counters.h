/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * braid_counters.h: braid's one counter table.
 *
 * Every counter and gauge braid keeps is declared here once, with its name,
 * unit and meaning, in X-macro lists (as braid_errno.h does for errors). The
 * lists generate the structs the engines count into and the descriptor
 * table that both faces read (fi_open_ops, include/rdma/fi_braid.h, and the
 * published snapshots braid-stat shows; the provider maps this header's
 * types to fi_braid.h's), so a counter cannot be counted
 * under one name and shown under another.
 *
 * An entry: X(field, kind, unit, meaning). kind is COUNTER (monotonic) or
 * GAUGE (a level: read from state, or kept up and down where it changes).
 * Scopes: the RD engine counts each event once, at the site where it
 * happens, into the endpoint's row and, by the list the entry is in, into
 * the peer's row (its flow: the row lives while the peer has traffic state)
 * and the path's row (a slot of that flow's path set).
 */
#ifndef BRAID_COUNTERS_H
#define BRAID_COUNTERS_H

#include <stddef.h>
#include <stdint.h>

/* The rows an entry is in: scope bits (rdma/fi_braid.h's FI_BRAID_SCOPE_*, the same values). */
#define BRAID_SCOPE_EP		1u	/* the endpoint (totals) */
#define BRAID_SCOPE_PEER	2u	/* a peer with traffic state (RDM) */
#define BRAID_SCOPE_PATH	4u	/* one of that peer's paths (RDM) */

/* An entry's kind (FI_BRAID_COUNTER, FI_BRAID_GAUGE). */
#define BRAID_CTR_COUNTER	0	/* counts events; only grows */
#define BRAID_CTR_GAUGE		1	/* a level, read when the snapshot was taken */

/**
 * struct braid_ctr_desc - one entry of the table (the provider hands it to
 * applications as struct fi_braid_stat_desc, rdma/fi_braid.h).
 */
struct braid_ctr_desc {
	/** @name: "ep.rx_dgrams", "rd.retx_pkts", "rd.drop.duplicate", "rd.path.srtt_ns", ... */
	const char *name;
	/** @unit: "packets", "bytes", "ns", ... */
	const char *unit;
	/** @help: what it counts. */
	const char *help;
	/** @scopes: BRAID_SCOPE_* bits: the rows it is in. */
	uint8_t scopes;
	/** @kind: BRAID_CTR_COUNTER or BRAID_CTR_GAUGE. */
	uint8_t kind;
};

/**
 * struct braid_ctr_peer_rec - a peer record of a snapshot, the layout of
 * struct fi_braid_stat_peer (rdma/fi_braid.h), which the provider checks.
 */
struct braid_ctr_peer_rec {
	/** @size: bytes of the record, its path rows included. */
	uint32_t size;
	/** @paths: path rows after the peer's values. */
	uint32_t paths;
	/** @addr: the peer's address, "a.b.c.d:port". */
	char addr[32];
	uint64_t v[];
};

/* ---- the RD engine (native FI_EP_RDM) ---- */

/* Counted per endpoint, per peer and per path (the path a packet went by). */
#define BRAID_RD_PATH_COUNTERS(X) \
	X(tx_data,	COUNTER, "packets", "data packets sent (RD_DATA and RD_RMA), first sends and resends") \
	X(tx_bytes,	COUNTER, "bytes",   "payload bytes of those packets") \
	X(retx_pkts,	COUNTER, "packets", "packets sent again after a loss (by the path they went again on)") \
	X(retx_bytes,	COUNTER, "bytes",   "payload bytes of those packets") \
	X(acked_pkts,	COUNTER, "packets", "packets acknowledged (by the path they went on)") \
	X(lost_pkts,	COUNTER, "packets", "packets declared lost (by the path they were lost on)") \
	X(path_deaths,	COUNTER, "events",  "paths found silent, their packets resent elsewhere at once") \
	X(path_redraws,	COUNTER, "events",  "paths moved to a fresh route (a new entropy)")

/* Counted per endpoint and per peer. */
#define BRAID_RD_PEER_COUNTERS(X) \
	X(rx_data,	COUNTER, "packets", "data packets received (before the window's checks)") \
	X(rx_bytes,	COUNTER, "bytes",   "payload bytes taken from them") \
	X(tx_acks,	COUNTER, "packets", "ACKs sent") \
	X(rx_acks,	COUNTER, "packets", "ACKs received") \
	X(retx_rack,	COUNTER, "packets", "resends of packets lost by time-based detection (RACK, per path or across)") \
	X(retx_tlp,	COUNTER, "packets", "resends by tail loss probe") \
	X(retx_rto,	COUNTER, "packets", "resends after a retransmission timeout") \
	X(retx_dead,	COUNTER, "packets", "resends of packets in flight on a path found dead") \
	X(retx_refused,	COUNTER, "packets", "resends of packets the receiver refused for want of buffer") \
	X(rack_losses,	COUNTER, "packets", "packets declared lost by time-based detection") \
	X(rack_path_losses, COUNTER, "packets", "of them, by a later packet of the same path") \
	X(tlp_probes,	COUNTER, "events",  "tail loss probes") \
	X(rto_fires,	COUNTER, "events",  "retransmission timeouts") \
	X(rto_spurious,	COUNTER, "events",  "timeouts the next ACK proved spurious") \
	X(probe_suspects, COUNTER, "events", "paths made sick because a probe's resend on another path arrived before the packet it replaced (4.5)") \
	X(rx_ce,	COUNTER, "packets", "data packets received marked ECN CE") \
	X(ecn_echoes,	COUNTER, "packets", "ACKs received echoing a CE mark") \
	X(fc_stalls,	COUNTER, "events",  "times data waited for the receiver's window (flow control, grants included)") \
	X(unsched_waits, COUNTER, "events", "times data waited for the receiver's first ACK at the unscheduled window (4.10)") \
	X(grant_joins,	COUNTER, "events",  "times the peer joined the senders sharing this receiver's grant budget (4.10)") \
	X(grants_tx,	COUNTER, "packets", "ACKs sent whose receive window was the peer's grant, below the buffer's room (4.10)") \
	X(msgs_sent,	COUNTER, "messages", "messages and RMA requests whose every byte was acknowledged, or handed whole to a local peer") \
	X(msgs_received, COUNTER, "messages", "messages received whole") \
	X(unexp_msgs,	COUNTER, "messages", "messages that arrived with no receive posted for them") \
	X(unexp_bytes,	COUNTER, "bytes",   "the length of those messages") \
	X(rdv_msgs,	COUNTER, "messages", "sends by rendezvous (first packet, the rest on the receiver's CTS)") \
	X(cts_tx,	COUNTER, "packets", "CTS sent") \
	X(cts_rx,	COUNTER, "packets", "CTS received") \
	X(rdv_probes,	COUNTER, "packets", "rendezvous keepalive probes sent") \
	X(rma_ops,	COUNTER, "operations", "RMA and atomic operations completed as initiator") \
	X(rma_served,	COUNTER, "operations", "RMA and atomic requests served as target") \
	X(rma_refused,	COUNTER, "operations", "RMA and atomic requests refused as target (key, range, permission, op)")

/* Counted per endpoint only. */
#define BRAID_RD_EP_COUNTERS(X) \
	X(tx_bundles,	COUNTER, "datagrams", "datagrams sent carrying several RD packets") \
	X(rx_bundles,	COUNTER, "datagrams", "datagrams received carrying several RD packets") \
	X(peers_failed,	COUNTER, "events",  "peers given up for silence (their operations failed FI_EHOSTUNREACH)") \
	X(peers_restarted, COUNTER, "events", "peers found restarted (their operations failed FI_ECONNRESET)") \
	X(peers_evicted, COUNTER, "events", "unproven peers' state evicted for room") \
	X(chal_tx,	COUNTER, "packets", "challenges sent (proof of address)") \
	X(chal_rx,	COUNTER, "packets", "challenges answered") \
	X(resp_rx,	COUNTER, "packets", "answers that proved a peer") \
	X(ctl_full,	COUNTER, "packets", "challenges or answers not sent for want of room") \
	X(forget_tx,	COUNTER, "packets", "idle peers asked to forget the pair's numbering (4.9)") \
	X(forget_rx,	COUNTER, "packets", "such asks agreed to (the asker's state here went, if any)") \
	X(forget_refused, COUNTER, "packets", "such asks refused: traffic under way, or another incarnation") \
	X(peers_forgotten, COUNTER, "events", "idle peers forgotten: by agreement, or after two asks unanswered") \
	X(flows_active,	GAUGE,   "flows",   "peers with traffic state now") \
	X(grant_senders, GAUGE,  "peers",   "senders sharing this receiver's grant budget, as of its latest ACK (4.10)") \
	X(peers,	GAUGE,   "peers",   "peers with state now") \
	X(peers_verified, GAUGE, "peers",   "of them, proven at their address") \
	X(peers_idle,	GAUGE,   "peers",   "of those, idle: remembered in 32 bytes, their conn and shared entry given back")

/* Read from a peer's state when a snapshot is taken. */
#define BRAID_RD_PEER_GAUGES(X) \
	X(cwnd,		GAUGE, "packets", "congestion window") \
	X(peer_rwnd,	GAUGE, "packets", "the receive window the peer advertised") \
	X(rwnd,		GAUGE, "packets", "the receive window this endpoint advertises to the peer") \
	X(inflight,	GAUGE, "packets", "packets in flight") \
	X(srtt_ns,	GAUGE, "ns",      "smoothed RTT over all paths") \
	X(min_rtt_ns,	GAUGE, "ns",      "lowest RTT over all paths") \
	X(sendq,	GAUGE, "operations", "sends waiting to be cut into packets, or for a CTS") \
	X(verified,	GAUGE, "bool",    "1: the peer proved its address")

/* Read from a path's state when a snapshot is taken. */
#define BRAID_RD_PATH_GAUGES(X) \
	X(entropy,	GAUGE, "selector", "the route selector (the wire's source port index)") \
	X(state,	GAUGE, "state",   "0 ok, 1 sick (skipped by the chooser)") \
	X(srtt_ns,	GAUGE, "ns",      "smoothed RTT") \
	X(rttvar_ns,	GAUGE, "ns",      "RTT variation") \
	X(min_rtt_ns,	GAUGE, "ns",      "base RTT (lowest of the last 1-2 s)") \
	X(loss_ppm,	GAUGE, "ppm",     "loss fraction (EWMA), parts per million") \
	X(ecn_ppm,	GAUGE, "ppm",     "ECN CE-marked fraction (EWMA), parts per million")

/* ---- the RC engine (FI_EP_MSG over RoCEv2 RC: the endpoint's queue pair) ---- */
#define BRAID_RC_COUNTERS(X) \
	X(tx_pkts,	COUNTER, "packets", "RoCEv2 packets sent") \
	X(tx_bytes,	COUNTER, "bytes",   "their bytes") \
	X(rx_pkts,	COUNTER, "packets", "RoCEv2 packets received") \
	X(rx_bytes,	COUNTER, "bytes",   "their bytes") \
	X(retx_pkts,	COUNTER, "packets", "packets sent again (go-back-N resends everything from the restart PSN)") \
	X(retx_bytes,	COUNTER, "bytes",   "their bytes") \
	X(acks_tx,	COUNTER, "packets", "ACKs sent") \
	X(acks_rx,	COUNTER, "packets", "ACKs received") \
	X(naks_seq_tx,	COUNTER, "packets", "PSN sequence error NAKs sent") \
	X(naks_seq_rx,	COUNTER, "packets", "PSN sequence error NAKs received") \
	X(rnr_naks_tx,	COUNTER, "packets", "receiver-not-ready NAKs sent") \
	X(rnr_naks_rx,	COUNTER, "packets", "receiver-not-ready NAKs received") \
	X(naks_other_tx, COUNTER, "packets", "access and invalid-request NAKs sent") \
	X(naks_other_rx, COUNTER, "packets", "access and invalid-request NAKs received") \
	X(timeouts,	COUNTER, "events",  "local ACK timeouts (each a retry)")

/* ---- the endpoint and its wire (every endpoint type) ---- */
#define BRAID_EP_COUNTERS(X) \
	X(tx_dgrams,	COUNTER, "datagrams", "datagrams the wire took to send") \
	X(rx_dgrams,	COUNTER, "datagrams", "datagrams received from the wire") \
	X(tx_refused,	COUNTER, "packets", "packets a full socket or port refused (RDM sends them again, MSG drops them)") \
	X(rx_placed,	COUNTER, "datagrams", "large datagrams received straight into their place") \
	X(rx_dup_skipped, COUNTER, "datagrams", "large duplicates whose payload the host dropped uncopied (their header seen first)") \
	X(tx_lent,	COUNTER, "datagrams", "datagrams whose payload the wire sent by reference, not copied (LENT)") \
	X(rx_gro_runs,	COUNTER, "receives", "receives that carried a run of datagrams the host coalesced (UDP GRO)") \
	X(rx_gro_dgrams, COUNTER, "datagrams", "datagrams that came in those runs (also counted in rx_dgrams)") \
	X(rx_trunc,	COUNTER, "datagrams", "DGRAM: datagrams larger than the posted receive (truncated)") \
	X(tx_local,	COUNTER, "datagrams", "datagrams written into local peers' shared-memory rings, not sent by UDP (also in tx_dgrams)") \
	X(rx_local,	COUNTER, "datagrams", "datagrams read from its own shared-memory rings (also in rx_dgrams)") \
	X(tx_local_msgs, COUNTER, "messages", "messages handed whole to local peers' rings: no packets, no ACKs (also in tx_local)") \
	X(rx_local_msgs, COUNTER, "messages", "messages local peers handed whole, read from its own rings (also in rx_local)") \
	X(local_held,	COUNTER, "bursts", "sends held back because a local peer's ring was full") \
	X(local_dropped, COUNTER, "datagrams", "datagrams to local peers dropped (the peer gone, or its ring full for 5 ms), or lent by one and not readable") \
	X(local_doorbells, COUNTER, "datagrams", "sleeping local peers woken (an empty UDP datagram)") \
	X(local_bad,	COUNTER, "events", "rings emptied whose bytes made no sense, datagrams changed after a look") \
	X(hmem_d2h,	COUNTER, "copies", "copies from device memory to host staging (FI_HMEM)") \
	X(hmem_d2h_bytes, COUNTER, "bytes", "bytes of those copies") \
	X(hmem_h2d,	COUNTER, "copies", "copies from host staging to device memory") \
	X(hmem_h2d_bytes, COUNTER, "bytes", "bytes of those copies") \
	X(hmem_stage_late, COUNTER, "chunks", "chunks of a device buffer staged after packets of their message had left (copies overlapped with the wire)") \
	X(local_peers,	GAUGE,   "peers", "local peers it writes to through shared memory now")

/* ---- generated ---- */

#define BRAID_CTR_FIELD(f, k, u, m)	uint64_t f;
#define BRAID_CTR_ONE(f, k, u, m)	+ 1

/** struct braid_rd_path_ctr - a path's counters (a prefix of the peer's and the endpoint's). */
struct braid_rd_path_ctr {
	BRAID_RD_PATH_COUNTERS(BRAID_CTR_FIELD)
};

/**
 * braid_ctr_table() - the whole table (core/braid_counters.c), in the order
 * of every row: the endpoint list, its drops, the RD lists (path, peer,
 * drops, endpoint), the RC list and its drops, the RD peer gauges, the RD
 * path gauges. Return: its length; *@descs: the entries.
 */
size_t braid_ctr_table(const struct braid_ctr_desc **descs);

/** braid_ctr_row_len() - values in a row of scope @scope (one BRAID_SCOPE_* bit). */
uint32_t braid_ctr_row_len(unsigned int scope);

/**
 * braid_ctr_find() - the index, within a row of scope @scope, of the entry
 * named @name. Return: the index, or -1 when no entry of that scope has it.
 */
int braid_ctr_find(const char *name, unsigned int scope);

#endif /* BRAID_COUNTERS_H */
