// SPDX-License-Identifier: MIT
/* QP state machine rules: see qpstate.h for the model and the source. */
#include <errno.h>
#include <stddef.h>

#include "qpstate.h"

/*
 * One legal transition of one QP type, other than X -> RESET and
 * X -> ERR, which take nothing but OVR_QP_STATE and are handled in
 * find_rule(). A (from, to) pair absent from a type's list is illegal.
 */
struct qp_rule {
	enum ovr_qp_state from;
	enum ovr_qp_state to;
	unsigned int req;
	unsigned int opt;
};

/* What an RC QP may change while drained: its primary path and limits. */
#define RC_SQD_OPT                                                             \
	(OVR_QP_PORT | OVR_QP_AV | OVR_QP_TIMEOUT | OVR_QP_RETRY_CNT |         \
	 OVR_QP_RNR_RETRY | OVR_QP_MAX_QP_RD_ATOMIC |                          \
	 OVR_QP_MAX_DEST_RD_ATOMIC | OVR_QP_ACCESS_FLAGS | OVR_QP_PKEY_INDEX | \
	 OVR_QP_MIN_RNR_TIMER)
/* Alternate path (APM): accepted where the kernel lists it, not used. */
#define ALT (OVR_QP_ALT_PATH | OVR_QP_PATH_MIG_STATE)
/* What an RC QP may change on the way into, or while in, RTS. */
#define RC_RTS_OPT \
	(OVR_QP_CUR_STATE | OVR_QP_ACCESS_FLAGS | OVR_QP_MIN_RNR_TIMER | ALT)

static const struct qp_rule rc_rules[] = {
	{ OVR_QPS_RESET, OVR_QPS_INIT,
	  OVR_QP_PKEY_INDEX | OVR_QP_PORT | OVR_QP_ACCESS_FLAGS, 0 },
	{ OVR_QPS_INIT, OVR_QPS_INIT, 0,
	  OVR_QP_PKEY_INDEX | OVR_QP_PORT | OVR_QP_ACCESS_FLAGS },
	{ OVR_QPS_INIT, OVR_QPS_RTR,
	  OVR_QP_AV | OVR_QP_PATH_MTU | OVR_QP_DEST_QPN | OVR_QP_RQ_PSN |
		  OVR_QP_MAX_DEST_RD_ATOMIC | OVR_QP_MIN_RNR_TIMER,
	  OVR_QP_ALT_PATH | OVR_QP_ACCESS_FLAGS | OVR_QP_PKEY_INDEX },
	{ OVR_QPS_RTR, OVR_QPS_RTS,
	  OVR_QP_SQ_PSN | OVR_QP_TIMEOUT | OVR_QP_RETRY_CNT | OVR_QP_RNR_RETRY |
		  OVR_QP_MAX_QP_RD_ATOMIC,
	  RC_RTS_OPT },
	{ OVR_QPS_RTS, OVR_QPS_RTS, 0, RC_RTS_OPT },
	{ OVR_QPS_RTS, OVR_QPS_SQD, 0, OVR_QP_EN_SQD_ASYNC_NOTIFY },
	{ OVR_QPS_SQD, OVR_QPS_RTS, 0, RC_RTS_OPT },
	{ OVR_QPS_SQD, OVR_QPS_SQD, 0, RC_SQD_OPT | ALT },
	/* No SQE -> RTS: an RC QP's send errors take it to ERR, never SQE. */
};

/* UD has no path, no PSN on receive, no RDMA; the QKey is its access. */
#define UD_RTS_OPT (OVR_QP_CUR_STATE | OVR_QP_QKEY)

static const struct qp_rule ud_rules[] = {
	{ OVR_QPS_RESET, OVR_QPS_INIT,
	  OVR_QP_PKEY_INDEX | OVR_QP_PORT | OVR_QP_QKEY, 0 },
	{ OVR_QPS_INIT, OVR_QPS_INIT, 0,
	  OVR_QP_PKEY_INDEX | OVR_QP_PORT | OVR_QP_QKEY },
	{ OVR_QPS_INIT, OVR_QPS_RTR, 0, OVR_QP_PKEY_INDEX | OVR_QP_QKEY },
	{ OVR_QPS_RTR, OVR_QPS_RTS, OVR_QP_SQ_PSN, UD_RTS_OPT },
	{ OVR_QPS_RTS, OVR_QPS_RTS, 0, UD_RTS_OPT },
	{ OVR_QPS_RTS, OVR_QPS_SQD, 0, OVR_QP_EN_SQD_ASYNC_NOTIFY },
	{ OVR_QPS_SQD, OVR_QPS_RTS, 0, UD_RTS_OPT },
	{ OVR_QPS_SQD, OVR_QPS_SQD, 0, OVR_QP_PKEY_INDEX | OVR_QP_QKEY },
	{ OVR_QPS_SQE, OVR_QPS_RTS, 0, UD_RTS_OPT },
};

/*
 * UC: RC's path and PSNs, none of its reliability (no timeout, retries,
 * RNR timer or READ / atomic depths); SQE exists (a local send error),
 * as for UD.
 */
#define UC_RTS_OPT                                                  \
	(OVR_QP_CUR_STATE | OVR_QP_ACCESS_FLAGS | OVR_QP_ALT_PATH | \
	 OVR_QP_PATH_MIG_STATE)

static const struct qp_rule uc_rules[] = {
	{ OVR_QPS_RESET, OVR_QPS_INIT,
	  OVR_QP_PKEY_INDEX | OVR_QP_PORT | OVR_QP_ACCESS_FLAGS, 0 },
	{ OVR_QPS_INIT, OVR_QPS_INIT, 0,
	  OVR_QP_PKEY_INDEX | OVR_QP_PORT | OVR_QP_ACCESS_FLAGS },
	{ OVR_QPS_INIT, OVR_QPS_RTR,
	  OVR_QP_AV | OVR_QP_PATH_MTU | OVR_QP_DEST_QPN | OVR_QP_RQ_PSN,
	  OVR_QP_ALT_PATH | OVR_QP_ACCESS_FLAGS | OVR_QP_PKEY_INDEX },
	{ OVR_QPS_RTR, OVR_QPS_RTS, OVR_QP_SQ_PSN, UC_RTS_OPT },
	{ OVR_QPS_RTS, OVR_QPS_RTS, 0, UC_RTS_OPT },
	{ OVR_QPS_RTS, OVR_QPS_SQD, 0, OVR_QP_EN_SQD_ASYNC_NOTIFY },
	{ OVR_QPS_SQD, OVR_QPS_RTS, 0, UC_RTS_OPT },
	{ OVR_QPS_SQD, OVR_QPS_SQD, 0,
	  OVR_QP_AV | OVR_QP_ACCESS_FLAGS | OVR_QP_PKEY_INDEX | ALT },
	{ OVR_QPS_SQE, OVR_QPS_RTS, 0, OVR_QP_CUR_STATE | OVR_QP_ACCESS_FLAGS },
};

/* The table entry for X -> RESET and X -> ERR (X != RESET). */
static const struct qp_rule state_only;

static int valid_state(enum ovr_qp_state s)
{
	/* unsigned: the enum's type is implementation-defined */
	return (unsigned int)s <= OVR_QPS_ERR;
}

/* NULL when (from, to) is not a legal transition for @type. */
static const struct qp_rule *
find_rule(enum ovr_qp_type type, enum ovr_qp_state from, enum ovr_qp_state to)
{
	const struct qp_rule *rules;
	size_t n, i;

	switch (type) {
	case OVR_QPT_RC:
		rules = rc_rules;
		n = sizeof(rc_rules) / sizeof(rc_rules[0]);
		break;
	case OVR_QPT_UD:
		rules = ud_rules;
		n = sizeof(ud_rules) / sizeof(ud_rules[0]);
		break;
	case OVR_QPT_UC:
		rules = uc_rules;
		n = sizeof(uc_rules) / sizeof(uc_rules[0]);
		break;
	default:
		return NULL;
	}
	if (!valid_state(from) || !valid_state(to))
		return NULL;
	if (to == OVR_QPS_RESET || (to == OVR_QPS_ERR && from != OVR_QPS_RESET))
		return &state_only;
	for (i = 0; i < n; i++)
		if (rules[i].from == from && rules[i].to == to)
			return &rules[i];
	return NULL;
}

int ovr_qp_transition_masks(enum ovr_qp_type type, enum ovr_qp_state cur,
			    enum ovr_qp_state next, unsigned int *required,
			    unsigned int *optional)
{
	const struct qp_rule *r = find_rule(type, cur, next);

	if (required)
		*required = r ? r->req : 0;
	if (optional)
		*optional = r ? r->opt : 0;
	return r ? 0 : -EINVAL;
}

int ovr_qp_modify_check(enum ovr_qp_type type, enum ovr_qp_state cur,
			enum ovr_qp_state next, unsigned int mask)
{
	const struct qp_rule *r;

	if (mask & ~OVR_QP_ATTR_ALL)
		return -EINVAL;
	if (!(mask & OVR_QP_STATE))
		next = cur;
	/*
	 * The kernel's explicit test; the table agrees, since only
	 * transitions out of these states list OVR_QP_CUR_STATE.
	 */
	if ((mask & OVR_QP_CUR_STATE) && cur != OVR_QPS_RTR &&
	    cur != OVR_QPS_RTS && cur != OVR_QPS_SQD && cur != OVR_QPS_SQE)
		return -EINVAL;
	r = find_rule(type, cur, next);
	if (!r)
		return -EINVAL;
	if ((mask & r->req) != r->req)
		return -EINVAL;
	if (mask & ~(r->req | r->opt | OVR_QP_STATE))
		return -EINVAL;
	return 0;
}

int ovr_qp_modify_check_cur(enum ovr_qp_type type, enum ovr_qp_state real,
			    enum ovr_qp_state cur_state_attr,
			    enum ovr_qp_state next, unsigned int mask)
{
	if (!valid_state(real))
		return -EINVAL;
	return ovr_qp_modify_check(
		type, mask & OVR_QP_CUR_STATE ? cur_state_attr : real, next,
		mask);
}

const char *ovr_qp_state_name(enum ovr_qp_state s)
{
	static const char *const names[] = {
		[OVR_QPS_RESET] = "RESET", [OVR_QPS_INIT] = "INIT",
		[OVR_QPS_RTR] = "RTR",	   [OVR_QPS_RTS] = "RTS",
		[OVR_QPS_SQD] = "SQD",	   [OVR_QPS_SQE] = "SQE",
		[OVR_QPS_ERR] = "ERR",
	};

	return valid_state(s) ? names[s] : "?";
}
