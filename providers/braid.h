/* SPDX-License-Identifier: BSD-2-Clause */
/* braid.h: the libfabric glue's shared definitions; the transport lives in core/. */
#ifndef BRAID_H
#define BRAID_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <netinet/in.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_atomic.h>
#include <rdma/providers/fi_log.h>
#include <rdma/providers/fi_prov.h>

#include "braid_compat.h"
#include "braid/braid_list.h"
#include "braid/braid_av_shm.h"
#include "braid/braid_map.h"
#include "braid/braid_pool.h"
#include "braid/braid_wire.h"
#include "braid/braid_errno.h"
#include "braid_atomic.h"
#include "braid/braid_extent.h"
#include "braid_auth.h"
#include "braid_cm.h"
#include "braid_rc_demux.h"
#include "braid_hdr.h"
#include "braid_iov.h"
#include "braid_peer.h"
#include "braid_rd.h"
#include "braid_rc.h"

#define BRAID_PROV_NAME		"braid"
#define BRAID_MAJOR		0
#define BRAID_MINOR		1
/* the API braid registers with: its headers' (braid_compat.h) */
#define BRAID_FI_VERSION	BRAID_FI_HDR_VERSION
#define BRAID_IOV_LIMIT		8
#define BRAID_DGRAM_HDR		sizeof(struct braid_dgram_hdr)
#define BRAID_CQ_DATA_SIZE	8
#define BRAID_MAX_BATCH		32
#define BRAID_MIN_MULTI_RECV	64	/* default FI_OPT_MIN_MULTI_RECV */
#define BRAID_RDM_MAX_MSG	0xffffffffULL	/* RD offsets are 32 bits (protocol.md §4.2) */
#define BRAID_MSG_MAX_MSG	(1ULL << 30)	/* RC: 1 GiB (RETH's DMA length is 32 bits) */

extern struct fi_provider braid_prov;

#define BRAID_WARN(subsys, ...) FI_WARN(&braid_prov, subsys, __VA_ARGS__)
#define BRAID_INFO(subsys, ...) FI_INFO(&braid_prov, subsys, __VA_ARGS__)
/* at FI_LOG_LEVEL=debug in any build (libfabric's FI_DBG is compiled out unless
 * the provider is built with ENABLE_DEBUG) */
#define BRAID_DBG(subsys, ...) FI_LOG(&braid_prov, FI_LOG_DEBUG, subsys, __VA_ARGS__)

/**
 * struct braid_config - every FI_BRAID_* setting, read once at fi_prov_ini
 * (braid_init.c defines them with their defaults).
 */
/* FI_BRAID_YIELD_US=-1 (auto): the quiet time before a yield on an oversubscribed host */
#define BRAID_YIELD_AUTO_US	50

struct braid_config {
	/** @wire: wire implementation name ("udp"). */
	char *wire;
	/** @iface: restrict fi_info to this interface name, or NULL. */
	char *iface;
	/** @paths: transmit paths (UDP source ports) per endpoint. */
	int paths;
	/** @tx_size, @rx_size: queue depths advertised and allocated. */
	size_t tx_size, rx_size;
	/** @cq_size: default CQ depth when fi_cq_attr.size is 0. */
	size_t cq_size;
	/** @eq_size: default EQ depth when fi_eq_attr.size is 0. */
	size_t eq_size;
	/** @sockbuf: socket buffer bytes per socket (0: system default). */
	int sockbuf;
	/** @gso: send runs of full-size RDM packets with UDP GSO where the kernel has it. */
	int gso;
	/** @gro: RDM takes runs of datagrams the host coalesced (UDP GRO) where the kernel has it. */
	int gro;
	/** @lend_min: RDM payloads of this many bytes or more are sent by reference (0: never). */
	size_t lend_min;
	/**
	 * @shm, @shm_peers, @shm_ring: RDM endpoints on this host reach each
	 * other through shared memory (fi_braid(7), LOCAL PEERS): on or off,
	 * rings (local senders) per endpoint, bytes per ring.
	 */
	int shm, shm_peers;
	size_t shm_ring;
	/**
	 * @shm_eager: messages of up to this many bytes go to a local peer whole,
	 * with no packets and no acknowledgements (protocol.md §7.4); 0: never.
	 */
	size_t shm_eager;
	/**
	 * @cuda_lib: the CUDA driver to load (FI_BRAID_CUDA_LIB; NULL:
	 * libcuda.so.1); @hmem_staging: bytes of pinned host staging per RDM
	 * endpoint that uses device memory; @hmem_chunk: the bytes staged per
	 * copy (braid_hmem.c).
	 */
	char *cuda_lib;
	size_t hmem_staging, hmem_chunk;
	/** @bundle: RDM: pack packets for one peer into shared datagrams (protocol.md §4.8). */
	int bundle;
	/** @unexp_bytes: RDM, MSG on a tagged connection: per endpoint, for unexpected or early data. */
	size_t unexp_bytes;
	/** @peer_timeout_ms: RDM: a peer silent this long fails its operations; MSG: connect timeout. */
	int peer_timeout_ms;
	/** @max_peers: RDM: peers one endpoint keeps state for (FI_BRAID_MAX_PEERS; 0: no limit). */
	int max_peers;
	/**
	 * @max_flows: RDM: peers with traffic in flight at once per endpoint
	 * (FI_BRAID_MAX_FLOWS; 0: as many as max_peers, or 1,048,576 without a
	 * peer limit); each takes its memory (about 24 KiB) when used.
	 */
	int max_flows;
	/**
	 * @grant_kb: RDM: KiB this endpoint lets the senders with more to send
	 * have in flight to it together, shared among them (FI_BRAID_GRANT_KB;
	 * 0: no grants; protocol.md §4.10).
	 */
	int grant_kb;
	/** @unsched_pkts: RDM: packets a flow sends before the receiver's first ACK (FI_BRAID_UNSCHED_PKTS; 0: no limit). */
	int unsched_pkts;
	/** @idle_ms: RDM: a peer's traffic state idle this long is freed (FI_BRAID_IDLE_MS; 0: kept). */
	int idle_ms;
	/** @forget_ms: RDM: an idle peer's record this old is forgotten by agreement (FI_BRAID_FORGET_MS; 0: kept). */
	int forget_ms;
	/** @rc_port: MSG: UDP port for RoCEv2 (0: 4791 when free, else any). */
	int rc_port;
	/**
	 * @rc_timeout, @rc_retry, @rc_rnr_retry, @rc_min_rnr_timer: MSG: the QP's
	 * local ACK timeout (IBTA code 0..31), retry count (0..7), RNR retry count
	 * (0..7, 7 forever) and the RNR timer it asks peers to wait (code 0..31).
	 */
	int rc_timeout, rc_retry, rc_rnr_retry, rc_min_rnr_timer;
	/**
	 * @layering: libfabric's utility providers (ofi_rxm, ofi_rxd) layer over
	 * braid for requests that do not name them (braid_init.c).
	 */
	int layering;
	/** @progress_us: the progress thread's period (0: no thread), braid_progress.c. */
	int progress_us;
	/**
	 * @yield_us: a thread polling endpoints that have received nothing for this
	 * long yields its core after each poll (0: never; -1: BRAID_YIELD_AUTO_US
	 * while the host has more runnable threads than cores), braid_wait.c.
	 */
	int yield_us;
	/**
	 * @dpdk_args, @dpdk_port, @dpdk_ip, @dpdk_mtu, @dpdk_neigh: the DPDK
	 * wire: EAL arguments, the ethdev port it uses, its IPv4 address
	 * ("a.b.c.d/len"; NULL: the shadowed kernel interface's), its router
	 * (NULL: the shadowed interface's default gateway), its IP MTU, and
	 * neighbours known without ARP ("ip=mac,...").
	 */
	char *dpdk_args, *dpdk_ip, *dpdk_gw, *dpdk_neigh;
	/** @sim: the sim wire's fabric: "seed=,paths=,loss=,dup=,reorder=,..." (braid_sim_wire.c). */
	char *sim;
	/**
	 * @auth_mode: what a keyed endpoint's tag covers (FI_BRAID_AUTH, protocol.md
	 * §2.4): BRAID_AUTH_JOB (the headers) or BRAID_AUTH_MAC (every byte);
	 * BRAID_AUTH_NONE when libsodium did not start: keys are then refused.
	 */
	enum braid_auth_mode auth_mode;
	int dpdk_port, dpdk_mtu;
	/**
	 * @stat, @stat_dir, @stat_ms: publish endpoints' counters for
	 * braid-stat(1) (FI_BRAID_STAT), in which directory, how often (braid_stat.c).
	 */
	int stat;
	char *stat_dir;
	int stat_ms;
};

extern struct braid_config braid_cfg;

/* braid_attr.c */
extern const struct fi_info braid_dgram_info_template;
extern const struct fi_info braid_rdm_info_template;
extern const struct fi_info braid_msg_info_template;
int braid_getinfo(uint32_t version, const char *node, const char *service,
		  uint64_t flags, const struct fi_info *hints, struct fi_info **info);
int braid_check_info(const struct fi_info *info);
/*
 * braid_ctx_attr_check() - whether a shared context of endpoints of @type
 * can have the attributes @tx (fi_stx_context; @inject: the most its
 * endpoints inject) or @rx (fi_srx_context), for an application of API
 * @api: 0; -FI_ENODATA for capabilities braid does not have for the type;
 * -FI_EINVAL for anything else beyond it (size, iov_limit, ordering, op_flags).
 */
int braid_ctx_attr_check(enum fi_ep_type type, uint32_t api, const struct fi_tx_attr *tx,
			 const struct fi_rx_attr *rx, size_t inject);

/* braid_nosys.c: -FI_ENOSYS for every call braid does not implement. */
extern struct fi_ops_tagged braid_nosys_tagged_ops;
extern struct fi_ops_rma braid_nosys_rma_ops;
extern struct fi_ops_atomic braid_nosys_atomic_ops;
extern struct fi_ops_collective braid_nosys_collective_ops;
extern struct fi_ops_cm braid_nosys_cm_ops;
int braid_nosys_bind(struct fid *fid, struct fid *bfid, uint64_t flags);
int braid_nosys_control(struct fid *fid, int command, void *arg);
int braid_nosys_ops_open(struct fid *fid, const char *name, uint64_t flags,
			 void **ops, void *context);
int braid_nosys_tostr(const struct fid *fid, char *buf, size_t len);
int braid_nosys_ops_set(struct fid *fid, const char *name, uint64_t flags,
			void *ops, void *context);

/* ---- objects ---- */

struct braid_fabric {
	/** @fabric_fid: what the application holds; first. */
	struct fid_fabric fabric_fid;
	/** @ref: open domains and EQs. */
	atomic_int ref;
	/** @name: the fabric name it was opened with. */
	char *name;
};

struct braid_ep;

/**
 * struct braid_epset - the endpoints a CQ, counter or domain drives on progress.
 * A bind may add one endpoint twice (tx and rx): @refs counts that.
 * @lock guards the array (add, remove, iteration); it is taken before an
 * endpoint's lock, and only tried on those (braid_epset_progress()), so no
 * order is imposed on the endpoint's side.
 */
struct braid_epset {
	struct braid_ep **eps;
	int *refs;
	int n, cap;
	pthread_mutex_t lock;
};

void braid_epset_construct(struct braid_epset *set);
int braid_epset_add(struct braid_epset *set, struct braid_ep *ep);
void braid_epset_remove(struct braid_epset *set, struct braid_ep *ep);
void braid_epset_destruct(struct braid_epset *set);

/* receive burst buffer sets a domain keeps (threads progressing its endpoints at once) */
#define BRAID_RX_CACHE	8

/** struct braid_rxbuf - the buffers one progress call receives a burst into. */
struct braid_rxbuf {
	size_t size;
	/** @warm: datagrams landed in it since its pages were last given back. */
	bool warm;
	uint8_t data[];
};

struct braid_domain {
	struct fid_domain domain_fid;
	struct braid_fabric *fabric;
	/** @ref: endpoints, AVs, CQs, counters and MRs open on it. */
	atomic_int ref;
	/**
	 * @lock: the control lock: opening, binding, enabling and closing
	 * objects; and the data lock of its MSG endpoints (their RoCEv2 ports
	 * are shared: braid_ep.lockp). RDM and DGRAM data calls never take it:
	 * each endpoint has a lock of its own.
	 */
	pthread_mutex_t lock;
	/**
	 * @locking: false when the application promised FI_THREAD_DOMAIN and no
	 * progress thread runs: nothing else touches the domain's objects
	 * concurrently, and endpoints and CQs take no lock at all.
	 */
	bool locking;
	/** @mr_lock: guards @mr_keys: registrations write, remote accesses read (any endpoint's). */
	pthread_rwlock_t mr_lock;
	/** @info: a copy of the fi_info it was opened with. */
	struct fi_info *info;
	/** @mr_keys: key -> struct braid_mr. */
	struct braid_map mr_keys;
	/** @mr_next_key: next key when the provider chooses (FI_MR_PROV_KEY). */
	uint64_t mr_next_key;
	/** @eq: bound EQ for asynchronous events, or NULL. */
	struct braid_eq *eq;
	/** @peers: the domain-wide peer table the RDM endpoints share. */
	struct braid_peer_table *peers;
	/** @rc_ports: RoCEv2 receive sockets of the MSG endpoints, one per local IP. */
	struct braid_dlist rc_ports;
	/** @next_qpn: the next QP number handed out (24 bits, never 0 or 1). */
	uint32_t next_qpn;
	/** @eps: the enabled endpoints (the progress thread drives them). */
	struct braid_epset eps;
	/** @pt, @pt_lock, @pt_cond, @pt_stop, @pt_running, @pt_pid: the progress thread (braid_progress.c). */
	pthread_t pt;
	pthread_mutex_t pt_lock;
	pthread_cond_t pt_cond;
	bool pt_stop, pt_running;
	/** @pt_node: in the list of domains whose thread runs (braid_progress_halt_all()). */
	struct braid_dlist pt_node;
	/**
	 * @rx_cache: receive bursts' buffers (struct braid_rxbuf), kept for the
	 * next RDM endpoints that progress: the domain's endpoints share them
	 * instead of holding 32 datagrams of their MTU each (braid_rdm.c); a set
	 * per thread progressing at once, up to BRAID_RX_CACHE.
	 */
	_Atomic(struct braid_rxbuf *) rx_cache[BRAID_RX_CACHE];
	pid_t pt_pid;
	/** @pt_passes: endpoint progress calls it made while the application was away. */
	uint64_t pt_passes;
	/** @auth: the default authorization key (domain_attr.auth_key) as the wire uses it. */
	struct braid_auth auth;
	/**
	 * @trigs: triggered transfers held for their counters (struct
	 * braid_trig, braid_trigger.c), in threshold order, under @trig_lock;
	 * @trig_count: how many (read without the lock); @trig_pump: held by
	 * the one thread posting the due ones.
	 */
	struct braid_dlist trigs;
	pthread_mutex_t trig_lock, trig_pump;
	atomic_size_t trig_count;
};

/*
 * ---- FI_EP_MSG (braid_msg.c, braid_pep.c): RoCEv2 RC ----
 *
 * A CM object is something an EQ drives when it is read: a passive
 * endpoint (its listening socket) or a MSG endpoint (its QP socket, which
 * carries the connection handshake, protocol.md §6).
 */
struct braid_cm_obj {
	struct braid_dlist node;
	/** @progress: receive and retransmit CM messages; the EQ calls it without its own lock held. */
	void (*progress)(struct braid_cm_obj *obj);
	/** @fd: readable when there is CM work. */
	int fd;
	/** @listener: a passive endpoint's (the EQ runs it after the endpoints'). */
	bool listener;
};

/**
 * struct braid_rc_port - the RoCEv2 receive socket of one local IP in a
 * domain (UDP port 4791 when it is free, else FI_BRAID_RC_PORT or an
 * ephemeral one). Packets are handed to the QP that BTH.DestQP names.
 */
struct braid_rc_port {
	struct braid_dlist node;
	struct braid_wire *wire;
	/** @demux: its QPs by number (owner: struct braid_ep), and the packets it dropped. */
	struct braid_rc_demux demux;
	int refs;
	uint8_t *rx_bufs;
};

/* braid_msg.c, braid_msg_rma.c, braid_rdm_rma.c: the ops tables */
struct braid_ep;
extern struct fi_ops_msg braid_msg_msg_ops;
extern struct fi_ops_rma braid_msg_rma_ops;
extern struct fi_ops_rma braid_rdm_rma_ops;
extern struct fi_ops_atomic braid_rdm_atomic_ops;

/* braid_msg.c, braid_msg_cm.c, braid_msg_progress.c: MSG endpoints */
extern struct fi_ops_cm braid_msg_cm_ops;
int braid_msg_open(struct braid_ep *ep);
void braid_msg_progress_locked(struct braid_ep *ep);
int braid_msg_wait_fd(struct braid_ep *ep);
uint64_t braid_msg_next_deadline(struct braid_ep *ep);
/*
 * Send the CM message @v (protocol.md §6.2) from @wire's socket to @to, keyed
 * (§2.4) when @auth is; a full socket loses it (timers resend).
 */
void braid_msg_cm_send(struct braid_wire *wire, const struct braid_auth *auth,
		       const struct sockaddr_in *to, const struct braid_cm_view *v);
/*
 * braid_msg_cm_open() - a CM datagram received whole in @pkt's one iovec:
 * the CM packet it carries for braid_cm_decode() in *@cm, *@len (a keyed
 * receiver's checked and its tag taken out, §2.4). Return: 0, or -(drop
 * reason + 1).
 */
int braid_msg_cm_open(const struct braid_auth *auth, const struct braid_pkt *pkt,
		      const uint8_t **cm, size_t *len);

/* braid_pep.c */
int braid_pep_open(struct fid_fabric *fabric, struct fi_info *info, struct fid_pep **pep,
		   void *context);
/* the connection request a passive endpoint reported (fi_info.handle of FI_CONNREQ) */
struct braid_connreq {
	struct fid fid;
	/**
	 * @pep: the listener, or NULL once it let go of the request (it closed,
	 * or the request was refused or accepted): the endpoints that hold it
	 * free it, the last of them (@held).
	 */
	struct braid_pep *pep;
	/** @held: endpoints opened for the request (info->handle) and not closed. */
	int held;
	/** @refused: fi_reject, or the listener closed before it was accepted: fi_accept fails. */
	bool refused;
	struct sockaddr_in peer;	/* the active side's QP/CM socket */
	/**
	 * @local: the listener's address, which the accepted endpoint reports
	 * as its name (as an rdma_cm or TCP connection does), though it talks
	 * through a socket of its own.
	 */
	struct sockaddr_in local;
	/** @req: the request in the listener's CM engine (its REQ, whether it was accepted). */
	struct braid_cm_req req;
};
/* an endpoint opened for @cr holds it (braid_pep_hold) until it closes (braid_pep_forget) */
void braid_pep_hold(struct braid_connreq *cr);
void braid_pep_forget(struct braid_connreq *cr);


/**
 * struct braid_wait - the wait object of a CQ or counter (fi_cq(3) wait_obj).
 * FI_WAIT_FD: an epoll set holding the receive fds of the endpoints bound to
 * the owner plus an eventfd that fi_*_signal and other threads'
 * completions write; FI_WAIT_YIELD: sched_yield between polls;
 * FI_WAIT_NONE: blocking calls are refused.
 */
struct braid_waitset;
struct braid_cq;
struct braid_cntr;

struct braid_wait {
	/** @obj: FI_WAIT_NONE, FI_WAIT_FD or FI_WAIT_YIELD (a wait set member: FI_WAIT_FD). */
	enum fi_wait_obj obj;
	/** @set: the wait set this object belongs to (FI_WAIT_SET), or NULL. */
	struct braid_waitset *set;
	/** @epfd: the epoll fd (what FI_GETWAIT returns), FI_WAIT_FD only. */
	int epfd;
	/** @evfd: the eventfd for signals, FI_WAIT_FD only. */
	int evfd;
	/** @waiters: threads blocked in a wait call. */
	atomic_int waiters;
	/**
	 * @armed: fi_trywait told the application it may block on the fd
	 * itself: the next completion signals though no thread waits in braid.
	 */
	atomic_bool armed;
};

/* Validate @requested (UNSPEC means FD; FI_WAIT_SET: @set, a braid wait set) and
 * set up: 0, -FI_ENOSYS (mutex/cond), -FI_EINVAL, -FI_ENOMEM. A wait set
 * member joins its set with braid_waitset_add() once its fid is set up.
 * Undo with braid_wait_close(). */
int braid_wait_open(struct braid_wait *wait, enum fi_wait_obj requested, struct fid_wait *set);
void braid_wait_close(struct braid_wait *wait);
static inline bool braid_wait_enabled(const struct braid_wait *w) { return w->obj != FI_WAIT_NONE; }
/* Add, watch/ignore (@armed) or remove an endpoint fd; no-ops unless FI_WAIT_FD. */
int braid_wait_add_fd(struct braid_wait *wait, int fd);
void braid_wait_arm_fd(struct braid_wait *wait, int fd, bool armed);
void braid_wait_del_fd(struct braid_wait *wait, int fd);
/* Wake blocked waiters (if any, or an application armed to block on the fd) after new
 * completions; fi_*_signal: always. */
void braid_wait_wake(struct braid_wait *wait);
/* fi_trywait: the application may block on the fd; the fd's old signal is read away
 * (unless a thread waits in braid), the next completion signals. Call before looking. */
void braid_wait_arm(struct braid_wait *wait);

/* braid_poll.c: wait sets (fi_wait_open) and poll sets (fi_poll_open) of CQs and counters */
int braid_waitset_open(struct fid_fabric *fabric, struct fi_wait_attr *attr,
		       struct fid_wait **waitset);
int braid_pollset_open(struct fid_domain *domain, struct fi_poll_attr *attr,
		       struct fid_poll **pollset);
/* @fid (a CQ or counter whose @wait was opened FI_WAIT_SET) joins / leaves its set */
int braid_waitset_add(struct braid_wait *wait, struct fid *fid);
/* braid_pep.c: an active endpoint takes over a passive endpoint's address (its socket) */
struct braid_wire;
int braid_pep_give_wire(struct fid *handle, struct braid_wire **wire);
void braid_waitset_del(struct braid_wait *wait, struct fid *fid);
/* is a thread blocked in fi_wait on @set (its members' wakes must signal)? */
bool braid_waitset_waiting(struct braid_waitset *set);
struct braid_waitset *braid_waitset_of(struct fid_wait *set);
/* fi_trywait on a wait set: its members armed (braid_wait_arm), then -FI_EAGAIN if one has
 * something (not taken note of: fi_wait still reports it), else 0 */
int braid_waitset_trywait(struct braid_waitset *set);
/* what a set asks of its members: progress, then are there completions / the counts */
bool braid_cq_poll(struct braid_cq *cq);
void braid_cntr_poll(struct braid_cntr *cntr, uint64_t *value, uint64_t *err);
void braid_wait_signal(struct braid_wait *wait);
/* fi_control(FI_GETWAIT, FI_GETWAITOBJ) of the owner. */
int braid_wait_control(struct braid_wait *wait, int command, void *arg);
/*
 * A blocking call registers as a waiter (enter) before it checks its
 * condition, so a completion from another thread between the check and the
 * sleep still wakes it; then alternates check and step; then leaves.
 * braid_wait_step: one wait of a call that started at @start with @timeout
 * ms (-1 forever): 0 to check again, -FI_ETIMEDOUT, -FI_EINTR.
 */
void braid_wait_enter(struct braid_wait *wait);
void braid_wait_leave(struct braid_wait *wait);
int braid_wait_step(struct braid_wait *wait, const struct timespec *start, int timeout,
		    int cap_ms);


/* One completion as braid stores it, whatever the CQ format. */
struct braid_cq_slot {
	struct fi_cq_tagged_entry entry;
	fi_addr_t src;
	/** @ep: the endpoint whose operation it completes (discarded when it closes). */
	const struct braid_ep *ep;
};

/* A completion that found the ring full (struct braid_cq.over). */
struct braid_cq_over {
	struct braid_dlist node;
	struct braid_cq_slot slot;
};

struct braid_cq_err {
	struct braid_dlist node;
	struct fi_cq_err_entry err;
	fi_addr_t src;
	const struct braid_ep *ep;
};

struct braid_cq {
	struct fid_cq cq_fid;
	struct braid_domain *domain;
	atomic_int ref;
	enum fi_cq_format format;
	size_t entry_size;
	/**
	 * @lock: guards the ring, @over, @errs and the counts: endpoints
	 * progressed by different threads write one CQ at once (taken after
	 * an endpoint's lock, never before one; not taken when the domain is
	 * not @locking).
	 */
	pthread_mutex_t lock;
	bool locking;
	/** @slots: ring of @size successful completions. */
	struct braid_cq_slot *slots;
	size_t size, head, count;
	/**
	 * @over, @over_count: completions written while the ring was full
	 * (struct braid_cq_over), oldest first: endpoints check for room before
	 * taking a completion from their engine, but two of them may both see
	 * the last slot free; the later one's completion waits here, never lost.
	 */
	struct braid_dlist over;
	size_t over_count;
	/** @errs: pending error completions (bounded by @size as well). */
	struct braid_dlist errs;
	size_t err_count;
	/** @reserved: slots promised to sends queued by FI_MORE. */
	size_t reserved;
	struct braid_epset eps;
	struct braid_wait wait;
	atomic_int signaled;
};

struct braid_cntr {
	struct fid_cntr cntr_fid;
	struct braid_domain *domain;
	atomic_int ref;
	atomic_uint_fast64_t value, err;
	struct braid_epset eps;
	struct braid_wait wait;
};

struct braid_eq_entry {
	struct braid_dlist node;
	uint32_t event;
	uint64_t flags;
	size_t len;
	bool is_err;
	/* followed by len bytes of event data */
	uint8_t data[];
};

struct braid_eq {
	struct fid_eq eq_fid;
	struct braid_fabric *fabric;
	atomic_int ref;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct braid_dlist entries;
	size_t count, size;
	enum fi_wait_obj wait_obj;
	/** @evfd: FI_WAIT_FD: an eventfd readable while entries are queued. */
	int evfd;
	/** @epfd: FI_WAIT_FD: what FI_GETWAIT returns: @evfd and the CM objects' sockets. */
	int epfd;
	bool has_wait;
	/** @cm_lock, @cm_objs: the CM objects bound to the EQ, driven when it is read. */
	pthread_mutex_t cm_lock;
	struct braid_dlist cm_objs;
};
void braid_eq_add_cm(struct braid_eq *eq, struct braid_cm_obj *obj);
void braid_eq_progress(struct braid_eq *eq);
/* Drop the queued events of @fid (an endpoint being closed). */
void braid_eq_remove_fid(struct braid_eq *eq, const struct fid *fid);
void braid_eq_del_cm(struct braid_eq *eq, struct braid_cm_obj *obj);

struct braid_av {
	struct fid_av av_fid;
	struct braid_domain *domain;
	atomic_int ref;
	enum fi_av_type type;
	uint64_t flags;
	/** @addrs: entry i is fi_addr i; @valid marks live entries. */
	struct sockaddr_in *addrs;
	uint8_t *valid;
	/**
	 * @same_next, @same_prev: per entry, the other live entries of the same
	 * address (inserted more than once), oldest first, a doubly linked chain
	 * whose head @rev names and whose head's @same_prev names its tail (for
	 * a free FI_AV_MAP entry, @same_next links the free list): inserting
	 * and removing any entry is O(1).
	 */
	uint32_t *same_next, *same_prev;
	/** @count: entries ever handed out (the next new fi_addr); @cap: room. */
	size_t count, cap;
	/** @free_head: FI_AV_MAP: a removed entry to reuse, or AV_NONE. */
	uint32_t free_head;
	/** @rev: (ip << 16 | port) -> fi_addr + 1 of the address's first live entry, for FI_SOURCE. */
	struct braid_map rev;
	struct braid_eq *eq;
	pthread_mutex_t lock;
	/**
	 * @shm: a named AV's shared segment (fi_av(3) name), NULL for an
	 * unnamed one. The arrays above are then this process's copy of the
	 * segment's first @count entries, brought up to date under @lock
	 * before every use (av_sync_locked); an index is never reused.
	 */
	struct braid_av_shm *shm;
	/** @shm_removed: the segment's removal count the copy has seen. */
	uint64_t shm_removed;
	/** @shm_bad: the segment was found corrupt (said once in the log). */
	bool shm_bad;
	/**
	 * @gen: bumped at every removal (under @lock): an address looked up
	 * before may since name another peer, or none (braid_rdm.c keeps the
	 * last one a send looked up while it does not move).
	 */
	_Atomic uint64_t gen;
};

/** struct braid_av_shm - a named AV's segment as one process has it open (braid_av_shm.c). */
struct braid_av_shm {
	/** @fd: the segment, open while the AV is: its locks tell who uses it. */
	int fd;
	/** @hdr, @size: the mapping (read-only for an AV opened FI_READ). */
	struct braid_av_shm_hdr *hdr;
	size_t size;
	/** @map: the fi_addr_t array (fi_av_attr.map_addr); @ent: the addresses. */
	uint64_t *map;
	struct braid_av_shm_entry *ent;
	/** @cap: entries it holds, checked at open and never read from the segment again. */
	uint64_t cap;
	/** @read_only: opened FI_READ; @creator: this process made it and removes its name at close. */
	bool read_only, creator;
	/** @write_lock: a writer's threads take it around the segment's write lock (braid_av_shm_lock). */
	pthread_mutex_t write_lock;
	/** @path: its shm_open(3) name. */
	char path[BRAID_AV_NAME_MAX + 32];
};

struct braid_mr {
	struct fid_mr mr_fid;
	struct braid_domain *domain;
	struct iovec iov[BRAID_IOV_LIMIT];
	size_t iov_count;
	uint64_t access, flags;
	uint64_t key;
	/**
	 * @rcntr: counters bound with fi_mr_bind (FI_REMOTE_READ [0],
	 * FI_REMOTE_WRITE [1]): each counts the remote accesses of its kind
	 * that targeted the region (under the domain's mr_lock).
	 */
	struct braid_cntr *rcntr[2];
	/** @iface: FI_HMEM_SYSTEM or FI_HMEM_CUDA; @cu_ctx: a device region's CUDA context. */
	enum fi_hmem_iface iface;
	void *cu_ctx;
	/**
	 * @shadow: a device region that peers may access (FI_REMOTE_READ,
	 * FI_REMOTE_WRITE): its pinned host copy, through which their
	 * accesses go (braid_mr_check, braid_mr_written); NULL otherwise.
	 */
	uint8_t *shadow;
};

/* A DGRAM header as a keyed endpoint sends and receives it: the tag follows it (protocol.md §2.4). */
struct braid_dgram_keyed_hdr {
	struct braid_dgram_hdr h;
	uint8_t tag[BRAID_AUTH_TAG];
} __attribute__((packed));

/* A posted receive. */
struct braid_rx_entry {
	struct braid_dlist node;
	struct iovec iov[BRAID_IOV_LIMIT + 1];	/* [0] is the header (and tag) */
	size_t iov_count;			/* user iovs */
	size_t capacity;
	void *context;
	uint64_t flags;
	struct braid_dgram_keyed_hdr hdr;
};

/* A send held back by FI_MORE, waiting for the batch to go. */
struct braid_tx_pending {
	struct iovec iov[BRAID_IOV_LIMIT + 1];
	int iovcnt;
	size_t len;
	void *context;
	uint64_t flags;
	void *buf;
	/** @comp: a CQ slot is reserved for this send's completion. */
	bool comp;
	struct braid_dgram_keyed_hdr hdr;
	struct sockaddr_in dest;
};

/**
 * struct braid_ep_stats - the endpoint's and its wire's counters
 * (braid_counters.h's endpoint list), then the drops by reason of packets the
 * provider refused before any engine saw them.
 */
struct braid_ep_stats {
	BRAID_EP_COUNTERS(BRAID_CTR_FIELD)
	uint64_t drops[BRAID_DROP_MAX];
};

/*
 * The receive side of an MSG endpoint (braid_msg_rx.c): its receives, kept
 * here and handed to the QP one message at a time (srq_pull), unexpected
 * messages of a tagged connection, completions made here. Embedded in the
 * endpoint's struct braid_msg; every call under the domain lock.
 */
struct braid_msg_rx {
	struct braid_ep *ep;
	/** @framed: every SEND carries braid's message header (both sides asked FI_TAGGED, §5.10). */
	bool framed;
	/** @flushed: the QP was shut down or failed: the posted receives were canceled. */
	bool flushed;
	/** @pool, @size: records: @size for posted receives (@nuser), @size for the rest (@naux). */
	struct braid_pool pool;
	size_t size, nuser, naux;
	/** @posted_msg, @posted_tagged: receives in posting order; @unexp: messages in arrival order. */
	struct braid_dlist posted_msg, posted_tagged, unexp;
	/** @ready: completions made here, written as the CQ has room. */
	struct braid_dlist ready;
	/** @arena, @arena_size, @ext: unexpected messages' bytes (FI_BRAID_UNEXP_BYTES). */
	uint8_t *arena;
	size_t arena_size;
	struct braid_extents ext;
};

int braid_msg_rx_construct(struct braid_msg_rx *rx, struct braid_ep *ep, size_t size);
void braid_msg_rx_destruct(struct braid_msg_rx *rx);
/* the RC engine's srq_pull and recv_done for the endpoint's own receives (ctx: its braid_msg_rx) */
int braid_msg_rx_pull(void *ctx, const struct braid_rc_msg_start *m, struct braid_rc_recv *rr);
void braid_msg_rx_done(void *ctx, void *context, size_t len, int err);
/* a QP receive completion of a receive braid_msg_rx_pull gave (the rx CQ has room for one entry) */
void braid_msg_rx_comp(struct braid_msg_rx *rx, const struct braid_rc_comp *c);
/* completions made here, to the CQ while it has room */
void braid_msg_rx_reap(struct braid_msg_rx *rx);
/* fi_recv, fi_trecv and their kin (arguments checked): 0, -FI_EAGAIN, -FI_EOPBADSTATE */
ssize_t braid_msg_rx_post(struct braid_ep *ep, const struct iovec *iov, size_t count,
			  uint64_t tag, uint64_t ignore, uint64_t flags, void *context, bool tagged);
/* fi_trecvmsg with FI_PEEK or FI_CLAIM */
ssize_t braid_msg_rx_peek(struct braid_ep *ep, const struct iovec *iov, size_t count,
			  uint64_t tag, uint64_t ignore, uint64_t flags, void *context);
/* fi_cancel of a posted receive: 0 (an FI_ECANCELED completion follows) or -FI_ENOENT */
int braid_msg_rx_cancel(struct braid_ep *ep, void *context);
/* the QP is gone: posted receives complete FI_ECANCELED, unclaimed messages are dropped */
void braid_msg_rx_flush(struct braid_msg_rx *rx);

/* braid_msg.c, for braid_msg_rx.c */
struct braid_msg_rx *braid_msg_rx_of(struct braid_ep *ep);
/* receives may not be posted (the connection is over, or failing) */
bool braid_msg_rx_closed(struct braid_ep *ep);
int braid_msg_prov_errno(int err);
/* a receive-side completion to the CQ (@silent: success not written) and counter (@count) */
void braid_msg_write_rx(struct braid_ep *ep, void *context, uint64_t flags, size_t len, void *buf,
			uint64_t data, uint64_t tag, int err, int prov_errno, size_t olen,
			bool silent, bool count);
extern struct fi_ops_tagged braid_msg_tagged_ops;


/* A FIFO of posted receives: a DGRAM endpoint's own, or a shared receive context's. */
struct braid_rxq {
	/** @pool, @posted: the receives posted and not yet taken, oldest first. */
	struct braid_pool pool;
	struct braid_dlist posted;
};

/* endpoints one shared context serves at most (domain_attr max_ep_stx_ctx, max_ep_srx_ctx) */
#define BRAID_SHARED_CTX_EPS	256

/*
 * A shared receive context (fi_srx_context, braid_srx.c) of the domain's
 * endpoint type: one queue of posted receives the endpoints bound to it
 * take theirs from; each message completes on the CQ of the endpoint it
 * arrived at. MSG: a RoCE SRQ its queue pairs pull from (@q); DGRAM: the
 * buffers the bound endpoints' datagrams land in (@q); RDM: the RD
 * engines' shared receive queue (@rdq), with tag matching, directed
 * receives and unexpected messages.
 */
struct braid_srx {
	struct fid_ep ep_fid;
	struct braid_domain *domain;
	/** @type: the endpoint type it serves: the domain's. */
	enum fi_ep_type type;
	/** @ref: endpoints bound to it. */
	atomic_int ref;
	/** @caps, @op_flags, @size: its receive attributes (what endpoints bound to it may use). */
	uint64_t caps, op_flags;
	size_t size;
	/**
	 * @lock: RDM and DGRAM: the data lock of every endpoint bound to it
	 * (their lockp: they share its queue), and of its own calls. MSG
	 * endpoints and their context take the domain's (braid_srx_lock()).
	 */
	pthread_mutex_t lock;
	/**
	 * @eps: the endpoints bound to it, in bind order (struct
	 * braid_ep.srx_node; changed under the domain lock and @lock). The
	 * first enabled one reports what belongs to no message: a canceled
	 * receive, FI_ENOMSG of a peek.
	 */
	struct braid_dlist eps;
	/**
	 * @av: RDM and DGRAM: the AV its endpoints share (fi_endpoint(3)): the
	 * first enabled one's; NULL while none is bound. A directed receive's
	 * source is looked up in it.
	 */
	struct braid_av *av;
	/** @min_multi_recv: RDM: FI_OPT_MIN_MULTI_RECV of its multi-receive buffers. */
	size_t min_multi_recv;
	/** @q: MSG and DGRAM: the receives posted and not yet taken. */
	struct braid_rxq q;
	/** @rdq: RDM: the queue the bound endpoints' RD engines share. */
	struct braid_rd_rxq *rdq;
	/** @pulled: MSG: the iovecs of the receive braid_srx_pull handed out last. */
	struct iovec pulled[BRAID_RC_IOV_MAX];
};

/*
 * A shared transmit context (fi_stx_context, braid_stx.c): the endpoints
 * bound to it post their transmit operations as before (from their own
 * address, completing on their own CQs and counters); it bounds how many
 * are outstanding at once across them all.
 */
struct braid_stx {
	struct fid_stx stx_fid;
	struct braid_domain *domain;
	/** @type: the endpoint type it serves: the domain's. */
	enum fi_ep_type type;
	/** @ref: endpoints bound to it. */
	atomic_int ref;
	/** @caps: its transmit capabilities (endpoints bound to it use a subset). */
	uint64_t caps;
	/** @size: transmit operations outstanding at once (tx_attr.size); @used: now. */
	size_t size;
	atomic_size_t used;
};

enum { BRAID_CNTR_READ, BRAID_CNTR_WRITE, BRAID_CNTR_REMOTE_READ, BRAID_CNTR_REMOTE_WRITE,
       BRAID_RMA_CNTRS };

/**
 * struct braid_ep_kind - what one endpoint type (FI_EP_DGRAM, FI_EP_RDM,
 * FI_EP_MSG) does where the common endpoint code (braid_ep.c) leaves off:
 * the size of its struct, its data and CM ops, what it asks of its wire,
 * and its hooks. One table per type, in the type's file (braid_dgram.c,
 * braid_rdm.c, braid_msg.c); fi_endpoint picks it by ep_attr->type. A NULL
 * hook has nothing to do, unless its comment says what the call returns.
 */
struct braid_ep_kind {
	/** @size: the type's endpoint struct, which starts with struct braid_ep. */
	size_t size;
	/**
	 * @msg, @tagged, @rma, @atomic, @cm: its ops tables (NULL: braid_nosys_*'s;
	 * @cm NULL: the connectionless one, braid_ep.c's).
	 */
	struct fi_ops_msg *msg;
	struct fi_ops_tagged *tagged;
	struct fi_ops_rma *rma;
	struct fi_ops_atomic *atomic;
	struct fi_ops_cm *cm;
	/** @domain_lock: its data lock is the domain's (MSG: the RoCEv2 ports are shared). */
	bool domain_lock;
	/** @needs_av: fi_enable fails -FI_ENOAV without an AV bound (connectionless). */
	bool needs_av;
	/** @aliases: fi_ep_alias is offered (else -FI_ENOSYS). */
	bool aliases;
	/**
	 * @tx_wire_wait: its sends complete when the peer's ACKs arrive: the
	 * transmit-side wait objects (tx CQ, send counter) wait on the wire's fd.
	 */
	bool tx_wire_wait;
	/** @clocked: its progress reads the clock into braid_ep.progress_ns. */
	bool clocked;
	/**
	 * @one_path, @gro, @lend, @gso: what its wire is opened with: one path
	 * (RC: one per QP) instead of FI_BRAID_PATHS; coalesced runs (UDP GRO)
	 * split into datagrams; large payloads lent (FI_BRAID_LEND_MIN: they
	 * stay put until acknowledged); runs of full packets sent with UDP GSO.
	 */
	bool one_path, gro, lend, gso;
	/**
	 * @local: datagrams to endpoints on this host go through shared memory
	 * (FI_BRAID_SHM; fi_braid(7), LOCAL PEERS).
	 */
	bool local;
	/**
	 * @open: fi_endpoint, once the common fields are set: its wire (bound to
	 * @addr, braid_ep_wire_open) and its own state. Undoes itself on failure.
	 */
	int (*open)(struct braid_ep *ep, const struct sockaddr_in *addr);
	/** @max_msg_size: the largest message over its wire (before ep_attr's limit). */
	size_t (*max_msg_size)(const struct braid_ep *ep);
	/** @enable: fi_enable, once its AV and CQs are checked; it goes live (braid_ep_live_locked). */
	int (*enable)(struct braid_ep *ep);
	/** @progress: drive it (the caller holds its lock, it is enabled). */
	void (*progress)(struct braid_ep *ep);
	/** @bind_eq: fi_ep_bind of an EQ, before the endpoint takes it. */
	int (*bind_eq)(struct braid_ep *ep, struct braid_eq *eq);
	/**
	 * @bind_rma_cntrs: bind @cntr as the counters of the RMA @flags (domain
	 * lock held), or (@cntr NULL) unbind the ones bound; NULL: RMA counter
	 * flags are refused (-FI_EBADFLAGS).
	 */
	int (*bind_rma_cntrs)(struct braid_ep *ep, struct braid_cntr *cntr, uint64_t flags);
	/** @cancel: fi_cancel (takes the locks it needs): 0, or -FI_ENOENT. */
	int (*cancel)(struct braid_ep *ep, void *context);
	/** @rx_size_left, @tx_size_left: of an enabled endpoint (NULL: -FI_ENOSYS). */
	ssize_t (*rx_size_left)(struct braid_ep *ep);
	ssize_t (*tx_size_left)(struct braid_ep *ep);
	/** @getopt, @setopt: its FI_OPT_ENDPOINT options (NULL, or an unknown one: -FI_ENOPROTOOPT). */
	int (*getopt)(struct braid_ep *ep, int optname, void *optval, size_t *optlen);
	int (*setopt)(struct braid_ep *ep, int optname, const void *optval, size_t optlen);
	/**
	 * @detach: fi_close, once no progress set holds it and before any lock
	 * is taken: RDM lets go of its RMA counters, MSG of its connection and QP.
	 */
	void (*detach)(struct braid_ep *ep);
	/** @discard_locked: fi_close, under its lock: operations still queued go, with no completions. */
	void (*discard_locked)(struct braid_ep *ep);
	/** @close: fi_close, once nothing progresses it: its engine and queues go. */
	void (*close)(struct braid_ep *ep);
	/** @next_deadline: when its earliest timer is due (ns, UINT64_MAX: none); its lock held. */
	uint64_t (*next_deadline)(struct braid_ep *ep);
	/**
	 * @rx_last: when its wire last gave it a datagram: a thread polling it
	 * may yield once that is long enough ago (NULL: never, braid_wait.c).
	 */
	uint64_t (*rx_last)(const struct braid_ep *ep);
	/** @rd_stats, @rc_stats: its engine's counters (RD or RC), NULL while there is none. */
	const struct braid_rd_stats *(*rd_stats)(struct braid_ep *ep);
	const struct braid_rc_stats *(*rc_stats)(struct braid_ep *ep);
	/**
	 * @stat_peers: its peers' records for a snapshot (braid_rd_snapshot_peers):
	 * bytes written to @buf, *@peers records, *@total peers with traffic state.
	 */
	size_t (*stat_peers)(struct braid_ep *ep, void *buf, size_t len, uint32_t *peers,
			     uint32_t *total);
};

/* the tables of braid_dgram.c, braid_rdm.c, braid_msg.c */
extern const struct braid_ep_kind braid_dgram_kind, braid_rdm_kind, braid_msg_kind;

/**
 * struct braid_ep - what endpoints of every type have (braid_ep.c). Each
 * type's struct starts with it: struct braid_dgram_ep and struct
 * braid_rdm_ep below, struct braid_msg_ep (braid_msg_int.h); @kind says
 * which, and its converter (braid_rdm_ep_of() ...) gets there.
 */
struct braid_ep {
	struct fid_ep ep_fid;
	struct braid_domain *domain;
	struct fi_info *info;
	/** @kind: what its type does (struct braid_ep_kind); @type: that type, fi_info's. */
	const struct braid_ep_kind *kind;
	enum fi_ep_type type;
	/**
	 * @lock, @lockp: what serialises the endpoint's data calls and progress
	 * (braid_ep_lock()): @lockp is @lock for RDM and DGRAM endpoints, the
	 * domain's lock for MSG endpoints (they share their RoCEv2 port), NULL
	 * when the domain is not locking (FI_THREAD_DOMAIN, no progress thread).
	 * No system call another endpoint waits for is made under it.
	 */
	pthread_mutex_t lock;
	_Atomic(pthread_mutex_t *) lockp;
	/** @enabled: set under @lockp: progress never sees a half-enabled endpoint. */
	bool enabled;
	/** @app_ns: when the application last drove its progress (a CQ or counter read). */
	uint64_t app_ns;
	struct braid_av *av;
	struct braid_cq *tx_cq, *rx_cq;
	bool tx_selective, rx_selective;
	struct braid_cntr *send_cntr, *recv_cntr;
	/**
	 * @srx: the shared receive context it takes its receives from, or NULL;
	 * @srx_node: in its endpoints (struct braid_srx.eps).
	 */
	struct braid_srx *srx;
	struct braid_dlist srx_node;
	/**
	 * @stx: the shared transmit context that bounds its transmit operations,
	 * or NULL; @stx_held: its operations outstanding counted there (under
	 * its lock), given back as they complete or when it closes.
	 */
	struct braid_stx *stx;
	size_t stx_held;
	struct braid_eq *eq;
	uint64_t tx_op_flags, rx_op_flags;
	/** @trig_held: its triggered transfers held (braid_trigger.c); @aliases: its open aliases. */
	atomic_int trig_held, aliases;
	/** @wire: the wire endpoint (opened at fi_endpoint, re-opened by setname). */
	struct braid_wire *wire;
	const struct braid_wire_ops *wire_ops;
	size_t max_msg_size;
	struct braid_ep_stats stats;
	/** @stat_slot: its slot in the published file (braid_stat.c), or -1; @stat_id: its number
	 * in the process; @stat_next: when it publishes next. */
	int stat_slot;
	uint32_t stat_id;
	uint64_t stat_next;
	/** @progress_ns: when RDM and MSG progress last read the clock. */
	uint64_t progress_ns;
	/**
	 * @auth: the endpoint's authorization key as the wire uses it: its own
	 * (ep_attr.auth_key) or the domain's; BRAID_AUTH_NONE: keyless.
	 */
	struct braid_auth auth;
	/**
	 * @auth_scratch: a keyed RDM or DGRAM endpoint's room for one datagram's
	 * covered bytes (braid_auth_seal, braid_auth_open); NULL otherwise.
	 */
	uint8_t *auth_scratch;
	/**
	 * @mr_auth_ok: the domain's memory regions (which carry the domain's key)
	 * may be reached through this endpoint: the domain has no key, or this
	 * endpoint has the same one (fi_mr(3): only peers of the region's key).
	 */
	bool mr_auth_ok;
};

/**
 * struct braid_dgram_ep - an FI_EP_DGRAM endpoint (braid_dgram.c): datagrams
 * straight between the wire and the application's buffers.
 */
struct braid_dgram_ep {
	struct braid_ep ep;
	/** @rxq: where its receives are posted: @rxq_own, or its shared context's. */
	struct braid_rxq *rxq;
	struct braid_rxq rxq_own;
	/** @tx_pending, @tx_npending: sends queued by FI_MORE. */
	struct braid_tx_pending tx_pending[BRAID_MAX_BATCH];
	int tx_npending;
	/** @pending_comps: completions reserved in the tx CQ by queued sends. */
	size_t pending_comps;
	/** @next_path: the path its next send takes (they go round the paths). */
	uint32_t next_path;
};

static inline struct braid_dgram_ep *braid_dgram_ep_of(struct braid_ep *ep)
{
	return braid_container_of(ep, struct braid_dgram_ep, ep);
}

/** struct braid_hmem_buf - one direction of an operation's buffers, and its staging. */
struct braid_hmem_buf {
	/** @user, @ctx, @count, @len: the application's buffers; each one's CUDA context (NULL: host). */
	struct iovec user[BRAID_IOV_LIMIT];
	void *ctx[BRAID_IOV_LIMIT];
	size_t count;
	uint64_t len;
	/**
	 * @stage, @stage_len, @siov: its staging in the endpoint's arena (NULL:
	 * all host memory, none), and as the engine's buffer; @ring: the
	 * staging is a ring of this many bytes, byte o of the buffers at
	 * o % @ring (0: as long as the buffers).
	 */
	uint8_t *stage;
	size_t stage_len;
	uint64_t ring;
	struct iovec siov;
};

/**
 * struct braid_hmem_op - an operation with device buffers: the engine sees
 * staging, and this record as its context (braid_hmem_op_of()).
 */
struct braid_hmem_op {
	/** @context: the application's. */
	void *context;
	/** @in: what it sends (staged before it goes); @out: what it receives (copied out at the end). */
	struct braid_hmem_buf in, out;
	/** @staged, @issued: bytes of @in in staging, and whose copy is under way. */
	uint64_t staged, issued;
	/** @err: FI_EIO when a copy failed (the operation completes with it). */
	int err;
	/** @next: the free list; @in_use: taken. */
	uint32_t next;
	bool in_use;
};

/** struct braid_hmem_req - the buffers of an operation, for braid_hmem_op_take(). */
struct braid_hmem_req {
	const struct iovec *in;
	void **in_desc;
	size_t in_count;
	const struct iovec *out;
	void **out_desc;
	size_t out_count;
	void *context;
	/** @in_ring: @in longer than this is staged through a ring of it (0: never). */
	uint64_t in_ring;
};

/**
 * struct braid_hmem_ep - an RDM endpoint's device-memory state, started at
 * its first operation with a device buffer: the arena of pinned staging
 * (first fit), the operation records, the CUDA stream its copies use.
 */
struct braid_hmem_ep {
	struct braid_hmem_op *ops;
	uint32_t nops, free;
	uint8_t *arena;
	size_t arena_size;
	uint64_t chunk;
	struct braid_extents ext;
	void *stream, *stream_ctx;
	struct braid_ep_stats *stats;
};

/**
 * struct braid_rdm_ep - an FI_EP_RDM endpoint (braid_rdm.c, braid_rdm_progress.c,
 * braid_rdm_rma.c): the RD engine's reliable datagrams.
 */
/* datagrams an RDM endpoint takes from its wire in one burst */
#define BRAID_RDM_RX_BURST	32

struct braid_rdm_ep {
	struct braid_ep ep;
	/** @rd: the reliable-datagram engine (created at fi_enable). */
	struct braid_rd *rd;
	/** @rx_bufs: while it progresses, the burst buffers its domain lent it (braid_rxbuf). */
	uint8_t *rx_bufs;
	/**
	 * @local_eager: messages of up to this many bytes go whole to local peers
	 * (braid_cfg.shm_eager; 0: none: no local peers, a keyed endpoint).
	 */
	size_t local_eager;
	/** @rx_msg_ns: while it takes messages local peers handed whole, the clock. */
	uint64_t rx_msg_ns;
	/**
	 * @last_addr, @last_key, @last_gen, @last_av: the address its last send
	 * looked up, the engine's key of it, and its AV's @gen then (under the
	 * endpoint's lock; @last_av NULL: none kept).
	 */
	fi_addr_t last_addr;
	uint64_t last_key, last_gen;
	const struct braid_av *last_av;
	/**
	 * @rx_pkts, @rx_iovs: a receive burst's packets, each with its buffer in
	 * @rx_set, kept set up between calls (braid_wire_rx_kept: only those a
	 * burst used are set up again); @rx_set: the buffers they point into
	 * (NULL: none set up yet).
	 */
	struct braid_pkt rx_pkts[BRAID_RDM_RX_BURST];
	struct iovec rx_iovs[BRAID_RDM_RX_BURST];
	uint8_t *rx_set;
	/**
	 * @rx_direct: large datagrams are arriving on the home route: peek at each
	 * and receive its payload straight into place (braid_rdm_progress.c;
	 * counted in stats.rx_placed).
	 */
	bool rx_direct;
	/** @rx_drained_ns: when its wire was last read to empty (datagrams read later came after). */
	uint64_t rx_drained_ns;
	/** @rx_last_ns: when its wire last gave it a datagram. */
	uint64_t rx_last_ns;
	/** @unflushed: sends since the last progress call (the first of them is flushed at once). */
	unsigned int unflushed;
	/**
	 * @lent_ns: when the last datagram whose payload was lent left
	 * (protocol.md §4.2 "Lent payloads"): closing waits until it is
	 * BRAID_RD_LENT_WAIT_NS old. 0: none.
	 */
	uint64_t lent_ns;
	/** @rma_cntr: the FI_READ, FI_WRITE, FI_REMOTE_READ, FI_REMOTE_WRITE counters. */
	struct braid_cntr *rma_cntr[BRAID_RMA_CNTRS];
	/** @min_multi_recv: FI_OPT_MIN_MULTI_RECV of this endpoint. */
	size_t min_multi_recv;
	/** @hmem: operations with device buffers (braid_hmem.c). */
	struct braid_hmem_ep hmem;
};

static inline struct braid_rdm_ep *braid_rdm_ep_of(struct braid_ep *ep)
{
	return braid_container_of(ep, struct braid_rdm_ep, ep);
}

/* braid_srx.c: shared receive contexts */
int braid_srx_open(struct fid_domain *domain, struct fi_rx_attr *attr, struct fid_ep **rx_ep,
		   void *context);
int braid_srx_pull(void *ctx, const struct braid_rc_msg_start *m, struct braid_rc_recv *rr);
ssize_t braid_srx_recv(struct braid_srx *srx, const struct iovec *iov, size_t count,
		       uint64_t flags, void *context);
/* fi_ep_bind of @srx to @ep (not enabled): 0, -FI_EINVAL */
int braid_srx_bind(struct braid_ep *ep, struct braid_srx *srx);
/* @ep, bound to a shared receive context, is being enabled (its lock held): 0, or -FI_EINVAL (another AV) */
int braid_srx_enable(struct braid_ep *ep);
/* @ep closes: out of its context's endpoints (_unlink: under its lock), then lets go of it */
void braid_srx_unlink_locked(struct braid_ep *ep);
void braid_srx_leave(struct braid_ep *ep);
/* The lock of @srx's queue (MSG: the domain's); a no-op when the domain takes none. */
void braid_srx_lock(struct braid_srx *srx);
void braid_srx_unlock(struct braid_srx *srx);
/* the first enabled endpoint bound to @srx, or NULL (caller holds braid_srx_lock) */
struct braid_ep *braid_srx_home(struct braid_srx *srx);
/* receives that can still be posted to @srx before -FI_EAGAIN (takes its lock) */
size_t braid_srx_room(struct braid_srx *srx);
/* progress every enabled endpoint bound to @srx (caller holds braid_srx_lock) */
void braid_srx_progress_locked(struct braid_srx *srx);

/* braid_stx.c: shared transmit contexts */
int braid_stx_open(struct fid_domain *domain, struct fi_tx_attr *attr, struct fid_stx **stx,
		   void *context);
/* fi_ep_bind of @stx to @ep (not enabled): 0, -FI_EINVAL */
int braid_stx_bind(struct braid_ep *ep, struct braid_stx *stx);
/* @ep closes: what it held of its context goes back, and it lets go of it */
void braid_stx_leave(struct braid_ep *ep);
int braid_stx_take(struct braid_ep *ep);
void braid_stx_give(struct braid_ep *ep, size_t n);
size_t braid_stx_room(const struct braid_stx *stx);

/*
 * A transmit operation of @ep begins (0) or must wait (-FI_EAGAIN: its shared
 * transmit context has as many outstanding as its size); one ends. The caller
 * holds the endpoint's lock. An endpoint without a shared context has nothing
 * to count.
 */
static inline int braid_ep_tx_take(struct braid_ep *ep)
{
	return ep->stx ? braid_stx_take(ep) : 0;
}

static inline void braid_ep_tx_give(struct braid_ep *ep, size_t n)
{
	if (ep->stx)
		braid_stx_give(ep, n);
}

/* braid_domain.c */
static inline void braid_domain_lock(struct braid_domain *d) { pthread_mutex_lock(&d->lock); }
static inline void braid_domain_unlock(struct braid_domain *d) { pthread_mutex_unlock(&d->lock); }

/*
 * An endpoint's data lock (struct braid_ep.lockp); a no-op when the domain
 * takes none. Binding a shared receive context makes the context's lock the
 * endpoint's (braid_srx_bind), changing @lockp while holding the lock it
 * had: a thread that took the old one after that lets it go and takes the
 * new one, so whoever holds the endpoint's lock holds the one @lockp names,
 * which then cannot change.
 */
static inline void braid_ep_lock(struct braid_ep *ep)
{
	pthread_mutex_t *l;

	while ((l = atomic_load_explicit(&ep->lockp, memory_order_relaxed))) {
		pthread_mutex_lock(l);
		if (l == atomic_load_explicit(&ep->lockp, memory_order_relaxed))
			return;
		pthread_mutex_unlock(l);
	}
}

static inline void braid_ep_unlock(struct braid_ep *ep)
{
	pthread_mutex_t *l = atomic_load_explicit(&ep->lockp, memory_order_relaxed);

	if (l)
		pthread_mutex_unlock(l);
}

/* Take it if free: 0, or nonzero when another thread holds it. */
static inline int braid_ep_trylock(struct braid_ep *ep)
{
	pthread_mutex_t *l;

	while ((l = atomic_load_explicit(&ep->lockp, memory_order_relaxed))) {
		int ret = pthread_mutex_trylock(l);

		if (ret || l == atomic_load_explicit(&ep->lockp, memory_order_relaxed))
			return ret;
		pthread_mutex_unlock(l);
	}
	return 0;
}

/*
 * braid_auth_attr() - an authorization key of fi_domain(3), fi_endpoint(3)
 * (@size bytes at @key; 0: none) as the wire uses it, in FI_BRAID_AUTH's
 * mode. Return: 0, -FI_EINVAL (more than BRAID_AUTH_KEY_MAX bytes, a size
 * with no key), -FI_ENODATA (keys cannot be had: libsodium did not start).
 */
int braid_auth_attr(struct braid_auth *auth, const uint8_t *key, size_t size);

/* braid_fabric.c */
int braid_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context);
/* braid_domain.c */
int braid_domain_open(struct fid_fabric *fabric, struct fi_info *info,
		      struct fid_domain **domain, void *context);
/* braid_eq.c */
int braid_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr,
		  struct fid_eq **eq, void *context);
int braid_eq_report(struct braid_eq *eq, uint32_t event, const void *buf, size_t len,
		    uint64_t flags, bool is_err);
/* braid_av.c */
int braid_av_open(struct fid_domain *domain, struct fi_av_attr *attr,
		  struct fid_av **av, void *context);
int braid_parse_addr_str(const char *str, struct sockaddr_in *sin);
int braid_av_lookup_addr(struct braid_av *av, fi_addr_t fi_addr, struct sockaddr_in *sin);
fi_addr_t braid_av_reverse(struct braid_av *av, struct in_addr ip, uint16_t port);

/* braid_av_shm.c: a named AV's shared segment (include/braid/braid_av_shm.h) */
/*
 * Open the segment of AV name @name: with @read_only an existing one
 * (-FI_ENOENT if there is none, or only one left by processes that are
 * gone), else the existing one or a new one of @count entries (0: the
 * default). Returns 0, -FI_EINVAL (a bad name or count), -FI_EIO (a
 * corrupt segment), -FI_EBUSY (another process kept it locked for a
 * second) or the system's error.
 */
int braid_av_shm_open(struct braid_av_shm *s, const char *name, bool read_only, size_t count);
/* Unmap and close it; its creator removes its name first. */
void braid_av_shm_close(struct braid_av_shm *s);
/* Writers: take (0 or -FI_EBUSY after a second) and release the lock around an insert or remove. */
int braid_av_shm_lock(struct braid_av_shm *s);
void braid_av_shm_unlock(struct braid_av_shm *s);
/* The published count (-FI_EIO if over the capacity) and removal count. */
int braid_av_shm_state(const struct braid_av_shm *s, uint64_t *count, uint64_t *removed);
/* Index @idx (< cap) is in the AV; and its address, if it is and the address is valid. */
bool braid_av_shm_live(const struct braid_av_shm *s, uint64_t idx);
bool braid_av_shm_get(const struct braid_av_shm *s, uint64_t idx, struct sockaddr_in *sin);
/* Writer, holding the lock: publish @sin as index @idx (the count), or take @idx out; returns the removal count. */
void braid_av_shm_publish(struct braid_av_shm *s, uint64_t idx, const struct sockaddr_in *sin);
uint64_t braid_av_shm_unpublish(struct braid_av_shm *s, uint64_t idx);
/* braid_cq.c */
int braid_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr,
		  struct fid_cq **cq, void *context);
/*
 * braid_cq_has_room() - is there room for one more entry? Read without the
 * CQ's lock: another endpoint may take the room first (the completion then
 * waits in the CQ's overflow, struct braid_cq.over).
 */
bool braid_cq_has_room(struct braid_cq *cq);
/* braid_cq_room() - room for one more entry; a CQ not bound (NULL) always has room. */
bool braid_cq_room(struct braid_cq *cq);
/* braid_cq_free() - entries there is room for (reservations counted). */
size_t braid_cq_free(struct braid_cq *cq);
/* braid_cq_reserve() - promise a slot to a queued send: true, or false when full. */
bool braid_cq_reserve(struct braid_cq *cq);
/* braid_cq_unreserve() - give back @n promised slots. */
void braid_cq_unreserve(struct braid_cq *cq, size_t n);
/*
 * Completions of endpoint @ep's operations (the caller holds the endpoint's
 * lock; these take the CQ's). Return: 0, -FI_ENOMEM (an error entry, or a
 * completion past a full ring, could not be stored).
 */
int braid_cq_write(struct braid_cq *cq, const struct braid_ep *ep, void *context, uint64_t flags,
		   size_t len, void *buf, uint64_t data, uint64_t tag, fi_addr_t src);
int braid_cq_write_err(struct braid_cq *cq, const struct braid_ep *ep, void *context,
		       uint64_t flags, size_t len, void *buf, uint64_t data, uint64_t tag,
		       size_t olen, int err, int prov_errno, fi_addr_t src);
/*
 * braid_cq_ep_closed() - endpoint @ep is being closed: its receive
 * completions still in @cq become FI_ECANCELED errors (BRAID_PERR_SHUTDOWN),
 * as if the receives had been pending: a layer above (ofi_rxm) reposts the
 * buffer of a completed receive to the endpoint it came from, which is gone,
 * while a canceled one it takes back. Send completions stay: their buffers
 * and credits come back to their owner with them.
 */
void braid_cq_ep_closed(struct braid_cq *cq, const struct braid_ep *ep);
/* Whether @cq holds a receive completion of @ep not read yet. */
bool braid_cq_holds_recv(struct braid_cq *cq, const struct braid_ep *ep);
/* braid_cntr.c */
int braid_cntr_open(struct fid_domain *domain, struct fi_cntr_attr *attr,
		    struct fid_cntr **cntr, void *context);
void braid_cntr_inc(struct braid_cntr *cntr);
void braid_cntr_inc_err(struct braid_cntr *cntr);
/* braid_hmem.c: device memory through the CUDA driver, loaded at run time */

/* braid_hmem_available() - the driver loaded, cuInit worked, a device exists (loaded once). */
bool braid_hmem_available(void);
/* whether a buffer of @desc[0..@count) is device memory (a region of FI_HMEM_CUDA) */
static inline bool braid_hmem_desc(void **desc, size_t count)
{
	size_t i;

	for (i = 0; desc && i < count; i++)
		if (desc[i] && ((const struct braid_mr *)desc[i])->iface != FI_HMEM_SYSTEM)
			return true;
	return false;
}
/* the record of an engine completion's @context, if it is one */
static inline struct braid_hmem_op *braid_hmem_op_of(const struct braid_hmem_ep *h, void *context)
{
	struct braid_hmem_op *op = context;

	return h->ops && op >= h->ops && op < h->ops + h->nops ? op : NULL;
}
/* a region's device side: checked and its shadow made (0 for host memory), and freed */
int braid_hmem_mr_open(struct braid_mr *mr, const struct fi_mr_attr *attr);
void braid_hmem_mr_close(struct braid_mr *mr);
/*
 * braid_hmem_probe() - for the calls that take no descriptor (fi_inject and
 * the like) on an endpoint with FI_HMEM: *@probe made a descriptor of the
 * device memory @buf is (returned), or NULL for host memory (at once
 * without FI_HMEM: no CUDA call).
 */
void *braid_hmem_probe(const struct braid_ep *ep, const void *buf, size_t len,
		       struct braid_mr *probe);
/* copy [@off, @off + @len) of a device region between it and its shadow */
int braid_hmem_mr_sync(struct braid_mr *mr, uint64_t off, size_t len, bool to_dev);
void braid_hmem_ep_construct(struct braid_hmem_ep *h, struct braid_ep_stats *stats, size_t nops);
void braid_hmem_ep_destruct(struct braid_hmem_ep *h);
/*
 * braid_hmem_op_take() - a record and staging for @req. *@err: 0,
 * -FI_EAGAIN (records or staging in use), -FI_EMSGSIZE (longer than the
 * staging), -FI_ENOMEM, -FI_EIO. The caller gives it back with
 * braid_hmem_op_give() unless the engine took it (braid_hmem_comp() then).
 */
struct braid_hmem_op *braid_hmem_op_take(struct braid_hmem_ep *h, const struct braid_hmem_req *req,
					 int *err);
void braid_hmem_op_give(struct braid_hmem_ep *h, struct braid_hmem_op *op);
/* stage all of @op's @in now (0 or -FI_EIO); or its first chunk, the rest as the engine cuts */
int braid_hmem_op_stage_all(struct braid_hmem_ep *h, struct braid_hmem_op *op);
int braid_hmem_op_stage_first(struct braid_hmem_ep *h, struct braid_hmem_op *op);
/* the engine's braid_rd_stage_fn (ctx: the braid_hmem_ep) */
uint64_t braid_hmem_stage(void *ctx, void *op_context, uint64_t off, uint64_t len);
/* finish @op's completion @c: results to the device, the application's context back */
void braid_hmem_comp(struct braid_hmem_ep *h, struct braid_hmem_op *op, struct braid_rd_comp *c);
/* the record in use for the application's @context, or NULL (fi_cancel) */
struct braid_hmem_op *braid_hmem_op_find(struct braid_hmem_ep *h, void *context);

/* braid_mr.c */
/* Count a remote access (@write, or a read) of the region of @key on the counters bound to it. */
void braid_mr_count(struct braid_domain *dom, uint64_t key, bool write);
/* braid_mr_check() @access besides FI_REMOTE_*: an atomic (it reads what it changes) */
#define BRAID_MR_ATOMIC		(1ULL << 62)
/* a peer wrote [@addr, @addr + @len) of region @key: a device region's shadow to the device */
int braid_mr_written(const struct braid_ep *ep, uint64_t key, uint64_t addr, size_t len);
int braid_mr_check(const struct braid_ep *ep, uint64_t key, uint64_t addr, size_t len,
		   uint64_t access, void **ptr);
int braid_mr_reg(struct fid *fid, const void *buf, size_t len, uint64_t access,
		 uint64_t offset, uint64_t requested_key, uint64_t flags,
		 struct fid_mr **mr, void *context);
int braid_mr_regv(struct fid *fid, const struct iovec *iov, size_t count,
		  uint64_t access, uint64_t offset, uint64_t requested_key,
		  uint64_t flags, struct fid_mr **mr, void *context);
int braid_mr_regattr(struct fid *fid, const struct fi_mr_attr *attr,
		     uint64_t flags, struct fid_mr **mr);
/* braid_ep.c */
/* fi_getname of a socket bound to @bound (a wildcard address reads as loopback). */
int braid_name_copy(const struct sockaddr_in *bound, void *addr, size_t *addrlen);
int braid_ep_open(struct fid_domain *domain, struct fi_info *info,
		  struct fid_ep **ep, void *context);
/* Drive one endpoint (the caller holds its lock, braid_ep_lock()). */
void braid_ep_progress(struct braid_ep *ep);
bool braid_fid_is_ep(const struct fid *fid);
/*
 * For the endpoint types' hooks (struct braid_ep_kind): open a wire bound to
 * @addr with what the type asks (0, or the wire's error), or take @wire (a
 * passive endpoint's), as the endpoint's (the one it had is closed);
 * max_msg_size follows the wire.
 */
int braid_ep_wire_open(struct braid_ep *ep, const struct sockaddr_in *addr);
void braid_ep_wire_adopt(struct braid_ep *ep, struct braid_wire *wire);
/*
 * fi_enable of a connectionless endpoint (DGRAM, RDM; its engine made): its
 * key's scratch, into its domain's progress, its shared receive context's
 * AV checked, live. 0, -FI_ENOMEM, -FI_EINVAL (another AV than the context's).
 */
int braid_ep_join(struct braid_ep *ep);
/* @ep is enabled: progress may drive it from now on (its lock and the domain's held) */
void braid_ep_live_locked(struct braid_ep *ep);
/* A size_t option's value out to fi_getopt's @optval (-FI_ETOOSMALL) or in from fi_setopt's (-FI_EINVAL). */
int braid_ep_opt_get_size(size_t value, void *optval, size_t *optlen);
int braid_ep_opt_set_size(size_t *value, const void *optval, size_t optlen);

/* braid_stat.c: counters out of the process (fi_open_ops, the file braid-stat reads) */
int braid_stat_ops_open(struct fid *fid, const char *name, uint64_t flags, void **ops,
			void *context);
void braid_stat_attach(struct braid_ep *ep);
void braid_stat_detach(struct braid_ep *ep);
void braid_stat_publish(struct braid_ep *ep, uint64_t now);
void braid_stat_cleanup(void);
/* braid_msg_progress.c: the queue pair's counters (NULL before it exists) */
const struct braid_rc_stats *braid_msg_rc_stats(struct braid_ep *ep);

/* braid_dgram.c: the DGRAM data path */
extern struct fi_ops_msg braid_dgram_msg_ops;
/* a DGRAM shared receive context's receives: post one (fi_recv on it or a bound endpoint), cancel one */
ssize_t braid_dgram_srx_post(struct braid_srx *srx, const struct iovec *iov, size_t count,
			     void *context, uint64_t flags);
int braid_dgram_srx_cancel(struct braid_srx *srx, void *context);

/* braid_ep.c */
void braid_ep_rx_arm(struct braid_ep *ep, bool armed);

/*
 * braid_epset_progress() - progress every enabled endpoint in @set that no
 * other thread is driving now (its lock is tried, not waited for: a thread
 * holding it is progressing it, or posting to it and flushing). The caller
 * holds no endpoint or CQ lock.
 */
void braid_epset_progress(struct braid_epset *set);

/* braid_progress.c: the domain's progress thread */
int braid_progress_start(struct braid_domain *dom);
void braid_progress_stop(struct braid_domain *dom);
void braid_progress_halt_all(void);
/* Milliseconds until the earliest engine timer of @set's endpoints (-1: none); no lock held. */
int braid_epset_timer_ms(struct braid_epset *set);
/**
 * braid_epset_arm() - the application is about to sleep on the wait fd
 * itself (fi_trywait): the endpoints' wires are asked to make it readable
 * for what local peers write (struct braid_wire_ops.arm). Return true when
 * something came already (fi_trywait says -FI_EAGAIN).
 */
bool braid_epset_arm(struct braid_epset *set);

/*
 * An alias of an RDM endpoint (fi_ep_alias, fi_endpoint(3)): the same
 * endpoint, with default flags of its own. Its data calls are the
 * endpoint's (braid_ep_of() finds the endpoint, braid_ep_tx_flags() the
 * flags); it must be closed before the endpoint.
 */
struct braid_ep_alias {
	struct fid_ep ep_fid;
	struct braid_ep *ep;
	uint64_t tx_op_flags, rx_op_flags;
};

extern struct fi_ops braid_alias_fi_ops;

static inline struct braid_ep *braid_ep_of(struct fid_ep *ep_fid)
{
	if (ep_fid->fid.ops == &braid_alias_fi_ops)
		return braid_container_of(ep_fid, struct braid_ep_alias, ep_fid)->ep;
	return braid_container_of(ep_fid, struct braid_ep, ep_fid);
}

/* the default flags of the data calls made through @ep_fid (an endpoint or an alias) */
static inline uint64_t braid_ep_tx_flags(struct fid_ep *ep_fid)
{
	if (ep_fid->fid.ops == &braid_alias_fi_ops)
		return braid_container_of(ep_fid, struct braid_ep_alias, ep_fid)->tx_op_flags;
	return braid_container_of(ep_fid, struct braid_ep, ep_fid)->tx_op_flags;
}

static inline uint64_t braid_ep_rx_flags(struct fid_ep *ep_fid)
{
	if (ep_fid->fid.ops == &braid_alias_fi_ops)
		return braid_container_of(ep_fid, struct braid_ep_alias, ep_fid)->rx_op_flags;
	return braid_container_of(ep_fid, struct braid_ep, ep_fid)->rx_op_flags;
}

/* braid_trigger.c: triggered transfers (fi_trigger(3)) of RDM endpoints */
ssize_t braid_trig_msg(struct braid_ep *ep, const struct iovec *iov, size_t count,
		       fi_addr_t dest, void *context, uint64_t tag, uint64_t data, uint64_t flags,
		       bool tagged);
ssize_t braid_trig_rma(struct braid_ep *ep, bool read, const struct iovec *iov, size_t count,
		       fi_addr_t peer, uint64_t addr, uint64_t key, uint64_t data,
		       uint64_t flags, void *context);
ssize_t braid_trig_atomic(struct braid_ep *ep, const struct fi_msg_atomic *msg,
			  const struct fi_ioc *cmp, size_t cmp_count, const struct fi_ioc *res,
			  size_t res_count, uint64_t flags, bool fetch);
/* Post the held transfers of @dom whose counters have reached their thresholds; no lock held. */
void braid_trig_pump(struct braid_domain *dom);
/* fi_cancel of a held transfer: 0 (an FI_ECANCELED completion), or -FI_ENOENT. */
int braid_trig_cancel(struct braid_ep *ep, void *context);
/* Drop @ep's held transfers (it is closing). */
void braid_trig_drop(struct braid_ep *ep);
/* braid_cntr.c: the counter behind @cntr_fid if it is braid's, else NULL */
struct braid_cntr *braid_cntr_of(struct fid_cntr *cntr_fid);

/* braid_rdm.c: the FI_EP_RDM endpoint over the RD engine (braid_rdm_progress.c: its progress) */
extern struct fi_ops_msg braid_rdm_msg_ops;
extern struct fi_ops_tagged braid_rdm_tagged_ops;
void braid_rdm_progress_locked(struct braid_ep *ep);
/* braid_rdm.c, for braid_rdm_rma.c: an fi_addr's engine peer key; what follows a post (flush or progress) */
int braid_rdm_peer(struct braid_ep *ep, fi_addr_t addr, uint64_t *key);
bool braid_rdm_nocomp(const struct braid_ep *ep, uint64_t flags, bool inject);
void braid_rdm_posted_locked(struct braid_ep *ep, int ret, uint64_t flags);
/* braid_rdm_rma.c: the most bytes of operands one atomic carries (fi_atomicvalid counts) */
#define BRAID_ATOMIC_MAX	256
/*
 * libfabric's enum fi_op and enum fi_datatype are core's enum braid_aop and
 * enum braid_adt number for number (the wire carries them: protocol.md
 * §4.7); values core does not know it refuses.
 */
_Static_assert((int)BRAID_AOP_MIN == FI_MIN && (int)BRAID_AOP_ATOMIC_READ == FI_ATOMIC_READ &&
	       (int)BRAID_AOP_CSWAP == FI_CSWAP && (int)BRAID_AOP_MSWAP == FI_MSWAP,
	       "enum braid_aop follows enum fi_op");
_Static_assert((int)BRAID_ADT_INT8 == FI_INT8 && (int)BRAID_ADT_FLOAT == FI_FLOAT &&
	       (int)BRAID_ADT_LONG_DOUBLE_COMPLEX == FI_LONG_DOUBLE_COMPLEX &&
	       (int)BRAID_ADT_UINT128 == FI_UINT128, "enum braid_adt follows enum fi_datatype");
static inline enum braid_aop braid_aop_of(enum fi_op op) { return (enum braid_aop)op; }
static inline enum braid_adt braid_adt_of(enum fi_datatype dt) { return (enum braid_adt)dt; }

int braid_atomic_query(enum fi_datatype dt, enum fi_op op, uint64_t flags, size_t *count);
int braid_rdm_cancel_locked(struct braid_ep *ep, void *context);
struct braid_hmem_op *braid_rdm_hmem_start(struct braid_ep *ep, const struct braid_hmem_req *hr,
					   bool inject, int *err);
/*
 * An RDM shared receive context's receives (fi_recv and fi_trecv on it or on
 * a bound endpoint; FI_PEEK and FI_CLAIM too): as an endpoint's, checked
 * against the context's capabilities, a directed one's source looked up in
 * its AV; cancel one. They take the context's lock.
 */
ssize_t braid_rdm_srx_post(struct braid_srx *srx, const struct iovec *iov, size_t count,
			   fi_addr_t src, void *context, uint64_t tag, uint64_t ignore,
			   uint64_t flags, bool tagged);
int braid_rdm_srx_cancel(struct braid_srx *srx, void *context);
/*
 * @ep (closing) leaves its shared receive context: no receive posted there
 * goes to it any more, and those its messages being received held complete
 * FI_ECANCELED on its CQ. The caller holds its lock.
 */
void braid_rdm_srx_leave_locked(struct braid_ep *ep);
/* braid_rdm_progress.c: the engine's packets to the wire (a burst of at most
 * BRAID_RDM_OUT_BURST a write); its completions to the CQs */
#define BRAID_RDM_OUT_BURST	64
void braid_rdm_flush(struct braid_ep *ep, uint64_t now);
void braid_rdm_reap(struct braid_ep *ep);
/* @req (@len bytes) was handed whole to a local peer: the engine counts it and its
 * completion goes to the CQ now, or behind the engine's own (braid_rd_local_sent) */
void braid_rdm_sent_whole(struct braid_ep *ep, const struct braid_rd_send *req, size_t len);
/* braid_progress.c: the process clock (CLOCK_MONOTONIC, ns) */
uint64_t braid_now_ns(void);

/* Interface enumeration shared by getinfo and the wire (braid_attr.c). */
struct braid_iface {
	char name[64];
	struct in_addr addr;
	struct in_addr mask;
	bool loopback;
	size_t mtu_payload;
};
int braid_iface_list(struct braid_iface **list, size_t *count);

#endif /* BRAID_H */
