/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_path.c: per-peer path set for spraying: entropy, RTT, loss and ECN per path, and path choice. */
#include <string.h>

#include "braid_path.h"
#include "braid/braid_hash.h"

static uint64_t rng_next(uint64_t *s)
{
	return braid_splitmix64(s);
}

static void path_reset(struct braid_path *p, uint16_t entropy)
{
	memset(p, 0, sizeof(*p));
	p->entropy = entropy;
}

void braid_pathset_init(struct braid_pathset *ps, uint32_t n, uint32_t entropies, uint64_t seed)
{
	uint32_t i;

	ps->n = n ? n : 1;
	ps->rr = 0;
	ps->entropies = entropies && entropies <= 65536 ? entropies : 65536;
	ps->avoid_n = 0;
	ps->rng = seed;
	ps->redraws = 0;
	ps->agg_age = 0;
	ps->best_srtt = 0;
	ps->mean_loss = 0;
	/* slot i starts on entropy i: distinct selectors, so distinct routes where
	 * the fabric has as many */
	for (i = 0; i < ps->n; i++)
		path_reset(&ps->p[i], (uint16_t)(i % ps->entropies));
}

/* The mean loss EWMA over the paths: uniform loss is nobody's fault. */
static float mean_loss(const struct braid_pathset *ps)
{
	float sum = 0;
	uint32_t i;

	for (i = 0; i < ps->n; i++)
		sum += ps->p[i].loss;
	return sum / (float)ps->n;
}

/*
 * Sick, relative to the other paths: losing far more than the mean (a loss
 * EWMA above 3x the mean and 10 points over it), three losses in a row,
 * mostly ECN-marked, a smoothed RTT above twice the best path's (+20 us), or
 * a re-drawn route on trial with its one packet out (braid_path.h @trial).
 * When every path loses alike, none is sick: avoiding some would only
 * concentrate the load on the rest.
 */
static bool path_sick(const struct braid_path *p, float mean, uint32_t best_srtt)
{
	if ((p->loss > 3 * mean && p->loss > mean + 0.10f) || p->consec_losses >= BRAID_PATH_SICK_RUN ||
	    p->ecn > 0.5f || (p->trial && p->sent))
		return true;
	return best_srtt && p->srtt_ns > 2 * best_srtt + 20000;
}

bool braid_path_is_sick(const struct braid_pathset *ps, uint32_t idx)
{
	return idx < ps->n && path_sick(&ps->p[idx], ps->mean_loss, ps->best_srtt);
}

/* The next path in round robin (a wrap, not a division per packet). */
static inline uint32_t rr_next(struct braid_pathset *ps)
{
	uint32_t a = ps->rr;

	ps->rr = a + 1 < ps->n ? a + 1 : 0;
	return a;
}

uint32_t braid_pathset_pick(struct braid_pathset *ps, bool health, int avoid)
{
	uint32_t best, i, a;
	float mean;

	if (ps->n == 1)
		return 0;
	if (health && ps->agg_age-- == 0) {
		/* the cross-path view changes slowly: refresh it every 32 packets */
		ps->agg_age = 31;
		ps->mean_loss = mean_loss(ps);
		ps->best_srtt = 0;
		for (i = 0; i < ps->n; i++) {
			uint32_t s = ps->p[i].srtt_ns;

			if (s && (!ps->best_srtt || s < ps->best_srtt))
				ps->best_srtt = s;
		}
	}
	best = ps->best_srtt;
	mean = ps->mean_loss;
	/* round robin (even load on equal paths) */
	a = rr_next(ps);
	if ((int)a == avoid)
		a = rr_next(ps);
	if (!health)
		return a;
	if (!path_sick(&ps->p[a], mean, best)) {
		uint32_t srtt = ps->p[a].srtt_ns;

		/* a path queueing more than its peers (RTT above the best by more
		 * than 8 us) gives up a share of its turns in proportion to the
		 * excess, so load drains from it towards the others */
		if (!best || srtt <= best + 8000 ||
		    (double)(rng_next(&ps->rng) % 1024) / 1024.0 >= 2.0 * (srtt - best) / srtt)
			return a;
		for (i = 0; i < 4; i++) {
			uint32_t b = (uint32_t)(rng_next(&ps->rng) % ps->n);

			if ((int)b != avoid && !path_sick(&ps->p[b], mean, best) &&
			    ps->p[b].srtt_ns < srtt)
				return b;
		}
		return a;
	}
	/* one turn in 16 a sick path still gets a packet: a probe, so a path
	 * that healed (or whose only RTT sample was an outlier) is seen again */
	if ((rng_next(&ps->rng) & 15) == 0)
		return a;
	/* a sick path's turn goes to a random healthy path, so its share of
	 * the load spreads evenly instead of doubling on its neighbour */
	for (i = 0; i < 2 * ps->n; i++) {
		a = (uint32_t)(rng_next(&ps->rng) % ps->n);
		if ((int)a != avoid && !path_sick(&ps->p[a], mean, best))
			return a;
	}
	/* every path is sick: take the next one anyway (still not @avoid) */
	a = rr_next(ps);
	if ((int)a == avoid)
		a = rr_next(ps);
	return a;
}

void braid_path_rtt(struct braid_path *p, uint64_t rtt_ns, uint64_t now)
{
	uint32_t r = rtt_ns > UINT32_MAX ? UINT32_MAX : (uint32_t)rtt_ns;

	if (r) {
		/* base RTT: min over this window and the last */
		if (!p->min_cur_ns || now - p->min_start >= BRAID_PATH_BASE_WINDOW_NS) {
			uint32_t prev = p->min_cur_ns;

			p->min_cur_ns = r;
			p->min_start = now;
			p->min_rtt_ns = prev && prev < r ? prev : r;
		} else if (r < p->min_cur_ns) {
			p->min_cur_ns = r;
		}
		if (!p->min_rtt_ns || r < p->min_rtt_ns)
			p->min_rtt_ns = r;
	}
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

bool braid_path_lost(struct braid_pathset *ps, uint32_t idx, bool redraw)
{
	struct braid_path *p = &ps->p[idx];

	if (p->consec_losses < UINT16_MAX)
		p->consec_losses++;
	p->loss += (1.0f - p->loss) / 32.0f;
	if (!redraw)
		return false;
	{
		float mean = mean_loss(ps);

		/* re-draw only a path clearly worse than the others */
		if (p->consec_losses < 4 && !(p->loss > 0.25f && p->loss > 3 * mean))
			return false;
	}
	/* sick: move this slot to a fresh route */
	braid_path_redraw(ps, idx);
	return true;
}

/* Is @e in use by a slot, or abandoned lately? */
static bool entropy_taken(const struct braid_pathset *ps, uint32_t e)
{
	uint32_t i, k = ps->avoid_n < BRAID_PATH_AVOID ? ps->avoid_n : BRAID_PATH_AVOID;

	for (i = 0; i < ps->n; i++)
		if (ps->p[i].entropy == e)
			return true;
	for (i = 0; i < k; i++)
		if (ps->avoid[i] == e)
			return true;
	return false;
}

void braid_path_redraw(struct braid_pathset *ps, uint32_t idx)
{
	uint32_t old = ps->p[idx].entropy, e = old, i, start;

	ps->avoid[ps->avoid_n++ % BRAID_PATH_AVOID] = (uint16_t)old;
	if (ps->entropies > 1) {
		/* a random free selector: random tries, then a scan from a random start;
		 * when every selector is taken, any other than the old one */
		for (i = 0; i < 32; i++) {
			e = (uint32_t)(rng_next(&ps->rng) % ps->entropies);
			if (!entropy_taken(ps, e))
				break;
		}
		if (i == 32) {
			start = (uint32_t)(rng_next(&ps->rng) % ps->entropies);
			for (i = 0; i < ps->entropies; i++) {
				e = (start + i) % ps->entropies;
				if (!entropy_taken(ps, e))
					break;
			}
			if (i == ps->entropies)
				e = (old + 1 + (uint32_t)(rng_next(&ps->rng) % (ps->entropies - 1))) %
				    ps->entropies;
		}
	}
	path_reset(&ps->p[idx], (uint16_t)e);
	ps->p[idx].trial = true;
	ps->redraws++;
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
