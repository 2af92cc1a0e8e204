/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * braid_dpdk.c: the DPDK wire: braid's datagrams as Ethernet/IPv4/UDP frames
 * that braid builds itself, moved by a DPDK port (a real NIC's PMD, net_memif
 * between processes, net_af_packet or net_af_xdp on a kernel interface)
 * without a system call per datagram.
 *
 * One port serves every endpoint of the process. Each wire endpoint owns a
 * block of UDP ports on the port's IPv4 address: its home port and one per
 * route selector (the selector's port is the UDP source port its packets
 * carry, the entropy ECMP hashes; replies come back to it). Whichever
 * endpoint polls takes a burst from the port's receive queue and hands each
 * frame to the endpoint that owns its destination port (a ring each), so
 * endpoints in different threads share the port without a thread of braid's
 * own. The wire answers ARP for its address and resolves its peers' MACs
 * with ARP (or FI_BRAID_DPDK_NEIGH); it has no wait fd: it is polled.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netpacket/packet.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rte_arp.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_ether.h>
#include <rte_ip.h>
#include <rte_mbuf.h>
#include <rte_ring.h>
#include <rte_udp.h>

#include <rdma/fi_errno.h>

#include "braid/braid_wire.h"
#include "braid.h"
#include "braid_iov.h"

#define DPDK_BURST		32
#define DPDK_RING		2048	/* frames waiting for one endpoint */
#define DPDK_QUEUE		1024	/* descriptors per port queue */
#define DPDK_POOL		16383	/* mbufs in the process */
#define DPDK_ARP_SLOTS		256	/* neighbours cached (open addressing) */
#define DPDK_ARP_HELD		16	/* frames held per neighbour while ARP resolves */
#define DPDK_ARP_RETRY_NS	200000000ull	/* an unanswered ARP request is sent again after */
#define DPDK_HDRS		(RTE_ETHER_HDR_LEN + sizeof(struct rte_ipv4_hdr) + \
				 sizeof(struct rte_udp_hdr))

struct dpdk_neigh {
	uint32_t ip;		/* network order; 0: free slot */
	bool known;
	struct rte_ether_addr mac;
	uint64_t asked_ns;
	int held;
	struct rte_mbuf *hold[DPDK_ARP_HELD];
};

/* The process's DPDK port, started once (dpdk_start). */
static struct {
	pthread_once_t once;
	int err;		/* 0, or why the port could not start (negative FI_E*) */
	uint16_t port;
	char name[RTE_ETH_NAME_MAX_LEN];
	struct rte_mempool *pool;
	struct rte_ether_addr mac;
	uint32_t ip, mask;	/* network order */
	uint32_t gw;		/* the router off-subnet frames go to (network order), or 0 */
	uint16_t ip_mtu;
	uint64_t tx_offload;	/* RTE_ETH_TX_OFFLOAD_* checksums the port computes */
	/* the EAL's arguments, kept for the life of the EAL (it may keep pointers into them) */
	char **argv, **args;
	bool own_eal;		/* braid started the EAL (not the application) */
	bool port_started;
	int open_wires;
	/* @lock: the tables; @rx: the receive queue; @tx: the transmit queue and @neigh */
	pthread_mutex_t lock;
	pthread_spinlock_t rx, tx;
	struct braid_wire_ports ports;	/* changed under @lock and @rx, read under @rx */
	unsigned ring_id;
	struct dpdk_neigh neigh[DPDK_ARP_SLOTS];
	/* frames dropped before an endpoint saw them, by reason */
	uint64_t rx_not_ours, rx_bad, rx_ring_full, tx_no_link, tx_arp_drop;
} dp = { .once = PTHREAD_ONCE_INIT, .lock = PTHREAD_MUTEX_INITIALIZER };

/**
 * struct braid_dpdk - one wire endpoint on the process's port.
 */
struct braid_dpdk {
	/** @wire: the public part; first. */
	struct braid_wire wire;
	/** @ports: local UDP port (host order) of each route selector; [0] is home. */
	uint16_t ports[BRAID_WIRE_MAX_PATHS + BRAID_WIRE_SPARE_MAX];
	/** @ring: frames the port's poller handed to this endpoint. */
	struct rte_ring *ring;
};

const struct braid_wire_ops braid_dpdk_wire_ops;

/* ---- starting the port ---- */

/* Split FI_BRAID_DPDK_ARGS on blanks into argv (argv[0] "braid"); NULL-terminated. */
static char **dpdk_argv(const char *args, int *argc)
{
	char *copy = strdup(args ? args : ""), *tok, *save = NULL;
	char **argv = calloc(strlen(copy) / 2 + 3, sizeof(*argv));
	int n = 0;

	if (!copy || !argv) {
		free(copy);
		free(argv);
		return NULL;
	}
	argv[n++] = strdup("braid");
	for (tok = strtok_r(copy, " \t\n", &save); tok; tok = strtok_r(NULL, " \t\n", &save))
		argv[n++] = strdup(tok);
	free(copy);
	*argc = n;
	return argv;
}

/* "a.b.c.d/len" into @ip and @mask (network order). */
static int dpdk_parse_cidr(const char *s, uint32_t *ip, uint32_t *mask)
{
	char buf[32], *slash;
	struct in_addr a;
	long len = 24;

	snprintf(buf, sizeof(buf), "%s", s);
	slash = strchr(buf, '/');
	if (slash) {
		char *end;

		*slash = '\0';
		len = strtol(slash + 1, &end, 10);
		if (*end || len < 1 || len > 32)
			return -FI_EINVAL;
	}
	if (inet_pton(AF_INET, buf, &a) != 1)
		return -FI_EINVAL;
	*ip = a.s_addr;
	*mask = htonl(len == 32 ? 0xffffffffu : ~(0xffffffffu >> len));
	return 0;
}

/* The default gateway of kernel interface @ifname (/proc/net/route), or 0. */
static uint32_t dpdk_kernel_gw(const char *ifname)
{
	char line[256], name[IF_NAMESIZE + 1];
	unsigned long dst, gw, flags;
	uint32_t found = 0;
	FILE *f = fopen("/proc/net/route", "r");

	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%16s %lx %lx %lx", name, &dst, &gw, &flags) == 4 &&
		    !strcmp(name, ifname) && dst == 0 && (flags & 0x2 /* RTF_GATEWAY */))
			found = (uint32_t)gw;	/* printed as the kernel holds it: network order */
	}
	fclose(f);
	return found;
}

/*
 * The kernel interface this port shadows (the same MAC: net_af_packet,
 * net_af_xdp): its address into @ip and @mask, its default gateway into @gw,
 * its name into @ifname (IF_NAMESIZE bytes).
 */
static int dpdk_shadowed_ip(uint32_t *ip, uint32_t *mask, uint32_t *gw, char *ifname)
{
	struct ifaddrs *list, *a, *b;
	int ret = -FI_ENODATA;

	if (getifaddrs(&list))
		return -FI_ENODATA;
	for (a = list; a && ret; a = a->ifa_next) {
		struct sockaddr_ll *ll = (struct sockaddr_ll *)a->ifa_addr;

		if (!ll || ll->sll_family != AF_PACKET || ll->sll_halen != RTE_ETHER_ADDR_LEN ||
		    memcmp(ll->sll_addr, dp.mac.addr_bytes, RTE_ETHER_ADDR_LEN))
			continue;
		for (b = list; b; b = b->ifa_next) {
			if (b->ifa_addr && b->ifa_addr->sa_family == AF_INET &&
			    !strcmp(a->ifa_name, b->ifa_name) && b->ifa_netmask) {
				*ip = ((struct sockaddr_in *)b->ifa_addr)->sin_addr.s_addr;
				*mask = ((struct sockaddr_in *)b->ifa_netmask)->sin_addr.s_addr;
				*gw = dpdk_kernel_gw(a->ifa_name);
				snprintf(ifname, IF_NAMESIZE, "%s", a->ifa_name);
				ret = 0;
				break;
			}
		}
	}
	freeifaddrs(list);
	return ret;
}

static struct dpdk_neigh *dpdk_neigh_slot(uint32_t ip, bool add);

/* The complete entries of the kernel's ARP table for interface @ifname (/proc/net/arp). */
static void dpdk_kernel_neigh(const char *ifname)
{
	char line[256], ip[32], mac[32], dev[IF_NAMESIZE + 1];
	unsigned hw, flags;
	FILE *f = fopen("/proc/net/arp", "r");

	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		struct rte_ether_addr ea;
		struct dpdk_neigh *n;
		struct in_addr a;

		if (sscanf(line, "%31s 0x%x 0x%x %31s %*s %16s", ip, &hw, &flags, mac, dev) != 5 ||
		    strcmp(dev, ifname) || !(flags & 0x2 /* ATF_COM */) ||
		    inet_pton(AF_INET, ip, &a) != 1 || rte_ether_unformat_addr(mac, &ea))
			continue;
		n = dpdk_neigh_slot(a.s_addr, true);
		if (n) {
			n->mac = ea;
			n->known = true;
		}
	}
	fclose(f);
}

/* FI_BRAID_DPDK_NEIGH: "ip=mac,ip=mac": neighbours known without ARP. */
static int dpdk_static_neigh(const char *s)
{
	char *copy, *tok, *save = NULL;
	int ret = 0;

	if (!s || !*s)
		return 0;
	copy = strdup(s);
	if (!copy)
		return -FI_ENOMEM;
	for (tok = strtok_r(copy, ", ", &save); tok && !ret; tok = strtok_r(NULL, ", ", &save)) {
		char *eq = strchr(tok, '=');
		struct rte_ether_addr mac;
		struct in_addr a;
		struct dpdk_neigh *n;

		if (!eq) {
			ret = -FI_EINVAL;
			break;
		}
		*eq = '\0';
		if (inet_pton(AF_INET, tok, &a) != 1 || rte_ether_unformat_addr(eq + 1, &mac)) {
			ret = -FI_EINVAL;
			break;
		}
		n = dpdk_neigh_slot(a.s_addr, true);
		if (!n) {
			ret = -FI_ENOMEM;
			break;
		}
		n->mac = mac;
		n->known = true;
	}
	free(copy);
	return ret;
}

static void dpdk_start(void)
{
	struct rte_eth_conf conf;
	struct rte_eth_dev_info info;
	cpu_set_t cpus;
	bool have_cpus;
	char **argv, shadow[IF_NAMESIZE] = "";
	int argc = 0, ret;
	unsigned room;

	pthread_spin_init(&dp.rx, PTHREAD_PROCESS_PRIVATE);
	pthread_spin_init(&dp.tx, PTHREAD_PROCESS_PRIVATE);
	argv = dpdk_argv(braid_cfg.dpdk_args, &argc);
	dp.args = argv ? malloc(((size_t)argc + 1) * sizeof(*argv)) : NULL;
	if (!dp.args) {
		dp.err = -FI_ENOMEM;
		return;
	}
	/* rte_eal_init reorders argv: keep every string reachable through a copy of the list */
	memcpy(dp.args, argv, ((size_t)argc + 1) * sizeof(*argv));
	dp.argv = argv;
	/* the EAL pins the calling thread to its main lcore: give the application its CPUs back */
	have_cpus = !pthread_getaffinity_np(pthread_self(), sizeof(cpus), &cpus);
	ret = rte_eal_init(argc, argv);	/* keeps argv */
	if (have_cpus)
		(void)pthread_setaffinity_np(pthread_self(), sizeof(cpus), &cpus);
	dp.own_eal = ret >= 0;
	if (ret < 0 && rte_errno != EALREADY) {
		BRAID_WARN(FI_LOG_CORE, "dpdk wire: the EAL did not start (FI_BRAID_DPDK_ARGS=\"%s\"): %s\n",
			   braid_cfg.dpdk_args ? braid_cfg.dpdk_args : "", rte_strerror(rte_errno));
		dp.err = -FI_ENODEV;
		return;
	}
	dp.port = (uint16_t)braid_cfg.dpdk_port;
	if (!rte_eth_dev_is_valid_port(dp.port) || rte_eth_dev_info_get(dp.port, &info)) {
		BRAID_WARN(FI_LOG_CORE, "dpdk wire: no DPDK port %u (%u ports; give the EAL a device, "
			   "e.g. --vdev=net_memif0 or -a <PCI address>)\n", dp.port,
			   (unsigned)rte_eth_dev_count_avail());
		dp.err = -FI_ENODEV;
		return;
	}
	rte_eth_dev_get_name_by_port(dp.port, dp.name);
	dp.ip_mtu = (uint16_t)braid_cfg.dpdk_mtu;
	{
		/* what the port can receive in a frame (memif: 1500 whatever its max_mtu says) */
		uint32_t cap = info.max_rx_pktlen > RTE_ETHER_HDR_LEN + RTE_ETHER_CRC_LEN ?
			       info.max_rx_pktlen - RTE_ETHER_HDR_LEN - RTE_ETHER_CRC_LEN : 0;

		if (info.max_mtu && info.max_mtu < cap)
			cap = info.max_mtu;
		if (cap && dp.ip_mtu > cap) {
			BRAID_WARN(FI_LOG_CORE, "dpdk wire: port %s takes an MTU of %u at most, not %u\n",
				   dp.name, cap, dp.ip_mtu);
			dp.ip_mtu = (uint16_t)cap;
		}
	}
	/* one segment per frame: the buffers fit the MTU, and at least DPDK's default
	 * (net_af_packet wants a whole ring frame, 2 KiB by default, in one) */
	room = RTE_PKTMBUF_HEADROOM + RTE_ETHER_HDR_LEN + dp.ip_mtu + RTE_ETHER_CRC_LEN;
	if (room < RTE_MBUF_DEFAULT_BUF_SIZE)
		room = RTE_MBUF_DEFAULT_BUF_SIZE;
	dp.pool = rte_pktmbuf_pool_create("braid_pool", DPDK_POOL, 256, 0, (uint16_t)room,
					  (int)rte_eth_dev_socket_id(dp.port) < 0 ? SOCKET_ID_ANY :
					  rte_eth_dev_socket_id(dp.port));
	if (!dp.pool) {
		BRAID_WARN(FI_LOG_CORE, "dpdk wire: no memory for the buffer pool: %s (give the EAL -m or hugepages)\n",
			   rte_strerror(rte_errno));
		dp.err = -FI_ENOMEM;
		return;
	}
	memset(&conf, 0, sizeof(conf));
	dp.tx_offload = info.tx_offload_capa &
			(RTE_ETH_TX_OFFLOAD_IPV4_CKSUM | RTE_ETH_TX_OFFLOAD_UDP_CKSUM);
	if (dp.tx_offload != (RTE_ETH_TX_OFFLOAD_IPV4_CKSUM | RTE_ETH_TX_OFFLOAD_UDP_CKSUM))
		dp.tx_offload = 0;	/* both, or braid computes both */
	conf.txmode.offloads = dp.tx_offload;
	conf.rxmode.mtu = dp.ip_mtu;
	if ((ret = rte_eth_dev_configure(dp.port, 1, 1, &conf)) ||
	    (ret = rte_eth_rx_queue_setup(dp.port, 0, DPDK_QUEUE, rte_eth_dev_socket_id(dp.port),
					  NULL, dp.pool)) ||
	    (ret = rte_eth_tx_queue_setup(dp.port, 0, DPDK_QUEUE, rte_eth_dev_socket_id(dp.port),
					  NULL)) ||
	    (ret = rte_eth_dev_start(dp.port))) {
		BRAID_WARN(FI_LOG_CORE, "dpdk wire: port %u (%s) did not start: %s\n", dp.port,
			   dp.name, rte_strerror(-ret));
		dp.err = -FI_ENODEV;
		return;
	}
	dp.port_started = true;
	rte_eth_macaddr_get(dp.port, &dp.mac);
	if (braid_cfg.dpdk_ip && *braid_cfg.dpdk_ip) {
		if (dpdk_parse_cidr(braid_cfg.dpdk_ip, &dp.ip, &dp.mask)) {
			BRAID_WARN(FI_LOG_CORE, "dpdk wire: FI_BRAID_DPDK_IP=%s is not a.b.c.d/len\n",
				   braid_cfg.dpdk_ip);
			dp.err = -FI_EINVAL;
			return;
		}
	} else if (dpdk_shadowed_ip(&dp.ip, &dp.mask, &dp.gw, shadow)) {
		BRAID_WARN(FI_LOG_CORE, "dpdk wire: port %s has no IPv4 address: set FI_BRAID_DPDK_IP\n",
			   dp.name);
		dp.err = -FI_EADDRNOTAVAIL;
		return;
	}
	if (braid_cfg.dpdk_gw && *braid_cfg.dpdk_gw) {
		struct in_addr a;

		if (inet_pton(AF_INET, braid_cfg.dpdk_gw, &a) != 1 ||
		    (a.s_addr & dp.mask) != (dp.ip & dp.mask)) {
			BRAID_WARN(FI_LOG_CORE, "dpdk wire: FI_BRAID_DPDK_GW=%s is not an address on "
				   "the port's subnet\n", braid_cfg.dpdk_gw);
			dp.err = -FI_EINVAL;
			return;
		}
		dp.gw = a.s_addr;
	}
	/* the kernel's neighbours on the interface we shadow: known without asking */
	if (*shadow)
		dpdk_kernel_neigh(shadow);
	if (dpdk_static_neigh(braid_cfg.dpdk_neigh)) {
		BRAID_WARN(FI_LOG_CORE, "dpdk wire: FI_BRAID_DPDK_NEIGH=%s is not ip=mac,...\n",
			   braid_cfg.dpdk_neigh);
		dp.err = -FI_EINVAL;
		return;
	}
	{
		char ip[INET_ADDRSTRLEN], mac[RTE_ETHER_ADDR_FMT_SIZE];

		inet_ntop(AF_INET, &dp.ip, ip, sizeof(ip));
		rte_ether_format_addr(mac, sizeof(mac), &dp.mac);
		char gw[INET_ADDRSTRLEN];

		inet_ntop(AF_INET, &dp.gw, gw, sizeof(gw));
		BRAID_INFO(FI_LOG_CORE, "dpdk wire: port %u %s (%s), %s, MAC %s, gateway %s, MTU %u, "
			   "checksums %s\n", dp.port, dp.name, info.driver_name, ip, mac,
			   dp.gw ? gw : "none", dp.ip_mtu, dp.tx_offload ? "offloaded" : "computed by braid");
	}
}

static int dpdk_ready(void)
{
	pthread_once(&dp.once, dpdk_start);
	return dp.err;
}

/* ---- neighbours (ARP) ---- */

/* The neighbour slot of @ip (tx lock held); @add: make one if none. NULL: table full. */
static struct dpdk_neigh *dpdk_neigh_slot(uint32_t ip, bool add)
{
	uint32_t h = (ntohl(ip) * 2654435761u) >> 24, i;

	for (i = 0; i < DPDK_ARP_SLOTS; i++) {
		struct dpdk_neigh *n = &dp.neigh[(h + i) % DPDK_ARP_SLOTS];

		if (n->ip == ip)
			return n;
		if (!n->ip) {
			if (!add)
				return NULL;
			memset(n, 0, sizeof(*n));
			n->ip = ip;
			return n;
		}
	}
	return NULL;
}

static struct rte_mbuf *dpdk_arp_frame(uint16_t op, const struct rte_ether_addr *to_mac,
				       uint32_t to_ip)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(dp.pool);
	struct rte_ether_hdr *eth;
	struct rte_arp_hdr *arp;

	if (!m)
		return NULL;
	eth = (struct rte_ether_hdr *)rte_pktmbuf_append(m, sizeof(*eth) + sizeof(*arp));
	arp = (struct rte_arp_hdr *)(eth + 1);
	if (to_mac)
		eth->dst_addr = *to_mac;
	else
		memset(&eth->dst_addr, 0xff, RTE_ETHER_ADDR_LEN);
	eth->src_addr = dp.mac;
	eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_ARP);
	arp->arp_hardware = rte_cpu_to_be_16(RTE_ARP_HRD_ETHER);
	arp->arp_protocol = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
	arp->arp_hlen = RTE_ETHER_ADDR_LEN;
	arp->arp_plen = 4;
	arp->arp_opcode = rte_cpu_to_be_16(op);
	arp->arp_data.arp_sha = dp.mac;
	arp->arp_data.arp_sip = dp.ip;
	if (to_mac)
		arp->arp_data.arp_tha = *to_mac;
	else
		memset(&arp->arp_data.arp_tha, 0, RTE_ETHER_ADDR_LEN);
	arp->arp_data.arp_tip = to_ip;
	return m;
}

/* Send @m now (tx lock held); a frame the queue will not take is dropped. */
static void dpdk_xmit_one(struct rte_mbuf *m)
{
	if (rte_eth_tx_burst(dp.port, 0, &m, 1) != 1)
		rte_pktmbuf_free(m);
}

/* An ARP frame arrived (rx lock held): answer requests for our address, learn the sender. */
static void dpdk_arp_in(struct rte_mbuf *m)
{
	struct rte_arp_hdr *arp;
	struct dpdk_neigh *n;
	uint32_t sip;
	int i;

	if (rte_pktmbuf_data_len(m) < RTE_ETHER_HDR_LEN + sizeof(*arp)) {
		dp.rx_bad++;
		return;
	}
	arp = rte_pktmbuf_mtod_offset(m, struct rte_arp_hdr *, RTE_ETHER_HDR_LEN);
	if (arp->arp_hardware != rte_cpu_to_be_16(RTE_ARP_HRD_ETHER) ||
	    arp->arp_protocol != rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4) ||
	    arp->arp_hlen != RTE_ETHER_ADDR_LEN || arp->arp_plen != 4 ||
	    arp->arp_data.arp_tip != dp.ip)
		return;	/* not about us */
	sip = arp->arp_data.arp_sip;
	pthread_spin_lock(&dp.tx);
	/* RFC 826: a packet addressed to us updates (or creates) its sender's entry */
	n = sip && sip != dp.ip ? dpdk_neigh_slot(sip, true) : NULL;
	if (n && !rte_is_zero_ether_addr(&arp->arp_data.arp_sha) &&
	    !rte_is_multicast_ether_addr(&arp->arp_data.arp_sha)) {
		n->mac = arp->arp_data.arp_sha;
		n->known = true;
		for (i = 0; i < n->held; i++) {
			struct rte_ether_hdr *eth = rte_pktmbuf_mtod(n->hold[i], struct rte_ether_hdr *);

			eth->dst_addr = n->mac;
			dpdk_xmit_one(n->hold[i]);
		}
		n->held = 0;
	}
	if (arp->arp_opcode == rte_cpu_to_be_16(RTE_ARP_OP_REQUEST)) {
		struct rte_mbuf *r = dpdk_arp_frame(RTE_ARP_OP_REPLY, &arp->arp_data.arp_sha, sip);

		if (r)
			dpdk_xmit_one(r);
	}
	pthread_spin_unlock(&dp.tx);
}

/*
 * The destination MAC of a frame to @ip (tx lock held) into @eth; false: not
 * known yet, @m is held (or dropped) until ARP answers.
 */
static bool dpdk_resolve(uint32_t ip, struct rte_mbuf *m, struct rte_ether_hdr *eth)
{
	uint32_t next = ip;
	struct dpdk_neigh *n;
	uint64_t now;

	if ((ip & dp.mask) != (dp.ip & dp.mask)) {
		/* off the subnet: to the router, if there is one */
		if (!dp.gw)
			goto drop;
		next = dp.gw;
	}
	n = dpdk_neigh_slot(next, true);
	if (!n)
		goto drop;
	if (n->known) {
		eth->dst_addr = n->mac;
		return true;
	}
	if (n->held < DPDK_ARP_HELD) {
		n->hold[n->held++] = m;
	} else {
		dp.tx_arp_drop++;	/* the queue is full; ask again all the same */
		rte_pktmbuf_free(m);
	}
	now = braid_now_ns();
	if (!n->asked_ns || now - n->asked_ns > DPDK_ARP_RETRY_NS) {
		struct rte_mbuf *q = dpdk_arp_frame(RTE_ARP_OP_REQUEST, NULL, next);

		n->asked_ns = now;
		if (q)
			dpdk_xmit_one(q);
	}
	return false;
drop:
	dp.tx_arp_drop++;
	rte_pktmbuf_free(m);
	return false;
}

/* ---- frames ---- */

/* The UDP checksum of a datagram (whole, in one segment) adds up. */
static bool dpdk_udp_cksum_ok(const struct rte_ipv4_hdr *ip, const struct rte_udp_hdr *udp,
			      uint16_t ulen)
{
	uint32_t sum = (uint32_t)rte_raw_cksum(udp, ulen) + rte_ipv4_phdr_cksum(ip, 0);

	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return sum == 0xffff;
}

/* Check an IPv4/UDP frame for us; 0 and the endpoint's local port, or -1 (dropped). */
static int dpdk_frame_check(struct rte_mbuf *m, uint16_t *dport)
{
	struct rte_ipv4_hdr *ip;
	struct rte_udp_hdr *udp;
	uint16_t ihl, tot, ulen;

	/* a frame longer than one receive buffer (a jumbo MTU on memif) arrives chained */
	if (m->nb_segs > 1 && rte_pktmbuf_linearize(m))
		return -1;
	if (rte_pktmbuf_data_len(m) < DPDK_HDRS)
		return -1;
	ip = rte_pktmbuf_mtod_offset(m, struct rte_ipv4_hdr *, RTE_ETHER_HDR_LEN);
	ihl = (uint16_t)((ip->version_ihl & 0x0f) * 4);
	tot = rte_be_to_cpu_16(ip->total_length);
	if ((ip->version_ihl >> 4) != 4 || ihl < sizeof(*ip) ||
	    rte_pktmbuf_data_len(m) < RTE_ETHER_HDR_LEN + ihl + sizeof(*udp) ||
	    tot < ihl + sizeof(*udp) || m->pkt_len < (uint32_t)RTE_ETHER_HDR_LEN + tot ||
	    ip->next_proto_id != IPPROTO_UDP || ip->dst_addr != dp.ip ||
	    (rte_be_to_cpu_16(ip->fragment_offset) & (RTE_IPV4_HDR_MF_FLAG | RTE_IPV4_HDR_OFFSET_MASK)))
		return -1;
	/* a good header sums to all ones (rte_ipv4_cksum: its complement, 0) */
	if (!(m->ol_flags & RTE_MBUF_F_RX_IP_CKSUM_GOOD) && rte_ipv4_cksum(ip) != 0)
		return -1;
	if (m->ol_flags & RTE_MBUF_F_RX_IP_CKSUM_BAD)
		return -1;
	udp = (struct rte_udp_hdr *)((char *)ip + ihl);
	ulen = rte_be_to_cpu_16(udp->dgram_len);
	if (ulen < sizeof(*udp) || ulen != tot - ihl)
		return -1;
	/* a zero checksum means none was sent (RFC 768) */
	if (udp->dgram_cksum && !(m->ol_flags & RTE_MBUF_F_RX_L4_CKSUM_GOOD) &&
	    !dpdk_udp_cksum_ok(ip, udp, ulen))
		return -1;
	if (m->ol_flags & RTE_MBUF_F_RX_L4_CKSUM_BAD)
		return -1;
	m->l2_len = RTE_ETHER_HDR_LEN;
	m->l3_len = ihl;
	*dport = rte_be_to_cpu_16(udp->dst_port);
	return 0;
}

/* Hand frames to their endpoints (rx lock held, or a frame to ourselves). */
static void dpdk_deliver(struct rte_mbuf **ms, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		struct rte_mbuf *m = ms[i];
		struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
		struct braid_dpdk *to;
		uint16_t dport;

		if (rte_pktmbuf_data_len(m) < RTE_ETHER_HDR_LEN) {
			dp.rx_bad++;
			rte_pktmbuf_free(m);
			continue;
		}
		if (eth->ether_type == rte_cpu_to_be_16(RTE_ETHER_TYPE_ARP)) {
			dpdk_arp_in(m);
			rte_pktmbuf_free(m);
			continue;
		}
		if (eth->ether_type != rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4) ||
		    dpdk_frame_check(m, &dport)) {
			dp.rx_not_ours++;
			rte_pktmbuf_free(m);
			continue;
		}
		to = dp.ports.owner[dport];
		m->hash.usr = dp.ports.sel[dport];
		if (!to) {
			dp.rx_not_ours++;
			rte_pktmbuf_free(m);
		} else if (rte_ring_mp_enqueue(to->ring, m)) {
			dp.rx_ring_full++;
			rte_pktmbuf_free(m);
		}
	}
}

/* Take a burst from the port, if no other thread is at it. */
static void dpdk_poll(void)
{
	struct rte_mbuf *ms[DPDK_BURST];
	int n;

	if (pthread_spin_trylock(&dp.rx))
		return;
	n = rte_eth_rx_burst(dp.port, 0, ms, DPDK_BURST);
	if (n > 0)
		dpdk_deliver(ms, n);
	pthread_spin_unlock(&dp.rx);
}

/*
 * A received frame's UDP payload (one segment: dpdk_frame_check made it so)
 * into *@payload, and @pkt's length, flags, sender and route.
 */
static size_t dpdk_frame_meta(struct rte_mbuf *m, struct braid_pkt *pkt, uint8_t **payload)
{
	struct rte_ipv4_hdr *ip = rte_pktmbuf_mtod_offset(m, struct rte_ipv4_hdr *, m->l2_len);
	struct rte_udp_hdr *udp = (struct rte_udp_hdr *)((char *)ip + m->l3_len);

	*payload = (uint8_t *)(udp + 1);
	pkt->len = rte_be_to_cpu_16(udp->dgram_len) - sizeof(*udp);
	pkt->flags = (ip->type_of_service & 0x3) == 0x3 ? BRAID_PKT_ECN_CE : 0;
	pkt->path = (uint32_t)m->hash.usr;
	memset(&pkt->addr, 0, sizeof(pkt->addr));
	pkt->addr.sin_family = AF_INET;
	pkt->addr.sin_addr.s_addr = ip->src_addr;
	pkt->addr.sin_port = udp->src_port;
	return pkt->len;
}

/* Up to @n of this endpoint's frames, polling the port first if it has none. */
static int dpdk_take(struct braid_dpdk *d, struct rte_mbuf **ms, int n)
{
	if (n > DPDK_BURST)
		n = DPDK_BURST;
	if (n <= 0)
		return 0;
	if (rte_ring_empty(d->ring))
		dpdk_poll();
	n = (int)rte_ring_mc_dequeue_burst(d->ring, (void **)ms, (unsigned)n, NULL);
	d->wire.rx_packets += (uint64_t)n;
	return n;
}

static int dpdk_rx_burst(struct braid_wire *wire, struct braid_pkt *pkts, int n)
{
	struct rte_mbuf *ms[DPDK_BURST];
	int got = dpdk_take((struct braid_dpdk *)wire, ms, n), i;

	for (i = 0; i < got; i++) {
		struct braid_pkt *pkt = &pkts[i];
		uint8_t *src;
		size_t len = dpdk_frame_meta(ms[i], pkt, &src);

		if (braid_iov_scatter(pkt->iov, (size_t)pkt->iovcnt, 0, src, len) < len)
			pkt->flags |= BRAID_PKT_TRUNC;
		rte_pktmbuf_free(ms[i]);
	}
	return got;
}

/* rx_burst without the copy: the engine reads the payload inside the frame. */
static int dpdk_rx_lend(struct braid_wire *wire, struct braid_pkt *pkts, int n)
{
	struct rte_mbuf *ms[DPDK_BURST];
	int got = dpdk_take((struct braid_dpdk *)wire, ms, n), i;

	for (i = 0; i < got; i++) {
		uint8_t *src;

		pkts[i].iov[0].iov_len = dpdk_frame_meta(ms[i], &pkts[i], &src);
		pkts[i].iov[0].iov_base = src;
		pkts[i].iovcnt = 1;
		pkts[i].lent = ms[i];
	}
	return got;
}

static void dpdk_rx_return(struct braid_wire *wire, struct braid_pkt *pkts, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		rte_pktmbuf_free(pkts[i].lent);
		pkts[i].lent = NULL;
	}
	(void)wire;
}

/*
 * Build the frame of @pkt from local port @sport (@self: to this process, so
 * no port computes its checksums); NULL: no buffer (or too long: status set).
 */
static struct rte_mbuf *dpdk_build(struct braid_pkt *pkt, uint16_t sport, bool self)
{
	struct rte_mbuf *m;
	struct rte_ether_hdr *eth;
	struct rte_ipv4_hdr *ip;
	struct rte_udp_hdr *udp;
	size_t len = braid_iov_len(pkt->iov, (size_t)pkt->iovcnt);
	char *p;

	if (len > (size_t)dp.ip_mtu - sizeof(*ip) - sizeof(*udp)) {
		pkt->status = -FI_EMSGSIZE;
		return NULL;
	}
	m = rte_pktmbuf_alloc(dp.pool);
	if (!m)
		return NULL;
	eth = (struct rte_ether_hdr *)rte_pktmbuf_append(m, (uint16_t)(DPDK_HDRS + len));
	ip = (struct rte_ipv4_hdr *)(eth + 1);
	udp = (struct rte_udp_hdr *)(ip + 1);
	p = (char *)(udp + 1);
	braid_iov_gather(pkt->iov, (size_t)pkt->iovcnt, p);
	eth->src_addr = dp.mac;
	eth->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
	ip->version_ihl = RTE_IPV4_VHL_DEF;
	ip->type_of_service = 0x2;	/* ECT(0): routers mark congestion (RFC 3168) */
	ip->total_length = rte_cpu_to_be_16((uint16_t)(sizeof(*ip) + sizeof(*udp) + len));
	ip->packet_id = 0;		/* the RoCEv2 ICRC is computed with IP ID 0 (protocol.md §5.1) */
	ip->fragment_offset = rte_cpu_to_be_16(RTE_IPV4_HDR_DF_FLAG);
	ip->time_to_live = 64;
	ip->next_proto_id = IPPROTO_UDP;
	ip->hdr_checksum = 0;
	ip->src_addr = dp.ip;
	ip->dst_addr = pkt->addr.sin_addr.s_addr;
	udp->src_port = rte_cpu_to_be_16(sport);
	udp->dst_port = pkt->addr.sin_port;
	udp->dgram_len = rte_cpu_to_be_16((uint16_t)(sizeof(*udp) + len));
	udp->dgram_cksum = 0;
	if (dp.tx_offload && !self) {
		m->l2_len = RTE_ETHER_HDR_LEN;
		m->l3_len = sizeof(*ip);
		m->ol_flags |= RTE_MBUF_F_TX_IPV4 | RTE_MBUF_F_TX_IP_CKSUM | RTE_MBUF_F_TX_UDP_CKSUM;
		udp->dgram_cksum = rte_ipv4_phdr_cksum(ip, m->ol_flags);
	} else {
		ip->hdr_checksum = rte_ipv4_cksum(ip);
		udp->dgram_cksum = rte_ipv4_udptcp_cksum(ip, udp);
	}
	return m;
}

/*
 * Send a run of built frames (@idx: their packets' indexes). Frames to this
 * process go straight to their endpoints; the others through ARP to the
 * port. Return how many of the run were handled: all, or up to the first
 * frame a full transmit queue would not take (that one and the rest are freed).
 */
static int dpdk_flush(struct rte_mbuf **run, int n, bool self)
{
	struct rte_eth_link link;
	int i, k = 0, sent = 0;
	int pos[DPDK_BURST];

	if (self) {
		pthread_spin_lock(&dp.rx);
		dpdk_deliver(run, n);
		pthread_spin_unlock(&dp.rx);
		return n;
	}
	pthread_spin_lock(&dp.tx);
	for (i = 0; i < n; i++) {
		struct rte_ipv4_hdr *ip = rte_pktmbuf_mtod_offset(run[i], struct rte_ipv4_hdr *,
								  RTE_ETHER_HDR_LEN);

		/* a frame whose neighbour is not known yet is held (or dropped) by ARP */
		if (dpdk_resolve(ip->dst_addr, run[i], rte_pktmbuf_mtod(run[i], struct rte_ether_hdr *))) {
			pos[k] = i;
			run[k++] = run[i];
		}
	}
	while (sent < k) {
		uint16_t s = rte_eth_tx_burst(dp.port, 0, run + sent, (uint16_t)(k - sent));

		sent += s;
		if (s)
			continue;
		/* a port without a link drops, as a cable would; a full queue pushes back */
		if (rte_eth_link_get_nowait(dp.port, &link) || !link.link_status) {
			dp.tx_no_link += (uint64_t)(k - sent);
			for (; sent < k; sent++)
				rte_pktmbuf_free(run[sent]);
		}
		break;
	}
	pthread_spin_unlock(&dp.tx);
	if (sent == k)
		return n;
	for (i = sent; i < k; i++)
		rte_pktmbuf_free(run[i]);
	return pos[sent];
}

static int dpdk_tx_burst(struct braid_wire *wire, struct braid_pkt *pkts, int n)
{
	struct braid_dpdk *d = (struct braid_dpdk *)wire;
	struct rte_mbuf *run[DPDK_BURST];
	int idx[DPDK_BURST], nrun = 0, i, ok;
	bool run_self = false;

	for (i = 0; i < n; i++) {
		struct braid_pkt *pkt = &pkts[i];
		uint32_t sel = pkt->path < wire->entropies ? pkt->path : 0;
		bool self = pkt->addr.sin_addr.s_addr == dp.ip;	/* another endpoint of this process */
		struct rte_mbuf *m;

		if (nrun && (nrun == DPDK_BURST || self != run_self)) {
			ok = dpdk_flush(run, nrun, run_self);
			if (ok < nrun) {
				wire->tx_packets += (uint64_t)ok;
				return idx[ok];
			}
			wire->tx_packets += (uint64_t)nrun;
			nrun = 0;
		}
		pkt->status = 0;
		m = dpdk_build(pkt, d->ports[sel], self);
		if (!m) {
			if (pkt->status) {
				wire->tx_errors++;
				continue;	/* refused; the rest go on */
			}
			break;			/* out of buffers: the wire is full for now */
		}
		run_self = self;
		idx[nrun] = i;
		run[nrun++] = m;
	}
	if (nrun) {
		ok = dpdk_flush(run, nrun, run_self);
		wire->tx_packets += (uint64_t)ok;
		if (ok < nrun)
			return idx[ok];
	}
	return i;
}

static int dpdk_wait_fd(struct braid_wire *wire)
{
	(void)wire;
	return -1;	/* polled: nothing to sleep on */
}

static void dpdk_close(struct braid_wire *wire)
{
	struct braid_dpdk *d = (struct braid_dpdk *)wire;
	struct rte_mbuf *m;

	pthread_mutex_lock(&dp.lock);
	/* the poller hands frames over under the rx lock: after it, none can reach us */
	pthread_spin_lock(&dp.rx);
	braid_wire_ports_unbind(&dp.ports, d->ports, (int)wire->entropies);
	pthread_spin_unlock(&dp.rx);
	dp.open_wires--;
	pthread_mutex_unlock(&dp.lock);
	BRAID_INFO(FI_LOG_EP_DATA, "dpdk wire: port %u closed; %lu rx %lu tx; port drops: %lu not ours, "
		   "%lu malformed, %lu ring full, %lu without link, %lu without ARP\n",
		   ntohs(wire->name.sin_port), (unsigned long)wire->rx_packets,
		   (unsigned long)wire->tx_packets, (unsigned long)dp.rx_not_ours,
		   (unsigned long)dp.rx_bad, (unsigned long)dp.rx_ring_full,
		   (unsigned long)dp.tx_no_link, (unsigned long)dp.tx_arp_drop);
	if (d->ring) {
		while (!rte_ring_dequeue(d->ring, (void **)&m))
			rte_pktmbuf_free(m);
		rte_ring_free(d->ring);
	}
	free(d);
}

static int dpdk_open(const struct braid_wire_params *params, struct braid_wire **wire)
{
	struct braid_dpdk *d;
	char ring[RTE_RING_NAMESIZE];
	int ret, nsel;

	if (!params || !wire || params->paths < 1 || params->paths > BRAID_WIRE_MAX_PATHS ||
	    params->addr.sin_family != AF_INET)
		return -FI_EINVAL;
	ret = dpdk_ready();
	if (ret)
		return ret;
	if (params->addr.sin_addr.s_addr != htonl(INADDR_ANY) &&
	    params->addr.sin_addr.s_addr != dp.ip)
		return -FI_EADDRNOTAVAIL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -FI_ENOMEM;
	nsel = braid_wire_selectors(params->paths);
	d->wire.ops = &braid_dpdk_wire_ops;
	d->wire.paths = params->paths;
	d->wire.entropies = (uint32_t)nsel;
	d->wire.mtu = (size_t)dp.ip_mtu - sizeof(struct rte_ipv4_hdr) - sizeof(struct rte_udp_hdr);
	d->wire.gso_segs = 0;	/* a frame costs no system call: nothing to batch */
	pthread_mutex_lock(&dp.lock);
	snprintf(ring, sizeof(ring), "braid_rx%u", dp.ring_id++);
	d->ring = rte_ring_create(ring, DPDK_RING, SOCKET_ID_ANY, RING_F_SC_DEQ);
	if (!d->ring) {
		pthread_mutex_unlock(&dp.lock);
		free(d);
		return -FI_ENOMEM;
	}
	pthread_spin_lock(&dp.rx);	/* the poller reads the table under it */
	ret = braid_wire_ports_bind(&dp.ports, d, ntohs(params->addr.sin_port), d->ports, nsel);
	pthread_spin_unlock(&dp.rx);
	if (ret) {
		pthread_mutex_unlock(&dp.lock);
		rte_ring_free(d->ring);
		free(d);
		return ret;
	}
	dp.open_wires++;
	pthread_mutex_unlock(&dp.lock);
	d->wire.name.sin_family = AF_INET;
	d->wire.name.sin_addr.s_addr = dp.ip;
	d->wire.name.sin_port = htons(d->ports[0]);
	*wire = &d->wire;
	return 0;
}

static int dpdk_iface(char *name, size_t namelen, struct in_addr *addr, struct in_addr *mask,
		      size_t *mtu)
{
	int ret = dpdk_ready();

	if (ret)
		return ret;
	snprintf(name, namelen, "%s", dp.name);
	addr->s_addr = dp.ip;
	mask->s_addr = dp.mask;
	*mtu = (size_t)dp.ip_mtu - sizeof(struct rte_ipv4_hdr) - sizeof(struct rte_udp_hdr);
	return 0;
}

/* Provider unload: stop what braid started (the port, the EAL if it was braid's), free what it holds. */
static void dpdk_cleanup(void)
{
	int i, k;

	pthread_mutex_lock(&dp.lock);
	if (dp.open_wires) {
		pthread_mutex_unlock(&dp.lock);
		return;	/* endpoints still use the port: leave it all */
	}
	for (i = 0; i < DPDK_ARP_SLOTS; i++) {
		for (k = 0; k < dp.neigh[i].held; k++)
			rte_pktmbuf_free(dp.neigh[i].hold[k]);
		dp.neigh[i].held = 0;
	}
	if (dp.port_started) {
		rte_eth_dev_stop(dp.port);
		rte_eth_dev_close(dp.port);
		dp.port_started = false;
	}
	if (dp.pool) {
		rte_mempool_free(dp.pool);
		dp.pool = NULL;
	}
	if (dp.own_eal) {
		rte_eal_cleanup();
		dp.own_eal = false;
	}
	if (dp.args) {
		for (i = 0; dp.args[i]; i++)
			free(dp.args[i]);
		free(dp.args);
		free(dp.argv);
		dp.args = dp.argv = NULL;
	}
	if (!dp.err)
		dp.err = -FI_ENODEV;	/* the EAL does not start twice in a process */
	pthread_mutex_unlock(&dp.lock);
}

const struct braid_wire_ops braid_dpdk_wire_ops = {
	.name = "dpdk",
	.polled = true,
	.open = dpdk_open,
	.close = dpdk_close,
	.tx_burst = dpdk_tx_burst,
	.rx_burst = dpdk_rx_burst,
	.wait_fd = dpdk_wait_fd,
	.rx_lend = dpdk_rx_lend,
	.rx_return = dpdk_rx_return,
	.iface = dpdk_iface,
	.cleanup = dpdk_cleanup,
};
