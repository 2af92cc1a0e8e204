/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_wire.h: the burst interface between the transport and a wire (udp, dpdk, sim). */
#ifndef BRAID_WIRE_H
#define BRAID_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>
#include <netinet/in.h>

/*
 * A wire moves bursts of datagrams between IPv4/UDP-style addresses. Each
 * wire endpoint has one "home" address (what fi_getname reports: the
 * destination other peers send to) and @paths transmit paths. On the UDP
 * wire a path is a socket bound to its own source port: the port is the
 * entropy that ECMP hashes, so different paths can take different routes.
 * The engine above never knows which wire it runs on.
 */

#define BRAID_WIRE_MAX_PATHS	256
/* spare route selectors beyond the paths: fresh routes for re-drawn paths */
#define BRAID_WIRE_SPARE_MAX	32
#define BRAID_WIRE_IOV_MAX	1024	/* a bundle gathers the pieces of up to 64 packets (UIO_MAXIOV) */

/* braid_pkt.flags, set by rx_burst */
#define BRAID_PKT_TRUNC		(1u << 0)	/* datagram longer than the buffers */
#define BRAID_PKT_ECN_CE	(1u << 1)	/* arrived with ECN congestion experienced */
/*
 * braid_pkt.flags, set by the caller of tx_burst: the bytes of the last
 * iov entry stay in place and unchanged until the datagram is acknowledged
 * or its operation has failed, so the wire may send them by reference
 * instead of copying them (UDP: pages spliced into the socket; the kernel
 * reads them when the datagram is delivered). The first entries (headers)
 * are always copied when the datagram is sent.
 */
#define BRAID_PKT_LEND		(1u << 2)

/**
 * struct braid_pkt - one datagram in a burst.
 *
 * For tx_burst the caller fills @iov/@iovcnt (the bytes to send, gathered),
 * @addr (destination) and @path: the route selector (entropy), 0 ..
 * entropies-1; 0 .. paths-1 are the wire's default paths. For rx_burst the caller
 * fills @iov/@iovcnt with the space to scatter into; the wire fills @len,
 * @addr (the sender's address as seen on the wire: its source port is the
 * sender's path entropy, not its home port), @path (the local path/queue
 * it arrived on) and @flags.
 */
struct braid_pkt {
	/** @iov: gather (tx) or scatter (rx) list. */
	struct iovec *iov;
	/** @iovcnt: entries in @iov, at most BRAID_WIRE_IOV_MAX. */
	int iovcnt;
	/** @path: tx: the route selector (entropy) to send with; rx: the local path it arrived on. */
	uint32_t path;
	/** @len: rx: full datagram length (may exceed the buffers: see TRUNC). */
	size_t len;
	/** @flags: rx: BRAID_PKT_* bits the wire sets; tx: BRAID_PKT_LEND or 0. */
	uint32_t flags;
	/** @status: tx: 0 sent, or a negative FI_E* if the wire refused it. */
	int status;
	/** @addr: tx: destination; rx: source. */
	struct sockaddr_in addr;
	/**
	 * @gso_size: tx: 0, or the bytes are a run of datagrams of this length
	 * (the last may be shorter) for the wire to cut (UDP GSO); at most
	 * wire.gso_segs of them. rx (a wire opened with @gro): 0, or the @len
	 * bytes received are a run of datagrams of this length, the last
	 * perhaps shorter, that the receiving host coalesced (UDP GRO): each is
	 * one datagram to the caller, all from @addr.
	 */
	uint16_t gso_size;
	/** @lent: rx_lend: the wire's own buffer behind @iov, for rx_return. */
	void *lent;
	/**
	 * @rx_ns: rx: when the datagram reached this host (the kernel's receive
	 * timestamp, on CLOCK_MONOTONIC), or 0 where the wire cannot tell: the
	 * engine tells the time it waited here from the fabric's delay by it.
	 */
	uint64_t rx_ns;
};

struct braid_wire;

/**
 * struct braid_wire_params - what a wire is opened with.
 */
struct braid_wire_params {
	/** @addr: home address to bind; port 0 picks a free one, INADDR_ANY is allowed. */
	struct sockaddr_in addr;
	/** @paths: number of transmit paths (1 .. BRAID_WIRE_MAX_PATHS). */
	int paths;
	/** @sockbuf: socket buffer bytes to ask for (0: system default). */
	int sockbuf;
	/**
	 * @gro: the caller takes coalesced runs of datagrams (pkt.gso_size on
	 * receive) into receive buffers of wire.rx_max bytes. The UDP wire then
	 * asks for UDP GRO where the kernel has it and the link's MTU is small
	 * enough for runs (wire.gro says whether it got it).
	 */
	bool gro;
	/**
	 * @lend_min: tx: packets marked BRAID_PKT_LEND whose last iov entry has
	 * at least this many bytes are sent by reference where the wire can
	 * (UDP: vmsplice and splice into the socket); 0: every byte is copied.
	 */
	size_t lend_min;
	/**
	 * @local: datagrams to endpoints on this host go through shared memory
	 * where the wire can (the UDP wire: fi_braid(7), LOCAL PEERS), in
	 * @local_rings rings per receiving endpoint of @local_ring_bytes each.
	 */
	bool local;
	uint32_t local_rings;
	size_t local_ring_bytes;
};

/**
 * struct braid_wire_local - a wire endpoint's traffic with local peers
 * through shared memory (all 0 where it has none).
 */
struct braid_wire_local {
	/** @tx, @rx: datagrams written into local peers' rings, read from its own. */
	uint64_t tx, rx;
	/** @held: sends held back because a local peer's ring was full. */
	uint64_t held;
	/** @dropped: datagrams dropped: the local peer gone, or its ring full too long. */
	uint64_t dropped;
	/** @doorbells: local peers woken from their sleep. */
	uint64_t doorbells;
	/** @bad: rings emptied because their bytes made no sense, datagrams changed after a peek. */
	uint64_t bad;
	/** @read_lent: lent payloads read from a local sender's memory (one copy). */
	uint64_t read_lent;
	/** @tx_msgs, @rx_msgs: message records written to local peers' rings (also in @tx), read from its own (also in @rx). */
	uint64_t tx_msgs, rx_msgs;
	/** @peers: local peers it writes to now. */
	uint64_t peers;
	/** @on: the endpoint takes datagrams from local peers through shared memory. */
	bool on;
};

/**
 * struct braid_wire_ops - one wire implementation.
 */
struct braid_wire_ops {
	/** @name: as selected by FI_BRAID_WIRE ("udp", "sim", "dpdk"). */
	const char *name;
	/** @polled: the wire has no wait fd (@wait_fd is always -1): it is polled. */
	bool polled;
	/**
	 * @open: create a wire endpoint. Return 0 and *@wire, or a negative
	 * FI_E* (-FI_EADDRINUSE when the home port is taken, -FI_EINVAL for bad
	 * params). The caller must eventually call @close.
	 */
	int (*open)(const struct braid_wire_params *params, struct braid_wire **wire);
	/** @close: release everything the wire holds. */
	void (*close)(struct braid_wire *wire);
	/**
	 * @tx_burst: transmit up to @n packets in order. Return how many were
	 * handled (sent, or refused with pkts[i].status set); fewer than @n
	 * means the wire is full for now (retry later); never negative.
	 */
	int (*tx_burst)(struct braid_wire *wire, struct braid_pkt *pkts, int n);
	/**
	 * @rx_burst: receive up to @n packets into the callers' buffers. Return
	 * how many arrived (0 when none is waiting); never blocks, never negative.
	 */
	int (*rx_burst)(struct braid_wire *wire, struct braid_pkt *pkts, int n);
	/**
	 * @wait_fd: a file descriptor readable when rx_burst has work, or -1 when
	 * the wire is polled (DPDK): then nothing can sleep on it, and braid's
	 * wait objects poll instead (FI_WAIT_UNSPEC is FI_WAIT_YIELD).
	 */
	int (*wait_fd)(struct braid_wire *wire);
	/**
	 * @rx_peek: optional (NULL: the wire has none). The next datagram waiting
	 * on the home route, left there: its first @cap bytes into @buf, its
	 * sender into *@from, when it reached this host into *@rx_ns (as
	 * braid_pkt.rx_ns: 0 where the wire cannot tell). Return: its whole length; 0 when none waits. A
	 * following @rx_home of one packet takes exactly that datagram, so a
	 * receiver can read a header and then receive the payload straight to
	 * where it belongs.
	 */
	size_t (*rx_peek)(struct braid_wire *wire, void *buf, size_t cap, struct sockaddr_in *from,
			  uint64_t *rx_ns);
	/** @rx_home: with @rx_peek: @rx_burst from the home route only. */
	int (*rx_home)(struct braid_wire *wire, struct braid_pkt *pkts, int n);
	/** @rx_routes: with @rx_peek: @rx_burst from every route but the home one. */
	int (*rx_routes)(struct braid_wire *wire, struct braid_pkt *pkts, int n);
	/**
	 * @rx_lend: optional (NULL: the wire has none). @rx_burst without a
	 * copy: the wire lends its own buffers. Each packet's @iov (the caller
	 * gives one struct iovec per packet, @iovcnt 1) is set to the payload
	 * inside the wire's buffer, with @len, @addr, @path and @flags as
	 * @rx_burst sets them; the bytes stay valid, and the caller may read
	 * and write them (a keyed datagram's check moves its header over its
	 * tag), until @rx_return gives the packets back, which the caller must
	 * do before its next receive call on this wire.
	 */
	int (*rx_lend)(struct braid_wire *wire, struct braid_pkt *pkts, int n);
	/** @rx_return: with @rx_lend: give back @n packets it lent. */
	void (*rx_return)(struct braid_wire *wire, struct braid_pkt *pkts, int n);
	/**
	 * @arm: optional (NULL: the wire's fd tells everything). The caller is
	 * about to sleep on @wait_fd: have what arrives by other means (local
	 * peers' shared memory) make it readable. Return true when something
	 * has arrived already (do not sleep). Any receive call disarms it.
	 */
	bool (*arm)(struct braid_wire *wire);
	/**
	 * @tx_msg: optional (NULL: the wire has no local peers). Hand @hdr
	 * (@hdr_len bytes) and the @iovcnt pieces of @iov, as one message
	 * record, to the local peer whose home address is @dst, behind every
	 * datagram sent to it before (one ring: in order, nothing lost while
	 * both live). Return 1 written; 0 not now (not a local peer, its ring
	 * full or gone, too long): send it another way.
	 */
	int (*tx_msg)(struct braid_wire *wire, const struct sockaddr_in *dst, const void *hdr,
		      size_t hdr_len, const struct iovec *iov, int iovcnt);
	/**
	 * @rx_msgs: with @tx_msg. The message records next in its rings (a
	 * ring's datagrams behind one wait until it is taken: rx_burst stops
	 * there), each to @fn with its sender's home address (host order) and
	 * bytes (in the ring: the sender's process may still write them, and
	 * they are valid only during the call). @fn returns 0 (taken) or < 0
	 * (left: that ring is passed over for this call). @refuse: the caller
	 * kept more than it has room for; its local peers hand it no more
	 * messages whole (@tx_msg returns 0) until a call without it. *@more
	 * (if not NULL): a datagram is next in a ring it took from (rx_burst
	 * has it now). Return: records taken.
	 */
	int (*rx_msgs)(struct braid_wire *wire,
		       int (*fn)(void *ctx, uint32_t ip, uint16_t port, const void *rec, size_t len),
		       void *ctx, int max, bool refuse, bool *more);
	/**
	 * @rx_idle: optional (NULL: never). True when a receive now would find
	 * nothing and look at no socket: rx_burst and rx_msgs would both return 0
	 * without a system call. It then stands for both calls (what they note
	 * of an empty look is noted, @refuse as rx_msgs takes it), and the
	 * caller may skip them. False: make them.
	 */
	bool (*rx_idle)(struct braid_wire *wire, bool refuse);
	/**
	 * @iface: optional (NULL: the wire uses the kernel's interfaces). The one
	 * interface the wire owns itself (a DPDK port): its name, IPv4 address,
	 * netmask and datagram payload limit. Starts the wire's port if it has
	 * not started. Return 0, or a negative FI_E* when the port cannot start.
	 */
	int (*iface)(char *name, size_t namelen, struct in_addr *addr, struct in_addr *mask,
		     size_t *mtu);
	/**
	 * @cleanup: optional: the provider is being unloaded (fi_fini): release
	 * what the wire holds for the whole process (a port it started, its
	 * buffers), if no wire endpoint is open.
	 */
	void (*cleanup)(void);
};

/**
 * struct braid_wire - the part of every wire endpoint the caller may read.
 * Implementations embed it first in their own struct.
 */
struct braid_wire {
	/** @ops: the implementation. */
	const struct braid_wire_ops *ops;
	/** @name: the home address (port filled in after bind). */
	struct sockaddr_in name;
	/** @mtu: the largest datagram payload the wire carries (bytes, after IP/UDP headers). */
	size_t mtu;
	/**
	 * @rx_max: the most bytes one received packet may carry: @mtu, or with
	 * @gro a coalesced run's 64 KiB (0 from a wire that does not set it: @mtu).
	 * @gro: receives may come as coalesced runs (UDP GRO is on).
	 */
	size_t rx_max;
	bool gro;
	/** @paths: number of transmit paths (default route selectors 0 .. paths-1). */
	int paths;
	/**
	 * @entropies: distinct route selectors a tx packet's path may name,
	 * >= @paths. The wire owns what a selector means: on UDP a socket with a
	 * source port of its own (the spare ones give re-drawn paths a route no
	 * other path uses), on DPDK the UDP source port it writes itself.
	 */
	uint32_t entropies;
	/**
	 * @gso_segs: datagrams one tx packet may carry as a run for the wire to
	 * cut (braid_pkt.gso_size), or 0 when it cannot (UDP: UDP_SEGMENT, at
	 * most 64 segments and 64 KiB in all).
	 */
	uint32_t gso_segs;
	/** @tx_errors: packets the wire refused. */
	uint64_t tx_errors;
	/** @rx_packets, @tx_packets: datagrams moved. */
	uint64_t rx_packets, tx_packets;
	/** @tx_lent: of @tx_packets, those whose payload went by reference (BRAID_PKT_LEND). */
	uint64_t tx_lent;
	/**
	 * @lend_min: the wire sends a BRAID_PKT_LEND packet's payload by
	 * reference when its last iov entry has at least this many bytes (and
	 * the kernel lets it); 0: it never does.
	 */
	size_t lend_min;
	/** @local: its traffic with local peers (braid_wire_params.local). */
	struct braid_wire_local local;
};

/**
 * braid_wire_selectors() - the route selectors (wire.entropies) of a wire
 * endpoint with @paths paths: the paths and as many spares (at most
 * BRAID_WIRE_SPARE_MAX) for paths that turn sick or die; one path (RC: one
 * route per QP by design) has nothing to move to.
 */
static inline int braid_wire_selectors(int paths)
{
	return paths > 1 ? paths + (paths < BRAID_WIRE_SPARE_MAX ? paths : BRAID_WIRE_SPARE_MAX) : 1;
}

/**
 * braid_wire_find() - look up a wire implementation by name.
 * Return: the ops, or NULL if no wire of that name is built in.
 */
const struct braid_wire_ops *braid_wire_find(const char *name);

/**
 * struct braid_wire_ports - the UDP ports of a wire that owns its address
 * (DPDK, sim): which endpoint owns each port and which of its route
 * selectors the port stands for. The wire serialises the calls (its lock).
 */
struct braid_wire_ports {
	/** @owner: by port: the owning wire endpoint, or NULL. */
	void *owner[65536];
	/** @sel: by port: the owner's route selector (0: its home port). */
	uint16_t sel[65536];
	/** @next: where the search for a free port goes on (32768 .. 65535). */
	uint16_t next;
};

/**
 * braid_wire_ports_bind() - give @owner @n ports into @ports: the home port
 * @home (0: any free one), then one per route selector 1 .. @n-1.
 * Return: 0, or -FI_EADDRINUSE (nothing taken).
 */
int braid_wire_ports_bind(struct braid_wire_ports *t, void *owner, uint16_t home,
			  uint16_t *ports, int n);
/** braid_wire_ports_unbind() - give back @n ports. */
void braid_wire_ports_unbind(struct braid_wire_ports *t, const uint16_t *ports, int n);

/** braid_wire_cleanup_all() - every built-in wire's @cleanup (provider unload). */
void braid_wire_cleanup_all(void);

/**
 * braid_wire_if_mtu() - the datagram payload limit for a local IPv4 address:
 * the interface MTU less IPv4 and UDP headers, capped at 65507. For
 * INADDR_ANY, the smallest over the interfaces that are up.
 * Return: bytes, or 1472 when the interface cannot be found.
 */
size_t braid_wire_if_mtu(struct in_addr addr);

/** braid_wire_rx_max() - the most bytes one received packet may carry (wire->rx_max). */
static inline size_t braid_wire_rx_max(const struct braid_wire *wire)
{
	return wire->rx_max > wire->mtu ? wire->rx_max : wire->mtu;
}

/**
 * braid_wire_rx() - receive up to @n packets of at most braid_wire_rx_max() bytes:
 * lent by the wire where it can (@rx_lend), else copied into @bufs (@n
 * buffers of braid_wire_rx_max() bytes). @iovs: one iovec per packet, which the
 * packets point to. Give the packets back with braid_wire_rx_done() once
 * their bytes are used. Return: how many arrived.
 */
int braid_wire_rx(struct braid_wire *wire, struct braid_pkt *pkts, struct iovec *iovs,
		  uint8_t *bufs, int n);
/**
 * braid_wire_rx_kept() - braid_wire_rx() into packets and iovecs the caller
 * keeps between calls, so that a burst that finds nothing costs no set-up:
 * @*set is the @bufs they were last set up for (NULL: none); they are all
 * set up when it differs. The caller hands the @n it used back to
 * braid_wire_rx_reset() once their bytes are used (after
 * braid_wire_rx_done()).
 */
int braid_wire_rx_kept(struct braid_wire *wire, struct braid_pkt *pkts, struct iovec *iovs,
		       uint8_t *bufs, uint8_t **set, int n);
/** braid_wire_rx_reset() - set up again the first @n of braid_wire_rx_kept()'s packets. */
void braid_wire_rx_reset(struct braid_wire *wire, struct braid_pkt *pkts, struct iovec *iovs,
			 uint8_t *bufs, int n);
/** braid_wire_rx_done() - give back what braid_wire_rx() received (if lent). */
void braid_wire_rx_done(struct braid_wire *wire, struct braid_pkt *pkts, int n);

#endif /* BRAID_WIRE_H */
