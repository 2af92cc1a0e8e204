/* SPDX-License-Identifier: BSD-2-Clause */
/* rd_direct.h: two RD engines joined back to back in memory (no sim, no loss), for unit tests and the engine benchmark. */
#ifndef RD_DIRECT_H
#define RD_DIRECT_H

#include <string.h>

#include "braid_peer.h"
#include "braid_rd.h"
#include "rd_dgram.h"

struct direct {
	struct braid_peer_table *t[2];
	struct braid_rd *rd[2];
	uint64_t key[2];
	uint64_t now;
	uint8_t buf[65536];
};

static inline int direct_open(struct direct *d, const struct braid_rd_config *base)
{
	struct braid_rd_config c;
	int i, ret;

	memset(d, 0, sizeof(*d));
	for (i = 0; i < 2; i++) {
		c = *base;
		c.local_ip = 0x7f020001u + (uint32_t)i;
		c.local_port = 9000;
		c.epoch = 100 + (uint32_t)i;
		d->key[i] = braid_peer_key(c.local_ip, c.local_port);
		ret = braid_peer_table_open(&d->t[i], 16, NULL);
		if (!ret)
			ret = braid_rd_open(&c, d->t[i], &d->rd[i]);
		if (ret)
			return ret;
	}
	return 0;
}

static inline void direct_close(struct direct *d)
{
	for (int i = 0; i < 2; i++) {
		braid_rd_close(d->rd[i]);
		braid_peer_table_close(d->t[i]);
	}
}

/* Deliver everything both engines want to send, in order, until quiet. Returns packets moved. */
static inline size_t direct_pump(struct direct *d)
{
	struct braid_rd_out out[32];
	size_t moved = 0;
	int progress;

	do {
		progress = 0;
		for (int i = 0; i < 2; i++) {
			int n;

			if (braid_rd_next_deadline(d->rd[i]) <= d->now)
				braid_rd_timer(d->rd[i], d->now);
			while ((n = braid_rd_output(d->rd[i], d->now, out, 32)) > 0) {
				progress = 1;
				for (int k = 0; k < n;) {
					size_t len = rd_dgram_copy(out + k, n - k, d->buf, &k);

					braid_rd_input(d->rd[!i], d->buf, len, 0x7f020001u + (uint32_t)i,
						       false, d->now);
					moved++;
				}
			}
		}
		d->now += 1000;
		if (!progress && (braid_rd_pending(d->rd[0]) || braid_rd_pending(d->rd[1]))) {
			/* nothing moves now: jump to the next timer (delayed ACK, RTO) */
			uint64_t t0 = braid_rd_next_deadline(d->rd[0]);
			uint64_t t1 = braid_rd_next_deadline(d->rd[1]);
			uint64_t t = t0 < t1 ? t0 : t1;

			if (t != UINT64_MAX) {
				if (t > d->now)
					d->now = t;
				progress = 1;
			}
		}
	} while (progress);
	return moved;
}

#endif /* RD_DIRECT_H */
