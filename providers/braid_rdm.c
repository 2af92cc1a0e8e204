/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_rdm.c: the FI_EP_RDM endpoint's operations: enable and close, and the libfabric calls of fi_msg(3) and fi_tagged(3), checked and handed to the RD engine (core/braid_rd*.c); braid_rdm_progress.c moves its packets and completions. */
#include <errno.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "braid.h"

#define RDM_TX_FLAGS	(FI_COMPLETION | FI_MORE | FI_INJECT | FI_REMOTE_CQ_DATA | \
			 FI_INJECT_COMPLETE | FI_TRANSMIT_COMPLETE | FI_DELIVERY_COMPLETE | \
			 FI_TRIGGER)
#define RDM_RX_FLAGS	(FI_COMPLETION | FI_MORE | FI_REMOTE_CQ_DATA | FI_MULTI_RECV)

/* ---- enable / close ---- */

/* the RD engine's key check of RMA and atomics targeting us: the domain's regions (braid_mr_check) */
static int rdm_mr_check(void *ctx, uint64_t key, uint64_t addr, size_t len, uint32_t access,
			void **ptr)
{
	return braid_mr_check(ctx, key, addr, len,
			      ((access & BRAID_RD_ACC_READ) ? FI_REMOTE_READ : 0) |
			      ((access & BRAID_RD_ACC_WRITE) ? FI_REMOTE_WRITE : 0) |
			      ((access & BRAID_RD_ACC_ATOMIC) ? BRAID_MR_ATOMIC : 0), ptr);
}

/* the engine's hook after a peer wrote our memory: a device region's shadow to the device */
static int rdm_mr_written(void *ctx, uint64_t key, uint64_t addr, size_t len)
{
	return braid_mr_written(ctx, key, addr, len);
}

static int braid_rdm_enable(struct braid_ep *ep)
{
	struct braid_rdm_ep *r = braid_rdm_ep_of(ep);
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
	cfg.grant_bytes = (uint64_t)braid_cfg.grant_kb << 10;
	cfg.unsched_pkts = (uint32_t)braid_cfg.unsched_pkts;
	if (cfg.unsched_pkts > cfg.window)
		cfg.unsched_pkts = cfg.window;
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
	/* device memory (FI_HMEM): its regions' shadows, its operations' staging */
	if (ep->info->caps & FI_HMEM)
		cfg.mr_written = rdm_mr_written;
	braid_hmem_ep_construct(&r->hmem, &ep->stats, cfg.max_sends + cfg.max_recvs);
	cfg.stage = braid_hmem_stage;
	cfg.stage_ctx = &r->hmem;
	/* (a shared queue is its context's: joined under the context's lock, the endpoint's) */
	braid_ep_lock(ep);
	ret = braid_rd_open(&cfg, ep->domain->peers, &r->rd);
	braid_ep_unlock(ep);
	if (ret)
		return ret;
	/* small messages to local peers go whole (protocol.md §7.4), not keyed ones: a
	 * key's tag is a datagram's, and a job's isolation is checked on datagrams */
	r->local_eager = ep->wire->local.on && ep->wire->ops->tx_msg && !ep->auth.mode ?
			 braid_cfg.shm_eager : 0;
	/* and none to a keyed one, from its first datagram on */
	if (ep->wire->local.on && ep->wire->ops->rx_msgs)
		ep->wire->ops->rx_msgs(ep->wire, NULL, NULL, 0, ep->auth.mode != 0, NULL);
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
	struct braid_rdm_ep *r = braid_rdm_ep_of(ep);
	uint64_t now = braid_now_ns(), until = r->lent_ns + BRAID_RD_LENT_WAIT_NS;

	if (r->lent_ns && now < until) {
		struct timespec ts = { .tv_sec = (time_t)((until - now) / 1000000000ULL),
				       .tv_nsec = (long)((until - now) % 1000000000ULL) };

		while (nanosleep(&ts, &ts) && errno == EINTR)
			;
	}
}

static void braid_rdm_close(struct braid_ep *ep)
{
	struct braid_rdm_ep *r = braid_rdm_ep_of(ep);
	bool unacked;

	if (!r->rd)
		return;
	/* (the lock: its engine leaves a shared receive queue, which others use) */
	braid_ep_lock(ep);
	unacked = braid_rd_pending(r->rd);
	/* acknowledge what arrived before going: the senders' completions wait for it */
	braid_rd_flush_acks(r->rd);
	braid_rdm_flush(ep, braid_now_ns());
	braid_rd_close(r->rd);
	r->rd = NULL;
	braid_ep_unlock(ep);
	if (unacked)
		rdm_lent_wait(ep);
	braid_hmem_ep_destruct(&r->hmem);	/* (staging may have been lent until now) */
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

/*
 * The same for a send, under the endpoint's lock: the last address looked up
 * is kept while its AV removes nothing (a named AV's removals come from
 * other processes too: it is looked up every time).
 */
static int rdm_peer_locked(struct braid_ep *ep, fi_addr_t addr, uint64_t *key)
{
	struct braid_rdm_ep *r = braid_rdm_ep_of(ep);
	const struct braid_av *av = ep->av;
	bool keep = av && !av->shm;
	uint64_t gen = keep ? atomic_load_explicit(&av->gen, memory_order_acquire) : 0;
	int ret;

	if (keep && r->last_av == av && r->last_addr == addr && r->last_gen == gen) {
		*key = r->last_key;
		return 0;
	}
	ret = rdm_av_key(ep->av, addr, key);
	if (!ret && keep) {
		/* (the generation read before the look-up: a removal since makes it stale) */
		r->last_av = av;
		r->last_addr = addr;
		r->last_key = *key;
		r->last_gen = gen;
	}
	return ret;
}

void braid_rdm_posted_locked(struct braid_ep *ep, int ret, uint64_t flags)
{
	struct braid_rdm_ep *r = braid_rdm_ep_of(ep);

	if (ret == -FI_EAGAIN) {
		/* out of operations: make progress so the caller's retry can succeed */
		braid_rdm_progress_locked(ep);
	} else if (!ret && !(flags & FI_MORE) && r->unflushed++ % BRAID_RDM_OUT_BURST == 0) {
		/*
		 * The first send after a progress call goes out at once (latency);
		 * the ones that follow it before the next progress call are batched,
		 * a burst at a time, into one sendmmsg (message rate).
		 */
		braid_rdm_flush(ep, braid_now_ns());
	}
}

/*
 * A message of @len bytes to a local peer, handed whole to its ring
 * (protocol.md §7.4) when nothing of ours to it is still on its way (the
 * engine says): it completes now, transmit complete. Under the endpoint's
 * lock. Return: false: it goes by the engine.
 */
static bool rdm_send_local(struct braid_ep *ep, const struct braid_rd_send *req, size_t len)
{
	struct braid_rdm_ep *r = braid_rdm_ep_of(ep);
	struct braid_rd_local_hdr h;
	struct sockaddr_in dst = {
		.sin_family = AF_INET,
		.sin_port = htons((uint16_t)req->peer),
		.sin_addr.s_addr = htonl((uint32_t)(req->peer >> 16)),
	};

	braid_rd_local_hdr_of(req, len, &h);
	if (!braid_rd_local_ready(r->rd, req->peer) ||
	    ep->wire->ops->tx_msg(ep->wire, &dst, &h, sizeof(h), req->iov, (int)req->iov_count) != 1)
		return false;
	ep->stats.tx_dgrams++;	/* (a record in the ring, as a datagram there is) */
	braid_rdm_sent_whole(ep, req, len);
	return true;
}

/*
 * An operation with device buffers (@hr), under the endpoint's lock: its
 * record and staging; what it sends staged (all of it now for an inject or
 * a message of one chunk, else the first chunk now and the rest as the
 * engine cuts packets: braid_hmem_stage). Return: the record (the caller
 * gives it back if the engine refuses the operation), or NULL and *@err.
 */
struct braid_hmem_op *braid_rdm_hmem_start(struct braid_ep *ep, const struct braid_hmem_req *hr,
					   bool inject, int *err)
{
	struct braid_rdm_ep *r = braid_rdm_ep_of(ep);
	uint64_t chunk = r->hmem.chunk;
	struct braid_hmem_req req = *hr;
	struct braid_hmem_op *op;

	/* what it sends a chunk at a time goes round a ring: the bytes the engine may
	 * still resend (braid_rd_stage_ring), the chunk being readied and the next */
	if (!inject)
		req.in_ring = (braid_rd_stage_ring(r->rd) + chunk - 1) / chunk * chunk + 2 * chunk;
	op = braid_hmem_op_take(&r->hmem, &req, err);
	if (!op)
		return NULL;
	*err = inject || op->in.len <= r->hmem.chunk ? braid_hmem_op_stage_all(&r->hmem, op) :
						       braid_hmem_op_stage_first(&r->hmem, op);
	if (*err) {
		braid_hmem_op_give(&r->hmem, op);
		return NULL;
	}
	return op;
}

static ssize_t rdm_send(struct braid_ep *ep, const struct iovec *iov, void **desc, size_t count,
			fi_addr_t dest, void *context, uint64_t tag, uint64_t data,
			uint64_t flags, bool tagged, bool nocomp)
{
	struct braid_rdm_ep *r = braid_rdm_ep_of(ep);
	struct braid_rd_send req = {
		.iov = iov, .iov_count = count, .tag = tag, .data = data, .context = context,
	};
	struct braid_hmem_op *h = NULL;
	bool dev = braid_hmem_desc(desc, count);
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
		if (dev)
			return -FI_EOPNOTSUPP;	/* (a held transfer keeps no descriptors) */
		return braid_trig_msg(ep, iov, count, dest, context, tag, data, flags, tagged);
	}
	for (i = 0; i < count; i++)
		len += iov[i].iov_len;
	if ((flags & FI_INJECT) && len > ep->info->tx_attr->inject_size)
		return -FI_EMSGSIZE;
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
	if (rdm_peer_locked(ep, dest, &req.peer)) {
		braid_ep_unlock(ep);
		return -FI_EINVAL;
	}
	ret = braid_ep_tx_take(ep);
	if (!ret && r->local_eager && len <= r->local_eager && !dev &&
	    !(flags & (FI_DELIVERY_COMPLETE | FI_MATCH_COMPLETE | FI_FENCE)) &&
	    rdm_send_local(ep, &req, len)) {
		braid_ep_unlock(ep);
		return 0;
	}
	if (!ret && dev) {
		struct braid_hmem_req hr = { .in = iov, .in_desc = desc, .in_count = count,
					     .context = context };

		h = braid_rdm_hmem_start(ep, &hr, flags & FI_INJECT, &ret);
		if (h && h->in.stage) {
			req.iov = &h->in.siov;
			req.iov_count = 1;
			req.staged_len = h->in.ring ? h->in.len : 0;
		}
		if (h && !(flags & FI_INJECT))
			req.context = h;	/* (an inject is copied by the engine: done with it) */
		if (h && h->staged < h->in.len)
			req.flags |= BRAID_RD_STAGED;
		if (ret)
			braid_ep_tx_give(ep, 1);
	}
	if (!ret && (ret = braid_rd_send(r->rd, &req, braid_now_ns())))
		braid_ep_tx_give(ep, 1);
	if (h && (ret || (flags & FI_INJECT)))
		braid_hmem_op_give(&r->hmem, h);
	braid_rdm_posted_locked(ep, ret, flags);
	braid_ep_unlock(ep);
	return ret;
}

static ssize_t rdm_msg_send(struct fid_ep *ep_fid, const void *buf, size_t len, void *desc,
			    fi_addr_t dest_addr, void *context)
{
	struct braid_ep *ep = braid_ep_of(ep_fid);
	struct iovec iov = { (void *)buf, len };

	return rdm_send(ep, &iov, &desc, 1, dest_addr, context, 0, 0, braid_ep_tx_flags(ep_fid), false,
			false);
}

static ssize_t rdm_msg_sendv(struct fid_ep *ep_fid, const struct iovec *iov, void **desc,
			     size_t count, fi_addr_t dest_addr, void *context)
{
	struct braid_ep *ep = braid_ep_of(ep_fid);

	return rdm_send(ep, iov, desc, count, dest_addr, context, 0, 0, braid_ep_tx_flags(ep_fid), false,
			false);
}

static ssize_t rdm_msg_sendmsg(struct fid_ep *ep_fid, const struct fi_msg *msg, uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	return rdm_send(braid_ep_of(ep_fid), msg->msg_iov, msg->desc, msg->iov_count, msg->addr,
			msg->context, 0, msg->data, flags, false, false);
}

static ssize_t rdm_msg_inject(struct fid_ep *ep_fid, const void *buf, size_t len,
			      fi_addr_t dest_addr)
{
	struct braid_ep *ep = braid_ep_of(ep_fid);
	struct iovec iov = { (void *)buf, len };
	struct braid_mr probe;
	void *desc = braid_hmem_probe(ep, buf, len, &probe);

	return rdm_send(ep, &iov, &desc, 1, dest_addr, NULL, 0, 0, FI_INJECT, false, true);
}

static ssize_t rdm_msg_senddata(struct fid_ep *ep_fid, const void *buf, size_t len, void *desc,
				uint64_t data, fi_addr_t dest_addr, void *context)
{
	struct braid_ep *ep = braid_ep_of(ep_fid);
	struct iovec iov = { (void *)buf, len };

	return rdm_send(ep, &iov, &desc, 1, dest_addr, context, 0, data,
			braid_ep_tx_flags(ep_fid) | FI_REMOTE_CQ_DATA, false, false);
}

static ssize_t rdm_msg_injectdata(struct fid_ep *ep_fid, const void *buf, size_t len,
				  uint64_t data, fi_addr_t dest_addr)
{
	struct braid_ep *ep = braid_ep_of(ep_fid);
	struct iovec iov = { (void *)buf, len };
	struct braid_mr probe;
	void *desc = braid_hmem_probe(ep, buf, len, &probe);

	return rdm_send(ep, &iov, &desc, 1, dest_addr, NULL, 0, data,
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

static ssize_t rdm_recv(struct braid_ep *ep, const struct iovec *iov, void **desc, size_t count,
			fi_addr_t src, void *context, uint64_t tag, uint64_t ignore,
			uint64_t flags, bool tagged)
{
	struct braid_rdm_ep *r = braid_rdm_ep_of(ep);
	struct braid_hmem_op *h = NULL;
	struct braid_rd_recv req;
	/* (a look that moves no data, FI_PEEK, needs no staging) */
	bool dev = braid_hmem_desc(desc, count) && !(flags & FI_PEEK);
	int ret;

	if (!ep->enabled)
		return -FI_EOPBADSTATE;
	/* device memory is staged per operation: not a buffer of many messages, not a
	 * claim of a message looked at before, not a shared context's receive */
	if (dev && (ep->srx || (flags & (FI_MULTI_RECV | FI_CLAIM))))
		return -FI_EOPNOTSUPP;
	if (ep->srx)	/* its receives are its shared context's */
		return braid_rdm_srx_post(ep->srx, iov, count, src, context, tag, ignore, flags,
					  tagged);
	ret = rdm_recv_req(ep->info->caps, ep->av, iov, count, src, context, tag, ignore, flags,
			   tagged, &req);
	if (ret)
		return ret;
	if (!ep->rx_cq || (ep->rx_selective && !(flags & FI_COMPLETION)))
		req.flags |= BRAID_RD_NO_COMP;
	req.min_free = r->min_multi_recv;
	braid_ep_lock(ep);
	if (dev) {
		struct braid_hmem_req hr = { .out = iov, .out_desc = desc, .out_count = count,
					     .context = context };

		h = braid_rdm_hmem_start(ep, &hr, false, &ret);
		if (!h) {
			braid_ep_unlock(ep);
			return ret;
		}
		req.iov = &h->out.siov;
		req.iov_count = 1;
		req.context = h;
	}
	if (flags & (FI_PEEK | FI_CLAIM))
		braid_rdm_progress_locked(ep);	/* what has arrived is seen before looking */
	ret = rdm_recv_post(r->rd, &req, flags);
	if (ret && h)
		braid_hmem_op_give(&r->hmem, h);
	if (ret == -FI_EAGAIN)
		braid_rdm_progress_locked(ep);
	else if (!ret)
		braid_rdm_reap(ep);	/* an unexpected message may have completed it at once */
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
		ret = rdm_recv_post(braid_rdm_ep_of(home)->rd, &req, flags);
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
	ret = braid_rd_rxq_cancel(srx->rdq, context, home ? braid_rdm_ep_of(home)->rd : NULL);
	if (!ret && home)
		braid_rdm_reap(home);
	braid_srx_unlock(srx);
	return ret;
}

static ssize_t rdm_msg_recv(struct fid_ep *ep_fid, void *buf, size_t len, void *desc,
			    fi_addr_t src_addr, void *context)
{
	struct braid_ep *ep = braid_ep_of(ep_fid);
	struct iovec iov = { buf, len };

	return rdm_recv(ep, &iov, &desc, 1, src_addr, context, 0, 0, braid_ep_rx_flags(ep_fid),
			false);
}

static ssize_t rdm_msg_recvv(struct fid_ep *ep_fid, const struct iovec *iov, void **desc,
			     size_t count, fi_addr_t src_addr, void *context)
{
	struct braid_ep *ep = braid_ep_of(ep_fid);

	return rdm_recv(ep, iov, desc, count, src_addr, context, 0, 0, braid_ep_rx_flags(ep_fid), false);
}

static ssize_t rdm_msg_recvmsg(struct fid_ep *ep_fid, const struct fi_msg *msg, uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	return rdm_recv(braid_ep_of(ep_fid), msg->msg_iov, msg->desc, msg->iov_count, msg->addr,
			msg->context, 0, 0, flags, false);
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

	return rdm_recv(ep, &iov, &desc, 1, src_addr, context, tag, ignore,
			braid_ep_rx_flags(ep_fid) & ~FI_MULTI_RECV, true);
}

static ssize_t rdm_tag_recvv(struct fid_ep *ep_fid, const struct iovec *iov, void **desc,
			     size_t count, fi_addr_t src_addr, uint64_t tag, uint64_t ignore,
			     void *context)
{
	struct braid_ep *ep = braid_ep_of(ep_fid);

	return rdm_recv(ep, iov, desc, count, src_addr, context, tag, ignore,
			braid_ep_rx_flags(ep_fid) & ~FI_MULTI_RECV, true);
}

static ssize_t rdm_tag_recvmsg(struct fid_ep *ep_fid, const struct fi_msg_tagged *msg,
			       uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	return rdm_recv(braid_ep_of(ep_fid), msg->msg_iov, msg->desc, msg->iov_count, msg->addr,
			msg->context, msg->tag, msg->ignore, flags, true);
}

static ssize_t rdm_tag_send(struct fid_ep *ep_fid, const void *buf, size_t len, void *desc,
			    fi_addr_t dest_addr, uint64_t tag, void *context)
{
	struct braid_ep *ep = braid_ep_of(ep_fid);
	struct iovec iov = { (void *)buf, len };

	return rdm_send(ep, &iov, &desc, 1, dest_addr, context, tag, 0, braid_ep_tx_flags(ep_fid), true,
			false);
}

static ssize_t rdm_tag_sendv(struct fid_ep *ep_fid, const struct iovec *iov, void **desc,
			     size_t count, fi_addr_t dest_addr, uint64_t tag, void *context)
{
	struct braid_ep *ep = braid_ep_of(ep_fid);

	return rdm_send(ep, iov, desc, count, dest_addr, context, tag, 0, braid_ep_tx_flags(ep_fid),
			true, false);
}

static ssize_t rdm_tag_sendmsg(struct fid_ep *ep_fid, const struct fi_msg_tagged *msg,
			       uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	return rdm_send(braid_ep_of(ep_fid), msg->msg_iov, msg->desc, msg->iov_count, msg->addr,
			msg->context, msg->tag, msg->data, flags, true, false);
}

static ssize_t rdm_tag_inject(struct fid_ep *ep_fid, const void *buf, size_t len,
			      fi_addr_t dest_addr, uint64_t tag)
{
	struct braid_ep *ep = braid_ep_of(ep_fid);
	struct iovec iov = { (void *)buf, len };
	struct braid_mr probe;
	void *desc = braid_hmem_probe(ep, buf, len, &probe);

	return rdm_send(ep, &iov, &desc, 1, dest_addr, NULL, tag, 0, FI_INJECT, true, true);
}

static ssize_t rdm_tag_senddata(struct fid_ep *ep_fid, const void *buf, size_t len, void *desc,
				uint64_t data, fi_addr_t dest_addr, uint64_t tag, void *context)
{
	struct braid_ep *ep = braid_ep_of(ep_fid);
	struct iovec iov = { (void *)buf, len };

	return rdm_send(ep, &iov, &desc, 1, dest_addr, context, tag, data,
			braid_ep_tx_flags(ep_fid) | FI_REMOTE_CQ_DATA, true, false);
}

static ssize_t rdm_tag_injectdata(struct fid_ep *ep_fid, const void *buf, size_t len,
				  uint64_t data, fi_addr_t dest_addr, uint64_t tag)
{
	struct braid_ep *ep = braid_ep_of(ep_fid);
	struct iovec iov = { (void *)buf, len };
	struct braid_mr probe;
	void *desc = braid_hmem_probe(ep, buf, len, &probe);

	return rdm_send(ep, &iov, &desc, 1, dest_addr, NULL, tag, data,
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

/* ---- the endpoint's type (struct braid_ep_kind): what braid_ep.c asks of RDM ---- */

static int rdm_open(struct braid_ep *ep, const struct sockaddr_in *addr)
{
	braid_rdm_ep_of(ep)->min_multi_recv = BRAID_MIN_MULTI_RECV;
	return braid_ep_wire_open(ep, addr);
}

static size_t rdm_max_msg_size(const struct braid_ep *ep)
{
	return BRAID_RDM_MAX_MSG;
}

static int rdm_enable(struct braid_ep *ep)
{
	int ret = braid_rdm_enable(ep);

	if (ret)
		return ret;
	ret = braid_ep_join(ep);
	if (ret)
		braid_rdm_close(ep);
	return ret;
}

static int rdm_cancel(struct braid_ep *ep, void *context)
{
	int ret;

	if (!braid_trig_cancel(ep, context))
		return 0;	/* a triggered transfer still held */
	braid_ep_lock(ep);
	ret = braid_rdm_cancel_locked(ep, context);
	braid_ep_unlock(ep);
	return ret;
}

static ssize_t rdm_rx_size_left(struct braid_ep *ep)
{
	struct braid_rdm_ep *r = braid_rdm_ep_of(ep);
	size_t sends, recvs;

	braid_rd_room(r->rd, &sends, &recvs);
	return (ssize_t)recvs;
}

static ssize_t rdm_tx_size_left(struct braid_ep *ep)
{
	struct braid_rdm_ep *r = braid_rdm_ep_of(ep);
	size_t sends, recvs;

	braid_rd_room(r->rd, &sends, &recvs);
	return (ssize_t)sends;
}

/* the floor of a multi-receive buffer (FI_OPT_MIN_MULTI_RECV) */
static int rdm_getopt(struct braid_ep *ep, int optname, void *optval, size_t *optlen)
{
	struct braid_rdm_ep *r = braid_rdm_ep_of(ep);

	if (optname != FI_OPT_MIN_MULTI_RECV)
		return -FI_ENOPROTOOPT;
	return braid_ep_opt_get_size(r->min_multi_recv, optval, optlen);
}

/*
 * FI_OPT_CUDA_API_PERMITTED (fi_endpoint(3)): -FI_EINVAL without a CUDA
 * driver and device; true is what braid does; false is refused
 * (-FI_EOPNOTSUPP) by an endpoint with FI_HMEM, whose device memory moves
 * by CUDA copies only, and honoured by one without, which makes no CUDA
 * call.
 */
static int rdm_cuda_permitted(struct braid_ep *ep, const void *optval, size_t optlen)
{
	if (!optval || optlen != sizeof(bool) || !braid_hmem_available())
		return -FI_EINVAL;
	if (!*(const bool *)optval && (ep->info->caps & FI_HMEM))
		return -FI_EOPNOTSUPP;
	return 0;
}

static int rdm_setopt(struct braid_ep *ep, int optname, const void *optval, size_t optlen)
{
	struct braid_rdm_ep *r = braid_rdm_ep_of(ep);

	if (optname == BRAID_OPT_CUDA_API_PERMITTED)
		return rdm_cuda_permitted(ep, optval, optlen);
	if (optname != FI_OPT_MIN_MULTI_RECV)
		return -FI_ENOPROTOOPT;
	return braid_ep_opt_set_size(&r->min_multi_recv, optval, optlen);
}

/* the RMA counters' flags, in the order of braid_rdm_ep.rma_cntr */
static const uint64_t rma_cntr_flag[BRAID_RMA_CNTRS] = {
	FI_READ, FI_WRITE, FI_REMOTE_READ, FI_REMOTE_WRITE,
};

static int rdm_bind_rma_cntrs(struct braid_ep *ep, struct braid_cntr *cntr, uint64_t flags)
{
	struct braid_rdm_ep *r = braid_rdm_ep_of(ep);
	int fd = ep->wire->ops->wait_fd(ep->wire), i, ret;

	for (i = 0; cntr && i < BRAID_RMA_CNTRS; i++)
		if ((flags & rma_cntr_flag[i]) && r->rma_cntr[i])
			return -FI_EINVAL;	/* one counter of a kind */
	for (i = 0; i < BRAID_RMA_CNTRS; i++) {
		struct braid_cntr *c = cntr ? cntr : r->rma_cntr[i];

		if (!(flags & rma_cntr_flag[i]) || !c)
			continue;
		if (!cntr) {
			braid_wait_del_fd(&c->wait, fd);
			braid_epset_remove(&c->eps, ep);
			atomic_fetch_sub(&c->ref, 1);
			r->rma_cntr[i] = NULL;
			continue;
		}
		ret = braid_epset_add(&c->eps, ep);
		if (ret)
			return ret;
		/* remote accesses and answers arrive on the wire */
		braid_wait_add_fd(&c->wait, fd);
		r->rma_cntr[i] = c;
		atomic_fetch_add(&c->ref, 1);
	}
	return 0;
}

static void rdm_detach(struct braid_ep *ep)
{
	rdm_bind_rma_cntrs(ep, NULL, FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE);
}

/* its engine's counters in the log, then the engine goes (braid_rdm_close) */
static void rdm_ep_close(struct braid_ep *ep)
{
	struct braid_rdm_ep *r = braid_rdm_ep_of(ep);

	if (r->rd) {
		const struct braid_rd_stats *st = braid_rd_get_stats(r->rd);

		BRAID_INFO(FI_LOG_EP_CTRL, "RDM endpoint on port %u closed: %lu data packets "
			   "(%lu bytes) sent, %lu received (%lu bytes), %lu retransmitted, "
			   "%lu messages sent, %lu received, %lu packets put back (socket full); "
			   "%lu bundles sent, %lu received; %lu datagrams received into place, "
			   "%lu large copies dropped uncopied, %lu in %lu coalesced runs (UDP GRO)\n",
			   ntohs(ep->wire->name.sin_port),
			   (unsigned long)st->tx_data, (unsigned long)st->tx_bytes,
			   (unsigned long)st->rx_data, (unsigned long)st->rx_bytes,
			   (unsigned long)st->retx_pkts, (unsigned long)st->msgs_sent,
			   (unsigned long)st->msgs_received, (unsigned long)ep->stats.tx_refused,
			   (unsigned long)st->tx_bundles, (unsigned long)st->rx_bundles,
			   (unsigned long)ep->stats.rx_placed, (unsigned long)ep->stats.rx_dup_skipped,
			   (unsigned long)ep->stats.rx_gro_dgrams,
			   (unsigned long)ep->stats.rx_gro_runs);
		BRAID_INFO(FI_LOG_EP_CTRL, "RDM endpoint on port %u: datagrams through local peers' "
			   "shared memory: %lu sent, %lu received, of them messages handed whole: "
			   "%lu sent, %lu received (%lu held back, %lu dropped, "
			   "%lu doorbells, %lu bad)\n", ntohs(ep->wire->name.sin_port),
			   (unsigned long)ep->wire->local.tx, (unsigned long)ep->wire->local.rx,
			   (unsigned long)ep->wire->local.tx_msgs, (unsigned long)ep->wire->local.rx_msgs,
			   (unsigned long)ep->wire->local.held, (unsigned long)ep->wire->local.dropped,
			   (unsigned long)ep->wire->local.doorbells, (unsigned long)ep->wire->local.bad);
		BRAID_INFO(FI_LOG_EP_CTRL, "RDM endpoint on port %u: loss recovery: %lu RTOs (%lu spurious), "
			   "%lu tail probes, %lu time-based losses (%lu on one path), %lu path "
			   "re-draws, %lu path deaths, %lu paths suspect by a probe, %lu rendezvous probes, %lu peers failed; %lu ACKs sent, %lu received; drops: "
			   "%lu duplicate, %lu out of window, %lu no buffer, %lu stale; ECN: %lu data packets "
			   "arrived CE, %lu ACKs echoed CE\n",
			   ntohs(ep->wire->name.sin_port), (unsigned long)st->rto_fires, (unsigned long)st->rto_spurious,
			   (unsigned long)st->tlp_probes, (unsigned long)st->rack_losses,
			   (unsigned long)st->rack_path_losses, (unsigned long)st->path_redraws, (unsigned long)st->path_deaths,
			   (unsigned long)st->probe_suspects, (unsigned long)st->rdv_probes,
			   (unsigned long)st->peers_failed, (unsigned long)st->tx_acks,
			   (unsigned long)st->rx_acks,
			   (unsigned long)st->drops[BRAID_DROP_DUPLICATE],
			   (unsigned long)st->drops[BRAID_DROP_OUT_OF_WINDOW],
			   (unsigned long)st->drops[BRAID_DROP_NO_BUFFER],
			   (unsigned long)st->drops[BRAID_DROP_STALE_EPOCH],
			   (unsigned long)st->rx_ce, (unsigned long)st->ecn_echoes);
		/* (its drops, by reason, are in the endpoint's close line, braid_ep.c) */
		BRAID_INFO(FI_LOG_EP_CTRL, "RDM endpoint on port %u: peers: %lu with state (%lu "
			   "proven), %lu evicted, %lu restarted; challenges: %lu sent, %lu answered, "
			   "%lu answers proved a peer, %lu not sent (ring full)\n",
			   ntohs(ep->wire->name.sin_port), (unsigned long)st->peers,
			   (unsigned long)st->peers_verified, (unsigned long)st->peers_evicted,
			   (unsigned long)st->peers_restarted, (unsigned long)st->chal_tx,
			   (unsigned long)st->chal_rx, (unsigned long)st->resp_rx,
			   (unsigned long)st->ctl_full);
	}
	braid_rdm_close(ep);
}

static uint64_t rdm_next_deadline(struct braid_ep *ep)
{
	struct braid_rdm_ep *r = braid_rdm_ep_of(ep);

	return r->rd ? braid_rd_next_deadline(r->rd) : UINT64_MAX;
}

static uint64_t rdm_rx_last(const struct braid_ep *ep)
{
	return braid_container_of(ep, const struct braid_rdm_ep, ep)->rx_last_ns;
}

static const struct braid_rd_stats *rdm_rd_stats(struct braid_ep *ep)
{
	struct braid_rdm_ep *r = braid_rdm_ep_of(ep);

	return r->rd ? braid_rd_get_stats(r->rd) : NULL;
}

static size_t rdm_stat_peers(struct braid_ep *ep, void *buf, size_t len, uint32_t *peers,
			     uint32_t *total)
{
	struct braid_rdm_ep *r = braid_rdm_ep_of(ep);

	if (!r->rd)
		return 0;
	*total = (uint32_t)braid_rd_get_stats(r->rd)->flows_active;
	return braid_rd_snapshot_peers(r->rd, buf, len, peers);
}

const struct braid_ep_kind braid_rdm_kind = {
	.size = sizeof(struct braid_rdm_ep),
	.msg = &braid_rdm_msg_ops,
	.tagged = &braid_rdm_tagged_ops,
	.rma = &braid_rdm_rma_ops,
	.atomic = &braid_rdm_atomic_ops,
	.needs_av = true,
	.aliases = true,
	.tx_wire_wait = true,
	.clocked = true,
	.gro = true,
	.lend = true,
	.gso = true,
	.local = true,
	.open = rdm_open,
	.max_msg_size = rdm_max_msg_size,
	.enable = rdm_enable,
	.progress = braid_rdm_progress_locked,
	.bind_rma_cntrs = rdm_bind_rma_cntrs,
	.cancel = rdm_cancel,
	.rx_size_left = rdm_rx_size_left,
	.tx_size_left = rdm_tx_size_left,
	.getopt = rdm_getopt,
	.setopt = rdm_setopt,
	.detach = rdm_detach,
	.close = rdm_ep_close,
	.next_deadline = rdm_next_deadline,
	.rx_last = rdm_rx_last,
	.rd_stats = rdm_rd_stats,
	.stat_peers = rdm_stat_peers,
};
