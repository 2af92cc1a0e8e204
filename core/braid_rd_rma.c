/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_rd_rma.c: RMA and atomics over the RD engine (protocol.md §4.7): requests travel as messages of the flow, sprayed and recovered like any; the target places a write's packets as they arrive, executes reads and atomics in message order, exactly once, and answers each request with a RESP. */
#include <string.h>
#include <rdma/fi_errno.h>

#include "braid_atomic.h"
#include "braid_iov.h"
#include "braid_rd_int.h"
#include "braid/braid_errno.h"

size_t braid_rd_atomic_max(const struct braid_rd *rd)
{
	return RD_RMA_SEG(rd);
}

static bool is_compare(uint8_t aop)
{
	return aop >= BRAID_AOP_CSWAP && aop <= BRAID_AOP_MSWAP;
}

static bool is_request(uint8_t op)
{
	return op == BRAID_RMA_WRITE || op == BRAID_RMA_READ_REQ || op == BRAID_RMA_ATOMIC_REQ ||
	       op == BRAID_RMA_FETCH_REQ;
}

/* The bytes of operands (and compare values) an atomic of @count elements carries. */
static uint64_t atomic_operand_len(uint8_t aop, uint8_t dt, uint32_t count)
{
	uint64_t n = (uint64_t)count * braid_atomic_dt_size((enum braid_adt)dt);

	if (aop == BRAID_AOP_ATOMIC_READ)
		return 0;
	return is_compare(aop) ? 2 * n : n;
}

static enum braid_atomic_kind atomic_kind(uint8_t aop, bool fetch)
{
	if (is_compare(aop))
		return BRAID_ATOMIC_COMPARE_KIND;
	return fetch ? BRAID_ATOMIC_FETCH_KIND : BRAID_ATOMIC_WRITE_KIND;
}

/* ---- initiator ---- */

int braid_rd_rma(struct braid_rd *rd, const struct braid_rd_rma *req, uint64_t now)
{
	uint64_t len, rlen, sz;
	struct rd_send *op;
	uint8_t wop;
	int ret;

	if (!req || !req->peer || req->iov_count > BRAID_RD_IOV_MAX ||
	    req->res_count > BRAID_RD_IOV_MAX || (req->iov_count && !req->iov) ||
	    (req->res_count && !req->res) || !braid_iov_valid(req->iov, req->iov_count) ||
	    !braid_iov_valid(req->res, req->res_count) ||
	    (req->flags & ~(BRAID_RD_CQ_DATA | BRAID_RD_INJECT | BRAID_RD_NO_COMP |
			    BRAID_RD_STAGED)) ||
	    ((req->flags & BRAID_RD_STAGED) && (req->op != BRAID_RD_RMA_WRITE || !rd->cfg.stage ||
						(req->flags & BRAID_RD_INJECT))))
		return -FI_EINVAL;
	len = braid_iov_len(req->iov, req->iov_count);
	rlen = braid_iov_len(req->res, req->res_count);
	if (req->staged_len &&
	    rd_out_ring_check(rd, req->flags, req->iov, req->iov_count, req->staged_len, &len))
		return -FI_EINVAL;
	switch (req->op) {
	case BRAID_RD_RMA_WRITE:
		if (req->res_count)
			return -FI_EINVAL;
		if (len > rd->cfg.max_msg_size ||
		    ((req->flags & BRAID_RD_INJECT) && len > rd->cfg.inject_size))
			return -FI_EMSGSIZE;
		wop = BRAID_RMA_WRITE;
		break;
	case BRAID_RD_RMA_READ:
		if (req->iov_count || (req->flags & (BRAID_RD_CQ_DATA | BRAID_RD_INJECT)))
			return -FI_EINVAL;
		if (rlen > rd->cfg.max_msg_size)
			return -FI_EMSGSIZE;
		wop = BRAID_RMA_READ_REQ;
		break;
	case BRAID_RD_RMA_ATOMIC:
		if (req->flags & BRAID_RD_CQ_DATA)
			return -FI_EINVAL;
		if (!braid_atomic_valid((enum braid_aop)req->aop, (enum braid_adt)req->dt,
					atomic_kind(req->aop, req->res_count > 0)))
			return -FI_EOPNOTSUPP;
		sz = braid_atomic_dt_size((enum braid_adt)req->dt);
		if (!req->count || len != atomic_operand_len(req->aop, req->dt, req->count) ||
		    (req->res_count && rlen != req->count * sz) ||
		    (is_compare(req->aop) && !req->res_count))
			return -FI_EINVAL;
		if (len > RD_RMA_SEG(rd) || req->count * sz > RD_RMA_SEG(rd) ||
		    ((req->flags & BRAID_RD_INJECT) && len > rd->cfg.inject_size))
			return -FI_EMSGSIZE;
		wop = req->res_count ? BRAID_RMA_FETCH_REQ : BRAID_RMA_ATOMIC_REQ;
		break;
	default:
		return -FI_EINVAL;
	}
	ret = rd_out_start(rd, req->peer, req->flags, req->context, req->iov, req->iov_count, len,
			   now, &op);
	if (ret)
		return ret;
	if (req->staged_len)
		rd_out_ring_set(op, req->iov, len);
	if (req->res_count)	/* none for a write (res may be NULL) */
		memcpy(op->res, req->res, req->res_count * sizeof(struct iovec));
	op->res_count = req->res_count;
	op->res_len = rlen;
	op->data = req->data;
	op->rma.op = wop;
	if (req->op == BRAID_RD_RMA_ATOMIC) {
		op->rma.aop = req->aop;
		op->rma.dt = req->dt;
	}
	op->rma.ref = wop == BRAID_RMA_READ_REQ ? (uint32_t)rlen :
		  (wop == BRAID_RMA_WRITE ? 0 : req->count);
	op->rma.rkey = req->rkey;
	op->rma.raddr = req->raddr;
	braid_dlist_insert_tail(&op->rlink, &op->conn->rma_ops);
	rd_out_queue(rd, op, now);
	return 0;
}

/* The request @op is over: its answer came (or the peer failed). */
void rd_rma_finish(struct braid_rd *rd, struct rd_send *op, int err, int prov_errno)
{
	static const uint32_t kind[BRAID_RMA_OP_MAX] = {
		[BRAID_RMA_WRITE] = BRAID_RD_COMP_WRITE,
		[BRAID_RMA_READ_REQ] = BRAID_RD_COMP_READ,
		[BRAID_RMA_ATOMIC_REQ] = BRAID_RD_COMP_ATOMIC | BRAID_RD_COMP_WRITE,
		[BRAID_RMA_FETCH_REQ] = BRAID_RD_COMP_ATOMIC | BRAID_RD_COMP_READ,
	};
	struct braid_rd_comp c = {
		.context = op->context,
		.flags = kind[op->rma.op],
		.len = op->rma.op == BRAID_RMA_WRITE ? op->len : op->res_len,
		.data = op->data,
		.peer = op->conn->key,
	};

	if (!err && op->rma.status == BRAID_RMA_ACCESS) {
		err = FI_EACCES;
		prov_errno = BRAID_PERR_REMOTE_ACCESS;
	} else if (!err && op->rma.status != BRAID_RMA_OK) {
		err = FI_EOPNOTSUPP;
		prov_errno = BRAID_PERR_REMOTE_INVALID;
	}
	c.err = err;
	c.prov_errno = prov_errno;
	if (err)
		c.len = 0;
	else if (op->flags & BRAID_RD_NO_COMP)
		c.flags |= BRAID_RD_COMP_SILENT;
	rd_comp_push(rd, &c);
	if (!err)
		RD_COUNT(rd, op->conn->flow, rma_ops, 1);
	braid_dlist_remove(&op->rlink);
	rd_out_release(rd, op);
}

/* ---- target (and the initiator's side of a RESP) ---- */

/* The key check of a request's range: 0 or BRAID_RMA_ACCESS. */
/* The target's key check of [addr, addr + len) of region @key for @access (§4.7). */
static uint8_t mr_region(struct braid_rd *rd, uint64_t key, uint64_t addr, uint64_t len,
			 uint32_t access, void **ptr)
{
	if (!rd->cfg.mr_check || rd->cfg.mr_check(rd->cfg.mr_ctx, key, addr, (size_t)len, access, ptr))
		return BRAID_RMA_ACCESS;
	return BRAID_RMA_OK;
}

static uint8_t mr_ok(struct braid_rd *rd, const struct rd_msg *m, uint64_t len, uint32_t access,
		     void **ptr)
{
	return mr_region(rd, m->rma.rkey, m->rma.raddr, len, access, ptr);
}

/* The request's [raddr, raddr + @len) was written: what its region needs first (cfg.mr_written). */
static uint8_t mr_written(struct braid_rd *rd, const struct rd_msg *m, uint64_t len)
{
	if (rd->cfg.mr_written &&
	    rd->cfg.mr_written(rd->cfg.mr_ctx, m->rma.rkey, m->rma.raddr, (size_t)len))
		return BRAID_RMA_ACCESS;
	return BRAID_RMA_OK;
}

/* Where rd_rma_in_place() would put @v's payload (a WRITE's region, a RESP's
 * result buffers), as iovs; 0: nowhere (a refusal, an atomic, a stale answer).
 * @m NULL: a WRITE's first packet, its message not open yet: the whole
 * message's range is checked, as rd_rma_in_place() will. */
int rd_rma_in_where(struct braid_rd *rd, const struct rd_msg *m, const struct braid_rd_data_view *v,
		    struct iovec *iov, int max)
{
	const struct braid_rma_fields *rma = m ? &m->rma : &v->rma;
	void *ptr;

	if (!v->payload_len || max < 1 || (m && (m->rma.status != BRAID_RMA_OK || m->discard)))
		return 0;
	if (m && m->rma.op == BRAID_RMA_RESP)
		return m->req ? braid_iov_slice(m->req->res, m->req->res_count, v->offset,
						v->payload_len, iov, max) : 0;
	if (rma->op != BRAID_RMA_WRITE ||
	    mr_region(rd, rma->rkey, rma->raddr, m ? m->len : v->msg_len, BRAID_RD_ACC_WRITE,
		      &ptr) != BRAID_RMA_OK)
		return 0;
	iov[0].iov_base = (uint8_t *)ptr + v->offset;
	iov[0].iov_len = v->payload_len;
	return 1;
}

bool rd_rma_in_open(struct braid_rd *rd, struct rd_msg *m, const struct braid_rd_data_view *v)
{
	struct braid_dlist *it;

	m->rma = v->rma;
	if ((m->rma.op == BRAID_RMA_ATOMIC_REQ || m->rma.op == BRAID_RMA_FETCH_REQ) &&
	    m->len > RD_RMA_SEG(rd))
		return false;	/* one packet at most: a sender of ours never makes it longer */
	if (m->rma.op != BRAID_RMA_RESP)
		return true;
	/* a RESP: the request it answers, still waiting for it */
	braid_dlist_foreach(&m->conn->rma_ops, it) {
		struct rd_send *op = braid_container_of(it, struct rd_send, rlink);

		if (op->msg_id != m->rma.ref || op->resp_bound)
			continue;
		op->resp_bound = true;
		m->req = op;
		/* an answer whose size is not the request's is refused, never placed */
		if (m->rma.status == BRAID_RMA_OK && m->len != (op->rma.op == BRAID_RMA_ATOMIC_REQ ||
							    op->rma.op == BRAID_RMA_WRITE ? 0 : op->res_len))
			m->rma.status = BRAID_RMA_INVALID;
		if (m->rma.status != BRAID_RMA_OK && m->len)
			m->rma.status = BRAID_RMA_INVALID;
		return true;
	}
	m->discard = true;	/* no request of ours (a stale answer): its bytes are absorbed */
	return true;
}

void rd_rma_in_place(struct braid_rd *rd, struct rd_msg *m, const struct braid_rd_data_view *v)
{
	void *ptr;

	if (m->rma.status != BRAID_RMA_OK || !v->payload_len)
		return;
	if (m->rma.op == BRAID_RMA_RESP) {
		if (m->req)
			braid_iov_scatter(m->req->res, m->req->res_count, v->offset, v->payload,
					  v->payload_len);
		return;
	}
	/* a write: the whole range is checked with every packet (a region closed
	 * mid-write stops it there) */
	m->rma.status = mr_ok(rd, m, m->len, BRAID_RD_ACC_WRITE, &ptr);
	if (m->rma.status == BRAID_RMA_OK)
		memcpy((uint8_t *)ptr + v->offset, v->payload, v->payload_len);
}

/* The operands of an atomic request: its one staged packet, or NULL. */
static const uint8_t *atomic_operands(const struct rd_msg *m)
{
	if (!m->len)
		return NULL;
	if (!m->stage || m->stage->next || m->stage->off || m->stage->len != m->len)
		return NULL;
	return m->stage->data;
}

/*
 * An atomic request @m at the target: checked, then applied to the
 * target's memory (the fetched values into @res, for a fetch). Sets the
 * event's flags and length; *@rlen: the bytes of the answer. Return: its
 * status. Exactly once: a request is executed when its message completes,
 * and a message completes once (its PSNs are acknowledged once).
 */
static uint8_t rma_exec_atomic(struct braid_rd *rd, struct rd_msg *m, bool fetch,
			       struct rd_stage *res, struct braid_rd_comp *ev, uint64_t *rlen)
{
	enum braid_aop aop = (enum braid_aop)m->rma.aop;
	enum braid_adt dt = (enum braid_adt)m->rma.dt;
	uint64_t n = (uint64_t)m->rma.ref * braid_atomic_dt_size(dt);
	uint32_t acc = aop == BRAID_AOP_ATOMIC_READ ? BRAID_RD_ACC_READ :
		       (fetch ? BRAID_RD_ACC_READ | BRAID_RD_ACC_WRITE : BRAID_RD_ACC_WRITE);
	const uint8_t *opnd = atomic_operands(m);
	void *ptr = NULL;
	uint8_t status;

	ev->flags |= BRAID_RD_COMP_ATOMIC | (fetch ? BRAID_RD_COMP_READ : 0) |
		     (aop != BRAID_AOP_ATOMIC_READ ? BRAID_RD_COMP_WRITE : 0);
	ev->len = n;
	if (!braid_atomic_valid(aop, dt, atomic_kind(m->rma.aop, fetch)) || !m->rma.ref ||
	    m->len != atomic_operand_len(m->rma.aop, m->rma.dt, m->rma.ref) || n > RD_RMA_SEG(rd) ||
	    (m->len && !opnd))
		return BRAID_RMA_INVALID;
	status = mr_ok(rd, m, n, acc | BRAID_RD_ACC_ATOMIC, &ptr);
	if (status == BRAID_RMA_OK) {
		braid_atomic_apply(aop, dt, ptr, opnd, is_compare(m->rma.aop) ? opnd + n : NULL,
				   fetch ? res->data : NULL, m->rma.ref);
		*rlen = fetch ? n : 0;
		if (aop != BRAID_AOP_ATOMIC_READ)
			status = mr_written(rd, m, n);
	}
	return status;
}

/*
 * Execute request @m and queue its answer. Everything it needs (flow, send,
 * result buffer, room for the target's event) is taken first, so that it is
 * applied exactly once, when it can be answered. Return: false when something
 * is missing (it waits in rd->rma_pend).
 */
static bool rma_exec(struct braid_rd *rd, struct rd_msg *m, uint64_t now)
{
	struct rd_conn *conn = m->conn;
	bool fetch = m->rma.op == BRAID_RMA_FETCH_REQ, atomic = fetch ||
		     m->rma.op == BRAID_RMA_ATOMIC_REQ;
	struct braid_rd_comp ev = {
		.flags = BRAID_RD_COMP_REMOTE,
		.len = m->len,
		.peer = conn->key,
		.rkey = m->rma.rkey,
	};
	struct rd_stage *res = NULL;
	uint8_t status = m->rma.status;
	uint64_t rlen = 0;
	void *ptr = NULL;
	struct rd_flow *f;
	struct rd_send *op;

	if (m->rma.op && rd->comp_count >= rd->comp_cap / 2)
		return false;	/* events wait for the application to read completions */
	f = rd_flow_attach(rd, conn, true, now);
	if (!f)
		return false;
	if (fetch) {
		res = braid_pool_alloc_raw(&rd->stages);	/* the fetched values fill it */
		if (!res)
			return false;
		res->next = NULL;
		res->small = false;
		res->heap = false;
	}
	op = rd_out_new_send(rd, conn, BRAID_RD_INTERNAL, NULL);
	if (!op) {
		if (res)
			braid_pool_release(&rd->stages, res);
		return false;
	}
	if (m->rma.op == BRAID_RMA_WRITE) {
		ev.flags |= BRAID_RD_COMP_WRITE;
		if (status == BRAID_RMA_OK && m->len)
			status = mr_written(rd, m, m->len);
		if (m->hflags & BRAID_RD_F_CQ_DATA) {
			ev.flags |= BRAID_RD_COMP_CQ_DATA;
			ev.data = m->data;
		}
	} else if (m->rma.op == BRAID_RMA_READ_REQ) {
		ev.flags |= BRAID_RD_COMP_READ;
		ev.len = m->rma.ref;
		if (m->rma.ref > rd->cfg.max_msg_size)
			status = BRAID_RMA_INVALID;
		else
			status = mr_ok(rd, m, m->rma.ref, BRAID_RD_ACC_READ, &ptr);
		rlen = m->rma.ref;
	} else if (atomic) {
		status = rma_exec_atomic(rd, m, fetch, res, &ev, &rlen);
	}
	/* (rma.op 0: a delivery-complete message was delivered; the RESP says so) */
	op->rma.op = BRAID_RMA_RESP;
	op->rma.ref = m->msg_id;
	op->rma.status = status;
	if (status == BRAID_RMA_OK && rlen) {
		op->iov[0].iov_base = res ? res->data : ptr;
		op->iov[0].iov_len = rlen;
		op->iov_count = 1;
		op->len = rlen;
	}
	op->stage = res;
	rd_out_queue(rd, op, now);
	if (!m->rma.op)
		return true;
	if (status == BRAID_RMA_OK) {
		rd_comp_push(rd, &ev);
		RD_COUNT(rd, m->conn->flow, rma_served, 1);
	} else {
		RD_COUNT(rd, m->conn->flow, rma_refused, 1);
	}
	return true;
}

void rd_rma_delivered(struct braid_rd *rd, struct rd_msg *m)
{
	/* answered with the next output, in order behind requests that wait */
	braid_dlist_insert_tail(&m->node, &rd->rma_pend);
}

static void msg_free(struct braid_rd *rd, struct rd_msg *m)
{
	while (m->stage) {
		struct rd_stage *s = m->stage;

		m->stage = s->next;
		rd_stage_put(rd, s);
	}
	rd_msg_release(rd, m);
}

void rd_rma_in_settle(struct braid_rd *rd, struct rd_msg *m, uint64_t now)
{
	if (m->rma.op == BRAID_RMA_RESP) {
		struct rd_send *op = m->req;

		if (op) {
			op->resp_done = true;
			op->rma.status = m->rma.status;
			if (op->cut_done && !op->pkts_out) {
				/* answered and wholly acknowledged: it completes */
				if (op->rma.op)
					rd_rma_finish(rd, op, 0, 0);
				else
					rd_out_finish(rd, op, 0, 0);	/* delivery complete */
			}
		}
		msg_free(rd, m);
		return;
	}
	if (!is_request(m->rma.op)) {
		msg_free(rd, m);
		return;
	}
	/* requests execute in message order, behind any that wait */
	braid_dlist_insert_tail(&m->node, &rd->rma_pend);
	rd_rma_pend_run(rd, now);
}

void rd_rma_pend_run(struct braid_rd *rd, uint64_t now)
{
	struct braid_dlist *it;

	while ((it = rd->rma_pend.next) != &rd->rma_pend) {
		struct rd_msg *m = braid_container_of(it, struct rd_msg, node);

		if (!rma_exec(rd, m, now))
			return;
		braid_dlist_remove(&m->node);
		msg_free(rd, m);
	}
}

/* The peer restarted or failed: its requests are not answered. */
void rd_rma_pend_drop(struct braid_rd *rd, struct rd_conn *conn)
{
	struct braid_dlist *it, *tmp;

	braid_dlist_foreach_safe(&rd->rma_pend, it, tmp) {
		struct rd_msg *m = braid_container_of(it, struct rd_msg, node);

		if (m->conn != conn)
			continue;
		braid_dlist_remove(&m->node);
		msg_free(rd, m);
	}
}
