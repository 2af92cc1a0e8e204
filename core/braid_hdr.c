/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_hdr.c: encode and validate braid's wire headers (docs/protocol.md §2-§3). */
#include <stdbool.h>
#include <string.h>

#include "braid_hdr.h"

static const char *const drop_names[BRAID_DROP_MAX] = {
#define BRAID_X_NAME(e, name, meaning) [e] = #name,
	BRAID_DROP_TABLE(BRAID_X_NAME)
#undef BRAID_X_NAME
};

const char *braid_drop_reason_str(enum braid_drop_reason reason)
{
	return (unsigned)reason < BRAID_DROP_MAX ? drop_names[reason] : "unknown";
}

void braid_dgram_hdr_write(struct braid_dgram_hdr *hdr, uint16_t src_port,
			   int has_data, uint64_t cq_data)
{
	hdr->base.magic = BRAID_HDR_MAGIC;
	hdr->base.version = BRAID_PROTO_VERSION;
	hdr->base.type = BRAID_PKT_DGRAM;
	hdr->base.flags = has_data ? BRAID_DGRAM_F_CQ_DATA : 0;
	hdr->base.src_port = htobe16(src_port);
	hdr->base.hdr_len = htobe16(sizeof(*hdr));
	hdr->cq_data = htobe64(has_data ? cq_data : 0);
}

#define DROP(r) (-((int)(r) + 1))

/* Exact header length and defined flags of each type this version speaks (§2.2). */
static const struct {
	uint16_t hdr_len;
	uint8_t flags;
} type_info[] = {
	[BRAID_PKT_DGRAM] = { sizeof(struct braid_dgram_hdr), BRAID_DGRAM_F_CQ_DATA },
	[BRAID_PKT_RD_DATA] = { sizeof(struct braid_rd_data_hdr), BRAID_RD_DATA_FLAGS },
	[BRAID_PKT_RD_ACK] = { sizeof(struct braid_rd_ack_hdr), BRAID_RD_ACK_FLAGS },
	[BRAID_PKT_RD_CTS] = { sizeof(struct braid_rd_cts_hdr), 0 },
	[BRAID_PKT_CM] = { sizeof(struct braid_cm_hdr), 0 },
	[BRAID_PKT_RD_RMA] = { sizeof(struct braid_rd_rma_hdr), BRAID_RD_RMA_FLAGS },
	[BRAID_PKT_RD_BUNDLE] = { BRAID_RD_BUNDLE_HDR, 0 },
	[BRAID_PKT_RD_CHALLENGE] = { sizeof(struct braid_rd_cts_hdr), BRAID_RD_CHAL_FLAGS },
};

int braid_base_hdr_check(const void *buf, size_t len)
{
	struct braid_base_hdr b;

	if (len < sizeof(b))
		return DROP(BRAID_DROP_SHORT);
	memcpy(&b, buf, sizeof(b));
	if (b.magic != BRAID_HDR_MAGIC)
		return DROP(BRAID_DROP_MAGIC);
	if (b.version != BRAID_PROTO_VERSION)	/* a keyed datagram here: another job's (§2.4) */
		return DROP(b.version == BRAID_PROTO_VERSION_KEYED ? BRAID_DROP_AUTH : BRAID_DROP_VERSION);
	if (b.type == 0 || b.type >= sizeof(type_info) / sizeof(type_info[0]))
		return DROP(BRAID_DROP_TYPE);
	if (be16toh(b.hdr_len) != type_info[b.type].hdr_len)
		return DROP(BRAID_DROP_HDR_LEN);
	if (len < type_info[b.type].hdr_len)
		return DROP(BRAID_DROP_SHORT);
	if (b.flags & ~type_info[b.type].flags)
		return DROP(BRAID_DROP_FLAGS);
	return b.type;
}

int braid_rd_bundle_check(const void *buf, size_t len)
{
	const uint8_t *b = buf, *rec;
	size_t off = BRAID_RD_BUNDLE_HDR, rec_len;
	int type = braid_base_hdr_check(buf, len), n = 0;

	if (type < 0)
		return type;
	if (type != BRAID_PKT_RD_BUNDLE)
		return DROP(BRAID_DROP_TYPE);
	while (off < len) {
		if (!braid_rd_bundle_next(buf, len, &off, &rec, &rec_len) || off > len ||
		    rec_len < sizeof(struct braid_base_hdr) || ++n > BRAID_RD_BUNDLE_MAX)
			return DROP(BRAID_DROP_BUNDLE);
		/* RD packets only (no bundle in a bundle), all from the bundle's sender */
		if ((rec[2] != BRAID_PKT_RD_DATA && rec[2] != BRAID_PKT_RD_ACK &&
		     rec[2] != BRAID_PKT_RD_CTS && rec[2] != BRAID_PKT_RD_RMA) ||
		    rec[4] != b[4] || rec[5] != b[5])
			return DROP(BRAID_DROP_BUNDLE);
	}
	return n ? n : DROP(BRAID_DROP_BUNDLE);
}

int braid_dgram_hdr_decode(const void *buf, size_t len, struct braid_dgram_view *view)
{
	struct braid_dgram_hdr hdr;
	int type = braid_base_hdr_check(buf, len);

	if (type < 0)
		return type;
	if (type != BRAID_PKT_DGRAM)
		return DROP(BRAID_DROP_TYPE);
	memcpy(&hdr, buf, sizeof(hdr));
	view->src_port = be16toh(hdr.base.src_port);
	view->has_data = !!(hdr.base.flags & BRAID_DGRAM_F_CQ_DATA);
	view->cq_data = be64toh(hdr.cq_data);
	view->hdr_len = sizeof(hdr);
	return 0;
}

void braid_rd_bundle_hdr_write(void *buf, uint16_t src_port)
{
	struct braid_base_hdr b;

	braid_base_hdr_write(&b, BRAID_PKT_RD_BUNDLE, 0, src_port, BRAID_RD_BUNDLE_HDR);
	memcpy(buf, &b, sizeof(b));
}

/* §4.7: the RMA fields of a decoded RD_RMA packet agree with its operation */
static int rma_fields_check(const struct braid_rd_data_view *v)
{
	if (!v->rma.op || v->rma.op >= BRAID_RMA_OP_MAX || v->tag)
		return DROP(BRAID_DROP_BAD_LEN);
	if (v->rma.op == BRAID_RMA_RESP ? v->rma.status >= BRAID_RMA_STATUS_MAX || v->rma.rkey || v->rma.raddr
					 : v->rma.status != 0)
		return DROP(BRAID_DROP_BAD_LEN);
	if (v->rma.op != BRAID_RMA_ATOMIC_REQ && v->rma.op != BRAID_RMA_FETCH_REQ && (v->rma.aop || v->rma.dt))
		return DROP(BRAID_DROP_BAD_LEN);
	if ((v->rma.op == BRAID_RMA_WRITE && v->rma.ref) || (v->rma.op == BRAID_RMA_READ_REQ && v->msg_len))
		return DROP(BRAID_DROP_BAD_LEN);
	if (v->rma.op != BRAID_RMA_WRITE && (v->flags & BRAID_RD_F_CQ_DATA))
		return DROP(BRAID_DROP_FLAGS);
	return 0;
}

/* Big-endian fields at byte @off of a packet (any alignment). */
static inline uint32_t be32_at(const uint8_t *b, size_t off)
{
	uint32_t x;

	memcpy(&x, b + off, sizeof(x));
	return be32toh(x);
}

static inline uint64_t be64_at(const uint8_t *b, size_t off)
{
	uint64_t x;

	memcpy(&x, b + off, sizeof(x));
	return be64toh(x);
}

#define RD_AT(field)	offsetof(struct braid_rd_data_hdr, field)
#define RMA_AT(field)	offsetof(struct braid_rd_rma_hdr, field)

int braid_rd_data_decode_typed(const void *buf, size_t len, int type, struct braid_rd_data_view *v)
{
	const uint8_t *b = buf;
	size_t hlen = sizeof(struct braid_rd_data_hdr);

	v->src_port = (uint16_t)(b[RD_AT(base.src_port)] << 8 | b[RD_AT(base.src_port) + 1]);
	v->flags = b[RD_AT(base.flags)];
	v->src_epoch = be32_at(b, RD_AT(src_epoch));
	v->dst_epoch = be32_at(b, RD_AT(dst_epoch));
	v->psn = be32_at(b, RD_AT(psn));
	v->ack_psn = be32_at(b, RD_AT(ack_psn));
	v->msg_id = be32_at(b, RD_AT(msg_id));
	v->offset = be32_at(b, RD_AT(offset));
	v->msg_len = be32_at(b, RD_AT(msg_len));
	v->tx_time = be32_at(b, RD_AT(tx_time));
	v->tag = be64_at(b, RD_AT(tag));
	v->cq_data = be64_at(b, RD_AT(cq_data));
	memset(&v->rma, 0, sizeof(v->rma));
	if (type == BRAID_PKT_RD_RMA) {
		int ret;

		hlen = sizeof(struct braid_rd_rma_hdr);
		v->rma.op = b[RMA_AT(op)];
		v->rma.aop = b[RMA_AT(aop)];
		v->rma.dt = b[RMA_AT(dt)];
		v->rma.status = b[RMA_AT(status)];
		v->rma.ref = be32_at(b, RMA_AT(ref));
		v->rma.rkey = be64_at(b, RMA_AT(rkey));
		v->rma.raddr = be64_at(b, RMA_AT(raddr));
		ret = rma_fields_check(v);
		if (ret)
			return ret;
	}
	v->payload = b + hlen;
	v->payload_len = len - hlen;
	/* §4.2 rule 1: the payload lies inside the message (64-bit sum: no wrap) */
	if ((uint64_t)v->offset + v->payload_len > v->msg_len)
		return DROP(BRAID_DROP_BAD_LEN);
	if (v->src_epoch == 0)
		return DROP(BRAID_DROP_STALE_EPOCH);
	return 0;
}

int braid_rd_data_decode(const void *buf, size_t len, struct braid_rd_data_view *v)
{
	int type = braid_base_hdr_check(buf, len);

	if (type < 0)
		return type;
	if (type != BRAID_PKT_RD_DATA && type != BRAID_PKT_RD_RMA)
		return DROP(BRAID_DROP_TYPE);
	return braid_rd_data_decode_typed(buf, len, type, v);
}

void braid_rd_ack_write(struct braid_rd_ack_hdr *h, const struct braid_rd_ack_view *v)
{
	braid_base_hdr_write(&h->base, BRAID_PKT_RD_ACK, v->flags, v->src_port, sizeof(*h));
	h->src_epoch = htobe32(v->src_epoch);
	h->dst_epoch = htobe32(v->dst_epoch);
	h->cum_psn = htobe32(v->cum_psn);
	h->echo_psn = htobe32(v->echo_psn);
	h->echo_time = htobe32(v->echo_time);
	h->rwnd = htobe32(v->rwnd);
	h->dups = htobe32(v->dups);
	h->hold_us = htobe32(v->hold_us);
	memcpy(h->sack, v->sack, sizeof(h->sack));
}

int braid_rd_ack_decode(const void *buf, size_t len, struct braid_rd_ack_view *v)
{
	struct braid_rd_ack_hdr h;
	int type = braid_base_hdr_check(buf, len);

	if (type < 0)
		return type;
	if (type != BRAID_PKT_RD_ACK)
		return DROP(BRAID_DROP_TYPE);
	if (len != sizeof(h))
		return DROP(BRAID_DROP_BAD_LEN);
	memcpy(&h, buf, sizeof(h));
	v->src_port = be16toh(h.base.src_port);
	v->flags = h.base.flags;
	v->src_epoch = be32toh(h.src_epoch);
	v->dst_epoch = be32toh(h.dst_epoch);
	v->cum_psn = be32toh(h.cum_psn);
	v->echo_psn = be32toh(h.echo_psn);
	v->echo_time = be32toh(h.echo_time);
	v->rwnd = be32toh(h.rwnd);
	v->dups = be32toh(h.dups);
	v->hold_us = be32toh(h.hold_us);
	memcpy(v->sack, h.sack, sizeof(v->sack));
	if (v->src_epoch == 0 || v->dst_epoch == 0)
		return DROP(BRAID_DROP_STALE_EPOCH);
	return 0;
}

/* RD_CTS and RD_CHALLENGE share one 24-byte layout: epochs, a 32-bit value, reserved. */
static void rd_short_write(struct braid_rd_cts_hdr *h, uint8_t type, uint8_t flags,
			   uint16_t src_port, uint32_t src_epoch, uint32_t dst_epoch, uint32_t value,
			   uint32_t value2)
{
	braid_base_hdr_write(&h->base, type, flags, src_port, sizeof(*h));
	h->src_epoch = htobe32(src_epoch);
	h->dst_epoch = htobe32(dst_epoch);
	h->msg_id = htobe32(value);
	h->reserved = htobe32(value2);
}

static int rd_short_decode(const void *buf, size_t len, int want, struct braid_rd_chal_view *v)
{
	struct braid_rd_cts_hdr h;
	int type = braid_base_hdr_check(buf, len);

	if (type < 0)
		return type;
	if (type != want)
		return DROP(BRAID_DROP_TYPE);
	if (len != sizeof(h))
		return DROP(BRAID_DROP_BAD_LEN);
	memcpy(&h, buf, sizeof(h));
	v->src_port = be16toh(h.base.src_port);
	v->flags = h.base.flags;
	v->src_epoch = be32toh(h.src_epoch);
	v->dst_epoch = be32toh(h.dst_epoch);
	v->cookie = be32toh(h.msg_id);
	v->confirm = be32toh(h.reserved);
	if (!v->src_epoch || !v->dst_epoch)
		return DROP(BRAID_DROP_STALE_EPOCH);
	return 0;
}

void braid_rd_cts_write(struct braid_rd_cts_hdr *h, uint16_t src_port, uint32_t src_epoch,
			uint32_t dst_epoch, uint32_t msg_id)
{
	rd_short_write(h, BRAID_PKT_RD_CTS, 0, src_port, src_epoch, dst_epoch, msg_id, 0);
}

int braid_rd_cts_decode(const void *buf, size_t len, uint16_t *src_port, uint32_t *src_epoch,
			uint32_t *dst_epoch, uint32_t *msg_id)
{
	struct braid_rd_chal_view v;
	int ret = rd_short_decode(buf, len, BRAID_PKT_RD_CTS, &v);

	if (ret)
		return ret;
	*src_port = v.src_port;
	*src_epoch = v.src_epoch;
	*dst_epoch = v.dst_epoch;
	*msg_id = v.cookie;
	return 0;
}

void braid_rd_chal_write(struct braid_rd_cts_hdr *h, const struct braid_rd_chal_view *v)
{
	rd_short_write(h, BRAID_PKT_RD_CHALLENGE, v->flags, v->src_port, v->src_epoch,
		       v->dst_epoch, v->cookie, v->flags & BRAID_RD_CHAL_F_FORGET ? v->confirm : 0);
}

int braid_rd_chal_decode(const void *buf, size_t len, struct braid_rd_chal_view *v)
{
	return rd_short_decode(buf, len, BRAID_PKT_RD_CHALLENGE, v);
}

void braid_cm_write(struct braid_cm_hdr *h, uint16_t src_port, const struct braid_cm_view *v)
{
	braid_base_hdr_write(&h->base, BRAID_PKT_CM, 0, src_port, sizeof(*h));
	h->kind = v->kind;
	h->flags = v->flags;
	h->pdata_len = htobe16((uint16_t)v->pdata_len);
	h->status = htobe32(v->status);
	h->conn_id = htobe64(v->conn_id);
	h->qpn = htobe32(v->qpn);
	h->psn = htobe32(v->psn);
	h->mtu = htobe32(v->mtu);
	h->rc_port = htobe16(v->rc_port);
	h->reserved2 = 0;
}

static bool cm_mtu_ok(uint32_t mtu)
{
	return mtu == 256 || mtu == 512 || mtu == 1024 || mtu == 2048 || mtu == 4096;
}

int braid_cm_decode(const void *buf, size_t len, struct braid_cm_view *v)
{
	struct braid_cm_hdr h;
	int type = braid_base_hdr_check(buf, len);

	if (type < 0)
		return type;
	if (type != BRAID_PKT_CM)
		return DROP(BRAID_DROP_TYPE);
	memcpy(&h, buf, sizeof(h));
	v->src_port = be16toh(h.base.src_port);
	v->kind = h.kind;
	v->flags = h.flags;
	v->status = be32toh(h.status);
	v->conn_id = be64toh(h.conn_id);
	v->qpn = be32toh(h.qpn);
	v->psn = be32toh(h.psn);
	v->mtu = be32toh(h.mtu);
	v->rc_port = be16toh(h.rc_port);
	v->pdata_len = be16toh(h.pdata_len);
	v->pdata = (const uint8_t *)buf + sizeof(h);
	if (v->kind == 0 || v->kind >= BRAID_CM_KIND_MAX)
		return DROP(BRAID_DROP_TYPE);
	if (v->pdata_len > BRAID_CM_DATA_MAX || sizeof(h) + v->pdata_len != len)
		return DROP(BRAID_DROP_BAD_LEN);
	if ((v->qpn | v->psn) > 0xffffffu)
		return DROP(BRAID_DROP_BAD_LEN);
	if ((v->kind == BRAID_CM_REQ || v->kind == BRAID_CM_REP) &&
	    (!cm_mtu_ok(v->mtu) || !v->rc_port))
		return DROP(BRAID_DROP_BAD_LEN);
	return 0;
}
