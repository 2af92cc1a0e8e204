/* braid_path.c: per-peer path set for spraying: entropy, RTT, loss and ECN per path, and path choice. */
#include <string.h>

#include "braid_path.h"

static uint64_t rng_next(uint64_t *s)
{
	/* splitmix64 */
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static void path_reset(struct braid_path *p, uint16_t entropy)
{
	memset(p, 0, sizeof(*p));
	p->entropy = entropy;
}

void braid_pathset_init(struct braid_pathset *ps, uint32_t n, uint64_t seed)
{
	uint32_t i;

	ps->n = n ? n : 1;
	ps->rr = 0;
	ps->rng = seed;
	ps->redraws = 0;
	/* slot i starts on entropy i: distinct routes on the UDP wire's sockets */
	for (i = 0; i < ps->n; i++)
		path_reset(&ps->p[i], (uint16_t)i);
}

static double path_score(const struct braid_path *p, uint32_t best_srtt)
{
	/* unknown RTT: as good as the best known, so new paths get tried */
	double rtt = p->srtt_ns ? p->srtt_ns : (best_srtt ? best_srtt : 1);

	return rtt * (1.0 + 8.0 * p->loss + 4.0 * p->ecn) * (1.0 + p->consec_losses);
}

uint32_t braid_pathset_pick(struct braid_pathset *ps, bool health, int avoid)
{
	uint32_t a, b;

	a = ps->rr++ % ps->n;
	if (ps->n > 1 && (int)a == avoid)
		a = ps->rr++ % ps->n;
	if (!health || ps->n == 1)
		return a;
	b = (uint32_t)(rng_next(&ps->rng) % ps->n);
	if ((int)b == avoid)
		return a;
	return path_score(&ps->p[b], 0) < path_score(&ps->p[a], 0) ? b : a;
}

void braid_path_rtt(struct braid_path *p, uint64_t rtt_ns)
{
	uint32_t r = rtt_ns > UINT32_MAX ? UINT32_MAX : (uint32_t)rtt_ns;

	if (!p->srtt_ns) {
		p->srtt_ns = r;
		p->rttvar_ns = r / 2;
		return;
	}
	{
		uint32_t err = r > p->srtt_ns ? r - p->srtt_ns : p->srtt_ns - r;

		p->rttvar_ns = p->rttvar_ns - p->rttvar_ns / 4 + err / 4;
		p->srtt_ns = p->srtt_ns - p->srtt_ns / 8 + r / 8;
	}
}

void braid_path_acked(struct braid_path *p, bool ecn)
{
	p->consec_losses = 0;
	p->loss -= p->loss / 32.0f;
	p->ecn += ((ecn ? 1.0f : 0.0f) - p->ecn) / 16.0f;
}

bool braid_path_lost(struct braid_pathset *ps, uint32_t idx, bool redraw)
{
	struct braid_path *p = &ps->p[idx];

	if (p->consec_losses < UINT16_MAX)
		p->consec_losses++;
	p->loss += (1.0f - p->loss) / 32.0f;
	if (!redraw || (p->consec_losses < 3 && p->loss < 0.25f))
		return false;
	/* sick: move this slot to a fresh route */
	path_reset(p, (uint16_t)rng_next(&ps->rng));
	ps->redraws++;
	return true;
}

uint64_t braid_pathset_rtt_spread(const struct braid_pathset *ps)
{
	uint32_t lo = UINT32_MAX, hi = 0, i;

	for (i = 0; i < ps->n; i++) {
		uint32_t s = ps->p[i].srtt_ns;

		if (!s)
			continue;
		if (s < lo)
			lo = s;
		if (s > hi)
			hi = s;
	}
	return hi > lo ? hi - lo : 0;
}
