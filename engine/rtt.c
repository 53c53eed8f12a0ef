// SPDX-License-Identifier: MIT
/* RTT estimation and timeouts: see rtt.h for the model. */
#include <errno.h>

#include "rtt.h"

static uint64_t clamp(uint64_t v, uint64_t lo, uint64_t hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

int ovr_dp_rtt_init(struct ovr_dp_rtt *r, uint64_t init_rto_ns,
		    uint64_t min_rto_ns, uint64_t max_rto_ns,
		    uint64_t granularity_ns)
{
	if (!min_rto_ns || min_rto_ns > init_rto_ns || init_rto_ns > max_rto_ns)
		return -EINVAL;
	*r = (struct ovr_dp_rtt){
		.rto_ns = init_rto_ns,
		.min_rto_ns = min_rto_ns,
		.max_rto_ns = max_rto_ns,
		.granularity_ns = granularity_ns,
	};
	return 0;
}

static void update_rto(struct ovr_dp_rtt *r)
{
	uint64_t var = 4 * r->rttvar_ns;

	if (var < r->granularity_ns)
		var = r->granularity_ns;
	r->rto_ns = clamp(r->srtt_ns + var, r->min_rto_ns, r->max_rto_ns);
}

void ovr_dp_rtt_sample(struct ovr_dp_rtt *r, uint64_t rtt_ns)
{
	if (!r->srtt_ns) {
		r->srtt_ns = rtt_ns ? rtt_ns : 1;
		r->rttvar_ns = rtt_ns / 2;
		r->min_rtt_ns = rtt_ns;
	} else {
		uint64_t err = r->srtt_ns > rtt_ns ? r->srtt_ns - rtt_ns :
						     rtt_ns - r->srtt_ns;

		r->rttvar_ns = (3 * r->rttvar_ns + err) / 4;
		r->srtt_ns = (7 * r->srtt_ns + rtt_ns) / 8;
		if (!r->srtt_ns)
			r->srtt_ns = 1; /* 0 means "no sample yet" */
		if (rtt_ns < r->min_rtt_ns)
			r->min_rtt_ns = rtt_ns;
	}
	r->backoff = 0;
	update_rto(r);
}

void ovr_dp_rtt_backoff(struct ovr_dp_rtt *r)
{
	r->backoff++;
	r->rto_ns = r->rto_ns > r->max_rto_ns / 2 ? r->max_rto_ns :
						    r->rto_ns * 2;
}

uint64_t ovr_dp_rtt_pto(const struct ovr_dp_rtt *r, bool one_inflight,
			uint64_t ack_delay_ns)
{
	uint64_t pto;

	if (!r->srtt_ns)
		return r->rto_ns;
	pto = 2 * r->srtt_ns;
	if (one_inflight)
		pto += ack_delay_ns;
	if (pto < r->granularity_ns)
		pto = r->granularity_ns;
	return pto < r->rto_ns ? pto : r->rto_ns;
}
