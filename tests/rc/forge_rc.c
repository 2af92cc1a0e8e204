/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * forge_rc.c: a packet for a queue pair is taken only from that QP's peer.
 *
 * Two braid FI_EP_MSG endpoints of one process connect on 127.0.0.1 and
 * exchange a SEND; an AF_PACKET socket on lo captures it (the QP number and
 * PSN an on-path attacker would see). The test then forges the next SEND
 * of that QP (the next PSN, its own payload, a correct ICRC for the real
 * peer's addresses) and sends it to the RC port:
 *  1. from another UDP port (an off-path or on-path third party): the
 *     receiver must drop it: the receive posted stays empty, and the
 *     client's own next SEND, with that PSN, is the one that lands;
 *  2. the same forgery from the real peer's address and port (a raw socket
 *     spoofing it): then it is taken, which shows that the source check,
 *     not a bad PSN or ICRC, is what refused case 1.
 * Also: the two endpoints' QP numbers are not consecutive small numbers.
 * Needs root (AF_PACKET, a raw socket); exit 77 (skip) without.
 * Exit 0 passed, 1 failed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <netinet/ip.h>
#include <netinet/udp.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>

#include "braid_roce.h"

#define CHECK(cond, ...)						\
	do {								\
		if (!(cond)) {						\
			fprintf(stderr, "forge_rc: FAIL: ");		\
			fprintf(stderr, __VA_ARGS__);			\
			fprintf(stderr, " (line %d)\n", __LINE__);	\
			exit(1);					\
		}							\
	} while (0)
#define TRY(call) CHECK((call) == 0, "%s", #call)

static struct fid_eq *eq;
static struct fid_cq *cq[2];
static struct fid_ep *ep[2];	/* 0: the accepted (server) side, 1: the client */
static void *desc;
static uint8_t *buf;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* receive completions of the server side met while waiting for something else */
static struct fi_cq_msg_entry stash;
static bool stashed;

/*
 * Drive both sides (manual progress) until the server's CQ (@side 0) has a
 * receive completion, or the client's (@side 1) a send completion, or @secs pass.
 */
static int cq_wait(int side, struct fi_cq_msg_entry *e, double secs)
{
	double end = now_s() + secs;
	struct fi_cq_msg_entry got;

	if (side == 0 && stashed) {
		*e = stash;
		stashed = false;
		return 1;
	}
	while (now_s() < end) {
		for (int s = 0; s < 2; s++) {
			ssize_t r = fi_cq_read(cq[s], &got, 1);

			if (r == -FI_EAVAIL) {
				struct fi_cq_err_entry err = { 0 };

				fi_cq_readerr(cq[s], &err, 0);
				CHECK(0, "completion error on side %d: %s", s, fi_strerror(err.err));
			}
			if (r != 1 || (got.flags & FI_SEND))
				continue;	/* sends complete on both sides; only receives count */
			CHECK(s == 0, "a receive completed on the client");
			if (side == 0) {
				*e = got;
				return 1;
			}
			stash = got;
			stashed = true;
		}
		if (side == 1)
			return 0;	/* the client: one look while capturing */
	}
	return 0;
}

static void eq_expect(uint32_t want, struct fi_eq_cm_entry *entry)
{
	uint32_t event;
	ssize_t r = fi_eq_sread(eq, &event, entry, sizeof(*entry), 5000, 0);

	CHECK(r >= (ssize_t)sizeof(*entry) && event == want, "EQ: %zd, event %u, wanted %u", r,
	      event, want);
}

/* Capture the next UDP datagram to @dport on lo: its IP+UDP headers and payload. */
static size_t capture(int ps, uint16_t dport, uint8_t *frame, size_t cap, double secs)
{
	double end = now_s() + secs;

	while (now_s() < end) {
		struct pollfd pfd = { .fd = ps, .events = POLLIN };
		ssize_t n;

		if (poll(&pfd, 1, 10) <= 0)
			continue;
		n = recv(ps, frame, cap, 0);
		if (n < (ssize_t)(sizeof(struct iphdr) + sizeof(struct udphdr)))
			continue;
		struct iphdr *ip = (struct iphdr *)frame;
		struct udphdr *udp = (struct udphdr *)(frame + ip->ihl * 4);

		if (ip->protocol == IPPROTO_UDP && ntohs(udp->dest) == dport)
			return (size_t)n;
	}
	return 0;
}

/* A SEND_ONLY of "FORGED" with @v's QP and PSN, its ICRC for addresses @a, into @out; its length. */
static size_t forge(struct braid_roce_view *v, const struct braid_roce_addr *a, uint8_t *out)
{
	struct iovec iov = { .iov_base = (void *)"FORGED", .iov_len = 6 };
	size_t h, pad;

	v->opcode = BRAID_ROCE_SEND_ONLY;
	v->payload_len = 6;
	h = braid_roce_write(out, v);	/* sets PadCnt for 6 bytes */
	pad = (4 - 6 % 4) % 4;
	memcpy(out + h, "FORGED", 6);
	memset(out + h + 6, 0, pad);
	braid_roce_icrc_put(out + h + 6 + pad, braid_roce_icrc(a, out, h, &iov, 1, 6, pad));
	return h + 6 + pad + 4;
}

int main(void)
{
	struct fi_info *hints, *info;
	struct fi_eq_attr eq_attr = { .wait_obj = FI_WAIT_UNSPEC };
	struct fi_cq_attr cq_attr = { .format = FI_CQ_FORMAT_MSG, .size = 64 };
	struct fi_eq_cm_entry entry;
	struct fi_cq_msg_entry e;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_pep *pep;
	struct fid_mr *mr;
	uint8_t frame[4096], forged[4096];
	struct braid_roce_view v;
	struct braid_roce_addr a;
	size_t n, plen;
	struct iphdr *ip;
	struct udphdr *udp;
	int ps, us, rs, one = 1;
	uint16_t rc_port;

	if (geteuid() != 0) {
		printf("SKIP: needs root (an AF_PACKET capture on lo and a raw socket)\n");
		return 77;
	}
	ps = socket(AF_PACKET, SOCK_DGRAM, htons(ETH_P_IP));
	rs = socket(AF_INET, SOCK_RAW, IPPROTO_RAW);
	if (ps < 0 || rs < 0) {
		printf("SKIP: no AF_PACKET or raw socket here: %s\n", strerror(errno));
		return 77;
	}
	{
		struct sockaddr_ll ll = { .sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_IP),
					  .sll_ifindex = (int)if_nametoindex("lo") };

		TRY(bind(ps, (struct sockaddr *)&ll, sizeof(ll)));
	}

	/* both sides in one process and one domain: one RC port, 127.0.0.1 */
	hints = fi_allocinfo();
	hints->ep_attr->type = FI_EP_MSG;
	hints->caps = FI_MSG;
	hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY;
	hints->fabric_attr->prov_name = strdup("braid");
	TRY(fi_getinfo(FI_VERSION(1, 17), "127.0.0.1", "0", FI_SOURCE, hints, &info));
	CHECK(!strcmp(info->fabric_attr->prov_name, "braid"), "provider %s",
	      info->fabric_attr->prov_name);
	TRY(fi_fabric(info->fabric_attr, &fabric, NULL));
	TRY(fi_eq_open(fabric, &eq_attr, &eq, NULL));
	TRY(fi_domain(fabric, info, &domain, NULL));
	TRY(fi_passive_ep(fabric, info, &pep, NULL));
	TRY(fi_pep_bind(pep, &eq->fid, 0));
	TRY(fi_listen(pep));
	{
		struct sockaddr_in la;
		size_t alen = sizeof(la);
		struct fi_info *ci;

		TRY(fi_getname(&pep->fid, &la, &alen));
		hints->dest_addr = malloc(sizeof(la));
		memcpy(hints->dest_addr, &la, sizeof(la));
		hints->dest_addrlen = sizeof(la);
		TRY(fi_getinfo(FI_VERSION(1, 17), NULL, NULL, 0, hints, &ci));
		TRY(fi_endpoint(domain, ci, &ep[1], NULL));
		fi_freeinfo(ci);
	}
	buf = aligned_alloc(4096, 1 << 16);
	TRY(fi_mr_reg(domain, buf, 1 << 16, FI_SEND | FI_RECV, 0, 0, 0, &mr, NULL));
	desc = fi_mr_desc(mr);
	for (int s = 1; s >= 0; s--) {
		if (s == 0) {
			TRY(fi_connect(ep[1], hints->dest_addr, NULL, 0));
			eq_expect(FI_CONNREQ, &entry);
			TRY(fi_endpoint(domain, entry.info, &ep[0], NULL));
			fi_freeinfo(entry.info);
		}
		TRY(fi_cq_open(domain, &cq_attr, &cq[s], NULL));
		TRY(fi_ep_bind(ep[s], &eq->fid, 0));
		TRY(fi_ep_bind(ep[s], &cq[s]->fid, FI_TRANSMIT | FI_RECV));
		TRY(fi_enable(ep[s]));
	}
	TRY(fi_recv(ep[0], buf, 64, desc, 0, NULL));
	TRY(fi_accept(ep[0], NULL, 0));
	eq_expect(FI_CONNECTED, &entry);
	eq_expect(FI_CONNECTED, &entry);

	/* 1. a real SEND, captured on its way to the server's RC port */
	memcpy(buf + 1024, "hello", 5);
	TRY(fi_send(ep[1], buf + 1024, 5, desc, 0, NULL));
	rc_port = 0;
	n = 0;
	for (int tries = 0; tries < 50 && !n; tries++) {
		/* the first UDP datagram to a RoCE port: 4791 unless it was taken */
		for (uint16_t p = 4791; !n && p; p = 0)
			n = capture(ps, p, frame, sizeof(frame), 0.1);
		cq_wait(1, &e, 0.01);
	}
	CHECK(n, "no RoCEv2 packet to UDP 4791 captured on lo (the RC port is elsewhere?)");
	rc_port = 4791;
	CHECK(cq_wait(0, &e, 2) && e.len == 5 && !memcmp(buf, "hello", 5), "the real SEND did not arrive");
	ip = (struct iphdr *)frame;
	udp = (struct udphdr *)(frame + ip->ihl * 4);
	plen = ntohs(udp->len) - sizeof(*udp);
	CHECK(!braid_roce_parse((uint8_t *)(udp + 1), plen, &v), "the captured packet does not parse");
	CHECK(v.opcode == BRAID_ROCE_SEND_ONLY, "captured opcode %u", v.opcode);
	printf("captured: QP %u, PSN %u, from port %u to port %u\n", v.dest_qp, v.psn,
	       ntohs(udp->source), ntohs(udp->dest));
	CHECK(v.dest_qp >= 16, "QP number %u: a small number a stranger would guess", v.dest_qp);

	/* 2. the forgery: the QP's next SEND, "FORGED", a good ICRC for the real addresses */
	memset(&v, 0, sizeof(v));
	CHECK(!braid_roce_parse((uint8_t *)(udp + 1), plen, &v), "reparse");
	v.psn = (v.psn + 1) & BRAID_ROCE_PSN_MASK;
	a = (struct braid_roce_addr){ .src_ip = ntohl(ip->saddr), .dst_ip = ntohl(ip->daddr),
				      .src_port = ntohs(udp->source), .dst_port = ntohs(udp->dest),
				      .ip_id = 0 };
	plen = forge(&v, &a, forged);
	TRY(fi_recv(ep[0], buf, 64, desc, 0, NULL));

	/* 2a. from another port: dropped */
	us = socket(AF_INET, SOCK_DGRAM, 0);
	{
		struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons(rc_port),
					  .sin_addr.s_addr = ip->daddr };
		int pmtu = IP_PMTUDISC_DO;

		(void)setsockopt(us, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof(pmtu));
		CHECK(sendto(us, forged, plen, 0, (struct sockaddr *)&to, sizeof(to)) == (ssize_t)plen,
		      "sendto");
	}
	CHECK(!cq_wait(0, &e, 0.3), "a forged SEND from another port completed a receive");
	/* the client's own next SEND has that PSN, and lands */
	memcpy(buf + 1024, "real2", 5);
	TRY(fi_send(ep[1], buf + 1024, 5, desc, 0, NULL));
	CHECK(cq_wait(0, &e, 2) && e.len == 5 && !memcmp(buf, "real2", 5),
	      "the client's next SEND did not land after the forgery");
	printf("ok: a SEND forged for QP %u from another port was dropped; the real one landed\n",
	       v.dest_qp);

	/* 2b. the same forgery from the peer's own address and port: taken (PSN + 2 now) */
	v.psn = (v.psn + 1) & BRAID_ROCE_PSN_MASK;
	{
		uint8_t pkt[4096];
		struct iphdr *oip = (struct iphdr *)pkt;
		struct udphdr *oudp = (struct udphdr *)(pkt + sizeof(*oip));
		struct sockaddr_in to = { .sin_family = AF_INET, .sin_addr.s_addr = ip->daddr };

		plen = forge(&v, &a, forged);
		memset(pkt, 0, sizeof(*oip) + sizeof(*oudp));
		oip->version = 4;
		oip->ihl = 5;
		oip->ttl = 64;
		oip->protocol = IPPROTO_UDP;
		oip->frag_off = htons(IP_DF);
		oip->saddr = ip->saddr;
		oip->daddr = ip->daddr;
		oip->tot_len = htons((uint16_t)(sizeof(*oip) + sizeof(*oudp) + plen));
		oudp->source = udp->source;
		oudp->dest = udp->dest;
		oudp->len = htons((uint16_t)(sizeof(*oudp) + plen));
		memcpy(pkt + sizeof(*oip) + sizeof(*oudp), forged, plen);
		(void)setsockopt(rs, IPPROTO_IP, IP_HDRINCL, &one, sizeof(one));
		CHECK(sendto(rs, pkt, sizeof(*oip) + sizeof(*oudp) + plen, 0, (struct sockaddr *)&to,
			     sizeof(to)) > 0, "raw sendto: %s", strerror(errno));
	}
	TRY(fi_recv(ep[0], buf, 64, desc, 0, NULL));
	CHECK(cq_wait(0, &e, 2) && e.len == 6 && !memcmp(buf, "FORGED", 6),
	      "the forgery from the peer's own address was not taken: the source check is not "
	      "what refused it from another port");
	printf("ok: the same forgery from the peer's own address and port was taken (the check is "
	       "the source)\n");
	/* (the client's QP is now behind the receiver's PSN: close without more traffic) */
	fi_shutdown(ep[1], 0);
	for (int s = 0; s < 2; s++) {
		fi_close(&ep[s]->fid);
		fi_close(&cq[s]->fid);
	}
	fi_close(&mr->fid);
	fi_close(&pep->fid);
	fi_close(&domain->fid);
	fi_close(&eq->fid);
	fi_close(&fabric->fid);
	fi_freeinfo(info);
	fi_freeinfo(hints);
	close(us);
	close(ps);
	close(rs);
	free(buf);
	printf("forge_rc: PASS\n");
	return 0;
}
