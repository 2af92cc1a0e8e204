/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_attr.c: the fi_info braid offers, and fi_getinfo's matching of hints, node and service. */
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "braid.h"

#define BRAID_DGRAM_TX_CAPS	(FI_MSG | FI_SEND)
#define BRAID_DGRAM_RX_CAPS	(FI_MSG | FI_RECV | FI_SOURCE)
#define BRAID_DOMAIN_CAPS	(FI_LOCAL_COMM | FI_REMOTE_COMM)
/* named AVs shared between processes (braid_av_shm.c): the domains of AV users, RDM and DGRAM */
#define BRAID_AV_DOMAIN_CAPS	(BRAID_DOMAIN_CAPS | FI_SHARED_AV)
#define BRAID_DGRAM_CAPS	(BRAID_DGRAM_TX_CAPS | BRAID_DGRAM_RX_CAPS | BRAID_AV_DOMAIN_CAPS)
#define BRAID_TX_OP_FLAGS	(FI_INJECT | FI_COMPLETION | FI_INJECT_COMPLETE | \
				 FI_TRANSMIT_COMPLETE)
#define BRAID_RX_OP_FLAGS	(FI_COMPLETION)

/* FI_TRIGGER: transfers held for a counter (fi_trigger(3), braid_trigger.c), when asked for */
#define BRAID_RDM_TX_CAPS	(FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_SEND | FI_READ | \
				 FI_WRITE | FI_TRIGGER)
/* FI_RMA_EVENT: only when asked for (target events cost a CQ entry each) */
#define BRAID_RDM_RX_CAPS	(FI_MSG | FI_TAGGED | FI_RMA | FI_ATOMIC | FI_RECV | \
				 FI_REMOTE_READ | FI_REMOTE_WRITE | FI_RMA_EVENT | \
				 FI_DIRECTED_RECV | FI_SOURCE | FI_MULTI_RECV)
#define BRAID_RDM_CAPS		(BRAID_RDM_TX_CAPS | BRAID_RDM_RX_CAPS | BRAID_AV_DOMAIN_CAPS)
#define BRAID_RDM_TX_OP_FLAGS	(BRAID_TX_OP_FLAGS | FI_DELIVERY_COMPLETE)
/*
 * What API 2.0 added to the receive side (fi_getinfo(3)), offered to
 * applications of 2.0 and later only: below 2.0 these bits meant other
 * things (FI_VARIABLE_MSG, MR flags). FI_DIRECTED_RECV covers tagged and
 * untagged receives alike; FI_TAGGED_DIRECTED_RECV only tagged ones;
 * FI_EXACT_DIRECTED_RECV refuses FI_ADDR_UNSPEC as a source; FI_MULTI_RECV
 * is untagged multi-receive and FI_TAGGED_MULTI_RECV the tagged one.
 */
#define BRAID_RDM_RX_CAPS_2	(BRAID_TAGGED_DIRECTED_RECV | BRAID_EXACT_DIRECTED_RECV | \
				 BRAID_TAGGED_MULTI_RECV)
/* the primary ones an application gets only by asking (FI_HMEM: with FI_MR_HMEM); the modifier likewise */
#define BRAID_RDM_ASKED_ONLY	(FI_RMA_EVENT | FI_TRIGGER | BRAID_TAGGED_DIRECTED_RECV | \
				 BRAID_EXACT_DIRECTED_RECV | FI_HMEM)

/*
 * RDM: messages match in send order; atomics (requests) execute at the
 * target in the order issued, reads and writes among them alike
 * (protocol.md §4.7 "Ordering"), which MPI's accumulate ordering asks for.
 * RMA writes land as their packets arrive: no FI_ORDER_RMA_* is promised.
 */
#define BRAID_RDM_ORDER		(FI_ORDER_SAS | FI_ORDER_ATOMIC_RAR | FI_ORDER_ATOMIC_RAW | \
				 FI_ORDER_ATOMIC_WAR | FI_ORDER_ATOMIC_WAW)

/* MSG: RoCEv2 RC; tags travel in braid's message header (protocol.md §5.10) */
#define BRAID_MSG_TX_CAPS	(FI_MSG | FI_TAGGED | FI_RMA | FI_SEND | FI_READ | FI_WRITE)
#define BRAID_MSG_RX_CAPS	(FI_MSG | FI_TAGGED | FI_RMA | FI_RECV | FI_REMOTE_READ | \
				 FI_REMOTE_WRITE | FI_MULTI_RECV)
#define BRAID_MSG_CAPS		(BRAID_MSG_TX_CAPS | BRAID_MSG_RX_CAPS | BRAID_DOMAIN_CAPS)
/* a tagged connection puts the header in every SEND: given only when asked for */
#define BRAID_MSG_ASKED_ONLY	FI_TAGGED
#define BRAID_MSG_INJECT	256
/* an RC QP executes requests in PSN order and answers them in order (IBTA 9.5) */
#define BRAID_MSG_ORDER		(FI_ORDER_SAS | FI_ORDER_RAR | FI_ORDER_RAW | FI_ORDER_RAS | \
				 FI_ORDER_WAW | FI_ORDER_WAS | FI_ORDER_SAW)
#define BRAID_MSG_MR_MODE	(FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY)

static struct fi_tx_attr dgram_tx_attr = {
	.caps = BRAID_DGRAM_TX_CAPS,
	.op_flags = 0,
	.msg_order = BRAID_ORDER_NONE,
	.comp_order = BRAID_ORDER_NONE,
	.iov_limit = BRAID_IOV_LIMIT,
	.rma_iov_limit = 0,
};

static struct fi_rx_attr dgram_rx_attr = {
	.caps = BRAID_DGRAM_RX_CAPS,
	.op_flags = 0,
	.msg_order = BRAID_ORDER_NONE,
	.comp_order = BRAID_ORDER_NONE,
	.total_buffered_recv = 0,
	.iov_limit = BRAID_IOV_LIMIT,
};

static struct fi_ep_attr dgram_ep_attr = {
	.type = FI_EP_DGRAM,
	.protocol = FI_PROTO_UNSPEC,
	.protocol_version = BRAID_PROTO_VERSION,
	.msg_prefix_size = 0,
	.max_order_raw_size = 0,
	.max_order_war_size = 0,
	.max_order_waw_size = 0,
	.mem_tag_format = 0,
	.tx_ctx_cnt = 1,
	.rx_ctx_cnt = 1,
};

/* what every domain of braid's has in common (MSG's differs more) */
#define BRAID_DOMAIN_ATTR_COMMON				\
	.caps = BRAID_DOMAIN_CAPS,				\
	.threading = FI_THREAD_SAFE,				\
	.control_progress = FI_PROGRESS_MANUAL,			\
	.data_progress = FI_PROGRESS_MANUAL,			\
	.resource_mgmt = FI_RM_ENABLED,				\
	.av_type = FI_AV_UNSPEC,				\
	.mr_key_size = sizeof(uint64_t),			\
	.cq_data_size = BRAID_CQ_DATA_SIZE,			\
	.cq_cnt = 256,						\
	.ep_cnt = 256,						\
	.tx_ctx_cnt = 256,					\
	.rx_ctx_cnt = 256,					\
	.max_ep_tx_ctx = 1,					\
	.max_ep_rx_ctx = 1,					\
	.max_ep_stx_ctx = BRAID_SHARED_CTX_EPS,			\
	.max_ep_srx_ctx = BRAID_SHARED_CTX_EPS,			\
	.cntr_cnt = 256,					\
	.mr_cnt = 65536

static struct fi_domain_attr dgram_domain_attr = {
	BRAID_DOMAIN_ATTR_COMMON,
	.mr_mode = 0,
	.mr_iov_limit = BRAID_IOV_LIMIT,
};

/* RDM: RMA targets are named by provider keys (64 random bits) and virtual addresses */
static struct fi_domain_attr rdm_domain_attr = {
	BRAID_DOMAIN_ATTR_COMMON,
	.mr_mode = FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY,
	.mr_iov_limit = 1,
};

static struct fi_fabric_attr dgram_fabric_attr = {
	.prov_version = FI_VERSION(BRAID_MAJOR, BRAID_MINOR),
};

static struct fi_tx_attr rdm_tx_attr = {
	.caps = BRAID_RDM_TX_CAPS & ~FI_TRIGGER,
	.op_flags = 0,
	.msg_order = BRAID_RDM_ORDER,
	.comp_order = BRAID_ORDER_NONE,
	.iov_limit = BRAID_IOV_LIMIT,
	.rma_iov_limit = 1,
};

static struct fi_rx_attr rdm_rx_attr = {
	.caps = BRAID_RDM_RX_CAPS & ~FI_RMA_EVENT,
	.op_flags = 0,
	.msg_order = BRAID_RDM_ORDER,
	.comp_order = BRAID_ORDER_NONE,
	.total_buffered_recv = 0,
	.iov_limit = BRAID_IOV_LIMIT,
};

static struct fi_ep_attr rdm_ep_attr = {
	.type = FI_EP_RDM,
	.protocol = FI_PROTO_UNSPEC,
	.protocol_version = BRAID_PROTO_VERSION,
	.max_msg_size = BRAID_RDM_MAX_MSG,
	.msg_prefix_size = 0,
	.mem_tag_format = 0xaaaaaaaaaaaaaaaaULL,	/* libfabric's FI_TAG_GENERIC: any 64-bit tag */
	.tx_ctx_cnt = 1,
	.rx_ctx_cnt = 1,
};

static struct fi_tx_attr msg_tx_attr = {
	.caps = BRAID_MSG_TX_CAPS,
	.op_flags = 0,
	.msg_order = BRAID_MSG_ORDER,
	.comp_order = BRAID_ORDER_NONE,
	.iov_limit = BRAID_RC_IOV_MAX,
	.rma_iov_limit = 1,
};

static struct fi_rx_attr msg_rx_attr = {
	.caps = BRAID_MSG_RX_CAPS,
	.op_flags = 0,
	.msg_order = BRAID_MSG_ORDER,
	.comp_order = BRAID_ORDER_NONE,
	.total_buffered_recv = 0,
	.iov_limit = BRAID_RC_IOV_MAX,
};

static struct fi_ep_attr msg_ep_attr = {
	.type = FI_EP_MSG,
	.protocol = FI_PROTO_UNSPEC,
	.protocol_version = BRAID_PROTO_VERSION,
	.max_msg_size = BRAID_MSG_MAX_MSG,
	.msg_prefix_size = 0,
	/*
	 * The responder executes in PSN order: a WRITE's data is placed when it
	 * arrives, a READ's is read when its responses go out, after any
	 * earlier WRITE (RAW, WAW hold for any size). A WRITE after a READ may
	 * land before the READ's responses have read the memory: no WAR (a
	 * verbs QP needs a fence for it too).
	 */
	.max_order_raw_size = BRAID_MSG_MAX_MSG,
	.max_order_war_size = 0,
	.max_order_waw_size = BRAID_MSG_MAX_MSG,
	.mem_tag_format = 0xaaaaaaaaaaaaaaaaULL,	/* any 64-bit tag */
	.tx_ctx_cnt = 1,
	.rx_ctx_cnt = 1,
};

static struct fi_domain_attr msg_domain_attr = {
	.caps = BRAID_DOMAIN_CAPS,
	.threading = FI_THREAD_SAFE,
	.control_progress = FI_PROGRESS_MANUAL,
	.data_progress = FI_PROGRESS_MANUAL,
	.resource_mgmt = FI_RM_ENABLED,
	.av_type = FI_AV_UNSPEC,
	.mr_mode = BRAID_MSG_MR_MODE,
	.mr_key_size = 4,	/* RETH R_Key */
	.cq_data_size = 4,	/* ImmDt */
	.cq_cnt = 256,
	.ep_cnt = 256,
	.tx_ctx_cnt = 256,
	.rx_ctx_cnt = 256,
	.max_ep_tx_ctx = 1,
	.max_ep_rx_ctx = 1,
	.max_ep_stx_ctx = BRAID_SHARED_CTX_EPS,	/* fi_stx_context */
	.max_ep_srx_ctx = BRAID_SHARED_CTX_EPS,	/* fi_srx_context */
	.cntr_cnt = 256,
	.mr_iov_limit = 1,
	.mr_cnt = 65536,
};

const struct fi_info braid_msg_info_template = {
	.caps = BRAID_MSG_CAPS,
	/* FI_RX_CQ_DATA only when the application allows it (info_build) */
	.mode = 0,
	.addr_format = FI_SOCKADDR_IN,
	.tx_attr = &msg_tx_attr,
	.rx_attr = &msg_rx_attr,
	.ep_attr = &msg_ep_attr,
	.domain_attr = &msg_domain_attr,
	.fabric_attr = &dgram_fabric_attr,
};

const struct fi_info braid_rdm_info_template = {
	.caps = BRAID_RDM_CAPS & ~(FI_RMA_EVENT | FI_TRIGGER),
	.mode = 0,
	.addr_format = FI_SOCKADDR_IN,
	.tx_attr = &rdm_tx_attr,
	.rx_attr = &rdm_rx_attr,
	.ep_attr = &rdm_ep_attr,
	.domain_attr = &rdm_domain_attr,
	.fabric_attr = &dgram_fabric_attr,
};

const struct fi_info braid_dgram_info_template = {
	.caps = BRAID_DGRAM_CAPS,
	.mode = 0,
	.addr_format = FI_SOCKADDR_IN,
	.tx_attr = &dgram_tx_attr,
	.rx_attr = &dgram_rx_attr,
	.ep_attr = &dgram_ep_attr,
	.domain_attr = &dgram_domain_attr,
	.fabric_attr = &dgram_fabric_attr,
};

/* ---- interfaces ---- */

static int iface_cmp(const void *a, const void *b)
{
	const struct braid_iface *x = a, *y = b;

	/* fastest first: real interfaces before loopback (fi_getinfo(3)) */
	if (x->loopback != y->loopback)
		return x->loopback ? 1 : -1;
	return strcmp(x->name, y->name);
}

int braid_iface_list(struct braid_iface **list, size_t *count)
{
	struct ifaddrs *ifa_list, *ifa;
	struct braid_iface *out = NULL, *tmp;
	const struct braid_wire_ops *wire = braid_wire_find(braid_cfg.wire);
	size_t n = 0;

	if (wire && wire->iface) {
		/* a wire with its own port (DPDK) offers that port only */
		int ret;

		out = calloc(1, sizeof(*out));
		if (!out)
			return -FI_ENOMEM;
		ret = wire->iface(out->name, sizeof(out->name), &out->addr, &out->mask,
				  &out->mtu_payload);
		if (ret || (braid_cfg.iface && strcmp(braid_cfg.iface, out->name))) {
			free(out);
			*list = NULL;
			*count = 0;
			return ret ? ret : 0;
		}
		*list = out;
		*count = 1;
		return 0;
	}
	if (getifaddrs(&ifa_list))
		return -FI_ENODATA;
	for (ifa = ifa_list; ifa; ifa = ifa->ifa_next) {
		struct sockaddr_in *sin = (struct sockaddr_in *)ifa->ifa_addr;

		if (!sin || sin->sin_family != AF_INET || !(ifa->ifa_flags & IFF_UP))
			continue;
		if (braid_cfg.iface && strcmp(braid_cfg.iface, ifa->ifa_name))
			continue;
		tmp = realloc(out, (n + 1) * sizeof(*out));
		if (!tmp) {
			free(out);
			freeifaddrs(ifa_list);
			return -FI_ENOMEM;
		}
		out = tmp;
		memset(&out[n], 0, sizeof(out[n]));
		snprintf(out[n].name, sizeof(out[n].name), "%s", ifa->ifa_name);
		out[n].addr = sin->sin_addr;
		out[n].mask = ifa->ifa_netmask ?
			((struct sockaddr_in *)ifa->ifa_netmask)->sin_addr :
			(struct in_addr){ htonl(0xffffffff) };
		out[n].loopback = !!(ifa->ifa_flags & IFF_LOOPBACK);
		out[n].mtu_payload = braid_wire_if_mtu(sin->sin_addr);
		n++;
	}
	freeifaddrs(ifa_list);
	if (n)
		qsort(out, n, sizeof(*out), iface_cmp);
	*list = out;
	*count = n;
	return 0;
}

static void iface_fabric_name(const struct braid_iface *ifc, char *buf, size_t len)
{
	uint32_t mask = ntohl(ifc->mask.s_addr);
	struct in_addr net = { ifc->addr.s_addr & ifc->mask.s_addr };
	char ip[INET_ADDRSTRLEN];
	int bits = 0;

	while (mask & 0x80000000u) {
		bits++;
		mask <<= 1;
	}
	inet_ntop(AF_INET, &net, ip, sizeof(ip));
	snprintf(buf, len, "%s/%d", ip, bits);
}

/* ---- address resolution ---- */

/* "fi_sockaddr_in://1.2.3.4:5678" (FI_ADDR_STR), as fi_getinfo(3) allows for node. */
int braid_parse_addr_str(const char *str, struct sockaddr_in *sin)
{
	const char *prefix = "fi_sockaddr_in://";
	char host[INET_ADDRSTRLEN + 1];
	const char *colon;
	unsigned long port = 0;
	char *end;
	size_t hlen;

	if (strncmp(str, prefix, strlen(prefix)))
		return -FI_EINVAL;
	str += strlen(prefix);
	colon = strrchr(str, ':');
	hlen = colon ? (size_t)(colon - str) : strlen(str);
	if (hlen >= sizeof(host))
		return -FI_EINVAL;
	memcpy(host, str, hlen);
	host[hlen] = '\0';
	if (colon) {
		port = strtoul(colon + 1, &end, 10);
		if (*end || port > 65535)
			return -FI_EINVAL;
	}
	memset(sin, 0, sizeof(*sin));
	sin->sin_family = AF_INET;
	sin->sin_port = htons((uint16_t)port);
	if (inet_pton(AF_INET, host, &sin->sin_addr) != 1)
		return -FI_EINVAL;
	return 0;
}

static int resolve(const char *node, const char *service, bool passive,
		   struct sockaddr_in *sin)
{
	struct addrinfo hints = { 0 }, *res;
	int ret;

	if (node && !strncmp(node, "fi_", 3)) {
		if (service)
			return -FI_EINVAL;
		return braid_parse_addr_str(node, sin);
	}
	hints.ai_family = AF_INET;
	hints.ai_socktype = SOCK_DGRAM;
	hints.ai_flags = passive ? AI_PASSIVE : 0;
	ret = getaddrinfo(node, service, &hints, &res);
	if (ret) {
		BRAID_INFO(FI_LOG_CORE, "cannot resolve %s:%s: %s\n", node ? node : "",
			   service ? service : "", gai_strerror(ret));
		return -FI_ENODATA;
	}
	memcpy(sin, res->ai_addr, sizeof(*sin));
	freeaddrinfo(res);
	return 0;
}

/* The local address the kernel would use to reach @dest. */
static int route_source(const struct sockaddr_in *dest, struct in_addr *src)
{
	struct sockaddr_in probe = *dest, local;
	socklen_t len = sizeof(local);
	int fd, ret = 0;

	if (!probe.sin_port)
		probe.sin_port = htons(9);	/* connect() on UDP needs a port; nothing is sent */
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -FI_ENODATA;
	if (connect(fd, (struct sockaddr *)&probe, sizeof(probe)) ||
	    getsockname(fd, (struct sockaddr *)&local, &len))
		ret = -FI_ENODATA;
	else
		*src = local.sin_addr;
	close(fd);
	return ret;
}

/* ---- hint matching ---- */

/* What differs between the endpoint types braid offers. */
struct ep_kind {
	const struct fi_info *tmpl;
	enum fi_ep_type type;
	uint64_t caps, tx_caps, rx_caps, tx_op_flags, rx_op_flags;
	/* bytes of braid header in each packet */
	size_t hdr;
};

/* the product first: fi_getinfo(3) wants the best endpoints first */
static const struct ep_kind ep_kinds[] = {
	{ &braid_rdm_info_template, FI_EP_RDM, BRAID_RDM_CAPS, BRAID_RDM_TX_CAPS,
	  BRAID_RDM_RX_CAPS, BRAID_RDM_TX_OP_FLAGS, BRAID_RX_OP_FLAGS | FI_MULTI_RECV,
	  sizeof(struct braid_rd_data_hdr) },
	{ &braid_dgram_info_template, FI_EP_DGRAM, BRAID_DGRAM_CAPS, BRAID_DGRAM_TX_CAPS,
	  BRAID_DGRAM_RX_CAPS, BRAID_TX_OP_FLAGS, BRAID_RX_OP_FLAGS, BRAID_DGRAM_HDR },
	/* the comparison: RoCEv2 RC (and braid;ofi_rxm over it) */
	{ &braid_msg_info_template, FI_EP_MSG, BRAID_MSG_CAPS, BRAID_MSG_TX_CAPS,
	  BRAID_MSG_RX_CAPS, BRAID_RDM_TX_OP_FLAGS, BRAID_RX_OP_FLAGS | FI_MULTI_RECV,
	  BRAID_ROCE_MAX_HDR + BRAID_ROCE_MAX_TRAILER },
};

/*
 * the capabilities @k offers an application of API @version (RDM's FI_HMEM
 * only where the CUDA driver loads: hints_ok())
 */
static uint64_t kind_caps(const struct ep_kind *k, uint32_t version)
{
	if (k->type != FI_EP_RDM)
		return k->caps;
	return k->caps | (braid_api_ge(version, 2, 0) ? BRAID_RDM_RX_CAPS_2 : 0) | FI_HMEM;
}

/* what of it the transmit and receive contexts have (FI_HMEM both) */
static uint64_t kind_tx_caps(const struct ep_kind *k)
{
	return k->tx_caps | (kind_caps(k, BRAID_FI_HDR_VERSION) & FI_HMEM);
}

static uint64_t kind_rx_caps(const struct ep_kind *k, uint32_t version)
{
	return k->rx_caps | (kind_caps(k, version) & (BRAID_RDM_RX_CAPS_2 | FI_HMEM));
}

/* bytes a keyed endpoint's datagrams carry besides (protocol.md §2.4): hints with a key get them */
static size_t hints_tag(const struct fi_info *hints)
{
	return hints && ((hints->domain_attr && hints->domain_attr->auth_key_size) ||
			 (hints->ep_attr && hints->ep_attr->auth_key_size)) ? BRAID_AUTH_TAG : 0;
}

static size_t kind_max_msg(const struct ep_kind *k, const struct braid_iface *ifc, size_t tag)
{
	if (k->type == FI_EP_MSG)
		return BRAID_MSG_MAX_MSG;
	return k->type == FI_EP_RDM ? BRAID_RDM_MAX_MSG : ifc->mtu_payload - k->hdr - tag;
}

static size_t kind_inject(const struct ep_kind *k, const struct braid_iface *ifc, size_t tag)
{
	if (k->type == FI_EP_MSG)
		return BRAID_MSG_INJECT;	/* copied into the send queue at post time */
	/* as large as one packet allows */
	return ifc->mtu_payload - k->hdr - tag;
}

/*
 * An authorization key in the hints (fi_domain(3), fi_endpoint(3)): none
 * (size 0), or 1 to BRAID_AUTH_KEY_MAX bytes. Return: 0, -FI_EINVAL (too
 * long, or a size with no key), -FI_ENODATA (keys cannot be had).
 */
static int auth_key_hint(const uint8_t *key, size_t size)
{
	struct braid_auth a;

	/* FI_AV_AUTH_KEY (1.20): keys kept in the AV, one a peer; braid has one an endpoint */
	if (size == SIZE_MAX)
		return -FI_ENODATA;
	return braid_auth_attr(&a, key, size);
}

/* a copy of a hint's key for the fi_info braid returns (fi_freeinfo frees it) */
static int auth_key_echo(const uint8_t *key, size_t size, uint8_t **out, size_t *out_size)
{
	*out = NULL;
	*out_size = 0;
	if (!size)
		return 0;
	*out = malloc(size);
	if (!*out)
		return -FI_ENOMEM;
	memcpy(*out, key, size);
	*out_size = size;
	return 0;
}

static bool order_ok(uint64_t want, uint64_t have)
{
	return (want & ~have) == 0;
}

static bool tx_attr_ok(const struct ep_kind *k, const struct fi_tx_attr *h, size_t inject)
{
	if (!h)
		return true;
	if (h->caps & ~(kind_tx_caps(k) | BRAID_DOMAIN_CAPS))
		return false;
	if (h->op_flags & ~k->tx_op_flags)
		return false;
	if (!order_ok(h->msg_order, k->tmpl->tx_attr->msg_order) ||
	    (h->comp_order & ~BRAID_ORDER_NONE))
		return false;
	if (h->inject_size > inject || h->size > braid_cfg.tx_size ||
	    h->iov_limit > k->tmpl->tx_attr->iov_limit ||
	    h->rma_iov_limit > k->tmpl->tx_attr->rma_iov_limit)
		return false;
	return true;
}

static bool rx_attr_ok(const struct ep_kind *k, const struct fi_rx_attr *h, uint32_t version)
{
	if (!h)
		return true;
	if (h->caps & ~(kind_rx_caps(k, version) | BRAID_DOMAIN_CAPS))
		return false;
	if (h->op_flags & ~k->rx_op_flags)
		return false;
	if (!order_ok(h->msg_order, k->tmpl->rx_attr->msg_order) ||
	    (h->comp_order & ~BRAID_ORDER_NONE))
		return false;
	if (h->total_buffered_recv > 0 || h->size > braid_cfg.rx_size ||
	    h->iov_limit > k->tmpl->rx_attr->iov_limit)
		return false;
	return true;
}

/*
 * The progress hints braid meets (fi_domain(3) "Progress Models"). braid
 * progresses when the application calls in (manual), or with its progress
 * thread also on its own (automatic data progress); control operations
 * progress with data calls, which is what FI_PROGRESS_CONTROL_UNIFIED
 * (1.21 on) names. From 2.0 the one field "progress" (data_progress's
 * other name) is the model of both, and control_progress is not read.
 */
static bool data_progress_ok(enum fi_progress p, uint32_t version)
{
	if (p == FI_PROGRESS_AUTO)
		return braid_cfg.progress_us > 0;	/* the progress thread (braid_progress.c) */
	if (p == FI_PROGRESS_UNSPEC || p == FI_PROGRESS_MANUAL)
		return true;
	/* 2.0: CONTROL_UNIFIED in the one field implies manual progress */
	return braid_api_ge(version, 2, 0) && (int)p == BRAID_PROGRESS_CONTROL_UNIFIED;
}

static bool progress_ok(const struct fi_domain_attr *h, uint32_t version)
{
	enum fi_progress c = h->control_progress;

	if (!data_progress_ok(h->data_progress, version))
		return false;
	if (braid_api_ge(version, 2, 0))
		return true;
	return c == FI_PROGRESS_UNSPEC || c == FI_PROGRESS_MANUAL ||
	       (braid_api_ge(version, 1, 21) && (int)c == BRAID_PROGRESS_CONTROL_UNIFIED);
}

/* braid's domains are thread safe: any threading model is met (FI_THREAD_DOMAIN lets them drop locks) */
static bool threading_ok(enum fi_threading t)
{
	return t >= FI_THREAD_UNSPEC && t <= FI_THREAD_ENDPOINT;
}

static bool domain_attr_ok(const struct ep_kind *k, const struct fi_domain_attr *h,
			   const char *ifname, uint32_t version)
{
	const struct fi_domain_attr *t = k->tmpl->domain_attr;

	if (!h)
		return true;
	if (h->name && strcmp(h->name, ifname))
		return false;
	if (!progress_ok(h, version) || !threading_ok(h->threading))
		return false;
	if (!braid_domain_attr_new_fields_ok(h))
		return false;
	if (h->caps & ~(kind_caps(k, version) & BRAID_AV_DOMAIN_CAPS))
		return false;
	if (h->cq_data_size > t->cq_data_size || h->mr_key_size > t->mr_key_size)
		return false;
	if (h->max_ep_tx_ctx > 1 || h->max_ep_rx_ctx > 1 || h->max_ep_stx_ctx > t->max_ep_stx_ctx ||
	    h->max_ep_srx_ctx > t->max_ep_srx_ctx)
		return false;
	if (h->mr_iov_limit > t->mr_iov_limit)
		return false;
	return true;
}

/*
 * A mem_tag_format braid meets: any mask of the 64 tag bits; from API 2.0
 * also the formats FI_TAG_BITS (0), FI_TAG_MPI and FI_TAG_CCL, which are
 * particular uses of those bits (fi_endpoint(3)); other values below
 * FI_TAG_MAX_FORMAT name no format.
 */
static bool tag_format_ok(const struct ep_kind *k, uint64_t fmt, uint32_t version)
{
	if (!fmt)
		return true;
	if (!k->tmpl->ep_attr->mem_tag_format)
		return false;
	if (braid_api_ge(version, 2, 0) && fmt < BRAID_TAG_MAX_FORMAT)
		return fmt == BRAID_TAG_MPI || fmt == BRAID_TAG_CCL;
	return true;
}

static bool ep_attr_ok(const struct ep_kind *k, const struct fi_ep_attr *h, size_t max_msg,
		       uint32_t version)
{
	if (!h)
		return true;
	if (h->type != FI_EP_UNSPEC && h->type != k->type)
		return false;
	if (h->protocol != FI_PROTO_UNSPEC)
		return false;
	if (h->protocol_version > BRAID_PROTO_VERSION)
		return false;
	if (h->max_msg_size > max_msg)
		return false;
	/* one context each, or shared ones (fi_stx_context, fi_srx_context) */
	if ((h->tx_ctx_cnt > 1 && h->tx_ctx_cnt != FI_SHARED_CONTEXT) ||
	    (h->rx_ctx_cnt > 1 && h->rx_ctx_cnt != FI_SHARED_CONTEXT))
		return false;
	if (!tag_format_ok(k, h->mem_tag_format, version) ||
	    h->max_order_raw_size > k->tmpl->ep_attr->max_order_raw_size ||
	    h->max_order_war_size > k->tmpl->ep_attr->max_order_war_size ||
	    h->max_order_waw_size > k->tmpl->ep_attr->max_order_waw_size)
		return false;
	return true;
}

/* Checks that do not depend on the interface. */
static bool hints_ok(const struct ep_kind *k, const struct fi_info *hints, uint32_t version)
{
	if (!hints)
		return true;
	if (hints->caps & ~kind_caps(k, version))
		return false;
	/* device memory (FI_HMEM_CUDA): the CUDA driver is loaded for those who ask, and must
	 * load and have a device (braid_hmem.c); no one else's process makes a CUDA call */
	if (((hints->caps | (hints->tx_attr ? hints->tx_attr->caps : 0) |
	      (hints->rx_attr ? hints->rx_attr->caps : 0)) & FI_HMEM) && !braid_hmem_available())
		return false;
	if (k->tmpl->mode & ~hints->mode)
		return false;	/* a mode braid needs that the application does not support */
	if (hints->addr_format != FI_FORMAT_UNSPEC && hints->addr_format != FI_SOCKADDR &&
	    hints->addr_format != FI_SOCKADDR_IN && hints->addr_format != BRAID_SOCKADDR_IP)
		return false;
	if (hints->src_addr && (hints->src_addrlen < sizeof(struct sockaddr_in) ||
	    ((struct sockaddr *)hints->src_addr)->sa_family != AF_INET))
		return false;
	if (hints->dest_addr && (hints->dest_addrlen < sizeof(struct sockaddr_in) ||
	    ((struct sockaddr *)hints->dest_addr)->sa_family != AF_INET))
		return false;
	if (hints->ep_attr && hints->ep_attr->type != FI_EP_UNSPEC &&
	    hints->ep_attr->type != k->type)
		return false;
	if (!rx_attr_ok(k, hints->rx_attr, version))
		return false;
	/* a shared receive context holds untagged receives only (braid_srx.c) */
	if (k->type == FI_EP_MSG && (hints->caps & FI_TAGGED) && hints->ep_attr &&
	    hints->ep_attr->rx_ctx_cnt == FI_SHARED_CONTEXT)
		return false;
	return true;
}

/*
 * The capabilities an entry of @k gets for @hints (fi_getinfo(3)): what was
 * asked, or without a request all but the ones given only when asked.
 * braid's secondary FI_LOCAL_COMM and FI_REMOTE_COMM are reported whether
 * asked or not. A primary capability asked without a direction gets every direction
 * braid has for it (FI_MSG and FI_TAGGED: FI_SEND and FI_RECV; FI_RMA and
 * FI_ATOMIC: FI_READ, FI_WRITE, FI_REMOTE_READ and FI_REMOTE_WRITE), as
 * libfabric's providers answer: an endpoint that asks for FI_RMA and
 * FI_RMA_EVENT learns from the entry which remote events it may count.
 */
static uint64_t kind_caps_for(const struct ep_kind *k, const struct fi_info *hints,
			      uint32_t version)
{
	const uint64_t msg_dir = FI_SEND | FI_RECV;
	const uint64_t rma_dir = FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE;
	uint64_t have = kind_caps(k, version), caps;

	if (!hints || !hints->caps)
		return have & ~(BRAID_RDM_ASKED_ONLY |
				(k->type == FI_EP_MSG ? BRAID_MSG_ASKED_ONLY : 0));
	/* FI_LOCAL_COMM and FI_REMOTE_COMM: secondary, braid has both, reported (fi_getinfo(3)) */
	caps = hints->caps | (have & BRAID_DOMAIN_CAPS);
	if ((caps & (FI_MSG | FI_TAGGED)) && !(caps & msg_dir))
		caps |= have & msg_dir;
	if ((caps & (FI_RMA | FI_ATOMIC)) && !(caps & rma_dir))
		caps |= have & rma_dir;
	return caps;
}

/*
 * mr_fit() - the capabilities and MR mode an entry of @k gets for @hints
 * (fi_domain(3) "MR Modes"): RMA targeting a MSG endpoint needs its region
 * registered with FI_MR_VIRT_ADDR, FI_MR_ALLOCATED and FI_MR_PROV_KEY
 * (FI_MR_BASIC, which is what those three are, is echoed as itself; so is
 * FI_MR_UNSPEC before API 1.5); sends and receives need no mode at all. An
 * application that supports fewer modes gets the entry without RMA,
 * unless it asked for RMA: then there is none. Returns false then.
 */
static bool mr_fit(const struct ep_kind *k, const struct fi_info *hints, uint32_t version,
		   uint64_t *caps, int *mr_mode)
{
	const uint64_t rma = FI_RMA | FI_ATOMIC | FI_READ | FI_WRITE | FI_REMOTE_READ |
			     FI_REMOTE_WRITE;
	int need, have;

	*caps = kind_caps_for(k, hints, version);
	*mr_mode = 0;
	need = (*caps & rma) ? k->tmpl->domain_attr->mr_mode : 0;
	/* FI_HMEM: device buffers come with their region's descriptor (fi_domain(3) FI_MR_HMEM) */
	if (*caps & FI_HMEM)
		need |= FI_MR_HMEM;
	if (!need)
		return true;
	if (!hints || !hints->domain_attr) {
		*mr_mode = need;
		return true;
	}
	have = hints->domain_attr->mr_mode;
	if (!(need & FI_MR_HMEM) && (have == BRAID_MR_BASIC ||
	    (FI_VERSION_LT(version, FI_VERSION(1, 5)) && have == BRAID_MR_UNSPEC))) {
		*mr_mode = BRAID_MR_BASIC;
		return true;
	}
	if (FI_VERSION_GE(version, FI_VERSION(1, 5)) && !(have & (BRAID_MR_BASIC | BRAID_MR_SCALABLE)) &&
	    (have & need) == need) {
		*mr_mode = need;
		return true;
	}
	if (hints->caps & (rma | FI_HMEM))
		return false;
	*caps &= ~rma;
	return true;
}

static bool iface_ok(const struct ep_kind *k, const struct fi_info *hints, uint32_t version,
		     const struct braid_iface *ifc, const char *fabric_name)
{
	if (!hints)
		return true;
	if (hints->fabric_attr && hints->fabric_attr->name &&
	    strcmp(hints->fabric_attr->name, fabric_name))
		return false;
	return domain_attr_ok(k, hints->domain_attr, ifc->name, version) &&
	       ep_attr_ok(k, hints->ep_attr, kind_max_msg(k, ifc, hints_tag(hints)), version) &&
	       tx_attr_ok(k, hints->tx_attr, kind_inject(k, ifc, hints_tag(hints)));
}

static void *dup_sin(const struct sockaddr_in *sin)
{
	struct sockaddr_in *p = malloc(sizeof(*p));

	if (p)
		*p = *sin;
	return p;
}

static struct fi_info *info_build(const struct ep_kind *k, const struct fi_info *hints,
				  uint32_t version, const struct braid_iface *ifc,
				  const char *fabric_name, const struct sockaddr_in *src,
				  const struct sockaddr_in *dest)
{
	struct fi_info *info = fi_dupinfo(k->tmpl);
	uint64_t caps;
	int mr_mode;

	if (!info)
		return NULL;
	info->fabric_attr->name = strdup(fabric_name);
	info->domain_attr->name = strdup(ifc->name);
	if (!info->fabric_attr->name || !info->domain_attr->name)
		goto err;
	info->ep_attr->max_msg_size = kind_max_msg(k, ifc, hints_tag(hints));
	info->tx_attr->inject_size = kind_inject(k, ifc, hints_tag(hints));
	info->tx_attr->size = braid_cfg.tx_size;
	info->rx_attr->size = braid_cfg.rx_size;
	braid_domain_attr_new_fields(info->domain_attr);
	if (!hints || !hints->caps) {
		/* the capabilities of this API, as the caps hint would have them */
		uint64_t caps = kind_caps_for(k, NULL, version);

		info->caps = caps;
		info->tx_attr->caps = caps & kind_tx_caps(k);
		info->rx_attr->caps = caps & kind_rx_caps(k, version);
		info->domain_attr->caps = caps & BRAID_AV_DOMAIN_CAPS;
	}

	info->src_addr = dup_sin(src);
	if (!info->src_addr)
		goto err;
	info->src_addrlen = sizeof(*src);
	if (dest) {
		info->dest_addr = dup_sin(dest);
		if (!info->dest_addr)
			goto err;
		info->dest_addrlen = sizeof(*dest);
	}
	if (!hints)
		return info;

	/* Echo what was asked where braid supports it (fi_getinfo(3)). */
	if ((hints->domain_attr &&
	     auth_key_echo(hints->domain_attr->auth_key, hints->domain_attr->auth_key_size,
			   &info->domain_attr->auth_key, &info->domain_attr->auth_key_size)) ||
	    (hints->ep_attr &&
	     auth_key_echo(hints->ep_attr->auth_key, hints->ep_attr->auth_key_size,
			   &info->ep_attr->auth_key, &info->ep_attr->auth_key_size)))
		goto err;
	(void)mr_fit(k, hints, version, &caps, &mr_mode);	/* iface_ok() checked it fits */
	info->caps = caps;
	/* domain capabilities are the domain's, not the transmit or receive context's */
	info->tx_attr->caps = caps & kind_tx_caps(k);
	info->rx_attr->caps = caps & kind_rx_caps(k, version);
	/* and what the domain hints asked (domain_attr_ok() checked it is the kind's) */
	info->domain_attr->caps = (caps | (hints->domain_attr ? hints->domain_attr->caps : 0)) &
				  BRAID_AV_DOMAIN_CAPS;
	info->domain_attr->mr_mode = mr_mode;
	if (hints->addr_format == FI_SOCKADDR)
		info->addr_format = FI_SOCKADDR;
	/* a handle in the hints comes back (fi_getinfo(3)): for MSG a passive
	 * endpoint whose address the active endpoint takes over */
	if (k->type == FI_EP_MSG)
		info->handle = hints->handle;
	/*
	 * MSG: a WRITE with immediate completes at the target without a posted
	 * receive; an application that allows FI_RX_CQ_DATA gets the verbs
	 * behaviour instead (it consumes one, as ofi_rxm expects of verbs).
	 */
	if (k->type == FI_EP_MSG &&
	    ((hints->mode | (hints->rx_attr ? hints->rx_attr->mode : 0)) & FI_RX_CQ_DATA)) {
		/* an rx mode: said in both places (fabtests read rx_attr->mode) */
		info->mode |= FI_RX_CQ_DATA;
		info->rx_attr->mode |= FI_RX_CQ_DATA;
	}
	if (hints->ep_attr && hints->ep_attr->tx_ctx_cnt == FI_SHARED_CONTEXT)
		info->ep_attr->tx_ctx_cnt = FI_SHARED_CONTEXT;
	if (hints->ep_attr && hints->ep_attr->rx_ctx_cnt == FI_SHARED_CONTEXT)
		info->ep_attr->rx_ctx_cnt = FI_SHARED_CONTEXT;
	if (hints->tx_attr && hints->tx_attr->op_flags)
		info->tx_attr->op_flags = hints->tx_attr->op_flags;
	if (hints->rx_attr && hints->rx_attr->op_flags)
		info->rx_attr->op_flags = hints->rx_attr->op_flags;
	if (hints->domain_attr) {
		const struct fi_domain_attr *h = hints->domain_attr;

		if (h->threading)
			info->domain_attr->threading = h->threading;
		if (h->resource_mgmt)
			info->domain_attr->resource_mgmt = h->resource_mgmt;
		if (h->av_type)
			info->domain_attr->av_type = h->av_type;
		if (h->data_progress)
			info->domain_attr->data_progress = h->data_progress;
		/* 2.0: one model for both (fi_domain(3)); before, control's own */
		if (braid_api_ge(version, 2, 0) && h->data_progress)
			info->domain_attr->control_progress = h->data_progress;
		else if (!braid_api_ge(version, 2, 0) && h->control_progress)
			info->domain_attr->control_progress = h->control_progress;
	}
	if (hints->ep_attr && hints->ep_attr->mem_tag_format)
		info->ep_attr->mem_tag_format = hints->ep_attr->mem_tag_format;
	return info;
err:
	fi_freeinfo(info);
	return NULL;
}

/*
 * Does @hints ask for a scalable endpoint (fi_scalable_ep(3): several
 * transmit or receive contexts on one address, or receive contexts named
 * by fi_rx_addr)? braid offers none: an endpoint has one transmit and one
 * receive context, and its packets carry no context index (protocol.md
 * §2). getinfo says so in the log, as the reason the hints match nothing.
 */
static bool scalable_asked(const struct fi_info *hints)
{
	const struct fi_ep_attr *ep = hints ? hints->ep_attr : NULL;
	const struct fi_domain_attr *dom = hints ? hints->domain_attr : NULL;

	if (!hints)
		return false;
	return (hints->caps & FI_NAMED_RX_CTX) ||
	       (ep && ((ep->tx_ctx_cnt > 1 && ep->tx_ctx_cnt != FI_SHARED_CONTEXT) ||
		       (ep->rx_ctx_cnt > 1 && ep->rx_ctx_cnt != FI_SHARED_CONTEXT))) ||
	       (dom && (dom->max_ep_tx_ctx > 1 || dom->max_ep_rx_ctx > 1));
}

int braid_getinfo(uint32_t version, const char *node, const char *service,
		  uint64_t flags, const struct fi_info *hints, struct fi_info **info)
{
	struct sockaddr_in src = { .sin_family = AF_INET }, dest;
	struct fi_info *head = NULL, **tail = &head, *cur;
	bool have_dest = false, src_fixed = false, any_kind = false;
	struct braid_iface *ifs = NULL;
	size_t nifs = 0, i, k;
	int ret;

	*info = NULL;
	/* authorization keys: every endpoint type takes one (protocol.md §2.4) */
	if (hints && hints->domain_attr) {
		ret = auth_key_hint(hints->domain_attr->auth_key, hints->domain_attr->auth_key_size);
		if (ret)
			return ret;
	}
	if (hints && hints->ep_attr) {
		ret = auth_key_hint(hints->ep_attr->auth_key, hints->ep_attr->auth_key_size);
		if (ret)
			return ret;
	}
	if (scalable_asked(hints)) {
		BRAID_INFO(FI_LOG_CORE, "no scalable endpoints: a braid endpoint has one transmit "
			   "and one receive context (FI_NAMED_RX_CTX, tx_ctx_cnt or rx_ctx_cnt "
			   "above 1 asked); open one endpoint per thread instead (fi_braid(7) "
			   "SCALABLE ENDPOINTS)\n");
		return -FI_ENODATA;
	}
	for (k = 0; k < sizeof(ep_kinds) / sizeof(ep_kinds[0]); k++)
		any_kind |= hints_ok(&ep_kinds[k], hints, version);
	if (!any_kind)
		return -FI_ENODATA;

	/* node/service: the source when FI_SOURCE is set (or only a service is
	 * given), else the destination (fi_getinfo(3)). */
	if (node || service) {
		if ((flags & FI_SOURCE) || !node) {
			ret = resolve(node, service, true, &src);
			if (ret)
				return ret == -FI_EINVAL ? -FI_ENODATA : ret;
			src_fixed = node != NULL;
		} else {
			ret = resolve(node, service, false, &dest);
			if (ret)
				return ret == -FI_EINVAL ? -FI_ENODATA : ret;
			have_dest = true;
		}
	}
	if (hints && hints->src_addr && !(node && (flags & FI_SOURCE)) && !(service && !node)) {
		memcpy(&src, hints->src_addr, sizeof(src));
		src_fixed = src.sin_addr.s_addr != htonl(INADDR_ANY);
	}
	if (hints && hints->dest_addr && !have_dest) {
		memcpy(&dest, hints->dest_addr, sizeof(dest));
		have_dest = true;
	}
	ret = braid_iface_list(&ifs, &nifs);
	if (ret)
		return ret;
	if (have_dest && !src_fixed) {
		const struct braid_wire_ops *wire = braid_wire_find(braid_cfg.wire);

		if (wire && wire->iface) {
			/* the wire's own port (DPDK) is the way to anywhere (its router, if any) */
			if (!nifs) {
				free(ifs);
				return -FI_ENODATA;
			}
			src.sin_addr = ifs[0].addr;
		} else if (route_source(&dest, &src.sin_addr)) {
			free(ifs);
			return -FI_ENODATA;
		}
		src_fixed = true;
	}
	for (k = 0; k < sizeof(ep_kinds) / sizeof(ep_kinds[0]); k++) {
		const struct ep_kind *kind = &ep_kinds[k];

		if (!hints_ok(kind, hints, version))
			continue;
		for (i = 0; i < nifs; i++) {
			struct sockaddr_in if_src = src;
			char fabric_name[64];

			if (src_fixed && ifs[i].addr.s_addr != src.sin_addr.s_addr)
				continue;
			if (ifs[i].mtu_payload <= kind->hdr + 64)
				continue;
			iface_fabric_name(&ifs[i], fabric_name, sizeof(fabric_name));
			if (!iface_ok(kind, hints, version, &ifs[i], fabric_name) ||
			    !mr_fit(kind, hints, version, &(uint64_t){ 0 }, &(int){ 0 }))
				continue;
			if_src.sin_addr = ifs[i].addr;
			cur = info_build(kind, hints, version, &ifs[i], fabric_name, &if_src,
					 have_dest ? &dest : NULL);
			if (!cur) {
				fi_freeinfo(head);
				free(ifs);
				return -FI_ENOMEM;
			}
			*tail = cur;
			tail = &cur->next;
		}
	}
	free(ifs);
	if (!head)
		return -FI_ENODATA;
	*info = head;
	return 0;
}

/* Check an fi_info handed to fi_domain/fi_endpoint: is it one braid can serve? */
int braid_check_info(const struct fi_info *info)
{
	size_t k;

	if (!info || !info->ep_attr || !info->domain_attr)
		return -FI_EINVAL;
	for (k = 0; k < sizeof(ep_kinds) / sizeof(ep_kinds[0]); k++) {
		if (info->ep_attr->type != ep_kinds[k].type)
			continue;
		if (info->caps & ~kind_caps(&ep_kinds[k], info->fabric_attr ?
				info->fabric_attr->api_version : BRAID_FI_VERSION))
			return -FI_ENODATA;
		if (!rx_attr_ok(&ep_kinds[k], info->rx_attr, info->fabric_attr ?
				info->fabric_attr->api_version : BRAID_FI_VERSION))
			return -FI_EINVAL;
		return 0;
	}
	return -FI_EINVAL;
}

int braid_ctx_attr_check(enum fi_ep_type type, uint32_t api, const struct fi_tx_attr *tx,
			 const struct fi_rx_attr *rx, size_t inject)
{
	size_t k;

	for (k = 0; k < sizeof(ep_kinds) / sizeof(ep_kinds[0]) && ep_kinds[k].type != type; k++)
		;
	if (k == sizeof(ep_kinds) / sizeof(ep_kinds[0]))
		return -FI_EINVAL;
	/* (device memory is staged per endpoint: a shared context does not take FI_HMEM) */
	if (tx && (tx->caps & ~(ep_kinds[k].tx_caps | BRAID_DOMAIN_CAPS)))
		return -FI_ENODATA;
	if (rx && (rx->caps & ~((kind_rx_caps(&ep_kinds[k], api) & ~FI_HMEM) | BRAID_DOMAIN_CAPS)))
		return -FI_ENODATA;
	if ((tx && !tx_attr_ok(&ep_kinds[k], tx, inject)) ||
	    (rx && !rx_attr_ok(&ep_kinds[k], rx, api)))
		return -FI_EINVAL;
	return 0;
}
