/* braid_rdm.c: the FI_EP_RDM data path: libfabric calls in, the RD engine (core/braid_rd*.c) underneath, the wire below. */
#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "braid.h"

#define RDM_TX_FLAGS	(FI_COMPLETION | FI_MORE | FI_INJECT | FI_REMOTE_CQ_DATA | \
			 FI_INJECT_COMPLETE | FI_TRANSMIT_COMPLETE | FI_DELIVERY_COMPLETE | \
			 FI_TRIGGER)
#define RDM_RX_FLAGS	(FI_COMPLETION | FI_MORE | FI_REMOTE_CQ_DATA | FI_MULTI_RECV)
#define RDM_RX_BURST	32
#define RDM_OUT_BURST	64
/* datagrams at least this long are received straight into place when they can be */
#define RDM_DIRECT_MIN	8192
/* more small datagrams than this in one look while placing: back to receiving in bursts */
#define RDM_DIRECT_SMALL	4

uint64_t braid_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void rdm_flush(struct braid_ep *ep, uint64_t now);

/* ---- enable / close ---- */

/* the RD engine's key check of RMA and atomics targeting us: the domain's regions (braid_mr_check) */
static int rdm_mr_check(void *ctx, uint64_t key, uint64_t addr, size_t len, uint32_t access,
			void **ptr)
{
	return braid_mr_check(ctx, key, addr, len,
			      ((access & BRAID_RD_ACC_READ) ? FI_REMOTE_READ : 0) |
			      ((access & BRAID_RD_ACC_WRITE) ? FI_REMOTE_WRITE : 0), ptr);
}

int braid_rdm_enable(struct braid_ep *ep)
{
	struct braid_rd_config cfg;
	struct timespec ts;
	uint32_t seg;
	int ret;

	braid_rd_config_default(&cfg);
	cfg.local_ip = ntohl(ep->wire->name.sin_addr.s_addr);
	cfg.local_port = ntohs(ep->wire->name.sin_port);
	/* the incarnation: real-time milliseconds, so a restarted endpoint is later (§4.1) */
	clock_gettime(CLOCK_REALTIME, &ts);
	cfg.epoch = (uint32_t)((uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
	if (!cfg.epoch)
		cfg.epoch = 1;
	/* a keyed datagram carries its tag besides (protocol.md §2.4): the engine has that much less */
	cfg.mtu = (uint32_t)(ep->wire->mtu - (ep->auth.mode ? BRAID_AUTH_TAG : 0));
	cfg.paths = (uint32_t)ep->wire->paths;
	/* runs of full packets in one write where the wire offers segmentation offload */
	cfg.gso_segs = braid_cfg.gso ? ep->wire->gso_segs : 0;
	cfg.bundle = braid_cfg.bundle;
	cfg.entropies = ep->wire->entropies;
	/* a shared transmit context bounds its sends (braid_ep_tx_take), a shared receive
	 * context's queue holds its receives: theirs are the sizes */
	cfg.max_sends = (uint32_t)(ep->stx ? ep->stx->size :
				   ep->info->tx_attr && ep->info->tx_attr->size ?
				   ep->info->tx_attr->size : braid_cfg.tx_size);
	cfg.max_recvs = (uint32_t)(ep->srx ? ep->srx->size :
				   ep->info->rx_attr && ep->info->rx_attr->size ?
				   ep->info->rx_attr->size : braid_cfg.rx_size);
	cfg.rxq = ep->srx ? ep->srx->rdq : NULL;
	cfg.max_msgs = cfg.max_recvs * 2;
	seg = cfg.mtu - (uint32_t)sizeof(struct braid_rd_data_hdr);
	cfg.stage_pkts = (uint32_t)(braid_cfg.unexp_bytes / seg) + 1;
	/* the home socket's buffer (the kernel doubles SO_RCVBUF and charges each
	 * datagram its skb's size besides): what a sender may have in flight to us */
	if (braid_cfg.sockbuf > 0)
		cfg.rx_queue_pkts = (uint32_t)((2 * (uint64_t)braid_cfg.sockbuf) /
					       (cfg.mtu + 1024) * 3 / 4) + 1;
	cfg.inject_size = seg;
	cfg.peer_timeout_ns = braid_cfg.peer_timeout_ms * 1000000ULL;
	/* payloads sent by reference where the wire can (protocol.md §4.2) */
	cfg.lend_min = ep->wire->lend_min;
	/* without a progress thread nothing would send an ACK held past this progress
	 * call if the application stops calling (its last receive done, it waits on
	 * something else): ACKs leave in the call that received the data (§4.3) */
	if (braid_cfg.progress_us <= 0)
		cfg.ack_delay_ns = 0;
	cfg.idle_ns = (uint64_t)braid_cfg.idle_ms * 1000000ULL;
	cfg.forget_ns = (uint64_t)braid_cfg.forget_ms * 1000000ULL;
	/* user-space progress on busy hosts: RTTs jump by scheduling delays, so the
	 * timers that fire without evidence of loss keep a floor well above them */
	cfg.rto_min_ns = 1000000ULL;
	cfg.tlp_min_ns = 300000ULL;
	cfg.seed = cfg.epoch ^ ((uint64_t)cfg.local_port << 32);
	/* challenge cookies an off-path attacker cannot guess (§4.9): glibc's CSPRNG */
	cfg.random = arc4random;
	cfg.max_peers = (uint32_t)braid_cfg.max_peers;
	/* peers with work in flight: bounded by memory (flows are taken as used), not by
	 * a small pool: unreachable peers must not keep sends to live ones waiting */
	cfg.max_flows = braid_cfg.max_flows ? (uint32_t)braid_cfg.max_flows :
			cfg.max_peers ? cfg.max_peers : 1u << 20;
	cfg.mr_check = rdm_mr_check;
	cfg.mr_ctx = ep;
	/* (a shared queue is its context's: joined under the context's lock, the endpoint's) */
	braid_ep_lock(ep);
	ret = braid_rd_open(&cfg, ep->domain->peers, &ep->rd);
	braid_ep_unlock(ep);
	if (ret)
		return ret;
	/* RDM receives arrive at any time: the wire fd always wakes a waiting reader */
	braid_ep_rx_arm(ep, true);
	return 0;
}

/*
 * A payload lent less than BRAID_RD_LENT_WAIT_NS ago and not acknowledged
 * may not have been read yet, and may be read until it is that old (a
 * receiver drops it after, protocol.md §4.2): the application may reuse
 * its buffers once the endpoint is closed, so closing with sends
 * unacknowledged waits that long at most. (An acknowledged packet was
 * read, or a copy of it was and the lent one is a duplicate.)
 */
static void rdm_lent_wait(struct braid_ep *ep)
{
	uint64_t now = braid_now_ns(), until = ep->lent_ns + BRAID_RD_LENT_WAIT_NS;

	if (ep->lent_ns && now < until) {
		struct timespec ts = { .tv_sec = (time_t)((until - now) / 1000000000ULL),
				       .tv_nsec = (long)((until - now) % 1000000000ULL) };

		while (nanosleep(&ts, &ts) && errno == EINTR)
			;
	}
}

void braid_rdm_close(struct braid_ep *ep)
{
	bool unacked;

	if (!ep->rd)
		return;
	/* (the lock: its engine leaves a shared receive queue, which others use) */
	braid_ep_lock(ep);
	unacked = braid_rd_pending(ep->rd);
	/* acknowledge what arrived before going: the senders' completions wait for it */
	braid_rd_flush_acks(ep->rd);
	rdm_flush(ep, braid_now_ns());
	braid_rd_close(ep->rd);
	ep->rd = NULL;
	braid_ep_unlock(ep);
	if (unacked)
		rdm_lent_wait(ep);
}

/* ---- progress ---- */

/* iovecs for the datagrams of one braid_rd_output() burst, keyed ones included */
#define RDM_OUT_IOVS	(RDM_OUT_BURST * (BRAID_RD_IOV_MAX + 3))

/*
 * braid_rd_out_dgram() for a keyed endpoint (protocol.md §2.4): the same
 * datagram, its first header copied into @hdrs[0] and sealed there (version
 * 2, the tag after it); a GSO run has each of its datagrams sealed so, in
 * @hdrs[0], @hdrs[1], ..., and *@seg counts the tag. Return: packets taken.
 */
static int rdm_out_keyed(struct braid_ep *ep, const struct braid_rd_out *out, int n,
			 struct iovec *iov, int *iovcnt, size_t *seg,
			 uint8_t (*hdrs)[BRAID_AUTH_HDR_MAX])
{
	struct iovec plain[BRAID_RD_BUNDLE_MAX * (BRAID_RD_IOV_MAX + 2)];
	int took, j, cnt, runs;
	size_t len;

	took = braid_rd_out_dgram(out, n, plain, (int)(sizeof(plain) / sizeof(plain[0])), &cnt,
				  &len, seg);
	runs = *seg ? took : 1;
	*iovcnt = 0;
	for (j = 0; j < runs; j++) {
		/* its first header: the bundle's (the first 8 bytes of its frame) or the packet's */
		size_t hlen = out[j].frame_len ? BRAID_RD_BUNDLE_HDR : out[j].hdr_len;
		int k;

		if (*seg)	/* one datagram of the run */
			(void)braid_rd_out_dgram(out + j, 1, plain,
						 (int)(sizeof(plain) / sizeof(plain[0])), &cnt, &len, NULL);
		memcpy(hdrs[j], plain[0].iov_base, hlen);
		k = braid_iov_slice(plain, (size_t)cnt, hlen, len - hlen, iov + *iovcnt + 1, cnt);
		iov[*iovcnt].iov_base = hdrs[j];
		iov[*iovcnt].iov_len = (size_t)braid_auth_seal(&ep->auth, hdrs[j], iov + *iovcnt + 1, k,
							       ep->auth_scratch);
		*iovcnt += k + 1;
	}
	if (*seg)
		*seg += BRAID_AUTH_TAG;
	return took;
}

/* Hand every packet the engine wants out to the wire (the caller holds the endpoint's lock). */
static void rdm_flush(struct braid_ep *ep, uint64_t now)
{
	struct braid_rd_out out[RDM_OUT_BURST];
	struct braid_pkt pkts[RDM_OUT_BURST];
	struct iovec iovs[RDM_OUT_IOVS];
	uint8_t hdrs[RDM_OUT_BURST][BRAID_AUTH_HDR_MAX];
	int first[RDM_OUT_BURST + 1];
	int n, i, d, k, sent;
	uint64_t lent;

	while ((n = braid_rd_output(ep->rd, now, out, RDM_OUT_BURST)) > 0) {
		/* a datagram per packet, or per bundle of them (§4.8) */
		for (i = 0, d = 0, k = 0; i < n; d++) {
			size_t len, seg;
			int cnt, took;

			if (ep->auth.mode)
				took = rdm_out_keyed(ep, out + i, n - i, iovs + k, &cnt, &seg, hdrs + i);
			else
				took = braid_rd_out_dgram(out + i, n - i, iovs + k, RDM_OUT_IOVS - k,
							  &cnt, &len, &seg);

			first[d] = i;
			pkts[d].gso_size = (uint16_t)seg;	/* a run of full packets: one GSO write */
			pkts[d].iov = iovs + k;
			pkts[d].iovcnt = cnt;
			k += cnt;
			/* the path's entropy is the wire's route selector (UDP: the socket,
			 * that is the source port); a reply goes from the home port to the
			 * source port its packet came from: the reverse 5-tuple, which a
			 * symmetric ECMP hash sends back along the same path */
			pkts[d].path = out[i].entropy;
			pkts[d].status = 0;
			/* a LENT packet that is a datagram alone may go by reference */
			pkts[d].flags = (out[i].lend && !seg && took == 1 && !out[i].frame_len) ?
					BRAID_PKT_LEND : 0;
			memset(&pkts[d].addr, 0, sizeof(pkts[d].addr));
			pkts[d].addr.sin_family = AF_INET;
			pkts[d].addr.sin_addr.s_addr = htonl(out[i].dst_ip);
			pkts[d].addr.sin_port = htons(out[i].dst_port);
			if (out[i].reply_route >= 0)	/* its entropy is 0: the home socket */
				pkts[d].addr.sin_port = htons((uint16_t)out[i].reply_route);
			i += took;
		}
		first[d] = n;
		lent = ep->wire->tx_lent;
		sent = ep->wire->ops->tx_burst(ep->wire, pkts, d);
		ep->stats.tx_dgrams += (uint64_t)sent;
		if (ep->wire->tx_lent != lent) {
			ep->stats.tx_lent += ep->wire->tx_lent - lent;
			ep->lent_ns = braid_now_ns();
		}
		if (sent < d) {
			/* the socket is full: the rest goes back to the engine, to go next time */
			ep->stats.tx_refused += (uint64_t)(d - sent);
			braid_rd_unsent(ep->rd, out + first[sent], n - first[sent]);
			break;
		}
		now = braid_now_ns();	/* the next burst is stamped when it leaves */
	}
}

static fi_addr_t rdm_source(struct braid_ep *ep, uint64_t peer)
{
	struct in_addr ip = { htonl((uint32_t)(peer >> 16)) };

	if (!(ep->info->caps & FI_SOURCE) || !ep->av)
		return FI_ADDR_NOTAVAIL;
	return braid_av_reverse(ep->av, ip, (uint16_t)peer);
}

/* An RMA or atomic completion (initiator) or event (target, BRAID_RD_COMP_REMOTE). */
static void rdm_report_rma(struct braid_ep *ep, const struct braid_rd_comp *c)
{
	bool remote = c->flags & BRAID_RD_COMP_REMOTE;
	bool atomic = c->flags & BRAID_RD_COMP_ATOMIC;
	/* what counts as a read: an RMA read, a fetching or compare atomic (fi_endpoint(3)) */
	bool read = c->flags & BRAID_RD_COMP_READ;
	struct braid_cntr *cntr = ep->rma_cntr[remote ? (read ? BRAID_CNTR_REMOTE_READ :
							     BRAID_CNTR_REMOTE_WRITE) :
						 (read ? BRAID_CNTR_READ : BRAID_CNTR_WRITE)];
	uint64_t flags = (atomic ? FI_ATOMIC : FI_RMA) |
			 (remote ? (read ? FI_REMOTE_READ : FI_REMOTE_WRITE) : (read ? FI_READ : FI_WRITE));

	if (remote) {
		/* counters bound to the region (fi_mr_bind): at the target an atomic is a write */
		if (ep->info->caps & FI_RMA_EVENT)
			braid_mr_count(ep->domain, c->rkey, !read || atomic);
		/* the target: an entry for remote CQ data, or for every access with FI_RMA_EVENT */
		if (c->flags & BRAID_RD_COMP_CQ_DATA)
			flags |= FI_REMOTE_CQ_DATA;
		if (ep->rx_cq && ((c->flags & BRAID_RD_COMP_CQ_DATA) || (ep->info->caps & FI_RMA_EVENT)))
			braid_cq_write(ep->rx_cq, ep, NULL, flags, c->len, NULL, c->data, 0,
				       rdm_source(ep, c->peer));
	} else if (c->err) {
		if (ep->tx_cq)
			braid_cq_write_err(ep->tx_cq, ep, c->context, flags, 0, NULL, 0, 0, 0, c->err,
					   c->prov_errno, FI_ADDR_NOTAVAIL);
		if (cntr)
			braid_cntr_inc_err(cntr);
		return;
	} else if (ep->tx_cq && !(c->flags & BRAID_RD_COMP_SILENT)) {
		braid_cq_write(ep->tx_cq, ep, c->context, flags, c->len, NULL, 0, 0, FI_ADDR_NOTAVAIL);
	}
	if (cntr)
		braid_cntr_inc(cntr);
}

/* Report one engine completion on the CQ and counters. */
static void rdm_report(struct braid_ep *ep, const struct braid_rd_comp *c)
{
	bool recv = c->flags & BRAID_RD_COMP_RECV;
	struct braid_cq *cq = recv ? ep->rx_cq : ep->tx_cq;
	struct braid_cntr *cntr = recv ? ep->recv_cntr : ep->send_cntr;
	uint64_t flags = (recv ? FI_RECV : FI_SEND) |
			 ((c->flags & BRAID_RD_COMP_TAGGED) ? FI_TAGGED : FI_MSG);
	fi_addr_t src = recv ? rdm_source(ep, c->peer) : FI_ADDR_NOTAVAIL;

	if (c->flags & (BRAID_RD_COMP_WRITE | BRAID_RD_COMP_READ | BRAID_RD_COMP_ATOMIC)) {
		rdm_report_rma(ep, c);
		return;
	}
	if (recv && (c->flags & BRAID_RD_COMP_CQ_DATA))
		flags |= FI_REMOTE_CQ_DATA;
	if (c->flags & BRAID_RD_COMP_MULTI_RECV)
		flags |= FI_MULTI_RECV;	/* the buffer is the application's again */
	if (c->err) {
		if (cq)
			braid_cq_write_err(cq, ep, c->context, flags, c->len, c->buf, c->data,
					   c->tag, c->olen, c->err, c->prov_errno, src);
		if (cntr)
			braid_cntr_inc_err(cntr);
		return;
	}
	/* (a receive of a shared context asks for no completion unless FI_COMPLETION:
	 * only a selective endpoint leaves it out) */
	if (cq && (!(c->flags & BRAID_RD_COMP_SILENT) || (recv && !ep->rx_selective)))
		braid_cq_write(cq, ep, c->context, flags, c->len, recv ? c->buf : NULL, c->data,
			       recv ? c->tag : 0, src);
	if (cntr)
		braid_cntr_inc(cntr);
}

/*
 * Move engine completions to the CQs while they have room (never overrun),
 * or (@all) every one, what does not fit going to a CQ's overflow.
 */
static void rdm_reap_comps(struct braid_ep *ep, bool all)
{
	struct braid_rd_comp c;

	while ((all || (braid_cq_room(ep->tx_cq) && braid_cq_room(ep->rx_cq))) &&
	       braid_rd_poll(ep->rd, &c, 1) == 1) {
		/* a transmit operation ended: room in its shared transmit context */
		if (!(c.flags & (BRAID_RD_COMP_RECV | BRAID_RD_COMP_REMOTE)))
			braid_ep_tx_give(ep, 1);
		rdm_report(ep, &c);
	}
}

static void rdm_reap(struct braid_ep *ep)
{
	rdm_reap_comps(ep, false);
}

void braid_rdm_srx_leave_locked(struct braid_ep *ep)
{
	if (!ep->rd)
		return;
	/* receives its messages had taken come back canceled: onto its CQ now, which
	 * cancels its receive completions as it closes (braid_cq_ep_closed) */
	braid_rd_rxq_leave(ep->rd);
	rdm_reap_comps(ep, true);
}

/*
 * A keyed endpoint's datagram (protocol.md §2.4), received whole at *@buf:
 * checked, and its tag taken out, before the engine sees anything of it;
 * *@buf and *@len then name the version-1 datagram it carries. false: it
 * was dropped and counted (another job's, a keyless sender's, a forgery).
 */
static bool rdm_rx_open(struct braid_ep *ep, uint8_t **buf, size_t *len)
{
	int ret = braid_auth_open(&ep->auth, *buf, *len, ep->auth_scratch);

	if (ret < 0) {
		ep->stats.drops[-ret - 1]++;
		return false;
	}
	*buf += BRAID_AUTH_TAG;
	*len -= BRAID_AUTH_TAG;
	return true;
}

/*
 * When a datagram the wire gives no time of arrival for came: after the
 * wire was last read to empty. The engine tells the time a datagram waited
 * for us (descheduled, computing) from the fabric's delay by it (§4.5).
 */
static uint64_t rdm_rx_since(const struct braid_ep *ep, const struct braid_pkt *pkt)
{
	return pkt->rx_ns ? pkt->rx_ns : ep->rx_drained_ns;
}

/*
 * A datagram received whole into @run (a run of them, when the host
 * coalesced one sender's datagrams: UDP GRO), each datagram to the engine
 * on its own, as if it came alone.
 */
static void rdm_rx_whole(struct braid_ep *ep, const struct braid_pkt *pkt, uint8_t *run,
			 uint64_t now)
{
	size_t left = pkt->len, seg = left;

	if (pkt->flags & BRAID_PKT_TRUNC) {
		ep->stats.rx_dgrams++;
		ep->stats.drops[BRAID_DROP_BAD_LEN]++;
		return;
	}
	if (ep->wire->gro && pkt->gso_size) {
		seg = pkt->gso_size;	/* a run the host coalesced (UDP GRO) */
		ep->stats.rx_gro_runs++;
		ep->stats.rx_gro_dgrams += (left + seg - 1) / seg;
	}
	braid_rd_arrived(ep->rd, rdm_rx_since(ep, pkt));
	do {
		uint8_t *buf = run;
		size_t len = seg < left ? seg : left;

		run += len;
		left -= len;
		ep->stats.rx_dgrams++;
		if (ep->auth.mode && !rdm_rx_open(ep, &buf, &len))
			continue;
		/* large datagrams on the home route: look before taking the next
		 * (not where the tag covers the payload: it must be checked
		 * before it lands) */
		if (pkt->path == 0 && len >= RDM_DIRECT_MIN && ep->wire->ops->rx_peek &&
		    ep->auth.mode != BRAID_AUTH_MAC)
			ep->rx_direct = true;
		braid_rd_input_from(ep->rd, buf, len, ntohl(pkt->addr.sin_addr.s_addr),
				    ntohs(pkt->addr.sin_port), pkt->flags & BRAID_PKT_ECN_CE, now);
	} while (left);
}

/*
 * Large datagrams straight into place (architecture.md, "receive
 * placement"): while they come, look at each one's header first and, when
 * the engine knows where its payload goes (a matched receive, a WRITE's
 * region, a read's result buffers), receive the payload there: one copy,
 * the kernel's, instead of a second from the wire's buffer. A copy of a
 * datagram received already (the sender's RTO was early: this host was
 * away) is received as its header alone, its payload dropped uncopied.
 * Costs a peek per datagram, worth it only for large ones. Return:
 * datagrams taken.
 *
 * A keyed endpoint (job mode: never with FI_BRAID_AUTH=mac, whose tag covers
 * the payload) places only a datagram whose tag the peeked header verifies
 * (an RD_DATA or RD_RMA tag covers its header alone), receives the header
 * and tag into @hdr, never into the application's memory, and checks them
 * again as received.
 */
static int rdm_rx_direct(struct braid_ep *ep, uint64_t *now)
{
	const struct braid_wire_ops *ops = ep->wire->ops;
	size_t tag = ep->auth.mode ? BRAID_AUTH_TAG : 0;
	uint8_t hdr[BRAID_AUTH_HDR_MAX];
	int taken = 0, small = 0;

	while (taken < RDM_RX_BURST) {
		struct iovec iov[BRAID_RD_IOV_MAX + 1];
		struct sockaddr_in from;
		struct braid_pkt pkt = { .iov = iov };
		uint64_t rx_ns;
		size_t len = ops->rx_peek(ep->wire, hdr, BRAID_RD_MAX_HDR + tag, &from, &rx_ns), hlen;
		uint32_t ip = ntohl(from.sin_addr.s_addr);
		bool dup = false;
		int k = 0;

		if (!len)
			break;
		if (len > ep->wire->mtu || (len < RDM_DIRECT_MIN && ++small > RDM_DIRECT_SMALL)) {
			/* a coalesced run (UDP GRO), or small ones again: the usual way */
			ep->rx_direct = false;
			break;
		}
		hlen = (size_t)hdr[6] << 8 | hdr[7];	/* a keyed one's counts its tag */
		/* when it came: a lent payload that waited too long is not placed (§4.2) */
		pkt.rx_ns = rx_ns;
		braid_rd_arrived(ep->rd, rdm_rx_since(ep, &pkt));
		/* a small one among large ones (a message's last packet, an ACK) is
		 * taken whole, and the large ones after it are still placed */
		if (len >= RDM_DIRECT_MIN &&
		    (!tag || braid_auth_open_hdr(&ep->auth, hdr, BRAID_RD_MAX_HDR + tag, len, NULL, 0,
						 ep->auth_scratch) >= 0))
			k = braid_rd_place(ep->rd, hdr, BRAID_RD_MAX_HDR, len - tag, ip, iov + 1,
					   BRAID_RD_IOV_MAX, *now);
		if (k) {
			iov[0].iov_base = hdr;
			iov[0].iov_len = hlen;
			pkt.iovcnt = k + 1;
		} else if (!tag && len >= RDM_DIRECT_MIN && hlen <= BRAID_RD_MAX_HDR &&
			   braid_rd_is_dup(ep->rd, hdr, BRAID_RD_MAX_HDR, len, ip)) {
			/* a copy of what came already: its header alone, the host
			 * drops the payload uncopied */
			iov[0].iov_base = hdr;
			iov[0].iov_len = hlen;
			pkt.iovcnt = 1;
			dup = true;
		} else {
			/* not for a place known yet (a message's first packet): whole */
			iov[0].iov_base = ep->rx_bufs;
			iov[0].iov_len = ep->wire->mtu;
			pkt.iovcnt = 1;
		}
		if (ops->rx_home(ep->wire, &pkt, 1) != 1)
			break;
		*now = braid_now_ns();
		taken++;
		braid_rd_arrived(ep->rd, rdm_rx_since(ep, &pkt));
		if (!k && !dup) {
			rdm_rx_whole(ep, &pkt, ep->rx_bufs, *now);
			continue;
		}
		ep->stats.rx_dgrams++;
		if (dup) {
			ep->stats.rx_dup_skipped++;
			braid_rd_input_placed(ep->rd, hdr, pkt.len, ntohl(pkt.addr.sin_addr.s_addr),
					      ntohs(pkt.addr.sin_port), pkt.flags & BRAID_PKT_ECN_CE, *now);
			continue;
		}
		if (pkt.flags & BRAID_PKT_TRUNC) {
			ep->stats.drops[BRAID_DROP_BAD_LEN]++;
			continue;
		}
		if (tag) {
			int ret = braid_auth_open_hdr(&ep->auth, hdr, hlen, pkt.len, NULL, 0,
						      ep->auth_scratch);

			/* (the datagram peeked: a failure here is one the wire swapped) */
			if (ret < 0) {
				ep->stats.drops[-ret - 1]++;
				continue;
			}
		}
		ep->stats.rx_placed++;
		braid_rd_input_placed(ep->rd, hdr, pkt.len - tag, ntohl(pkt.addr.sin_addr.s_addr),
				      ntohs(pkt.addr.sin_port), pkt.flags & BRAID_PKT_ECN_CE, *now);
	}
	return taken;
}

/*
 * The buffers of a receive burst: RDM_RX_BURST datagrams of the wire's MTU
 * (2 MiB on loopback). The domain keeps the sets for whichever endpoints
 * progress next (the engine copies what it keeps before progress returns),
 * so an endpoint costs none of it while idle; threads progressing endpoints
 * at the same moment take a set each (BRAID_RX_CACHE are kept).
 */
static struct braid_rxbuf *rdm_rxbuf_take(struct braid_ep *ep)
{
	size_t need = (size_t)RDM_RX_BURST * braid_wire_rx_max(ep->wire);
	struct braid_rxbuf *rb = NULL;
	int i;

	for (i = 0; i < BRAID_RX_CACHE && !rb; i++) {
		if (atomic_load_explicit(&ep->domain->rx_cache[i], memory_order_relaxed))
			rb = atomic_exchange(&ep->domain->rx_cache[i], NULL);
	}
	if (rb && rb->size < need) {
		free(rb);
		rb = NULL;
	}
	if (!rb) {
		rb = malloc(sizeof(*rb) + need);
		if (rb) {
			rb->size = need;
			rb->warm = false;
		}
	}
	return rb;
}

static void rdm_rxbuf_give(struct braid_ep *ep, struct braid_rxbuf *rb)
{
	for (int i = 0; i < BRAID_RX_CACHE; i++) {
		struct braid_rxbuf *none = NULL;

		if (atomic_compare_exchange_strong(&ep->domain->rx_cache[i], &none, rb))
			return;
	}
	free(rb);	/* more threads than sets kept: this one goes */
}

/*
 * A set that carried datagrams gives its pages back once its endpoint has
 * no traffic state left (every peer quiet for FI_BRAID_IDLE_MS): the pages a
 * burst touched (up to the whole set, with GRO's runs) are not kept for an
 * endpoint that is idle; they come back, zeroed, when next written.
 */
static void rdm_rxbuf_cool(struct braid_rxbuf *rb)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t lo = ((uintptr_t)rb->data + page - 1) & ~(page - 1);
	uintptr_t hi = ((uintptr_t)rb->data + rb->size) & ~(page - 1);

	if (hi > lo)
		(void)madvise((void *)lo, hi - lo, MADV_DONTNEED);
	rb->warm = false;
}

static void rdm_progress_rx(struct braid_ep *ep, uint64_t now);

void braid_rdm_progress_locked(struct braid_ep *ep)
{
	struct braid_rxbuf *rb = rdm_rxbuf_take(ep);
	uint64_t now = braid_now_ns();

	if (rb) {
		uint64_t seen = ep->rx_last_ns;

		ep->rx_bufs = rb->data;
		rdm_progress_rx(ep, now);
		ep->rx_bufs = NULL;
		if (ep->rx_last_ns != seen)
			rb->warm = true;
		else if (rb->warm && !braid_rd_get_stats(ep->rd)->flows_active)
			rdm_rxbuf_cool(rb);
		rdm_rxbuf_give(ep, rb);
	}
	/* (no memory for a burst now: nothing is received this time; timers still run) */
	now = braid_now_ns();
	ep->progress_ns = now;
	if (braid_rd_next_deadline(ep->rd) <= now)
		braid_rd_timer(ep->rd, now);
	rdm_flush(ep, now);
	ep->unflushed = 0;
	rdm_reap(ep);
}

static void rdm_progress_rx(struct braid_ep *ep, uint64_t now)
{
	struct braid_pkt pkts[RDM_RX_BURST];
	struct iovec iovs[RDM_RX_BURST];
	int n, i, rounds;

	for (rounds = 0; rounds < 8; rounds++) {
		bool direct = ep->rx_direct;
		/* large datagrams: the home route one at a time, then the others as usual
		 * (every round: a stream into the home route must not starve the replies
		 * to our own sends) */
		int took = direct ? rdm_rx_direct(ep, &now) : 0;

		if (direct && ep->rx_direct) {
			for (i = 0; i < RDM_RX_BURST; i++) {
				iovs[i].iov_base = ep->rx_bufs + (size_t)i * braid_wire_rx_max(ep->wire);
				iovs[i].iov_len = braid_wire_rx_max(ep->wire);
				pkts[i].iov = &iovs[i];
				pkts[i].iovcnt = 1;
				pkts[i].rx_ns = 0;
				pkts[i].gso_size = 0;
			}
			n = ep->wire->ops->rx_routes(ep->wire, pkts, RDM_RX_BURST);
		} else {
			/* the DPDK wire lends its frames: the engine reads them in place */
			n = braid_wire_rx(ep->wire, pkts, iovs, ep->rx_bufs, RDM_RX_BURST);
		}
		/* a fresh clock per burst: a stale one (the host may deschedule us
		 * mid-progress) would make RTT samples lie, and the CC and every
		 * RTT-scaled timer with them */
		if (n > 0) {
			now = braid_now_ns();
			ep->rx_last_ns = now;
		}
		for (i = 0; i < n; i++)
			rdm_rx_whole(ep, &pkts[i], iovs[i].iov_base, now);
		braid_wire_rx_done(ep->wire, pkts, n);
		if (n < RDM_RX_BURST && took < RDM_RX_BURST) {
			ep->rx_drained_ns = now;	/* read to empty, by about now */
			break;
		}
	}
}

int braid_rdm_cancel_locked(struct braid_ep *ep, void *context)
{
	int ret = braid_rd_cancel(ep->rd, context);

	if (!ret)
		rdm_reap(ep);
	return ret;
}

/* ---- sends ---- */

/* No success completion for this operation: fi_inject* (as if selective completion
 * were on and FI_COMPLETION off, fi_msg(3)), no tx CQ, or selective without FI_COMPLETION. */
bool braid_rdm_nocomp(const struct braid_ep *ep, uint64_t flags, bool inject)
{
	return inject || !ep->tx_cq || (ep->tx_selective && !(flags & FI_COMPLETION));
}

/* the engine's key of @addr in @av: 0, -FI_EINVAL (no such address, or no AV) */
static int rdm_av_key(struct braid_av *av, fi_addr_t addr, uint64_t *key)
{
	struct sockaddr_in sin;

	if (!av || braid_av_lookup_addr(av, addr, &sin))
		return -FI_EINVAL;
	*key = braid_peer_key(ntohl(sin.sin_addr.s_addr), ntohs(sin.sin_port));
	return 0;
}

int braid_rdm_peer(struct braid_ep *ep, fi_addr_t addr, uint64_t *key)
{
	return rdm_av_key(ep->av, addr, key);
}

void braid_rdm_posted_locked(struct braid_ep *ep, int ret, uint64_t flags)
{
	if (ret == -FI_EAGAIN) {
		/* out of operations: make progress so the caller's retry can succeed */
		braid_rdm_progress_locked(ep);
	} else if (!ret && !(flags & FI_MORE) && ep->unflushed++ % RDM_OUT_BURST == 0) {
		/*
		 * The first send after a progress call goes out at once (latency);
		 * the ones that follow it before the next progress call are batched,
		 * a burst at a time, into one sendmmsg (message rate).
		 */
		rdm_flush(ep, braid_now_ns());
	}
}

static ssize_t rdm_send(struct braid_ep *ep, const struct iovec *iov, size_t count,
			fi_addr_t dest, void *context, uint64_t tag, uint64_t data,
			uint64_t flags, bool tagged, bool nocomp)
{
	struct braid_rd_send req = {
		.iov = iov, .iov_count = count, .tag = tag, .data = data, .context = context,
	};
	size_t i, len = 0;
	int ret;

	if (!ep->enabled)
		return -FI_EOPBADSTATE;
	if (count > BRAID_IOV_LIMIT || (count && !iov))
		return -FI_EINVAL;
	if (flags & ~RDM_TX_FLAGS)
		return -FI_EBADFLAGS;
	if (flags & FI_TRIGGER) {
		/* held for its counter (braid_trigger.c); the endpoint must have asked */
		if (!(ep->info->caps & FI_TRIGGER))
			return -FI_EBADFLAGS;
		return braid_trig_msg(ep, iov, count, dest, context, tag, data, flags, tagged);
	}
	for (i = 0; i < count; i++)
		len += iov[i].iov_len;
	if ((flags & FI_INJECT) && len > ep->info->tx_attr->inject_size)
		return -FI_EMSGSIZE;
	if (braid_rdm_peer(ep, dest, &req.peer))
		return -FI_EINVAL;
	if (tagged)
		req.flags |= BRAID_RD_TAGGED;
	if (flags & FI_REMOTE_CQ_DATA)
		req.flags |= BRAID_RD_CQ_DATA;
	if (flags & FI_INJECT)
		req.flags |= BRAID_RD_INJECT;
	/* FI_DELIVERY_COMPLETE: complete once the message is in the peer's receive
	 * buffer, not once it was acknowledged into its staging (§4.7) */
	if ((flags & FI_DELIVERY_COMPLETE) && !nocomp)
		req.flags |= BRAID_RD_DELIVERY;
	if (braid_rdm_nocomp(ep, flags, nocomp))
		req.flags |= BRAID_RD_NO_COMP;

	braid_ep_lock(ep);
	ret = braid_ep_tx_take(ep);
	if (!ret && (ret = braid_rd_send(ep->rd, &req, braid_now_ns())))
		braid_ep_tx_give(ep, 1);
	braid_rdm_posted_locked(ep, ret, flags);
	braid_ep_unlock(ep);
	return ret;
}

static ssize_t rdm_msg_send(struct fid_ep *ep_fid, const void *buf, size_t len, void *desc,
			    fi_addr_t dest_addr, void *context)
{
	struct braid_ep *ep = braid_ep_of(ep_fid);
	struct iovec iov = { (void *)buf, len };

	return rdm_send(ep, &iov, 1, dest_addr, context, 0, 0, braid_ep_tx_flags(ep_fid), false,
			false);
}

static ssize_t rdm_msg_sendv(struct fid_ep *ep_fid, const struct iovec *iov, void **desc,
			     size_t count, fi_addr_t dest_addr, void *context)
{
	struct braid_ep *ep = braid_ep_of(ep_fid);

	return rdm_send(ep, iov, count, dest_addr, context, 0, 0, braid_ep_tx_flags(ep_fid), false,
			false);
}

static ssize_t rdm_msg_sendmsg(struct fid_ep *ep_fid, const struct fi_msg *msg, uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	return rdm_send(braid_ep_of(ep_fid), msg->msg_iov, msg->iov_count, msg->addr, msg->context,
			0, msg->data, flags, false, false);
}

static ssize_t rdm_msg_inject(struct fid_ep *ep_fid, const void *buf, size_t len,
			      fi_addr_t dest_addr)
{
	struct iovec iov = { (void *)buf, len };

	return rdm_send(braid_ep_of(ep_fid), &iov, 1, dest_addr, NULL, 0, 0, FI_INJECT, false, true);
}

static ssize_t rdm_msg_senddata(struct fid_ep *ep_fid, const void *buf, size_t len, void *desc,
				uint64_t data, fi_addr_t dest_addr, void *context)
{
	struct braid_ep *ep = braid_ep_of(ep_fid);
	struct iovec iov = { (void *)buf, len };

	return rdm_send(ep, &iov, 1, dest_addr, context, 0, data,
			braid_ep_tx_flags(ep_fid) | FI_REMOTE_CQ_DATA, false, false);
}

static ssize_t rdm_msg_injectdata(struct fid_ep *ep_fid, const void *buf, size_t len,
				  uint64_t data, fi_addr_t dest_addr)
{
	struct iovec iov = { (void *)buf, len };

	return rdm_send(braid_ep_of(ep_fid), &iov, 1, dest_addr, NULL, 0, data,
			FI_INJECT | FI_REMOTE_CQ_DATA, false, true);
}

/* ---- receives ---- */

/*
 * Whether a receive's source address is honoured (fi_getinfo(3)):
 * FI_DIRECTED_RECV for every receive; from API 2.0 FI_TAGGED_DIRECTED_RECV
 * for tagged ones only, and FI_EXACT_DIRECTED_RECV, which alone directs
 * both kinds and with FI_TAGGED_DIRECTED_RECV only tagged ones, and makes
 * FI_ADDR_UNSPEC an invalid source.
 */
static bool rdm_directed(uint64_t caps, bool tagged)
{
	if (caps & FI_DIRECTED_RECV)
		return true;
	if (tagged)
		return caps & (BRAID_TAGGED_DIRECTED_RECV | BRAID_EXACT_DIRECTED_RECV);
	return (caps & BRAID_EXACT_DIRECTED_RECV) && !(caps & BRAID_TAGGED_DIRECTED_RECV);
}

/*
 * A receive's arguments, checked and made the engine's request, for a
 * receive side of capabilities @caps whose directed receives' sources are
 * looked up in @av: an endpoint's own, or its shared receive context's.
 * Return: 0, or a negative FI_E*.
 */
static int rdm_recv_req(uint64_t caps, struct braid_av *av, const struct iovec *iov,
			size_t count, fi_addr_t src, void *context, uint64_t tag, uint64_t ignore,
			uint64_t flags, bool tagged, struct braid_rd_recv *req)
{
	*req = (struct braid_rd_recv){
		.iov = iov, .iov_count = count, .tag = tag, .ignore = ignore, .context = context,
	};
	if (count > BRAID_IOV_LIMIT || (count && !iov))
		return -FI_EINVAL;
	if (flags & FI_MULTI_RECV) {
		/* fi_msg(3), fi_tagged(3): one buffer; tagged only with FI_TAGGED_MULTI_RECV (2.0) */
		uint64_t cap = tagged ? BRAID_TAGGED_MULTI_RECV : FI_MULTI_RECV;

		if (!(caps & cap))
			return tagged ? -FI_EBADFLAGS : -FI_EINVAL;
		if (count != 1)
			return -FI_EINVAL;
		req->flags |= BRAID_RD_MULTI;
	}
	if ((flags & (FI_PEEK | FI_CLAIM | FI_DISCARD)) && !tagged)
		return -FI_EBADFLAGS;	/* fi_tagged(3) flags */
	if ((flags & FI_DISCARD) && !(flags & (FI_PEEK | FI_CLAIM)))
		return -FI_EBADFLAGS;
	if (flags & ~(RDM_RX_FLAGS | FI_PEEK | FI_CLAIM | FI_DISCARD))
		return -FI_EBADFLAGS;
	/* FI_DIRECTED_RECV and 2.0's kinds of it: only from @src */
	if (rdm_directed(caps, tagged)) {
		if (src == FI_ADDR_UNSPEC ? !!(caps & BRAID_EXACT_DIRECTED_RECV) :
		    rdm_av_key(av, src, &req->peer) != 0)
			return -FI_EINVAL;
	}
	if (tagged)
		req->flags |= BRAID_RD_TAGGED;
	return 0;
}

/* Post @req to engine @rd's receive queue, or (FI_PEEK, FI_CLAIM) look at its unexpected messages. */
static int rdm_recv_post(struct braid_rd *rd, const struct braid_rd_recv *req, uint64_t flags)
{
	if (!(flags & (FI_PEEK | FI_CLAIM)))
		return braid_rd_post_recv(rd, req, braid_now_ns());
	return braid_rd_peek(rd, req,
			     ((flags & FI_PEEK) ? BRAID_RD_PEEK : 0) |
			     ((flags & FI_CLAIM) ? BRAID_RD_CLAIM : 0) |
			     ((flags & FI_DISCARD) ? BRAID_RD_DISCARD : 0),
			     braid_now_ns());
}

static ssize_t rdm_recv(struct braid_ep *ep, const struct iovec *iov, size_t count,
			fi_addr_t src, void *context, uint64_t tag, uint64_t ignore,
			uint64_t flags, bool tagged)
{
	struct braid_rd_recv req;
	int ret;

	if (!ep->enabled)
		return -FI_EOPBADSTATE;
	if (ep->srx)	/* its receives are its shared context's */
		return braid_rdm_srx_post(ep->srx, iov, count, src, context, tag, ignore, flags,
					  tagged);
	ret = rdm_recv_req(ep->info->caps, ep->av, iov, count, src, context, tag, ignore, flags,
			   tagged, &req);
	if (ret)
		return ret;
	if (!ep->rx_cq || (ep->rx_selective && !(flags & FI_COMPLETION)))
		req.flags |= BRAID_RD_NO_COMP;
	req.min_free = ep->min_multi_recv;
	braid_ep_lock(ep);
	if (flags & (FI_PEEK | FI_CLAIM))
		braid_rdm_progress_locked(ep);	/* what has arrived is seen before looking */
	ret = rdm_recv_post(ep->rd, &req, flags);
	if (ret == -FI_EAGAIN)
		braid_rdm_progress_locked(ep);
	else if (!ret)
		rdm_reap(ep);	/* an unexpected message may have completed it at once */
	braid_ep_unlock(ep);
	return ret;
}

ssize_t braid_rdm_srx_post(struct braid_srx *srx, const struct iovec *iov, size_t count,
			   fi_addr_t src, void *context, uint64_t tag, uint64_t ignore,
			   uint64_t flags, bool tagged)
{
	struct braid_rd_recv req;
	struct braid_ep *home;
	int ret;

	braid_srx_lock(srx);
	ret = rdm_recv_req(srx->caps, srx->av, iov, count, src, context, tag, ignore, flags, tagged,
			   &req);
	if (ret)
		goto out;
	/* whether it completes is the receiving endpoint's to say: without FI_COMPLETION
	 * only a selective one leaves the completion out (rdm_report) */
	if (!(flags & FI_COMPLETION))
		req.flags |= BRAID_RD_NO_COMP;
	req.min_free = srx->min_multi_recv;
	home = braid_srx_home(srx);
	if (flags & (FI_PEEK | FI_CLAIM)) {
		/* what has arrived at any of its endpoints is seen before looking; FI_ENOMSG
		 * goes to the first of them (none enabled: nothing to look at or report on) */
		if (!home) {
			ret = -FI_EOPBADSTATE;
			goto out;
		}
		braid_srx_progress_locked(srx);
		ret = rdm_recv_post(home->rd, &req, flags);
	} else {
		ret = braid_rd_rxq_post(srx->rdq, &req, braid_now_ns());
	}
	if (ret == -FI_EAGAIN)
		braid_srx_progress_locked(srx);
out:
	braid_srx_unlock(srx);
	return ret;
}

int braid_rdm_srx_cancel(struct braid_srx *srx, void *context)
{
	struct braid_ep *home;
	int ret;

	braid_srx_lock(srx);
	home = braid_srx_home(srx);
	ret = braid_rd_rxq_cancel(srx->rdq, context, home ? home->rd : NULL);
	if (!ret && home)
		rdm_reap(home);
	braid_srx_unlock(srx);
	return ret;
}

static ssize_t rdm_msg_recv(struct fid_ep *ep_fid, void *buf, size_t len, void *desc,
			    fi_addr_t src_addr, void *context)
{
	struct braid_ep *ep = braid_ep_of(ep_fid);
	struct iovec iov = { buf, len };

	return rdm_recv(ep, &iov, 1, src_addr, context, 0, 0, braid_ep_rx_flags(ep_fid),
			false);
}

static ssize_t rdm_msg_recvv(struct fid_ep *ep_fid, const struct iovec *iov, void **desc,
			     size_t count, fi_addr_t src_addr, void *context)
{
	struct braid_ep *ep = braid_ep_of(ep_fid);

	return rdm_recv(ep, iov, count, src_addr, context, 0, 0, braid_ep_rx_flags(ep_fid), false);
}

static ssize_t rdm_msg_recvmsg(struct fid_ep *ep_fid, const struct fi_msg *msg, uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	return rdm_recv(braid_ep_of(ep_fid), msg->msg_iov, msg->iov_count, msg->addr, msg->context,
			0, 0, flags, false);
}

struct fi_ops_msg braid_rdm_msg_ops = {
	.size = sizeof(struct fi_ops_msg),
	.recv = rdm_msg_recv,
	.recvv = rdm_msg_recvv,
	.recvmsg = rdm_msg_recvmsg,
	.send = rdm_msg_send,
	.sendv = rdm_msg_sendv,
	.sendmsg = rdm_msg_sendmsg,
	.inject = rdm_msg_inject,
	.senddata = rdm_msg_senddata,
	.injectdata = rdm_msg_injectdata,
};

/* ---- tagged ---- */

static ssize_t rdm_tag_recv(struct fid_ep *ep_fid, void *buf, size_t len, void *desc,
			    fi_addr_t src_addr, uint64_t tag, uint64_t ignore, void *context)
{
	struct braid_ep *ep = braid_ep_of(ep_fid);
	struct iovec iov = { buf, len };

	return rdm_recv(ep, &iov, 1, src_addr, context, tag, ignore,
			braid_ep_rx_flags(ep_fid) & ~FI_MULTI_RECV, true);
}

static ssize_t rdm_tag_recvv(struct fid_ep *ep_fid, const struct iovec *iov, void **desc,
			     size_t count, fi_addr_t src_addr, uint64_t tag, uint64_t ignore,
			     void *context)
{
	struct braid_ep *ep = braid_ep_of(ep_fid);

	return rdm_recv(ep, iov, count, src_addr, context, tag, ignore,
			braid_ep_rx_flags(ep_fid) & ~FI_MULTI_RECV, true);
}

static ssize_t rdm_tag_recvmsg(struct fid_ep *ep_fid, const struct fi_msg_tagged *msg,
			       uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	return rdm_recv(braid_ep_of(ep_fid), msg->msg_iov, msg->iov_count, msg->addr, msg->context,
			msg->tag, msg->ignore, flags, true);
}

static ssize_t rdm_tag_send(struct fid_ep *ep_fid, const void *buf, size_t len, void *desc,
			    fi_addr_t dest_addr, uint64_t tag, void *context)
{
	struct braid_ep *ep = braid_ep_of(ep_fid);
	struct iovec iov = { (void *)buf, len };

	return rdm_send(ep, &iov, 1, dest_addr, context, tag, 0, braid_ep_tx_flags(ep_fid), true,
			false);
}

static ssize_t rdm_tag_sendv(struct fid_ep *ep_fid, const struct iovec *iov, void **desc,
			     size_t count, fi_addr_t dest_addr, uint64_t tag, void *context)
{
	struct braid_ep *ep = braid_ep_of(ep_fid);

	return rdm_send(ep, iov, count, dest_addr, context, tag, 0, braid_ep_tx_flags(ep_fid),
			true, false);
}

static ssize_t rdm_tag_sendmsg(struct fid_ep *ep_fid, const struct fi_msg_tagged *msg,
			       uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	return rdm_send(braid_ep_of(ep_fid), msg->msg_iov, msg->iov_count, msg->addr, msg->context,
			msg->tag, msg->data, flags, true, false);
}

static ssize_t rdm_tag_inject(struct fid_ep *ep_fid, const void *buf, size_t len,
			      fi_addr_t dest_addr, uint64_t tag)
{
	struct iovec iov = { (void *)buf, len };

	return rdm_send(braid_ep_of(ep_fid), &iov, 1, dest_addr, NULL, tag, 0, FI_INJECT, true, true);
}

static ssize_t rdm_tag_senddata(struct fid_ep *ep_fid, const void *buf, size_t len, void *desc,
				uint64_t data, fi_addr_t dest_addr, uint64_t tag, void *context)
{
	struct braid_ep *ep = braid_ep_of(ep_fid);
	struct iovec iov = { (void *)buf, len };

	return rdm_send(ep, &iov, 1, dest_addr, context, tag, data,
			braid_ep_tx_flags(ep_fid) | FI_REMOTE_CQ_DATA, true, false);
}

static ssize_t rdm_tag_injectdata(struct fid_ep *ep_fid, const void *buf, size_t len,
				  uint64_t data, fi_addr_t dest_addr, uint64_t tag)
{
	struct iovec iov = { (void *)buf, len };

	return rdm_send(braid_ep_of(ep_fid), &iov, 1, dest_addr, NULL, tag, data,
			FI_INJECT | FI_REMOTE_CQ_DATA, true, true);
}

struct fi_ops_tagged braid_rdm_tagged_ops = {
	.size = sizeof(struct fi_ops_tagged),
	.recv = rdm_tag_recv,
	.recvv = rdm_tag_recvv,
	.recvmsg = rdm_tag_recvmsg,
	.send = rdm_tag_send,
	.sendv = rdm_tag_sendv,
	.sendmsg = rdm_tag_sendmsg,
	.inject = rdm_tag_inject,
	.senddata = rdm_tag_senddata,
	.injectdata = rdm_tag_injectdata,
};
