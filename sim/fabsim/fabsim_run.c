/* SPDX-License-Identifier: BSD-2-Clause */
/* fabsim_run.c: the driver's event loop: the fabric's events and the hosts' wake-ups in virtual-time order, flows started, completed and checked. */
#include <stdlib.h>
#include <string.h>
#include <rdma/fi_errno.h>

#include "fabsim.h"

#define PATTERN_SPREAD	65536	/* flows start at different offsets of the pattern */

const uint8_t *fabsim_flow_data(const struct fabsim_run *run, const struct fabsim_flow *f)
{
	return run->pattern + ((uint64_t)f->id * 4099) % PATTERN_SPREAD;
}

int fabsim_run_open(struct fabsim_run *run, struct braid_fabsim *net,
		    const struct fabsim_transport *tp, const struct fabsim_flow *sched,
		    size_t nflows, const struct fabsim_opts *opts)
{
	uint64_t max = 0, x = opts->seed;
	struct fabsim_flow *flows;
	size_t i;
	int ret;

	memset(run, 0, sizeof(*run));
	run->net = net;
	run->hosts = braid_fabsim_hosts(net);
	run->tp = tp;
	run->seed = opts->seed;
	run->opts = *opts;
	braid_evq_construct(&run->wake);
	flows = malloc((nflows ? nflows : 1) * sizeof(*flows));
	if (!flows)
		return -FI_ENOMEM;
	memcpy(flows, sched, nflows * sizeof(*flows));
	run->flows = flows;
	run->nflows = nflows;
	for (i = 0; i < nflows; i++) {
		if (flows[i].id != i || flows[i].src < 0 || flows[i].src >= run->hosts ||
		    flows[i].dst < 0 || flows[i].dst >= run->hosts || !flows[i].size)
			return -FI_EINVAL;
		if (flows[i].size > max)
			max = flows[i].size;
	}
	run->armed = malloc((size_t)run->hosts * sizeof(*run->armed));
	run->pattern_len = max + PATTERN_SPREAD;
	run->pattern = malloc(run->pattern_len);
	if (!run->armed || !run->pattern)
		return -FI_ENOMEM;
	for (i = 0; i < (size_t)run->hosts; i++)
		run->armed[i] = UINT64_MAX;
	/* a byte pattern that differs at every offset, so misplaced data shows */
	for (i = 0; i < run->pattern_len; i++) {
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		run->pattern[i] = (uint8_t)(x >> 56);
	}
	for (i = 0; i < nflows; i++) {
		flows[i].sent_ns = flows[i].recv_ns = 0;
		flows[i].err = 0;
		flows[i].intact = flows[i].finished = false;
		flows[i].rbuf = NULL;
		if (flows[i].start_ns != UINT64_MAX) {
			ret = braid_evq_push(&run->wake, flows[i].start_ns, (uint64_t)run->hosts + i);
			if (ret)
				return ret;
		}
	}
	return tp->open(run);
}

void fabsim_run_close(struct fabsim_run *run)
{
	size_t i;

	if (run->tp_state)
		run->tp->close(run);
	/* buffers of flows never delivered: the engines are closed, nobody writes them now */
	for (i = 0; run->flows && i < run->nflows; i++)
		free(run->flows[i].rbuf);
	free(run->flows);
	run->flows = NULL;
	braid_evq_destruct(&run->wake);
	free(run->armed);
	free(run->pattern);
}

void fabsim_wake(struct fabsim_run *run, int host, uint64_t at)
{
	if (at < run->now)
		at = run->now;
	if (at >= run->armed[host])
		return;
	run->armed[host] = at;
	braid_evq_push(&run->wake, at, (uint64_t)host);
}

static void flow_finish(struct fabsim_run *run, struct fabsim_flow *f)
{
	if (f->finished)
		return;
	f->finished = true;
	run->finished++;
	if (f->err)
		run->failed++;
	if (f->err == FI_EIO)
		run->corrupt++;
}

/* the flow after @f (a closed loop) starts now */
static void flow_chain(struct fabsim_run *run, struct fabsim_flow *f)
{
	if (f->next < 0)
		return;
	run->flows[f->next].start_ns = run->now;
	braid_evq_push(&run->wake, run->now, (uint64_t)run->hosts + (uint64_t)f->next);
	f->next = -1;
}

void fabsim_flow_sent(struct fabsim_run *run, struct fabsim_flow *f, int err)
{
	f->sent_ns = run->now;
	if (err && !f->err)
		f->err = err;
	if (err) {		/* the receive will not complete: the flow failed */
		flow_finish(run, f);
		flow_chain(run, f);
	} else if (f->recv_ns) {
		flow_finish(run, f);
	}
}

void fabsim_flow_received(struct fabsim_run *run, struct fabsim_flow *f, size_t len, int err)
{
	f->recv_ns = run->now;
	if (err && !f->err)
		f->err = err;
	if (!err && (len != f->size || memcmp(f->rbuf, fabsim_flow_data(run, f), f->size)))
		f->err = FI_EIO;
	f->intact = !f->err;
	free(f->rbuf);
	f->rbuf = NULL;
	if (f->err || f->sent_ns)
		flow_finish(run, f);
	flow_chain(run, f);
}

static int flow_start(struct fabsim_run *run, struct fabsim_flow *f)
{
	int ret;

	f->start_ns = run->now;
	f->rbuf = malloc(f->size);
	if (!f->rbuf)
		return -FI_ENOMEM;
	ret = run->tp->start(run, f);
	if (ret) {
		f->err = -ret;
		free(f->rbuf);
		f->rbuf = NULL;
		flow_finish(run, f);
		flow_chain(run, f);
	}
	return 0;
}

int fabsim_run_go(struct fabsim_run *run, uint64_t limit_ns)
{
	struct braid_fabsim_pkt pkt;
	struct braid_evq_ent e;
	int ret;

	while (run->finished < run->nflows) {
		uint64_t th = braid_evq_next(&run->wake);

		/* the fabric first: every packet due by the next wake-up arrives */
		if (braid_fabsim_step(run->net, th < limit_ns ? th : limit_ns, &pkt)) {
			run->now = pkt.at;
			run->tp->input(run, &pkt);
			continue;
		}
		if (th > limit_ns)
			break;
		braid_evq_pop(&run->wake, &e);
		run->now = e.at;
		if (e.val >= (uint64_t)run->hosts) {
			ret = flow_start(run, &run->flows[e.val - (uint64_t)run->hosts]);
			if (ret)
				return ret;
			continue;
		}
		if (run->armed[e.val] != e.at)	/* superseded by an earlier one */
			continue;
		run->armed[e.val] = UINT64_MAX;
		run->tp->service(run, (int)e.val);
	}
	if (limit_ns > run->now && run->finished < run->nflows)
		run->now = limit_ns;
	return run->finished == run->nflows ? 0 : -FI_ETIMEDOUT;
}
