/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_init.c: the provider entry point (fi_prov_ini) and every FI_BRAID_* setting. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <sodium.h>

#include "braid.h"

struct braid_config braid_cfg = {
	.wire = "udp",
	.iface = NULL,
	.paths = 16,
	.tx_size = 1024,
	.rx_size = 1024,
	.cq_size = 1024,
	.eq_size = 256,
	.sockbuf = 4 << 20,
	.gso = 1,
	.gro = 1,
	.lend_min = 16384,
	.shm = 1,
	.shm_peers = 64,
	.shm_ring = 1 << 19,
	.shm_eager = 8192,
	.hmem_staging = 64 << 20,
	.hmem_chunk = 256 << 10,
	.bundle = 1,
	.unexp_bytes = 16 << 20,
	.peer_timeout_ms = 5000,
	.max_peers = 65536,
	.idle_ms = 10000,
	.grant_kb = 256,
	.unsched_pkts = 1,
	.forget_ms = 60000,
	.rc_timeout = BRAID_RC_DEFAULT_TIMEOUT,
	.rc_retry = BRAID_RC_DEFAULT_RETRY,
	.rc_rnr_retry = BRAID_RC_DEFAULT_RNR_RETRY,
	.rc_min_rnr_timer = BRAID_RC_DEFAULT_MIN_RNR_TIMER,
	.progress_us = 1000,
	.yield_us = -1,
	.dpdk_mtu = 1500,
	.auth_mode = BRAID_AUTH_JOB,
	.stat = 1,
	.stat_dir = "/dev/shm",
	.stat_ms = 100,
};

/* an integer setting within [@lo, @hi]; out of range: a warning, the default stays */
static void braid_param_int(const char *name, int lo, int hi, int *dst)
{
	int val;

	if (fi_param_get_int(&braid_prov, name, &val))
		return;
	if (val >= lo && val <= hi) {
		*dst = val;
	} else {
		char env[64];
		size_t i;

		for (i = 0; name[i] && i < sizeof(env) - 1; i++)
			env[i] = (char)toupper((unsigned char)name[i]);
		env[i] = 0;
		BRAID_WARN(FI_LOG_CORE, "FI_BRAID_%s=%d is out of range %d..%d; using %d\n",
			   env, val, lo, hi, *dst);
	}
}

/*
 * libfabric asks its utility providers (ofi_rxm, ofi_rxd) before external
 * providers, and they layer over any core provider: a request for "braid"
 * (fabtests' -p braid, Open MPI's include list, both matching by prefix)
 * got "braid;ofi_rxm" and "braid;ofi_rxd" before braid's own RDM endpoint.
 * For core providers with a native RDM endpoint (efa, shm, psm3, sockets)
 * libfabric offers those layerings only when asked for by their full names;
 * it keeps that flag, disable_layering, in the provider's private context
 * (fi_provider.context as struct ofi_prov_context of its include/ofi.h:
 * {enum type; bool disable_logging; bool disable_layering;} from 1.17 on,
 * ints in 1.14 to 1.16) and sets it by name only. braid sets it itself
 * before registering, unless FI_BRAID_LAYERING=1.
 */
struct braid_ofi_prov_ctx {		/* libfabric 1.17 on */
	int type;
	bool disable_logging;
	bool disable_layering;
};

struct braid_ofi_prov_ctx_114 {		/* libfabric 1.14 to 1.16 */
	int type;
	int disable_logging;
	int disable_layering;
};

_Static_assert(sizeof(struct braid_ofi_prov_ctx_114) <= sizeof(struct fi_context),
	       "libfabric's provider context lives in fi_provider.context");

static void braid_layering_init(void)
{
	uint32_t v = fi_version();

	if (braid_cfg.layering)
		return;
	if (FI_VERSION_GE(v, FI_VERSION(1, 17)) && FI_MAJOR(v) < 3) {
		struct braid_ofi_prov_ctx c;

		memcpy(&c, &braid_prov.context, sizeof(c));
		c.disable_layering = true;
		memcpy(&braid_prov.context, &c, sizeof(c));
	} else if (FI_VERSION_GE(v, FI_VERSION(1, 14)) && FI_VERSION_LT(v, FI_VERSION(1, 17))) {
		struct braid_ofi_prov_ctx_114 c;

		memcpy(&c, &braid_prov.context, sizeof(c));
		c.disable_layering = 1;
		memcpy(&braid_prov.context, &c, sizeof(c));
	} else {
		BRAID_WARN(FI_LOG_CORE, "libfabric %u.%u: cannot keep ofi_rxm and ofi_rxd "
			   "from layering over braid; name \"braid\" exactly to get its own "
			   "endpoints\n", FI_MAJOR(v), FI_MINOR(v));
	}
}

/* libfabric unloads the provider (fi_fini at exit): no progress thread may run its code after */
static void braid_cleanup(void)
{
	braid_progress_halt_all();
	braid_stat_cleanup();		/* the counters' file, if an endpoint was left open */
	braid_wire_cleanup_all();	/* a DPDK port braid started, the sim */
}

struct fi_provider braid_prov = {
	.version = FI_VERSION(BRAID_MAJOR, BRAID_MINOR),
	.fi_version = BRAID_FI_VERSION,
	.name = BRAID_PROV_NAME,
	.getinfo = braid_getinfo,
	.fabric = braid_fabric_open,
	.cleanup = braid_cleanup,
};

/* Define every setting once (fi_info -e lists them), then read them once. */
static void braid_init_env(void)
{
	size_t sz;
	char *str;
	int val;

	fi_param_define(&braid_prov, "wire", FI_PARAM_STRING,
			"Wire that carries braid's packets: udp (kernel UDP sockets), "
			"dpdk (Ethernet frames through a DPDK port, kernel bypass; "
			"only when braid was built with libdpdk) or sim (every "
			"endpoint of the process on one simulated lossy fabric, "
			"FI_BRAID_SIM; for tests). (default: udp)");
	fi_param_define(&braid_prov, "sim", FI_PARAM_STRING,
			"sim wire: the simulated fabric, key=value,... of seed, paths "
			"(1 to 256), loss, dup, reorder (fractions of packets, 0 to "
			"1, per path), reorder_us, delay_us, jitter_us, rate_mbit. "
			"(default: seed=1,paths=4 and a perfect network)");
	fi_param_define(&braid_prov, "dpdk_args", FI_PARAM_STRING,
			"dpdk wire: the EAL's arguments, split at blanks, e.g. "
			"\"-a 0000:3b:00.0\" for a NIC, or \"--no-huge --no-shconf -m 512 "
			"--no-pci --vdev=net_memif0,role=server,socket=/run/x.sock\" "
			"for a memif port without hugepages. The EAL starts once per "
			"process, at the first fi_getinfo. (default: none)");
	fi_param_define(&braid_prov, "dpdk_port", FI_PARAM_INT,
			"dpdk wire: the DPDK port (ethdev id) to use. (default: 0)");
	fi_param_define(&braid_prov, "dpdk_ip", FI_PARAM_STRING,
			"dpdk wire: the port's IPv4 address and prefix, a.b.c.d/len. "
			"(default: the address of the kernel interface with the "
			"port's MAC, as for net_af_packet and net_af_xdp)");
	fi_param_define(&braid_prov, "dpdk_gw", FI_PARAM_STRING,
			"dpdk wire: the router (an address on the port's subnet) that "
			"frames to other subnets go to. (default: the shadowed kernel "
			"interface's default gateway; none: other subnets are unreachable)");
	fi_param_define(&braid_prov, "dpdk_mtu", FI_PARAM_INT,
			"dpdk wire: the port's IP MTU, 576 to 9000 (less if the port "
			"cannot). (default: %d)", braid_cfg.dpdk_mtu);
	fi_param_define(&braid_prov, "dpdk_neigh", FI_PARAM_STRING,
			"dpdk wire: neighbours known without ARP, "
			"ip=mac[,ip=mac...]; others are resolved with ARP, which the "
			"wire also answers for its own address. (default: none)");
	fi_param_define(&braid_prov, "iface", FI_PARAM_STRING,
			"Only offer this network interface (e.g. eth0, lo). "
			"(default: every interface that is up and has an IPv4 address)");
	fi_param_define(&braid_prov, "paths", FI_PARAM_INT,
			"Transmit paths per endpoint, 1 to %d: each is a UDP source "
			"port, the entropy ECMP hashes; endpoints with more than one "
			"path add as many spare ports, up to 32, for paths that turn "
			"sick or die. (default: %d)",
			BRAID_WIRE_MAX_PATHS, braid_cfg.paths);
	fi_param_define(&braid_prov, "tx_size", FI_PARAM_SIZE_T,
			"Transmit queue depth per endpoint. (default: %zu)", braid_cfg.tx_size);
	fi_param_define(&braid_prov, "rx_size", FI_PARAM_SIZE_T,
			"Receive queue depth (posted receives) per endpoint. (default: %zu)",
			braid_cfg.rx_size);
	fi_param_define(&braid_prov, "cq_size", FI_PARAM_SIZE_T,
			"Completion queue depth when fi_cq_attr.size is 0. (default: %zu)",
			braid_cfg.cq_size);
	fi_param_define(&braid_prov, "eq_size", FI_PARAM_SIZE_T,
			"Event queue depth when fi_eq_attr.size is 0. (default: %zu)",
			braid_cfg.eq_size);
	fi_param_define(&braid_prov, "sockbuf", FI_PARAM_INT,
			"Socket send/receive buffer bytes per UDP socket; 0 keeps the "
			"system default. (default: %d)", braid_cfg.sockbuf);
	fi_param_define(&braid_prov, "bundle", FI_PARAM_BOOL,
			"RDM: pack the packets one progress step makes for a peer, "
			"and a held-back ACK, into shared datagrams (bundles, "
			"protocol.md 4.8). 0: a datagram per packet, as before "
			"bundles (for comparisons and for peers to be measured "
			"datagram by datagram). (default: %d)", braid_cfg.bundle);
	fi_param_define(&braid_prov, "gso", FI_PARAM_BOOL,
			"RDM: send runs of full-size packets to a peer by one path in one "
			"UDP GSO write where the kernel has it (UDP_SEGMENT). (default: %d)",
			braid_cfg.gso);
	fi_param_define(&braid_prov, "gro", FI_PARAM_BOOL,
			"RDM: take runs of datagrams the host coalesced (UDP GRO: the "
			"NIC's GRO joins one sender's datagrams) in one receive where "
			"the kernel has it; each datagram is then handled as if it came "
			"alone. (default: %d)",
			braid_cfg.gro);

	fi_param_define(&braid_prov, "lend_min", FI_PARAM_SIZE_T,
			"RDM on the UDP wire: a datagram whose payload has this many "
			"bytes or more is sent without copying it (its pages are "
			"spliced into the socket; the receiver's copy is the only one: "
			"on loopback and jumbo frames). 0: every payload is copied "
			"into the kernel. (default: %zu)", braid_cfg.lend_min);
	fi_param_define(&braid_prov, "shm", FI_PARAM_BOOL,
			"RDM: endpoints on this host (in this network namespace, of this "
			"user) reach each other through shared memory instead of "
			"loopback UDP, under the same engine; 0: by UDP. (default: %d)",
			braid_cfg.shm);
	fi_param_define(&braid_prov, "shm_peers", FI_PARAM_INT,
			"RDM: local senders an endpoint takes through shared memory (its "
			"rings, 1..256); more send by UDP. (default: %d)",
			braid_cfg.shm_peers);
	fi_param_define(&braid_prov, "shm_ring", FI_PARAM_SIZE_T,
			"RDM: bytes of each shared-memory ring (rounded up to a power "
			"of two that holds two datagrams of the MTU); pages are taken "
			"as a sender fills them. (default: %zu)", braid_cfg.shm_ring);
	fi_param_define(&braid_prov, "shm_eager", FI_PARAM_SIZE_T,
			"RDM: messages of up to this many bytes go to a local peer whole "
			"through its ring, matched on arrival with no packets and no "
			"acknowledgements; 0: never. (default: %zu)", braid_cfg.shm_eager);
	fi_param_define(&braid_prov, "cuda_lib", FI_PARAM_STRING,
			"The CUDA driver library braid loads for device memory "
			"(FI_HMEM_CUDA): without it, or without a device, FI_HMEM is "
			"not offered. (default: libcuda.so.1)");
	fi_param_define(&braid_prov, "hmem_staging", FI_PARAM_SIZE_T,
			"RDM: bytes of pinned host memory an endpoint stages its device "
			"buffers' operations in (taken at its first one); a receive or "
			"read into device memory longer than this, or a send whose ring "
			"is, fails FI_EMSGSIZE. (default: %zu)",
			braid_cfg.hmem_staging);
	fi_param_define(&braid_prov, "hmem_chunk", FI_PARAM_SIZE_T,
			"RDM: bytes of a device buffer copied at once (4096 or more): a "
			"message is staged a chunk at a time while its packets leave. "
			"(default: %zu)", braid_cfg.hmem_chunk);
	fi_param_define(&braid_prov, "unexp_bytes", FI_PARAM_SIZE_T,
			"RDM, and MSG on a tagged connection: bytes per endpoint for "
			"data that arrives before a receive matches it; beyond it the "
			"sender is held back (flow control; MSG: RNR). (default: %zu)",
			braid_cfg.unexp_bytes);
	fi_param_define(&braid_prov, "peer_timeout_ms", FI_PARAM_INT,
			"RDM: a peer that answers nothing for this long (or 16 "
			"retransmission timeouts of its slowest path, if longer) "
			"fails its pending operations with FI_EHOSTUNREACH, receives "
			"of messages it had begun to send included. MSG: how long "
			"fi_connect and fi_accept wait for the other side before an "
			"FI_ETIMEDOUT error event. (default: %d)",
			braid_cfg.peer_timeout_ms);
	fi_param_define(&braid_prov, "grant_kb", FI_PARAM_INT,
			"RDM: KiB the peers sending to one endpoint may have in "
			"flight to it together: while several have more to send, "
			"each is granted an equal share in the endpoint's "
			"acknowledgements (a peer sending alone is not limited), so "
			"that many senders at once (an incast) do not overflow its "
			"switch port. About a bandwidth-delay product and a small "
			"queue. 0: no grants. (default: %d)", braid_cfg.grant_kb);
	fi_param_define(&braid_prov, "unsched_pkts", FI_PARAM_INT,
			"RDM: packets a peer's traffic sends before the peer's first "
			"acknowledgement (a first contact, or after idling a "
			"retransmission timeout): what many senders starting at "
			"once put into one receiver's port before its grants reach "
			"them. 0: no such limit (the initial congestion window, 8 "
			"packets). (default: %d)", braid_cfg.unsched_pkts);
	fi_param_define(&braid_prov, "max_flows", FI_PARAM_INT,
			"RDM: peers with traffic in flight (sends, receives, "
			"acknowledgements owed) at once per endpoint; each holds "
			"its window's state, about 24 KiB with the default window and "
			"16 paths, taken when first used and kept for reuse. Sends "
			"to more return -FI_EAGAIN until some complete or fail. "
			"Packets of peers not proven yet hold at most 128 of them. "
			"0: as many as FI_BRAID_MAX_PEERS (1048576 without a peer "
			"limit). (default: %d)", braid_cfg.max_flows);
	fi_param_define(&braid_prov, "idle_ms", FI_PARAM_INT,
			"RDM: a peer's traffic state (its window, RTTs: about 24 "
			"KiB) with nothing in flight either way for this long is "
			"freed, and the memory of what was freed (and of unexpected "
			"data's staging) given back to the system; what the peer's "
			"sequence numbers need (a few hundred bytes) stays. 0: kept "
			"until another peer needs the room. (default: %d)",
			braid_cfg.idle_ms);
	fi_param_define(&braid_prov, "forget_ms", FI_PARAM_INT,
			"RDM: a peer idle for FI_BRAID_IDLE_MS is kept as a 32-byte "
			"record of the pair's numbering; once it has rested this "
			"long the peer is asked to forget the pair (both then start "
			"afresh when they meet again, at the cost of one challenge), "
			"and the record goes when it agrees, or after it failed to "
			"answer two asks this far apart. 0: records are kept while "
			"the endpoint lives. (default: %d)", braid_cfg.forget_ms);
	fi_param_define(&braid_prov, "max_peers", FI_PARAM_INT,
			"RDM: peers one endpoint keeps state for at once (about 300 "
			"bytes each). A first contact beyond it evicts the state of "
			"the unproven peer (one that has not yet answered a "
			"challenge) least recently heard from with nothing pending, "
			"else is dropped; proven peers are never evicted. 0: no "
			"limit. (default: %d)", braid_cfg.max_peers);
	fi_param_define(&braid_prov, "rc_port", FI_PARAM_INT,
			"MSG (RoCEv2 RC): the UDP port RoCEv2 packets are received on; "
			"0 means 4791, the RoCEv2 port, when it is free on the "
			"address, else any free port (peers learn it in the "
			"handshake). (default: %d)", braid_cfg.rc_port);
	fi_param_define(&braid_prov, "rc_timeout", FI_PARAM_INT,
			"MSG (RoCEv2 RC): the QP's local ACK timeout as an IBTA code, "
			"0 to 31: 4.096 us * 2^code (14: 67 ms, as perftest and "
			"rdma-core's examples set; 18: 1.07 s, what rdma_cm gives "
			"libfabric's verbs provider on a ConnectX NIC); 0 never "
			"times out. (default: %d)",
			braid_cfg.rc_timeout);
	fi_param_define(&braid_prov, "rc_retry", FI_PARAM_INT,
			"MSG (RoCEv2 RC): retransmissions (local ACK timeouts or PSN "
			"sequence NAKs) in a row without forward progress before the "
			"QP fails its work with FI_ETIMEDOUT, 0 to 7. (default: %d)",
			braid_cfg.rc_retry);
	fi_param_define(&braid_prov, "rc_rnr_retry", FI_PARAM_INT,
			"MSG (RoCEv2 RC): retries after receiver-not-ready NAKs in a "
			"row before the QP fails with FI_ENORX, 0 to 7; 7 retries "
			"forever. (default: %d)", braid_cfg.rc_rnr_retry);
	fi_param_define(&braid_prov, "rc_min_rnr_timer", FI_PARAM_INT,
			"MSG (RoCEv2 RC): the RNR NAK timer code (IBTA Table 45, 0 to "
			"31; 12: 0.64 ms, 0: 655 ms) a peer is asked to wait when no "
			"receive is posted, like FI_VERBS_MIN_RNR_TIMER. (default: %d)",
			braid_cfg.rc_min_rnr_timer);
	fi_param_define(&braid_prov, "progress_us", FI_PARAM_INT,
			"The domain's progress thread, which keeps braid's reliability "
			"alive while the application does not call in (ACKs, "
			"retransmissions, RC responses, queued sends), as a NIC does: "
			"once the application has made no progress call (a CQ or "
			"counter read) for this many microseconds, it drives the "
			"endpoint every this many microseconds until the application "
			"calls in again (with nothing to do it backs off to 64 times "
			"this); with it, FI_PROGRESS_AUTO data progress is "
			"offered. 0: no thread (progress only in the application's "
			"calls). 50 to 1000000. (default: %d)", braid_cfg.progress_us);
	fi_param_define(&braid_prov, "yield_us", FI_PARAM_INT,
			"A thread reading a CQ or counter whose endpoints have "
			"received nothing for this many microseconds yields its core "
			"(sched_yield) after each read: a busy-polling sender that "
			"waits for acknowledgements lets a receiver sharing its core "
			"run, instead of spinning out the scheduler's slice (a few ms "
			"per round trip); alone on its core the call returns at once. "
			"-1 (auto): 50 while the host has more runnable threads "
			"than cores (/proc/loadavg, looked at every 10 ms), else "
			"never: yielding costs throughput where cores are not "
			"shared. 0: never. -1 to 1000000. (default: %d)", braid_cfg.yield_us);
	fi_param_define(&braid_prov, "auth", FI_PARAM_STRING,
			"Endpoints with an authorization key (fi_domain(3) and "
			"fi_endpoint(3) auth_key, 1 to %d bytes) send every datagram "
			"with a tag only holders of the key can make (protocol.md "
			"2.4); what it covers: tag (every header: other jobs and "
			"off-path senders without the key are kept out) or mac "
			"(every byte, payloads too: nothing on the way can change "
			"one either). Both ends must use the same. (default: tag)",
			BRAID_AUTH_KEY_MAX);
	fi_param_define(&braid_prov, "stat", FI_PARAM_BOOL,
			"Publish every endpoint's counters (fi_braid(7) COUNTERS) in a "
			"small shared file per process, braid-<pid>.stat in "
			"FI_BRAID_STAT_DIR, made at the first endpoint and removed at "
			"the last close, for braid-stat(1) to show; 0: off "
			"(fi_open_ops still reads them). (default: %d)", braid_cfg.stat);
	fi_param_define(&braid_prov, "stat_dir", FI_PARAM_STRING,
			"The directory of the published counter files. (default: %s)",
			braid_cfg.stat_dir);
	fi_param_define(&braid_prov, "stat_ms", FI_PARAM_INT,
			"How often an endpoint publishes its counters, in milliseconds, "
			"while it is progressed (by the application's calls or the "
			"progress thread). 10 to 60000. (default: %d)", braid_cfg.stat_ms);
	fi_param_define(&braid_prov, "layering", FI_PARAM_BOOL,
			"Let libfabric's utility providers layer over braid for "
			"requests that do not name them, as for other core providers: "
			"\"braid;ofi_rxm\" (RDM over braid's RoCEv2 RC) and "
			"\"braid;ofi_rxd\" are then listed before braid's own RDM "
			"endpoint, and an application that cannot name a provider "
			"exactly (Open MPI's mtl_ofi_provider_include) can choose "
			"them. Off, they are offered only to requests that name them "
			"in full, and \"braid\" gives braid's own endpoints. "
			"(default: %d)", braid_cfg.layering);

	if (!fi_param_get_str(&braid_prov, "wire", &str) && str && *str)
		braid_cfg.wire = str;
	if (!fi_param_get_str(&braid_prov, "dpdk_args", &str) && str)
		braid_cfg.dpdk_args = str;
	if (!fi_param_get_str(&braid_prov, "dpdk_ip", &str) && str && *str)
		braid_cfg.dpdk_ip = str;
	if (!fi_param_get_str(&braid_prov, "sim", &str) && str && *str)
		braid_cfg.sim = str;
	if (!fi_param_get_str(&braid_prov, "dpdk_gw", &str) && str && *str)
		braid_cfg.dpdk_gw = str;
	if (!fi_param_get_str(&braid_prov, "dpdk_neigh", &str) && str && *str)
		braid_cfg.dpdk_neigh = str;
	braid_param_int("dpdk_port", 0, 65535, &braid_cfg.dpdk_port);
	braid_param_int("dpdk_mtu", 576, 9000, &braid_cfg.dpdk_mtu);
	if (!fi_param_get_str(&braid_prov, "iface", &str) && str && *str)
		braid_cfg.iface = str;
	braid_param_int("paths", 1, BRAID_WIRE_MAX_PATHS, &braid_cfg.paths);
	if (!fi_param_get_size_t(&braid_prov, "tx_size", &sz) && sz)
		braid_cfg.tx_size = sz;
	if (!fi_param_get_size_t(&braid_prov, "rx_size", &sz) && sz)
		braid_cfg.rx_size = sz;
	if (!fi_param_get_size_t(&braid_prov, "cq_size", &sz) && sz)
		braid_cfg.cq_size = sz;
	if (!fi_param_get_size_t(&braid_prov, "eq_size", &sz) && sz)
		braid_cfg.eq_size = sz;
	if (!fi_param_get_int(&braid_prov, "sockbuf", &val) && val >= 0)
		braid_cfg.sockbuf = val;
	if (!fi_param_get_bool(&braid_prov, "bundle", &val))
		braid_cfg.bundle = !!val;
	if (!fi_param_get_bool(&braid_prov, "gso", &val))
		braid_cfg.gso = !!val;
	if (!fi_param_get_bool(&braid_prov, "gro", &val))
		braid_cfg.gro = !!val;
	if (!fi_param_get_size_t(&braid_prov, "lend_min", &sz))
		braid_cfg.lend_min = sz;
	if (!fi_param_get_bool(&braid_prov, "shm", &val))
		braid_cfg.shm = !!val;
	braid_param_int("shm_peers", 1, 256, &braid_cfg.shm_peers);
	if (!fi_param_get_size_t(&braid_prov, "shm_ring", &sz) && sz <= (1u << 30))
		braid_cfg.shm_ring = sz;
	if (!fi_param_get_size_t(&braid_prov, "shm_eager", &sz) && sz <= 65535)
		braid_cfg.shm_eager = sz;
	if (!fi_param_get_str(&braid_prov, "cuda_lib", &str) && str && *str)
		braid_cfg.cuda_lib = str;
	if (!fi_param_get_size_t(&braid_prov, "hmem_staging", &sz) && sz)
		braid_cfg.hmem_staging = sz;
	if (!fi_param_get_size_t(&braid_prov, "hmem_chunk", &sz) && sz >= 4096)
		braid_cfg.hmem_chunk = sz;
	if (!fi_param_get_size_t(&braid_prov, "unexp_bytes", &sz) && sz)
		braid_cfg.unexp_bytes = sz;
	if (!fi_param_get_int(&braid_prov, "peer_timeout_ms", &val) && val > 0)
		braid_cfg.peer_timeout_ms = val;
	if (!fi_param_get_int(&braid_prov, "rc_port", &val) && val >= 0 && val < 65536)
		braid_cfg.rc_port = val;
	braid_param_int("max_peers", 0, INT32_MAX, &braid_cfg.max_peers);
	braid_param_int("max_flows", 0, INT32_MAX, &braid_cfg.max_flows);
	braid_param_int("grant_kb", 0, 1 << 20, &braid_cfg.grant_kb);
	braid_param_int("unsched_pkts", 0, 256, &braid_cfg.unsched_pkts);
	braid_param_int("idle_ms", 0, INT32_MAX, &braid_cfg.idle_ms);
	braid_param_int("forget_ms", 0, INT32_MAX, &braid_cfg.forget_ms);
	braid_param_int("rc_timeout", 0, 31, &braid_cfg.rc_timeout);
	braid_param_int("rc_retry", 0, 7, &braid_cfg.rc_retry);
	braid_param_int("rc_rnr_retry", 0, 7, &braid_cfg.rc_rnr_retry);
	braid_param_int("rc_min_rnr_timer", 0, 31, &braid_cfg.rc_min_rnr_timer);
	if (!fi_param_get_int(&braid_prov, "progress_us", &val) && val == 0)
		braid_cfg.progress_us = 0;
	else
		braid_param_int("progress_us", 50, 1000000, &braid_cfg.progress_us);
	braid_param_int("yield_us", -1, 1000000, &braid_cfg.yield_us);
	if (!fi_param_get_bool(&braid_prov, "layering", &val))
		braid_cfg.layering = !!val;
	if (!fi_param_get_bool(&braid_prov, "stat", &val))
		braid_cfg.stat = !!val;
	if (!fi_param_get_str(&braid_prov, "stat_dir", &str) && str && *str)
		braid_cfg.stat_dir = str;
	braid_param_int("stat_ms", 10, 60000, &braid_cfg.stat_ms);
	if (!fi_param_get_str(&braid_prov, "auth", &str) && str && *str) {
		if (!strcmp(str, "mac"))
			braid_cfg.auth_mode = BRAID_AUTH_MAC;
		else if (strcmp(str, "tag"))
			BRAID_WARN(FI_LOG_CORE, "FI_BRAID_AUTH=%s: neither tag nor mac; using tag\n", str);
	}
}

FI_EXT_INI
{
	uint32_t lib = fi_version();

	/*
	 * Built against newer headers than the library that loads it, braid
	 * would fill structures (fi_info's attributes, CQ error entries) past
	 * the end of what that library allocates: it does not register.
	 */
	if (FI_VERSION_LT(lib, BRAID_FI_VERSION)) {
		BRAID_WARN(FI_LOG_CORE, "braid was built against libfabric %u.%u's headers and "
			   "cannot run with libfabric %u.%u: build it against this libfabric "
			   "(fi_braid(7), SUPPORTED VERSIONS)\n", FI_MAJOR(BRAID_FI_VERSION),
			   FI_MINOR(BRAID_FI_VERSION), FI_MAJOR(lib), FI_MINOR(lib));
		return NULL;
	}
	braid_init_env();
	braid_layering_init();
	/* libsodium's one-time start (CPU features, its random source): keys need it */
	if (sodium_init() < 0) {
		BRAID_WARN(FI_LOG_CORE, "libsodium did not start: authorization keys are refused\n");
		braid_cfg.auth_mode = BRAID_AUTH_NONE;
	}
	if (!braid_wire_find(braid_cfg.wire)) {
		BRAID_WARN(FI_LOG_CORE, "FI_BRAID_WIRE=%s: no such wire; using udp\n",
			   braid_cfg.wire);
		braid_cfg.wire = "udp";
	}
	BRAID_INFO(FI_LOG_CORE, "braid %d.%d: wire %s, %d paths per endpoint\n",
		   BRAID_MAJOR, BRAID_MINOR, braid_cfg.wire, braid_cfg.paths);
	return &braid_prov;
}
