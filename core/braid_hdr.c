/* braid_hdr.c: encode and validate braid's wire headers (docs/protocol.md §2-§3). */
#include <string.h>

#include "braid_hdr.h"

static const char *const drop_names[BRAID_DROP_MAX] = {
	[BRAID_DROP_SHORT] = "short",
	[BRAID_DROP_MAGIC] = "bad_magic",
	[BRAID_DROP_VERSION] = "bad_version",
	[BRAID_DROP_TYPE] = "bad_type",
	[BRAID_DROP_HDR_LEN] = "bad_hdr_len",
	[BRAID_DROP_FLAGS] = "bad_flags",
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

int braid_dgram_hdr_decode(const void *buf, size_t len, struct braid_dgram_view *view)
{
	struct braid_dgram_hdr hdr;
	size_t hdr_len;

	/* §2.1: the base header must be whole before any field is read. */
	if (len < sizeof(struct braid_base_hdr))
		return DROP(BRAID_DROP_SHORT);
	memcpy(&hdr.base, buf, sizeof(hdr.base));
	if (hdr.base.magic != BRAID_HDR_MAGIC)
		return DROP(BRAID_DROP_MAGIC);
	if (hdr.base.version != BRAID_PROTO_VERSION)
		return DROP(BRAID_DROP_VERSION);
	if (hdr.base.type != BRAID_PKT_DGRAM)
		return DROP(BRAID_DROP_TYPE);
	/* §3: version 1 DGRAM headers are exactly 16 bytes. */
	hdr_len = be16toh(hdr.base.hdr_len);
	if (hdr_len != sizeof(hdr))
		return DROP(BRAID_DROP_HDR_LEN);
	if (len < hdr_len)
		return DROP(BRAID_DROP_SHORT);
	if (hdr.base.flags & ~BRAID_DGRAM_F_CQ_DATA)
		return DROP(BRAID_DROP_FLAGS);
	memcpy(&hdr, buf, sizeof(hdr));
	view->src_port = be16toh(hdr.base.src_port);
	view->has_data = !!(hdr.base.flags & BRAID_DGRAM_F_CQ_DATA);
	view->cq_data = be64toh(hdr.cq_data);
	view->hdr_len = hdr_len;
	return 0;
}
