/* SPDX-License-Identifier: BSD-2-Clause */
/* fabsim.h: the fabric simulator's driver: real RD engines and RC queue pairs on the hosts of a braid_fabsim leaf-spine fabric, in virtual time, moving flows whose completion times it records. */
#ifndef FABSIM_H
#define FABSIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "braid_evq.h"
#include "braid_fabsim.h"

/*
 * A run: one fabric, one transport (RD: an engine per host; RC: a queue
 * pair per pair of hosts at each end), a table of flows. A flow is one
 * message of @size bytes from @src to @dst: the receiver's buffer is
 * posted and the send is posted at the flow's start; its completion time
 * (FCT) is from then to the receive completion at @dst (delivery), whose
 * bytes are compared with what was sent. The sender's completion (every
 * byte acknowledged) is recorded too.
 *
 * Each host's NIC is a link of the fabric; the driver pulls packets from a
 * host's engines only while its NIC is idle (braid_fabsim_tx_free_at), a
 * burst at a time, as a NIC fetches work: engines never face a host-side
 * queue of their own making.
 *
 * Virtual time: the driver runs the fabric's events and the hosts'
 * wake-ups (engine timers, a NIC ready for more, packets arrived, flows to
 * start) in time order; at equal times the fabric first. Nothing reads a
 * clock, so a run repeats exactly for the same seed.
 */

/** struct fabsim_flow - one message and what became of it. */
struct fabsim_flow {
	/** @src, @dst: sending and receiving host. */
	int src, dst;
	/** @id: its index in the run's table (the RD tag, the RC immediate). */
	uint32_t id;
	/** @size: bytes. */
	uint64_t size;
	/** @start_ns: when it starts; UINT64_MAX: when flow @after is delivered (set then). */
	uint64_t start_ns;
	/** @next: -1, or the flow that starts when this one is delivered (or fails). */
	int64_t next;
	/** @sent_ns, @recv_ns: when the sender's and the receiver's completions came (0: not yet). */
	uint64_t sent_ns, recv_ns;
	/** @err: 0, or the first error (a positive FI_E*; FI_EIO: the data was not what was sent). */
	int err;
	/** @intact: received whole, every byte as sent. */
	bool intact;
	/** @finished: delivered and acknowledged, or failed. */
	bool finished;
	/** @marked: the scenario's mark (it may cross the link the scenario breaks). */
	bool marked;
	/** @rbuf: its receive buffer while posted. */
	uint8_t *rbuf;
};

/** struct fabsim_counters - packet counts of a transport over every host. */
struct fabsim_counters {
	/** @data_pkts: data packets sent, first sends and resends. */
	uint64_t data_pkts;
	/** @retx_pkts: of them, resends. */
	uint64_t retx_pkts;
	/** @timeouts: retransmission timeouts (RD) or local ACK timeouts (RC). */
	uint64_t timeouts;
	/** @ctrl_pkts: ACKs, NAKs, CTS and the like sent. */
	uint64_t ctrl_pkts;
};

/** struct fabsim_opts - how a run sets up its transports. */
struct fabsim_opts {
	/** @seed: for the transports' own choices (epochs, source ports, PSNs). */
	uint64_t seed;
	/**
	 * @rd_rto_min_ns, @rd_tlp_min_ns: the RD engines' floors of the
	 * retransmission and tail-loss-probe timers (0: the engine's defaults).
	 */
	uint64_t rd_rto_min_ns, rd_tlp_min_ns;
};

struct fabsim_run;

/** struct fabsim_transport - what the driver asks of a transport (fabsim_rd, fabsim_rc). */
struct fabsim_transport {
	/** @name: "rd" or "rc". */
	const char *name;
	/** @open: make its state for every host of @run (0 or -FI_E*); @close frees it. */
	int (*open)(struct fabsim_run *run);
	void (*close)(struct fabsim_run *run);
	/** @start: post @f's receive (into f->rbuf) and send now; 0 or -FI_E*. */
	int (*start)(struct fabsim_run *run, struct fabsim_flow *f);
	/** @input: a packet arrived at host p->dst now. */
	void (*input)(struct fabsim_run *run, const struct braid_fabsim_pkt *p);
	/** @service: host @host's turn now: timers, packets out while its NIC is idle, completions. */
	void (*service)(struct fabsim_run *run, int host);
	/** @counters: the sums over every host. */
	void (*counters)(struct fabsim_run *run, struct fabsim_counters *c);
};

extern const struct fabsim_transport fabsim_rd;
extern const struct fabsim_transport fabsim_rc;

/** struct fabsim_run - one transport on one fabric with its flows. */
struct fabsim_run {
	/** @net: the fabric (not owned). */
	struct braid_fabsim *net;
	/** @hosts: its hosts. */
	int hosts;
	/** @tp, @tp_state: the transport and its state. */
	const struct fabsim_transport *tp;
	void *tp_state;
	/** @seed: for the transports' own choices (epochs, source ports, PSNs). */
	uint64_t seed;
	/** @opts: how the transports are set up (a copy of fabsim_run_open()'s). */
	struct fabsim_opts opts;
	/** @flows, @nflows: this run's copy of the flows (owned: a run changes them). */
	struct fabsim_flow *flows;
	size_t nflows;
	/** @wake: host wake-ups (value: the host) and flow starts (value: hosts + flow). */
	struct braid_evq wake;
	/** @armed: per host, the wake-up time queued for it (UINT64_MAX: none). */
	uint64_t *armed;
	/** @now: the current virtual time. */
	uint64_t now;
	/** @pattern, @pattern_len: the bytes flows send (flow i: from fabsim_flow_data()). */
	uint8_t *pattern;
	size_t pattern_len;
	/** @finished, @failed, @corrupt: flows finished, of them failed, of them with wrong data. */
	size_t finished, failed, corrupt;
};

/**
 * fabsim_run_open() - a run of @tp over @net for @flows (copied: a run sets
 * chained flows' start times and cuts their chains as it goes, and the next
 * run of the same scenario must start from the scenario's schedule; each
 * flow's id must be its index), its transports set up as @opts says. The
 * transports size their packets from the fabric's MTU (braid_fabsim_max_dgram()):
 * RD takes the whole datagram, RC the largest IB MTU that fits; a fabric
 * without an MTU gets 4 KiB payloads from both. Return: 0 or -FI_E*.
 * The caller must eventually call fabsim_run_close().
 */
int fabsim_run_open(struct fabsim_run *run, struct braid_fabsim *net,
		    const struct fabsim_transport *tp, const struct fabsim_flow *flows,
		    size_t nflows, const struct fabsim_opts *opts);

/** fabsim_run_close() - free the transport's state and the run's. */
void fabsim_run_close(struct fabsim_run *run);

/**
 * fabsim_run_go() - run until every flow finished or virtual time @limit_ns.
 * Return: 0 when all finished, -FI_ETIMEDOUT when the limit came first,
 * -FI_E* on a driver failure.
 */
int fabsim_run_go(struct fabsim_run *run, uint64_t limit_ns);

/** fabsim_wake() - have host @host serviced at @at (no later than any wake-up it has). */
void fabsim_wake(struct fabsim_run *run, int host, uint64_t at);

/** fabsim_flow_data() - the bytes flow @f sends (f->size of them). */
const uint8_t *fabsim_flow_data(const struct fabsim_run *run, const struct fabsim_flow *f);

/** fabsim_flow_sent() - the sender's completion of @f came now (@err: 0 or a positive FI_E*). */
void fabsim_flow_sent(struct fabsim_run *run, struct fabsim_flow *f, int err);

/**
 * fabsim_flow_received() - the receiver's completion of @f came now, with
 * @len bytes in f->rbuf (@err: 0 or a positive FI_E*): the data is checked
 * and the buffer freed; the flow after it starts.
 */
void fabsim_flow_received(struct fabsim_run *run, struct fabsim_flow *f, size_t len, int err);

/** fabsim_ip() - host @host's IPv4 address (host order): 10.0.0.1 on. */
static inline uint32_t fabsim_ip(int host)
{
	return 0x0a000001u + (uint32_t)host;
}

/** fabsim_host_of_ip() - the host at @ip, -1 when none of @run's. */
static inline int fabsim_host_of_ip(const struct fabsim_run *run, uint32_t ip)
{
	int64_t h = (int64_t)ip - 0x0a000001;

	return h >= 0 && h < run->hosts ? (int)h : -1;
}

#endif /* FABSIM_H */
