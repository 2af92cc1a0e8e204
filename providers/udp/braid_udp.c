/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_udp.c: the UDP wire: one socket per path, batched sendmmsg/recvmmsg. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <netinet/udp.h>
#include <unistd.h>
#include <netinet/ip.h>
#include <rdma/fi_errno.h>

#include "braid/braid_wire.h"
#include "braid_iov.h"
#include "braid_udp_shm.h"

#define UDP_BURST_MAX	64
#define UDP_MAX_PAYLOAD	65507	/* 65535 - 20 (IPv4) - 8 (UDP) */
/* this many datagrams from the home socket since the last from a path socket: the
 * replies ride in the answers (a ping-pong, §4.8), the path sockets are quiet */
#define UDP_QUIET_RUN	8
/* the path sockets while quiet: looked at every this many receives */
#define UDP_QUIET_LOOK	8
/* with local peers: the rings brought a datagram in the last this many receives */
#define UDP_LOCAL_ACTIVE	4096
/* the quiet sockets while the rings are active: looked at every this many receives */
#define UDP_LOCAL_LOOK	64

/**
 * struct braid_udp - a UDP wire endpoint.
 *
 * fds[0] is the home socket, bound to the address peers send to; it also
 * transmits with route selector 0. fds[1..nfds-1] are bound to their own
 * ephemeral source ports on the same IP and only transmit: the source port
 * is the route's ECMP entropy. The first @paths sockets are the default
 * paths; the rest (up to BRAID_WIRE_SPARE_MAX more) are the spare routes an engine
 * moves a sick path to, so a re-drawn path gets a port no other path uses.
 */
struct braid_udp {
	/** @wire: the public part; first. */
	struct braid_wire wire;
	/** @fds: one socket per route selector (wire.entropies of them). */
	int *fds;
	/**
	 * @epfd: the wait fd: an epoll set of the home socket and @pathfd, or -1
	 * with one socket. Data arrives on the home socket; replies (ACKs, CTS)
	 * come back to the path socket their data left from (the reverse 5-tuple).
	 * @pathfd: an epoll set of the path sockets. A receive reads the home
	 * socket at once and asks @pathfd which others have something: an
	 * epoll_wait before every read of the home socket cost 0.6 us of each
	 * half round trip of a loopback ping-pong (2.6 us against 2.0).
	 */
	int epfd, pathfd;
	/** @looked: the last receive looked at the path sockets. */
	bool looked;
	/** @owed: the last receive filled its burst from the home socket: the next one
	 * reads the path sockets first (a stream into the home socket never starves the
	 * replies to our own sends). */
	bool owed;
	/**
	 * @home_run: datagrams from the home socket since the last one from a path
	 * socket (at most UDP_QUIET_RUN: then the path sockets are quiet);
	 * @unlooked: receives since the path sockets were last looked at.
	 */
	uint32_t home_run, unlooked;
	/**
	 * @pipe: lent payloads (BRAID_PKT_LEND, wire.lend_min: 0 for good when
	 * the kernel cannot do it): opened at the first, carries their pages
	 * from vmsplice to splice into the socket (-1: not yet); @devnull
	 * drains what a failed send left in it; @lend_frags is the most pages
	 * one datagram may hold beyond its copied head (the kernel's
	 * MAX_SKB_FRAGS less one for the head, less one spare); @page the page size.
	 */
	int pipe[2], devnull;
	size_t lend_frags, page;
	/**
	 * @shm: local peers through shared memory (braid_udp_shm.c), or NULL;
	 * @ports: each socket's port (@shm names them); @shm_owed: the last
	 * receive filled its burst from the rings: the next reads the sockets
	 * first. @sock_empty: receives in a row whose look at the sockets found
	 * nothing (capped); @shm_ago: receives since the rings last gave a
	 * datagram (capped); @sock_skip: receives since the sockets were read.
	 */
	struct braid_udp_shm *shm;
	uint16_t *ports;
	bool shm_owed;
	uint32_t sock_empty, shm_ago, sock_skip;
};

const struct braid_wire_ops braid_udp_wire_ops;

size_t braid_wire_if_mtu(struct in_addr addr)
{
	struct ifaddrs *ifa_list, *ifa;
	size_t best = 0;
	struct ifreq ifr;
	int fd;

	if (getifaddrs(&ifa_list))
		return 1472;
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	for (ifa = ifa_list; fd >= 0 && ifa; ifa = ifa->ifa_next) {
		struct sockaddr_in *sin = (struct sockaddr_in *)ifa->ifa_addr;
		size_t payload;

		if (!sin || sin->sin_family != AF_INET || !(ifa->ifa_flags & IFF_UP))
			continue;
		if (addr.s_addr != htonl(INADDR_ANY) && sin->sin_addr.s_addr != addr.s_addr)
			continue;
		memset(&ifr, 0, sizeof(ifr));
		strncpy(ifr.ifr_name, ifa->ifa_name, IFNAMSIZ - 1);
		if (ioctl(fd, SIOCGIFMTU, &ifr) || ifr.ifr_mtu <= 28)
			continue;
		payload = (size_t)ifr.ifr_mtu - 28;
		if (payload > UDP_MAX_PAYLOAD)
			payload = UDP_MAX_PAYLOAD;
		if (!best || payload < best)
			best = payload;
	}
	if (fd >= 0)
		close(fd);
	freeifaddrs(ifa_list);
	return best ? best : 1472;
}

static int udp_socket(const struct sockaddr_in *addr, int sockbuf, struct sockaddr_in *bound)
{
	socklen_t len = sizeof(*bound);
	int fd, one = 1, ret;

	fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (sockbuf > 0) {
		/* root may exceed rmem_max/wmem_max; others get what the system allows */
		if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &sockbuf, sizeof(sockbuf)))
			(void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sockbuf, sizeof(sockbuf));
		if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &sockbuf, sizeof(sockbuf)))
			(void)setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sockbuf, sizeof(sockbuf));
	}
	/* ECN (RFC 3168): send ECT(0), so routers mark congestion instead of dropping,
	 * and learn the marks (IP_RECVTOS) so the engine can react to CE */
	{
		int tos = IPTOS_ECN_ECT0;

		(void)setsockopt(fd, IPPROTO_IP, IP_TOS, &tos, sizeof(tos));
	}
	(void)setsockopt(fd, IPPROTO_IP, IP_RECVTOS, &one, sizeof(one));
	/* the kernel's receive timestamps: how long a datagram waited for us while
	 * we were away (descheduled), which is no congestion (protocol.md §4.5) */
	(void)setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one));
	/* never fragment (every packet is sized to the path MTU), which also makes
	 * the kernel send IP ID 0 on this unconnected socket: the RoCEv2 ICRC
	 * covers the IP ID and both ends compute it with 0 (protocol.md §5.1) */
	{
		int pmtu = IP_PMTUDISC_DO;

		(void)setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof(pmtu));
	}
	if (bind(fd, (const struct sockaddr *)addr, sizeof(*addr))) {
		ret = -errno;
		close(fd);
		return ret;
	}
	if (getsockname(fd, (struct sockaddr *)bound, &len)) {
		ret = -errno;
		close(fd);
		return ret;
	}
	return fd;
}

static void udp_lend_close(struct braid_udp *udp)
{
	if (udp->pipe[0] >= 0) {
		close(udp->pipe[0]);
		close(udp->pipe[1]);
	}
	if (udp->devnull >= 0)
		close(udp->devnull);
	udp->pipe[0] = udp->pipe[1] = udp->devnull = -1;
}

static void udp_close(struct braid_wire *wire)
{
	struct braid_udp *udp = (struct braid_udp *)wire;
	int i;

	for (i = 0; i < (int)wire->entropies; i++) {
		if (udp->fds[i] >= 0)
			close(udp->fds[i]);
	}
	if (udp->epfd >= 0)
		close(udp->epfd);
	if (udp->pathfd >= 0)
		close(udp->pathfd);
	udp_lend_close(udp);
	udp_shm_close(udp->shm);
	free(udp->ports);
	free(udp->fds);
	free(udp);
}

/*
 * Sending a payload by reference (BRAID_PKT_LEND, wire.lend_min bytes or more):
 * the payload's pages are vmspliced into a pipe and spliced from it into
 * the socket after the copied header, corked into one datagram. The
 * kernel keeps a reference to the pages instead of copying them; the one
 * copy left is the receiver's (on loopback, straight from the sender's
 * pages into the receiver's buffer). A datagram holds at most
 * MAX_SKB_FRAGS pieces (net.core.max_skb_frags); the checksum is left to
 * the device (the cork's GSO size is set, which a datagram no longer than
 * it leaves whole).
 */
static void udp_lend_setup(struct braid_udp *udp, size_t lend_min)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t frags = 17;
	FILE *f;

	if (!lend_min || page <= 0)
		return;
	f = fopen("/proc/sys/net/core/max_skb_frags", "re");
	if (f) {
		unsigned int v;

		if (fscanf(f, "%u", &v) == 1 && v < frags)
			frags = v;
		fclose(f);
	}
	if (frags < 4)
		return;
	udp->page = (size_t)page;
	udp->lend_frags = frags - 2;
	udp->wire.lend_min = lend_min;
}

/*
 * Local peers through shared memory (braid_udp_shm.c): the endpoint's
 * ports name its rings' segment. Where it cannot be made (no /dev/shm, a
 * wildcard address), every datagram goes by UDP, as with it off.
 */
static void udp_local_setup(struct braid_udp *udp, const struct braid_wire_params *params)
{
	int i, n = (int)udp->wire.entropies;

	udp->ports = malloc((size_t)n * sizeof(*udp->ports));
	if (!udp->ports)
		return;
	for (i = 0; i < n; i++) {
		struct sockaddr_in b;
		socklen_t len = sizeof(b);

		if (getsockname(udp->fds[i], (struct sockaddr *)&b, &len))
			break;
		udp->ports[i] = ntohs(b.sin_port);
	}
	if (i < n || udp_shm_open(&udp->shm, &udp->wire.name, udp->ports, n, params->local_rings,
				  params->local_ring_bytes, udp->wire.mtu, params->lend_min, udp->fds[0],
				  &udp->wire.local)) {
		free(udp->ports);
		udp->ports = NULL;
		udp->shm = NULL;
		return;
	}
	udp->wire.local.on = true;
	udp->shm_ago = UINT32_MAX;	/* the rings have brought nothing yet */
}

static int udp_open(const struct braid_wire_params *params, struct braid_wire **wire)
{
	struct sockaddr_in bind_addr, bound;
	struct braid_udp *udp;
	int i, fd, nfds;

	if (!params || !wire || params->paths < 1 || params->paths > BRAID_WIRE_MAX_PATHS ||
	    params->addr.sin_family != AF_INET)
		return -FI_EINVAL;
	udp = calloc(1, sizeof(*udp));
	if (!udp)
		return -FI_ENOMEM;
	nfds = braid_wire_selectors(params->paths);
	udp->fds = malloc((size_t)nfds * sizeof(*udp->fds));
	if (!udp->fds) {
		free(udp);
		return -FI_ENOMEM;
	}
	for (i = 0; i < nfds; i++)
		udp->fds[i] = -1;
	udp->epfd = -1;
	udp->pathfd = -1;
	udp->pipe[0] = udp->pipe[1] = udp->devnull = -1;
	udp->wire.ops = &braid_udp_wire_ops;
	udp->wire.paths = params->paths;
	udp->wire.entropies = (uint32_t)nfds;

	for (i = 0; i < nfds; i++) {
		bind_addr = params->addr;
		if (i > 0)
			bind_addr.sin_port = 0;	/* each path: its own source port */
		fd = udp_socket(&bind_addr, params->sockbuf, &bound);
		if (fd < 0) {
			udp_close(&udp->wire);
			return fd == -EADDRINUSE ? -FI_EADDRINUSE :
			       fd == -EADDRNOTAVAIL ? -FI_EADDRNOTAVAIL : fd;
		}
		udp->fds[i] = fd;
		if (i == 0)
			udp->wire.name = bound;
	}
	if (nfds > 1) {
		struct epoll_event home = { .events = EPOLLIN, .data.u32 = 0 };
		struct epoll_event paths = { .events = EPOLLIN, .data.u32 = UINT32_MAX };

		udp->epfd = epoll_create1(EPOLL_CLOEXEC);
		udp->pathfd = epoll_create1(EPOLL_CLOEXEC);
		for (i = 1; udp->pathfd >= 0 && i < nfds; i++) {
			struct epoll_event ev = { .events = EPOLLIN, .data.u32 = (uint32_t)i };

			if (epoll_ctl(udp->pathfd, EPOLL_CTL_ADD, udp->fds[i], &ev))
				break;
		}
		if (udp->epfd < 0 || udp->pathfd < 0 || i < nfds ||
		    epoll_ctl(udp->epfd, EPOLL_CTL_ADD, udp->fds[0], &home) ||
		    epoll_ctl(udp->epfd, EPOLL_CTL_ADD, udp->pathfd, &paths)) {
			udp_close(&udp->wire);
			return -FI_ENOMEM;
		}
	}
	udp->wire.mtu = braid_wire_if_mtu(params->addr.sin_addr);
	{
		/* UDP GSO (Linux 4.18): runs of up to 64 datagrams, 64 KiB in all, in one write */
		int probe = 1200;	/* the socket option is an int (the cmsg a u16) */
		size_t segs = udp->wire.mtu ? 65000 / udp->wire.mtu : 0;

		if (!setsockopt(udp->fds[0], SOL_UDP, UDP_SEGMENT, &probe, sizeof(probe))) {
			probe = 0;	/* back to none as the socket's default */
			(void)setsockopt(udp->fds[0], SOL_UDP, UDP_SEGMENT, &probe, sizeof(probe));
			udp->wire.gso_segs = segs > 64 ? 64 : segs > 1 ? (uint32_t)segs : 0;
		}
	}
	udp->wire.rx_max = udp->wire.mtu;
	if (params->gro) {
		/*
		 * UDP GRO (Linux 5.0): the host may hand a run of datagrams of one
		 * sender in one receive (the NIC's GRO coalesced them), told by
		 * a UDP_GRO cmsg with their length; a receive buffer then takes
		 * up to 64 KiB. Every socket or none: a run must never be cut.
		 */
		int one = 1;

		for (i = 0; i < nfds; i++)
			if (setsockopt(udp->fds[i], SOL_UDP, UDP_GRO, &one, sizeof(one)))
				break;
		if (i == nfds) {
			udp->wire.gro = true;
			udp->wire.rx_max = 65535;	/* a run: 64 KiB at most, whatever the MTU */
		} else {
			one = 0;
			while (i-- > 0)
				(void)setsockopt(udp->fds[i], SOL_UDP, UDP_GRO, &one, sizeof(one));
		}
	}
	udp_lend_setup(udp, params->lend_min);
	if (params->local)
		udp_local_setup(udp, params);
	*wire = &udp->wire;
	return 0;
}

/* Map a send error to FI_E*: these refuse one packet, not the whole wire. */
static int udp_tx_errno(int err)
{
	switch (err) {
	case EMSGSIZE:
		return -FI_EMSGSIZE;
	case ENETUNREACH:
	case EHOSTUNREACH:
		return -FI_EHOSTUNREACH;
	case ECONNREFUSED:
		return -FI_ECONNREFUSED;
	case EACCES:
	case EPERM:
		return -FI_EACCES;
	default:
		return -FI_EIO;
	}
}

/* The kernel would not lend: every payload is copied from now on. */
static void udp_lend_off(struct braid_udp *udp)
{
	udp->wire.lend_min = 0;
}

/* Open the pipe lent payloads go through. Return: 0, or -1 (then nothing is lent). */
static int udp_lend_open(struct braid_udp *udp)
{
	if (pipe2(udp->pipe, O_CLOEXEC | O_NONBLOCK)) {
		udp->pipe[0] = udp->pipe[1] = -1;
		return -1;
	}
	/* room for a datagram's pages however they fall (16 by default) */
	(void)fcntl(udp->pipe[1], F_SETPIPE_SZ, (int)((udp->lend_frags + 2) * udp->page));
	if (udp->devnull < 0)
		udp->devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
	return 0;
}

/* Empty the pipe of @left bytes a failed send left in it (or start it afresh). */
static void udp_lend_drain(struct braid_udp *udp, size_t left)
{
	while (left && udp->devnull >= 0) {
		ssize_t r = splice(udp->pipe[0], NULL, udp->devnull, NULL, left, SPLICE_F_NONBLOCK);

		if (r <= 0)
			break;
		left -= (size_t)r;
	}
	if (left) {
		close(udp->pipe[0]);
		close(udp->pipe[1]);
		if (udp_lend_open(udp))
			udp_lend_off(udp);
	}
}

/*
 * Send @pkt on @fd with the pages of its last iov entry lent (see
 * udp_lend_setup): the header and whatever of the payload comes before its
 * first whole page are copied, corked, and the rest is spliced after them.
 * Return: 1 sent; 0 the socket is full (nothing went: try again later);
 * -1 not lent (nothing went: send it by copy).
 */
static int udp_tx_lend(struct braid_udp *udp, int fd, struct braid_pkt *pkt)
{
	struct iovec head[16];
	const struct iovec *last = &pkt->iov[pkt->iovcnt - 1];
	uintptr_t base = (uintptr_t)last->iov_base, end = base + last->iov_len;
	uintptr_t cut = (base + udp->page - 1) & ~(uintptr_t)(udp->page - 1);
	uintptr_t end_up = (end + udp->page - 1) & ~(uintptr_t)(udp->page - 1);
	char ctrl[CMSG_SPACE(sizeof(uint16_t))];
	struct msghdr mh = { 0 };
	struct cmsghdr *cm;
	struct iovec lent;
	size_t len = 0, left;
	uint16_t whole;
	int i, nh = 0;
	ssize_t r;

	if (pkt->iovcnt < 2 || pkt->iovcnt > (int)(sizeof(head) / sizeof(head[0])) - 1)
		return -1;
	/* the lent part: whole pages to the end, as many as a datagram may hold */
	if (end_up > cut && (end_up - cut) / udp->page > udp->lend_frags)
		cut = end_up - udp->lend_frags * udp->page;
	if (cut >= end || end - cut < udp->wire.lend_min)
		return -1;
	for (i = 0; i < pkt->iovcnt; i++)
		len += pkt->iov[i].iov_len;
	if (len > UINT16_MAX || len > udp->wire.mtu)
		return -1;
	for (i = 0; i < pkt->iovcnt - 1; i++)
		if (pkt->iov[i].iov_len)
			head[nh++] = pkt->iov[i];
	if (cut > base)
		head[nh++] = (struct iovec){ (void *)base, cut - base };
	if (udp->pipe[0] < 0 && udp_lend_open(udp)) {
		udp_lend_off(udp);
		return -1;
	}
	lent = (struct iovec){ (void *)cut, end - cut };
	r = vmsplice(udp->pipe[1], &lent, 1, SPLICE_F_NONBLOCK);
	if (r != (ssize_t)lent.iov_len) {
		/* memory the kernel cannot lend (or a pipe too small): by copy */
		udp_lend_drain(udp, r > 0 ? (size_t)r : 0);
		return -1;
	}
	/* the copied head, corked; the cork's GSO size (the whole datagram) leaves
	 * the checksum to the device and the datagram whole */
	whole = (uint16_t)len;
	mh.msg_name = &pkt->addr;
	mh.msg_namelen = sizeof(pkt->addr);
	mh.msg_iov = head;
	mh.msg_iovlen = (size_t)nh;
	mh.msg_control = ctrl;
	mh.msg_controllen = sizeof(ctrl);
	cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_UDP;
	cm->cmsg_type = UDP_SEGMENT;
	cm->cmsg_len = CMSG_LEN(sizeof(uint16_t));
	memcpy(CMSG_DATA(cm), &whole, sizeof(whole));
	if (sendmsg(fd, &mh, MSG_MORE | MSG_DONTWAIT) < 0) {
		int err = errno;

		udp_lend_drain(udp, lent.iov_len);
		if (err == EAGAIN || err == EWOULDBLOCK || err == ENOBUFS || err == EINTR)
			return 0;
		return -1;	/* sent by copy, which reports what is wrong */
	}
	/* the pages after it; the last splice ends the cork and sends the datagram
	 * (an error on the way drops what was corked: the kernel flushes the cork) */
	for (left = lent.iov_len; left; left -= (size_t)r) {
		r = splice(udp->pipe[0], NULL, fd, NULL, left, SPLICE_F_NONBLOCK);
		if (r <= 0) {
			int err = r < 0 ? errno : EIO;

			udp_lend_drain(udp, left);
			if (err == EAGAIN || err == EWOULDBLOCK || err == ENOBUFS || err == EINTR)
				return 0;	/* the socket is full: all of it again later */
			/* the kernel would not: copy this one and all after it */
			udp_lend_off(udp);
			return -1;
		}
	}
	udp->wire.tx_lent++;
	return 1;
}

/* @pkt may go with its payload lent (udp_tx_lend). */
static inline bool udp_lendable(const struct braid_udp *udp, const struct braid_pkt *pkt)
{
	return udp->wire.lend_min && (pkt->flags & BRAID_PKT_LEND) && !pkt->gso_size &&
	       pkt->iovcnt > 1 && pkt->iov[pkt->iovcnt - 1].iov_len >= udp->wire.lend_min;
}

/* @pkt goes to a local peer's ring (udp_shm_tx) */
static inline bool udp_local(struct braid_udp *udp, const struct braid_pkt *pkt)
{
	return udp->shm && udp_shm_local(udp->shm, pkt);
}

static int udp_tx(struct braid_wire *wire, struct braid_pkt *pkts, int n)
{
	struct braid_udp *udp = (struct braid_udp *)wire;
	struct mmsghdr msgs[UDP_BURST_MAX];
	char ctrl[UDP_BURST_MAX][CMSG_SPACE(sizeof(uint16_t))];
	int done = 0;

	while (done < n) {
		uint32_t path = pkts[done].path;
		int batch = 0, sent, fd;

		if (path >= wire->entropies)
			path = 0;
		fd = udp->fds[path];
		if (udp->shm) {
			int r = udp_shm_tx(udp->shm, &pkts[done], udp->ports[path]);

			if (r < 0)
				return done;	/* the ring is full: the rest later */
			if (r > 0) {
				if (pkts[done].status)
					wire->tx_errors++;
				else
					wire->tx_packets++;
				if (r == 2)
					wire->tx_lent++;
				done++;
				continue;
			}
		}
		if (udp_lendable(udp, &pkts[done])) {
			int r = udp_tx_lend(udp, fd, &pkts[done]);

			if (r == 0)
				return done;
			if (r == 1) {
				pkts[done].status = 0;
				wire->tx_packets++;
				done++;
				continue;
			}
			/* not lent: copied below, alone */
			batch = 0;
		}
		/* one sendmmsg per run of packets on the same route (a packet that may
		 * be lent starts a run of its own) */
		while (done + batch < n && batch < UDP_BURST_MAX &&
		       (!batch || (!udp_lendable(udp, &pkts[done + batch]) &&
				   !udp_local(udp, &pkts[done + batch]))) &&
		       (pkts[done + batch].path == path ||
			(path == 0 && pkts[done + batch].path >= wire->entropies))) {
			struct msghdr *mh = &msgs[batch].msg_hdr;

			memset(mh, 0, sizeof(*mh));
			mh->msg_name = &pkts[done + batch].addr;
			mh->msg_namelen = sizeof(struct sockaddr_in);
			mh->msg_iov = pkts[done + batch].iov;
			mh->msg_iovlen = pkts[done + batch].iovcnt;
			if (pkts[done + batch].gso_size) {
				/* a run of datagrams for the kernel to cut (UDP GSO) */
				struct cmsghdr *cm;

				mh->msg_control = ctrl[batch];
				mh->msg_controllen = sizeof(ctrl[batch]);
				cm = CMSG_FIRSTHDR(mh);
				cm->cmsg_level = SOL_UDP;
				cm->cmsg_type = UDP_SEGMENT;
				cm->cmsg_len = CMSG_LEN(sizeof(uint16_t));
				memcpy(CMSG_DATA(cm), &pkts[done + batch].gso_size, sizeof(uint16_t));
			}
			batch++;
		}
		sent = sendmmsg(fd, msgs, batch, MSG_DONTWAIT);
		if (sent < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS ||
			    errno == EINTR)
				return done;
			/* the first packet of the run is refused; the rest go on */
			pkts[done].status = udp_tx_errno(errno);
			wire->tx_errors++;
			done++;
			continue;
		}
		for (int i = 0; i < sent; i++)
			pkts[done + i].status = 0;
		wire->tx_packets += sent;
		done += sent;
		if (sent < batch)
			continue;	/* retry from the packet that did not go */
	}
	return done;
}

static int udp_tx_burst(struct braid_wire *wire, struct braid_pkt *pkts, int n)
{
	struct braid_udp *udp = (struct braid_udp *)wire;
	int done = udp_tx(wire, pkts, n);

	if (udp->shm)
		udp_shm_tx_done(udp->shm);
	return done;
}

/*
 * The kernel's receive timestamps are CLOCK_REALTIME: udp_clock() reads how
 * far CLOCK_MONOTONIC is from it (*@off) and now on it (*@mono);
 * udp_rx_ns() moves a timestamp onto the monotonic clock, never after now
 * (the two clocks were read a moment apart). 0: none.
 */
static void udp_clock(int64_t *off, uint64_t *mono)
{
	struct timespec m, r;

	clock_gettime(CLOCK_REALTIME, &r);
	clock_gettime(CLOCK_MONOTONIC, &m);
	*off = ((int64_t)m.tv_sec - r.tv_sec) * 1000000000LL + (m.tv_nsec - r.tv_nsec);
	*mono = (uint64_t)m.tv_sec * 1000000000ULL + (uint64_t)m.tv_nsec;
}

static uint64_t udp_rx_ns(const struct cmsghdr *cm, int64_t off, uint64_t mono)
{
	struct timespec ts;
	int64_t t;

	memcpy(&ts, CMSG_DATA(cm), sizeof(ts));
	t = (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec + off;
	if (t <= 0)
		return 0;
	return (uint64_t)t < mono ? (uint64_t)t : mono;
}

/* the first @len bytes of @src's buffers into @dst's (as many as they hold) */
static void udp_iov_move(struct braid_pkt *dst, const struct braid_pkt *src, size_t len)
{
	size_t off = 0;

	for (int i = 0; i < src->iovcnt && off < len; i++) {
		size_t l = src->iov[i].iov_len < len - off ? src->iov[i].iov_len : len - off;

		braid_iov_scatter(dst->iov, (size_t)dst->iovcnt, off, src->iov[i].iov_base, l);
		off += l;
	}
}

/*
 * Take the empty datagrams (local peers' doorbells: braid_udp_shm.c) out of
 * a receive of @got: the ones after each move down (rare: a doorbell wakes
 * a sleeper, whose socket is empty). Return how many are left.
 */
static int udp_rx_doorbells(struct braid_pkt *pkts, struct mmsghdr *msgs, int got)
{
	int i, j;

	for (i = 0; i < got; i++) {
		if (msgs[i].msg_len)
			continue;
		for (j = i + 1; j < got; j++) {
			udp_iov_move(&pkts[j - 1], &pkts[j], msgs[j].msg_len);
			msgs[j - 1].msg_len = msgs[j].msg_len;
			msgs[j - 1].msg_hdr.msg_flags = msgs[j].msg_hdr.msg_flags;
			msgs[j - 1].msg_hdr.msg_controllen = msgs[j].msg_hdr.msg_controllen;
			memcpy(msgs[j - 1].msg_hdr.msg_control, msgs[j].msg_hdr.msg_control,
			       msgs[j].msg_hdr.msg_controllen);
			pkts[j - 1].addr = pkts[j].addr;
		}
		got--;
		i--;
	}
	return got;
}

/* Receive up to @n datagrams from socket @idx into @pkts. Return how many. */
static int udp_rx_sock(struct braid_udp *udp, int idx, struct braid_pkt *pkts, int n)
{
	struct mmsghdr msgs[UDP_BURST_MAX];
	char ctrl[UDP_BURST_MAX][2 * CMSG_SPACE(sizeof(int)) + CMSG_SPACE(sizeof(struct timespec))];
	uint64_t mono;
	int64_t off;
	int got, i;

	for (i = 0; i < n; i++) {
		struct msghdr *mh = &msgs[i].msg_hdr;

		memset(mh, 0, sizeof(*mh));
		mh->msg_name = &pkts[i].addr;
		mh->msg_namelen = sizeof(struct sockaddr_in);
		mh->msg_iov = pkts[i].iov;
		mh->msg_iovlen = pkts[i].iovcnt;
		mh->msg_control = ctrl[i];
		mh->msg_controllen = sizeof(ctrl[i]);
	}
	/* MSG_TRUNC: msg_len reports the full datagram length */
	got = recvmmsg(udp->fds[idx], msgs, n, MSG_DONTWAIT | MSG_TRUNC, NULL);
	if (got <= 0)
		return 0;
	if (udp->shm)
		got = udp_rx_doorbells(pkts, msgs, got);
	/* the timestamps are CLOCK_REALTIME: moved onto the engine's monotonic clock */
	udp_clock(&off, &mono);
	for (i = 0; i < got; i++) {
		struct msghdr *mh = &msgs[i].msg_hdr;
		struct cmsghdr *cm;

		pkts[i].len = msgs[i].msg_len;
		pkts[i].path = (uint32_t)idx;
		pkts[i].flags = (mh->msg_flags & MSG_TRUNC) ? BRAID_PKT_TRUNC : 0;
		pkts[i].rx_ns = 0;
		pkts[i].gso_size = 0;
		for (cm = CMSG_FIRSTHDR(mh); cm; cm = CMSG_NXTHDR(mh, cm)) {
			if (cm->cmsg_level == SOL_UDP && cm->cmsg_type == UDP_GRO &&
			    cm->cmsg_len >= CMSG_LEN(sizeof(int))) {
				int seg;

				memcpy(&seg, CMSG_DATA(cm), sizeof(seg));
				/* a run of datagrams of seg bytes (one alone: no run) */
				if (seg > 0 && (size_t)seg < pkts[i].len && seg <= UINT16_MAX)
					pkts[i].gso_size = (uint16_t)seg;
				continue;
			}
			if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_TIMESTAMPNS &&
			    cm->cmsg_len >= CMSG_LEN(sizeof(struct timespec))) {
				pkts[i].rx_ns = udp_rx_ns(cm, off, mono);
				continue;
			}
			if (cm->cmsg_level == IPPROTO_IP && cm->cmsg_type == IP_TOS &&
			    cm->cmsg_len >= CMSG_LEN(1) &&
			    (*(unsigned char *)CMSG_DATA(cm) & IPTOS_ECN_MASK) == IPTOS_ECN_CE)
				pkts[i].flags |= BRAID_PKT_ECN_CE;
		}
	}
	return got;
}

/* Receive from the path sockets that have something, up to @n. */
static int udp_rx_paths(struct braid_udp *udp, struct braid_pkt *pkts, int n)
{
	struct epoll_event evs[BRAID_WIRE_SPARE_MAX * 2 + BRAID_WIRE_MAX_PATHS];
	int got = 0, k, i;

	k = epoll_wait(udp->pathfd, evs, (int)(sizeof(evs) / sizeof(evs[0])), 0);
	for (i = 0; i < k && got < n; i++)
		got += udp_rx_sock(udp, (int)evs[i].data.u32, pkts + got, n - got);
	return got;
}

/* Receive from the path sockets that have something, up to @n, noting where replies come. */
static int udp_rx_look(struct braid_udp *udp, struct braid_pkt *pkts, int n)
{
	int got = udp_rx_paths(udp, pkts, n);

	udp->looked = true;
	udp->unlooked = 0;
	if (got)
		udp->home_run = 0;
	return got;
}

/*
 * Receive from the home socket (if @home), then from the path sockets with
 * something. The home socket at once, then one look at which path sockets
 * have something and a recvmmsg on each. While the home socket has data,
 * the look is every other receive (a ping-pong's answer is handed on one
 * system call sooner; ACKs on the path sockets wait one receive at most);
 * after a burst filled from the home socket alone, the path sockets first.
 * While they are quiet (the last UDP_QUIET_RUN datagrams came to the home
 * socket: the peers' replies ride in their answers), they are looked at
 * every UDP_QUIET_LOOK receives, so that a busy-polled receive that finds
 * nothing costs one system call, not two; a datagram found there ends the
 * quiet.
 */
static int udp_rx(struct braid_wire *wire, struct braid_pkt *pkts, int n, bool home)
{
	struct braid_udp *udp = (struct braid_udp *)wire;
	int got = 0, homes = 0;
	bool look;

	if (n > UDP_BURST_MAX)
		n = UDP_BURST_MAX;
	if (n <= 0)
		return 0;
	if (udp->pathfd >= 0 && (udp->owed || !home)) {
		got = udp_rx_look(udp, pkts, n);
		udp->owed = false;
		if (home && got < n)
			homes = udp_rx_sock(udp, 0, pkts + got, n - got);
	} else {
		if (home)
			homes = udp_rx_sock(udp, 0, pkts, n);
		if (udp->pathfd >= 0 && homes < n) {
			if (udp->home_run >= UDP_QUIET_RUN)
				look = ++udp->unlooked >= UDP_QUIET_LOOK;
			else
				look = !(homes && udp->looked);
			udp->looked = false;
			if (look)
				got = udp_rx_look(udp, pkts + homes, n - homes);
		} else {
			udp->looked = false;
		}
		udp->owed = udp->pathfd >= 0 && homes == n;
	}
	udp->home_run = udp->home_run + (uint32_t)homes < UDP_QUIET_RUN ?
			udp->home_run + (uint32_t)homes : UDP_QUIET_RUN;
	got += homes;
	wire->rx_packets += (uint64_t)got;
	return got;
}

/* the sockets have something (one epoll_wait on the wait set) */
static bool udp_socks_ready(struct braid_udp *udp)
{
	struct epoll_event ev;

	return udp->epfd < 0 || epoll_wait(udp->epfd, &ev, 1, 0) != 0;
}

/*
 * With local peers, while the rings bring datagrams (one in the last
 * UDP_LOCAL_ACTIVE receives) and the sockets have had nothing for
 * UDP_QUIET_RUN looks, the sockets are looked at every UDP_LOCAL_LOOK
 * receives, with one epoll_wait: a busy-polled receive between local peers
 * costs no system call, and a datagram from another host waits
 * UDP_LOCAL_LOOK receives at most (a few microseconds) when it ends the
 * sockets' quiet: a due look that finds the wait set ready ends the quiet,
 * whichever receive (rx_burst, rx_peek, rx_routes) it fell to.
 * udp_socks_due() says whether this receive looks (false: it leaves the
 * sockets alone); udp_socks_found() notes what a look found.
 */
static bool udp_socks_quiet(const struct braid_udp *udp)
{
	return udp->shm && udp->sock_empty >= UDP_QUIET_RUN && udp->shm_ago <= UDP_LOCAL_ACTIVE;
}

static bool udp_socks_due(struct braid_udp *udp)
{
	if (!udp_socks_quiet(udp))
		return true;
	if (++udp->sock_skip < UDP_LOCAL_LOOK)
		return false;
	udp->sock_skip = 0;
	if (!udp_socks_ready(udp))
		return false;
	/* something waits: the quiet ends until looks find nothing again (the look
	 * due may be rx_routes', which reads the path sockets, not the home one) */
	udp->sock_empty = 0;
	return true;
}

static void udp_socks_found(struct braid_udp *udp, int got)
{
	udp->sock_skip = 0;
	udp->sock_empty = got ? 0 : udp->sock_empty < UDP_QUIET_RUN ? udp->sock_empty + 1 :
		UDP_QUIET_RUN;
}

/* the rings gave @got datagrams */
static void udp_shm_got(struct braid_udp *udp, int got)
{
	if (got)
		udp->shm_ago = 0;
	else if (udp->shm_ago < UINT32_MAX)
		udp->shm_ago++;
}

/* With local peers: the rings, then the sockets (after a burst the rings filled, the sockets first). */
static int udp_rx_burst(struct braid_wire *wire, struct braid_pkt *pkts, int n)
{
	struct braid_udp *udp = (struct braid_udp *)wire;
	int got = 0, socks;

	if (!udp->shm)
		return udp_rx(wire, pkts, n, true);
	if (!udp->shm_owed)
		got = udp_shm_rx(udp->shm, pkts, n);
	udp_shm_got(udp, got);
	if (got < n && udp_socks_due(udp)) {
		socks = udp_rx(wire, pkts + got, n - got, true);
		udp_socks_found(udp, socks);
		got += socks;
	}
	if (udp->shm_owed && got < n) {
		int more = udp_shm_rx(udp->shm, pkts + got, n - got);

		if (more)
			udp->shm_ago = 0;
		got += more;
	}
	udp->shm_owed = !udp->shm_owed && got == n;
	return got;
}

static int udp_tx_msg(struct braid_wire *wire, const struct sockaddr_in *dst, const void *hdr,
		      size_t hdr_len, const struct iovec *iov, int iovcnt)
{
	struct braid_udp *udp = (struct braid_udp *)wire;
	int ret;

	if (!udp->shm)
		return 0;
	ret = udp_shm_tx_msg(udp->shm, ntohl(dst->sin_addr.s_addr), ntohs(dst->sin_port), hdr,
			     hdr_len, iov, iovcnt);
	udp_shm_tx_done(udp->shm);	/* (a sleeping peer is rung) */
	if (ret)
		wire->tx_packets++;
	return ret;
}

static int udp_rx_msgs(struct braid_wire *wire,
		       int (*fn)(void *ctx, uint32_t ip, uint16_t port, const void *rec, size_t len),
		       void *ctx, int max, bool refuse, bool *more)
{
	struct braid_udp *udp = (struct braid_udp *)wire;
	int got;

	if (!udp->shm)
		return 0;
	got = udp_shm_rx_msgs(udp->shm, fn, ctx, max, refuse, more);
	if (got)
		udp->shm_ago = 0;
	return got;
}

/*
 * Nothing in the rings, and the sockets quiet and not due a look this time
 * (udp_socks_due): what rx_burst and rx_msgs would do, with nothing found.
 */
static bool udp_rx_idle(struct braid_wire *wire, bool refuse)
{
	struct braid_udp *udp = (struct braid_udp *)wire;

	if (!udp->shm || udp->shm_owed || !udp_socks_quiet(udp) ||
	    udp->sock_skip + 1 >= UDP_LOCAL_LOOK || !udp_shm_idle(udp->shm, refuse))
		return false;
	udp->sock_skip++;	/* (this receive left the sockets alone) */
	udp_shm_got(udp, 0);
	return true;
}

static int udp_rx_routes(struct braid_wire *wire, struct braid_pkt *pkts, int n)
{
	struct braid_udp *udp = (struct braid_udp *)wire;
	int got;

	if (udp->shm && !udp_socks_due(udp))
		return 0;
	got = udp_rx(wire, pkts, n, false);
	if (udp->shm)
		udp_socks_found(udp, got);
	return got;
}

static size_t udp_rx_peek(struct braid_wire *wire, void *buf, size_t cap, struct sockaddr_in *from,
			  uint64_t *rx_ns)
{
	struct braid_udp *udp = (struct braid_udp *)wire;
	struct iovec iov = { .iov_base = buf, .iov_len = cap };
	char ctrl[2 * CMSG_SPACE(sizeof(int)) + CMSG_SPACE(sizeof(struct timespec))];
	struct msghdr mh = {
		.msg_name = from, .msg_namelen = sizeof(*from), .msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = ctrl, .msg_controllen = sizeof(ctrl),
	};
	struct cmsghdr *cm;
	ssize_t r;

	*rx_ns = 0;
	if (udp->shm) {
		size_t len = udp_shm_peek(udp->shm, buf, cap, from, rx_ns);

		udp_shm_got(udp, len != 0);
		if (len)
			return len;
		if (!udp_socks_due(udp))
			return 0;	/* (the quiet sockets, while the rings are active) */
	}
	while ((r = recvmsg(udp->fds[0], &mh, MSG_PEEK | MSG_DONTWAIT | MSG_TRUNC)) == 0) {
		/* an empty datagram (a local peer's doorbell): taken, and the next looked at */
		char none;

		if (recv(udp->fds[0], &none, sizeof(none), MSG_DONTWAIT) < 0)
			return 0;
		mh.msg_namelen = sizeof(*from);
		mh.msg_controllen = sizeof(ctrl);
	}
	if (udp->shm)
		udp_socks_found(udp, r > 0);
	if (r < 0)
		return 0;
	for (cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_TIMESTAMPNS &&
		    cm->cmsg_len >= CMSG_LEN(sizeof(struct timespec))) {
			int64_t off;
			uint64_t mono;

			udp_clock(&off, &mono);
			*rx_ns = udp_rx_ns(cm, off, mono);
		}
	}
	return (size_t)r;
}

static int udp_rx_home(struct braid_wire *wire, struct braid_pkt *pkts, int n)
{
	struct braid_udp *udp = (struct braid_udp *)wire;
	int got;

	if (udp->shm && udp_shm_peeked(udp->shm) && n > 0)
		return udp_shm_take(udp->shm, pkts);
	got = udp_rx_sock(udp, 0, pkts, n < UDP_BURST_MAX ? n : UDP_BURST_MAX);

	wire->rx_packets += (uint64_t)got;
	return got;
}

static int udp_wait_fd(struct braid_wire *wire)
{
	struct braid_udp *udp = (struct braid_udp *)wire;

	return udp->epfd >= 0 ? udp->epfd : udp->fds[0];
}

static bool udp_arm(struct braid_wire *wire)
{
	struct braid_udp *udp = (struct braid_udp *)wire;

	return udp->shm && udp_shm_arm(udp->shm);
}

const struct braid_wire_ops braid_udp_wire_ops = {
	.name = "udp",
	.open = udp_open,
	.close = udp_close,
	.tx_burst = udp_tx_burst,
	.rx_burst = udp_rx_burst,
	.wait_fd = udp_wait_fd,
	.rx_peek = udp_rx_peek,
	.rx_home = udp_rx_home,
	.rx_routes = udp_rx_routes,
	.arm = udp_arm,
	.tx_msg = udp_tx_msg,
	.rx_msgs = udp_rx_msgs,
	.rx_idle = udp_rx_idle,
};
