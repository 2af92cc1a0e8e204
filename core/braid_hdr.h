/* braid_hdr.h: braid's wire headers (docs/protocol.md), packed, network byte order. */
#ifndef BRAID_HDR_H
#define BRAID_HDR_H

#include <stddef.h>
#include <stdint.h>
#include <endian.h>

#define BRAID_HDR_MAGIC		0xbd
#define BRAID_PROTO_VERSION	1

/* Packet types (protocol.md §2.2). Frozen: never renumber, only append. */
enum braid_pkt_type {
	BRAID_PKT_DGRAM = 1,	/* unreliable datagram (FI_EP_DGRAM), §3 */
};

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

/* Why a received packet was dropped; each reason has its own counter. */
enum braid_drop_reason {
	BRAID_DROP_SHORT = 0,	/* shorter than the headers it claims */
	BRAID_DROP_MAGIC,	/* not a braid packet */
	BRAID_DROP_VERSION,	/* a protocol version we do not speak */
	BRAID_DROP_TYPE,	/* a type this endpoint does not take */
	BRAID_DROP_HDR_LEN,	/* header length field out of range */
	BRAID_DROP_FLAGS,	/* flags not defined for the type */
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

#endif /* BRAID_HDR_H */
