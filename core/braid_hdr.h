/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_hdr.h: braid's wire headers (docs/protocol.md), packed, network byte order. */
#ifndef BRAID_HDR_H
#define BRAID_HDR_H

#include <stddef.h>
#include <stdint.h>
#include <endian.h>

#define BRAID_HDR_MAGIC		0xbd
#define BRAID_PROTO_VERSION	1
#define BRAID_PROTO_VERSION_KEYED	2	/* a keyed endpoint's datagram: a tag after the first header (§2.4) */

/* Packet types (protocol.md §2.2). Frozen: never renumber, only append. */
enum braid_pkt_type {
	BRAID_PKT_DGRAM = 1,	/* unreliable datagram (FI_EP_DGRAM), §3 */
	BRAID_PKT_RD_DATA = 2,	/* reliable datagram data, §4.2 */
	BRAID_PKT_RD_ACK = 3,	/* reliable datagram acknowledgement, §4.3 */
	BRAID_PKT_RD_CTS = 4,	/* rendezvous clear-to-send, §4.6 */
	BRAID_PKT_CM = 5,	/* connection management of FI_EP_MSG (RoCEv2 RC), §6 */
	BRAID_PKT_RD_RMA = 6,	/* reliable datagram RMA and atomics: RD_DATA + RMA fields, §4.7 */
	BRAID_PKT_RD_BUNDLE = 7,	/* several RD packets of one endpoint pair in one datagram, §4.8 */
	BRAID_PKT_RD_CHALLENGE = 8,	/* RD: proof that a peer receives at its address, §4.9 */
};

/* RD_BUNDLE (§4.8): the common header (hdr_len 8, flags 0), then records, each a
 * 2-byte length and that many bytes: one whole RD_DATA, RD_ACK, RD_CTS or RD_RMA packet */
#define BRAID_RD_BUNDLE_HDR	8
#define BRAID_RD_BUNDLE_REC	2
#define BRAID_RD_BUNDLE_MAX	64	/* records in one bundle, at most */

/* RD_RMA operations (§4.7). Frozen: never renumber, only append. */
enum braid_rma_op {
	BRAID_RMA_WRITE = 1,	/* payload placed at raddr + offset of the target's region rkey */
	BRAID_RMA_READ_REQ = 2,	/* no payload: read @ref bytes at raddr of region rkey */
	BRAID_RMA_ATOMIC_REQ = 3,	/* payload: operands (then compare values): @ref elements */
	BRAID_RMA_RESP = 4,	/* the answer to request msg_id @ref: status, read data or fetched values */
	BRAID_RMA_FETCH_REQ = 5,	/* ATOMIC_REQ whose answer carries the elements' old values */
	BRAID_RMA_OP_MAX
};

/* RD_RMA RESP status (§4.7). Frozen. */
enum braid_rma_status {
	BRAID_RMA_OK = 0,
	BRAID_RMA_ACCESS = 1,	/* unknown key, range outside the region, or access not granted */
	BRAID_RMA_INVALID = 2,	/* an atomic op or datatype the target does not do, a bad length */
	BRAID_RMA_STATUS_MAX
};

/* RD_DATA flags (§4.2) */
#define BRAID_RD_F_CQ_DATA	0x01
#define BRAID_RD_F_TAGGED	0x02
#define BRAID_RD_F_ACK		0x04
#define BRAID_RD_F_RETX		0x08
#define BRAID_RD_F_RDV		0x10	/* rendezvous: the rest follows a CTS (§4.6) */
#define BRAID_RD_F_DC		0x20	/* delivery complete: answer with a RESP once delivered (§4.7) */
#define BRAID_RD_F_LENT		0x40	/* the payload was lent: read when delivered (§4.2, "Lent payloads") */
#define BRAID_RD_F_BAD		0x80	/* the sender could not read the message's bytes: its receive fails (§4.2) */
#define BRAID_RD_DATA_FLAGS	0xff
/* RD_RMA flags (§4.7): those of RD_DATA but TAGGED; RDV only on a keepalive probe */
#define BRAID_RD_RMA_FLAGS	(BRAID_RD_F_CQ_DATA | BRAID_RD_F_ACK | BRAID_RD_F_RETX | BRAID_RD_F_RDV | \
				 BRAID_RD_F_LENT)
/* RD_ACK flags (§4.3) */
#define BRAID_RD_ACK_F_ECN_CE	0x01
#define BRAID_RD_ACK_FLAGS	0x01

/* RD_CHALLENGE flags (§4.9) */
#define BRAID_RD_CHAL_F_RESPONSE	0x01	/* the answer to a challenge (it echoes the cookie) */
#define BRAID_RD_CHAL_F_FORGET	0x02	/* an idle pair restarts its numbering by agreement */
#define BRAID_RD_CHAL_FLAGS	0x03

#define BRAID_RD_SACK_BITS	256

/* braid_base_hdr.flags for BRAID_PKT_DGRAM (protocol.md §3) */
#define BRAID_DGRAM_F_CQ_DATA	0x01

/**
 * struct braid_base_hdr - the 8 bytes every braid packet starts with (§2.1).
 */
struct braid_base_hdr {
	/** @magic: BRAID_HDR_MAGIC. */
	uint8_t magic;
	/** @version: BRAID_PROTO_VERSION. */
	uint8_t version;
	/** @type: enum braid_pkt_type. */
	uint8_t type;
	/** @flags: per-type flags. */
	uint8_t flags;
	/** @src_port: the sender's home UDP port (its address is IP:src_port). */
	uint16_t src_port;
	/** @hdr_len: bytes of header before the payload, this struct included. */
	uint16_t hdr_len;
} __attribute__((packed));
_Static_assert(sizeof(struct braid_base_hdr) == 8, "base header is 8 bytes");

/**
 * struct braid_dgram_hdr - header of a BRAID_PKT_DGRAM packet (§3).
 */
struct braid_dgram_hdr {
	/** @base: common header. */
	struct braid_base_hdr base;
	/** @cq_data: remote CQ data when BRAID_DGRAM_F_CQ_DATA is set, else 0. */
	uint64_t cq_data;
} __attribute__((packed));
_Static_assert(sizeof(struct braid_dgram_hdr) == 16, "dgram header is 16 bytes");

/**
 * struct braid_rd_data_hdr - header of an RD_DATA packet (§4.2).
 */
struct braid_rd_data_hdr {
	struct braid_base_hdr base;
	uint32_t src_epoch;
	uint32_t dst_epoch;
	uint32_t psn;
	uint32_t ack_psn;
	uint32_t msg_id;
	uint32_t offset;
	uint32_t msg_len;
	uint32_t tx_time;
	uint64_t tag;
	uint64_t cq_data;
} __attribute__((packed));
_Static_assert(sizeof(struct braid_rd_data_hdr) == 56, "RD_DATA header is 56 bytes");

/**
 * struct braid_rd_rma_hdr - header of an RD_RMA packet (§4.7): the RD_DATA
 * header (same fields, same rules; tag is 0), then what the operation needs.
 */
struct braid_rd_rma_hdr {
	struct braid_rd_data_hdr d;
	/** @op: enum braid_rma_op. */
	uint8_t op;
	/** @aop, @dt: ATOMIC_REQ, FETCH_REQ: enum braid_aop and enum braid_adt (libfabric's enum fi_op and enum fi_datatype numbers). */
	uint8_t aop;
	uint8_t dt;
	/** @status: RESP: enum braid_rma_status; else 0. */
	uint8_t status;
	/** @ref: READ_REQ: bytes to read; ATOMIC_REQ, FETCH_REQ: elements; RESP: the request's msg_id. */
	uint32_t ref;
	/** @rkey, @raddr: the target region's key and the address of byte 0 (requests). */
	uint64_t rkey;
	uint64_t raddr;
} __attribute__((packed));
_Static_assert(sizeof(struct braid_rd_rma_hdr) == 80, "RD_RMA header is 80 bytes");

/**
 * struct braid_rd_ack_hdr - header of an RD_ACK packet (§4.3).
 */
struct braid_rd_ack_hdr {
	struct braid_base_hdr base;
	uint32_t src_epoch;
	uint32_t dst_epoch;
	uint32_t cum_psn;
	uint32_t echo_psn;
	uint32_t echo_time;
	uint32_t rwnd;
	uint32_t dups;
	uint32_t hold_us;
	uint8_t sack[BRAID_RD_SACK_BITS / 8];
} __attribute__((packed));
_Static_assert(sizeof(struct braid_rd_ack_hdr) == 72, "RD_ACK header is 72 bytes");

/**
 * struct braid_rd_cts_hdr - an RD_CTS packet (§4.6): the receiver has a buffer
 * for message @msg_id of the flow from the packet's destination to its source.
 */
struct braid_rd_cts_hdr {
	struct braid_base_hdr base;
	uint32_t src_epoch;
	uint32_t dst_epoch;
	uint32_t msg_id;
	uint32_t reserved;
} __attribute__((packed));
_Static_assert(sizeof(struct braid_rd_cts_hdr) == 24, "RD_CTS header is 24 bytes");

#define BRAID_RD_MAX_HDR	80

/* CM message kinds (§6.2). Frozen: never renumber, only append. */
enum braid_cm_kind {
	BRAID_CM_REQ = 1,	/* active -> listener: connect */
	BRAID_CM_REP = 2,	/* accepting endpoint -> active: accepted */
	BRAID_CM_RTU = 3,	/* active -> accepting endpoint: ready to use */
	BRAID_CM_REJ = 4,	/* listener -> active: refused */
	BRAID_CM_DREQ = 5,	/* either side: disconnect */
	BRAID_CM_DREP = 6,	/* reply to DREQ */
	BRAID_CM_KIND_MAX
};

#define BRAID_CM_DATA_MAX	256	/* private data bytes (FI_OPT_CM_DATA_SIZE) */

/**
 * struct braid_cm_hdr - a CM packet (§6.2); @pdata_len bytes of private
 * data follow it.
 */
struct braid_cm_hdr {
	struct braid_base_hdr base;
	uint8_t kind;
	uint8_t flags;
	uint16_t pdata_len;
	uint32_t status;
	uint64_t conn_id;
	uint32_t qpn;
	uint32_t psn;
	uint32_t mtu;
	uint16_t rc_port;
	uint16_t reserved2;
} __attribute__((packed));
_Static_assert(sizeof(struct braid_cm_hdr) == 40, "CM header is 40 bytes");

/* Decoded CM fields, host order. */
struct braid_cm_view {
	uint16_t src_port;
	uint8_t kind;
	/** @status: REJ: a positive FI_E* reason (FI_ECONNREFUSED by the application). */
	uint32_t status;
	/** @conn_id: chosen by the active side, names the connection in every message. */
	uint64_t conn_id;
	/** @qpn, @psn: the sender's QP number and first PSN (REQ, REP). */
	uint32_t qpn, psn;
	/** @mtu: REQ: the largest RC MTU the active side takes; REP: the one chosen. */
	uint32_t mtu;
	/** @rc_port: the UDP port the sender receives RoCEv2 packets on. */
	uint16_t rc_port;
	/** @flags: REQ, REP: what the sender asks of the connection (BRAID_CM_F_*, braid_cm.h). */
	uint8_t flags;
	const uint8_t *pdata;
	size_t pdata_len;
};
/* The RD_RMA fields (§4.7), host order: in a decoded packet, a send and a message alike. */
struct braid_rma_fields {
	/** @op: enum braid_rma_op; 0: not RMA (an RD_DATA packet, a message). */
	uint8_t op;
	uint8_t aop, dt, status;
	uint32_t ref;
	uint64_t rkey, raddr;
};

/* Decoded RD_DATA fields, host order. */
struct braid_rd_data_view {
	uint16_t src_port;
	uint8_t flags;
	uint32_t src_epoch, dst_epoch, psn, ack_psn, msg_id, offset, msg_len, tx_time;
	uint64_t tag, cq_data;
	/** @rma: an RD_RMA packet's fields; all 0 for RD_DATA. */
	struct braid_rma_fields rma;
	const uint8_t *payload;
	size_t payload_len;
};

/* Decoded RD_ACK fields, host order. */
struct braid_rd_ack_view {
	uint16_t src_port;
	uint8_t flags;
	uint32_t src_epoch, dst_epoch, cum_psn, echo_psn, echo_time, rwnd;
	/** @dups: duplicate DATA packets the acknowledging side has received from us, ever (mod 2^32). */
	uint32_t dups;
	/**
	 * @hold_us: how long the echoed packet may have waited at the acknowledging
	 * host before this ACK left, in microseconds (its absence from the wire:
	 * descheduled, computing, delaying the ACK); 0: not known (§4.3).
	 */
	uint32_t hold_us;
	uint8_t sack[BRAID_RD_SACK_BITS / 8];
};

/*
 * Why a received packet was dropped; each reason has its own counter (the
 * counter table, braid_counters.h, names them "drop.<name>").
 * X(enum, name, meaning).
 */
#define BRAID_DROP_TABLE(X) \
	X(BRAID_DROP_SHORT,	short,		"shorter than the headers it claims") \
	X(BRAID_DROP_MAGIC,	bad_magic,	"not a braid packet") \
	X(BRAID_DROP_VERSION,	bad_version,	"a protocol version this endpoint does not speak") \
	X(BRAID_DROP_TYPE,	bad_type,	"a type this endpoint does not take") \
	X(BRAID_DROP_HDR_LEN,	bad_hdr_len,	"header length field out of range") \
	X(BRAID_DROP_FLAGS,	bad_flags,	"flags not defined for the type") \
	X(BRAID_DROP_BAD_LEN,	bad_len,	"RD: offset or length outside the message (protocol.md 4.2 rule 1)") \
	X(BRAID_DROP_STALE_EPOCH, stale_epoch,	"RD: for or from an earlier incarnation (4.2 rules 2-3, 4.3)") \
	X(BRAID_DROP_OUT_OF_WINDOW, out_of_window, "RD: PSN or message beyond the window (4.2 rule 5)") \
	X(BRAID_DROP_DUPLICATE,	duplicate,	"RD: PSN already received (4.2 rule 4)") \
	X(BRAID_DROP_NO_BUFFER,	no_buffer,	"RD: no room to take the payload (4.2 rule 6)") \
	X(BRAID_DROP_NO_STATE,	no_state,	"RD: no flow state could be had for the peer, or none for an ACK or CTS") \
	X(BRAID_DROP_BUNDLE,	bad_bundle,	"RD: a bundle whose records are not well framed (4.8)") \
	X(BRAID_DROP_UNVERIFIED, unverified,	"RD: a new incarnation not proven yet, or an answer to no challenge of ours (4.9)") \
	X(BRAID_DROP_PEER_CAP,	peer_cap,	"RD: first contact while every peer slot is taken (4.9)") \
	X(BRAID_DROP_AUTH,	bad_auth,	"keyed or not as this endpoint is not, or a tag that does not verify (2.4)") \
	X(BRAID_DROP_STALE_LENT, stale_lent,	"RD: a lent payload that waited in this host too long to be trusted (4.2)")

enum braid_drop_reason {
#define BRAID_X_ENUM(e, name, meaning) e,
	BRAID_DROP_TABLE(BRAID_X_ENUM)
#undef BRAID_X_ENUM
	BRAID_DROP_MAX
};

/** braid_drop_reason_str() - a short name for a drop reason (for counters). */
const char *braid_drop_reason_str(enum braid_drop_reason reason);

/**
 * struct braid_dgram_view - a decoded, validated DGRAM header.
 */
struct braid_dgram_view {
	/** @src_port: the sender's home port, host order. */
	uint16_t src_port;
	/** @has_data: remote CQ data present. */
	int has_data;
	/** @cq_data: the data, host order. */
	uint64_t cq_data;
	/** @hdr_len: header bytes to skip before the payload. */
	size_t hdr_len;
};

/**
 * braid_dgram_hdr_write() - fill @hdr for a DGRAM packet (§3).
 */
void braid_dgram_hdr_write(struct braid_dgram_hdr *hdr, uint16_t src_port,
			   int has_data, uint64_t cq_data);

/**
 * braid_dgram_hdr_decode() - check and decode the first @len bytes of a packet.
 * Return: 0 and @view filled, or a negative enum braid_drop_reason
 * (-(reason + 1)) telling why the packet must be dropped.
 */
int braid_dgram_hdr_decode(const void *buf, size_t len, struct braid_dgram_view *view);

/**
 * braid_base_hdr_check() - §2.3 checks 1-3 and 5-6 common to every type: returns
 * the packet type, or a negative drop reason (-(reason + 1)).
 */
int braid_base_hdr_check(const void *buf, size_t len);

/** braid_base_hdr_write() - fill the common header (§2.1) of a packet of @type. */
static inline void braid_base_hdr_write(struct braid_base_hdr *b, uint8_t type, uint8_t flags,
					uint16_t src_port, uint16_t hdr_len)
{
	b->magic = BRAID_HDR_MAGIC;
	b->version = BRAID_PROTO_VERSION;
	b->type = type;
	b->flags = flags;
	b->src_port = htobe16(src_port);
	b->hdr_len = htobe16(hdr_len);
}

/** braid_rd_rma_fields_write() - the RMA fields (§4.7) of the RD_RMA header @r, from @rma. */
static inline void braid_rd_rma_fields_write(struct braid_rd_rma_hdr *r,
					     const struct braid_rma_fields *rma)
{
	r->op = rma->op;
	r->aop = rma->aop;
	r->dt = rma->dt;
	r->status = rma->status;
	r->ref = htobe32(rma->ref);
	r->rkey = htobe64(rma->rkey);
	r->raddr = htobe64(rma->raddr);
}

/**
 * braid_rd_data_write() - encode an RD_DATA header from @v, or an RD_RMA
 * header when @v->rma.op is set (payload fields ignored). Return: the
 * header's length. Inline: a view built just before (every data packet's)
 * is then never built at all.
 */
static inline size_t braid_rd_data_write(void *buf, const struct braid_rd_data_view *v)
{
	struct braid_rd_rma_hdr *r = (struct braid_rd_rma_hdr *)buf;
	struct braid_rd_data_hdr *h = &r->d;
	size_t len = v->rma.op ? sizeof(*r) : sizeof(*h);

	braid_base_hdr_write(&h->base, v->rma.op ? BRAID_PKT_RD_RMA : BRAID_PKT_RD_DATA, v->flags,
			     v->src_port, (uint16_t)len);
	h->src_epoch = htobe32(v->src_epoch);
	h->dst_epoch = htobe32(v->dst_epoch);
	h->psn = htobe32(v->psn);
	h->ack_psn = htobe32(v->ack_psn);
	h->msg_id = htobe32(v->msg_id);
	h->offset = htobe32(v->offset);
	h->msg_len = htobe32(v->msg_len);
	h->tx_time = htobe32(v->tx_time);
	h->tag = htobe64(v->tag);
	h->cq_data = htobe64(v->cq_data);
	if (v->rma.op)
		braid_rd_rma_fields_write(r, &v->rma);
	return len;
}

/**
 * braid_rd_data_decode() - validate and decode an RD_DATA or RD_RMA packet of
 * @len bytes (§2.3, §4.2 rule 1 except the max-size check, which the engine
 * does; §4.7's field rules).
 * Return: 0, or a negative drop reason (-(reason + 1)).
 */
int braid_rd_data_decode(const void *buf, size_t len, struct braid_rd_data_view *v);

/**
 * braid_rd_data_decode_typed() - braid_rd_data_decode() of a packet whose
 * common header braid_base_hdr_check() passed already, as @type
 * (BRAID_PKT_RD_DATA or BRAID_PKT_RD_RMA): the rest of its checks.
 * Return: 0, or a negative drop reason (-(reason + 1)).
 */
int braid_rd_data_decode_typed(const void *buf, size_t len, int type,
			       struct braid_rd_data_view *v);

/**
 * braid_rd_bundle_check() - validate an RD_BUNDLE packet of @len bytes (§4.8)
 * as a whole: one to BRAID_RD_BUNDLE_MAX records, each framed inside the
 * packet, at least 8 bytes long, of a type a bundle carries and from the
 * bundle's src_port. (Each record is then checked as a packet of its own.)
 * Return: the number of records, or a negative drop reason (-(reason + 1)).
 */
int braid_rd_bundle_check(const void *buf, size_t len);

/** braid_rd_bundle_hdr_write() - the 8-byte common header of an RD_BUNDLE (§4.8). */
void braid_rd_bundle_hdr_write(void *buf, uint16_t src_port);

/**
 * braid_hdr_len() - the common header's hdr_len field (§2.1) of the packet
 * at @buf (at least sizeof(struct braid_base_hdr) bytes), unchecked: the
 * header bytes a receiver may place before the payload. A keyed datagram's
 * counts its tag (§2.4).
 */
static inline size_t braid_hdr_len(const void *buf)
{
	const uint8_t *b = (const uint8_t *)buf;

	return (size_t)b[offsetof(struct braid_base_hdr, hdr_len)] << 8 |
	       b[offsetof(struct braid_base_hdr, hdr_len) + 1];
}

/**
 * braid_rd_bundle_next() - the record at *@off of a checked bundle (start with
 * *@off = BRAID_RD_BUNDLE_HDR): its bytes and length; *@off moves past it.
 * Return: false when there is none left.
 */
static inline int braid_rd_bundle_next(const void *buf, size_t len, size_t *off,
				       const uint8_t **rec, size_t *rec_len)
{
	const uint8_t *b = (const uint8_t *)buf;

	if (*off + BRAID_RD_BUNDLE_REC > len)
		return 0;
	*rec_len = (size_t)b[*off] << 8 | b[*off + 1];
	*rec = b + *off + BRAID_RD_BUNDLE_REC;
	*off += BRAID_RD_BUNDLE_REC + *rec_len;
	return 1;
}

/** braid_rd_cts_write() - encode an RD_CTS packet. */
void braid_rd_cts_write(struct braid_rd_cts_hdr *h, uint16_t src_port, uint32_t src_epoch,
			uint32_t dst_epoch, uint32_t msg_id);

/**
 * braid_rd_cts_decode() - validate an RD_CTS packet: 0 and the fields, or
 * -(reason + 1).
 */
int braid_rd_cts_decode(const void *buf, size_t len, uint16_t *src_port, uint32_t *src_epoch,
			uint32_t *dst_epoch, uint32_t *msg_id);

/* Decoded RD_CHALLENGE fields (§4.9), host order. */
struct braid_rd_chal_view {
	uint16_t src_port;
	uint8_t flags;
	uint32_t src_epoch, dst_epoch, cookie;
	/** @confirm: FORGET RESPONSE: the answerer's own cookie, to be echoed (0: none). */
	uint32_t confirm;
};

/** braid_rd_chal_write() - encode an RD_CHALLENGE packet (24 bytes, the layout of RD_CTS). */
void braid_rd_chal_write(struct braid_rd_cts_hdr *h, const struct braid_rd_chal_view *v);

/** braid_rd_chal_decode() - validate and decode an RD_CHALLENGE packet: 0 or -(reason + 1). */
int braid_rd_chal_decode(const void *buf, size_t len, struct braid_rd_chal_view *v);

/** braid_rd_ack_write() - encode an RD_ACK header from @v. */
void braid_rd_ack_write(struct braid_rd_ack_hdr *hdr, const struct braid_rd_ack_view *v);

/** braid_rd_ack_decode() - validate and decode an RD_ACK packet. 0 or -(reason + 1). */
int braid_rd_ack_decode(const void *buf, size_t len, struct braid_rd_ack_view *v);

/** braid_cm_write() - encode a CM header from @v (@v->pdata_len bytes of private data go after it). */
void braid_cm_write(struct braid_cm_hdr *hdr, uint16_t src_port, const struct braid_cm_view *v);

/**
 * braid_cm_decode() - validate and decode a CM packet of @len bytes (§6.2):
 * a known kind, private data length within BRAID_CM_DATA_MAX and exactly
 * the rest of the packet, 24-bit QPN and PSN, and on REQ and REP an RC MTU
 * of 256, 512, 1024, 2048 or 4096. Return: 0, or -(reason + 1).
 */
int braid_cm_decode(const void *buf, size_t len, struct braid_cm_view *v);

#endif /* BRAID_HDR_H */
