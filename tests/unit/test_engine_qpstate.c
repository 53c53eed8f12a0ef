// SPDX-License-Identifier: MIT
/*
 * Tests of the QP state machine against the kernel's ib_modify_qp_is_ok()
 * table for RC and UD, written out again here, transition by transition.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "qpstate.h"

#define NSTATES (OVR_QPS_ERR + 1)
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Short names for the table below. */
#define STATE OVR_QP_STATE
#define CUR OVR_QP_CUR_STATE
#define SQDN OVR_QP_EN_SQD_ASYNC_NOTIFY
#define ACC OVR_QP_ACCESS_FLAGS
#define PKEY OVR_QP_PKEY_INDEX
#define PORT OVR_QP_PORT
#define QKEY OVR_QP_QKEY
#define AV OVR_QP_AV
#define MTU OVR_QP_PATH_MTU
#define TMO OVR_QP_TIMEOUT
#define RETRY OVR_QP_RETRY_CNT
#define RNR OVR_QP_RNR_RETRY
#define RQPSN OVR_QP_RQ_PSN
#define RDATOM OVR_QP_MAX_QP_RD_ATOMIC
#define ALTP OVR_QP_ALT_PATH
#define RNRT OVR_QP_MIN_RNR_TIMER
#define SQPSN OVR_QP_SQ_PSN
#define DRDATOM OVR_QP_MAX_DEST_RD_ATOMIC
#define MIG OVR_QP_PATH_MIG_STATE
#define DQPN OVR_QP_DEST_QPN
#define CAP OVR_QP_CAP

struct expect {
	enum ovr_qp_type type;
	enum ovr_qp_state from, to;
	unsigned int req, opt;
};

#define RST OVR_QPS_RESET
#define INI OVR_QPS_INIT
#define RTR OVR_QPS_RTR
#define RTS OVR_QPS_RTS
#define SQD OVR_QPS_SQD
#define SQE OVR_QPS_SQE
#define ERR OVR_QPS_ERR
#define RC OVR_QPT_RC
#define UD OVR_QPT_UD
#define UC OVR_QPT_UC

/* Every legal transition; anything not listed must be refused. */
static const struct expect legal[] = {
	/* RC */
	{ RC, RST, RST, 0, 0 },
	{ RC, RST, INI, PKEY | PORT | ACC, 0 },
	{ RC, INI, RST, 0, 0 },
	{ RC, INI, INI, 0, PKEY | PORT | ACC },
	{ RC, INI, RTR, AV | MTU | DQPN | RQPSN | DRDATOM | RNRT,
	  ALTP | ACC | PKEY },
	{ RC, INI, ERR, 0, 0 },
	{ RC, RTR, RST, 0, 0 },
	{ RC, RTR, RTS, SQPSN | TMO | RETRY | RNR | RDATOM,
	  CUR | ALTP | ACC | RNRT | MIG },
	{ RC, RTR, ERR, 0, 0 },
	{ RC, RTS, RST, 0, 0 },
	{ RC, RTS, RTS, 0, CUR | ACC | ALTP | MIG | RNRT },
	{ RC, RTS, SQD, 0, SQDN },
	{ RC, RTS, ERR, 0, 0 },
	{ RC, SQD, RST, 0, 0 },
	{ RC, SQD, RTS, 0, CUR | ALTP | ACC | RNRT | MIG },
	{ RC, SQD, SQD, 0,
	  PORT | AV | TMO | RETRY | RNR | RDATOM | DRDATOM | ALTP | ACC | PKEY |
		  RNRT | MIG },
	{ RC, SQD, ERR, 0, 0 },
	{ RC, SQE, RST, 0, 0 },
	{ RC, SQE, ERR, 0, 0 },
	{ RC, ERR, RST, 0, 0 },
	{ RC, ERR, ERR, 0, 0 },
	/* UD */
	{ UD, RST, RST, 0, 0 },
	{ UD, RST, INI, PKEY | PORT | QKEY, 0 },
	{ UD, INI, RST, 0, 0 },
	{ UD, INI, INI, 0, PKEY | PORT | QKEY },
	{ UD, INI, RTR, 0, PKEY | QKEY },
	{ UD, INI, ERR, 0, 0 },
	{ UD, RTR, RST, 0, 0 },
	{ UD, RTR, RTS, SQPSN, CUR | QKEY },
	{ UD, RTR, ERR, 0, 0 },
	{ UD, RTS, RST, 0, 0 },
	{ UD, RTS, RTS, 0, CUR | QKEY },
	{ UD, RTS, SQD, 0, SQDN },
	{ UD, RTS, ERR, 0, 0 },
	{ UD, SQD, RST, 0, 0 },
	{ UD, SQD, RTS, 0, CUR | QKEY },
	{ UD, SQD, SQD, 0, PKEY | QKEY },
	{ UD, SQD, ERR, 0, 0 },
	{ UD, SQE, RST, 0, 0 },
	{ UD, SQE, RTS, 0, CUR | QKEY },
	{ UD, SQE, ERR, 0, 0 },
	{ UD, ERR, RST, 0, 0 },
	{ UD, ERR, ERR, 0, 0 },
	/* UC: the kernel's qp_state_table, IB_QPT_UC column */
	{ UC, RST, RST, 0, 0 },
	{ UC, RST, INI, PKEY | PORT | ACC, 0 },
	{ UC, INI, RST, 0, 0 },
	{ UC, INI, INI, 0, PKEY | PORT | ACC },
	{ UC, INI, RTR, AV | MTU | DQPN | RQPSN, ALTP | ACC | PKEY },
	{ UC, INI, ERR, 0, 0 },
	{ UC, RTR, RST, 0, 0 },
	{ UC, RTR, RTS, SQPSN, CUR | ALTP | ACC | MIG },
	{ UC, RTR, ERR, 0, 0 },
	{ UC, RTS, RST, 0, 0 },
	{ UC, RTS, RTS, 0, CUR | ACC | ALTP | MIG },
	{ UC, RTS, SQD, 0, SQDN },
	{ UC, RTS, ERR, 0, 0 },
	{ UC, SQD, RST, 0, 0 },
	{ UC, SQD, RTS, 0, CUR | ALTP | ACC | MIG },
	{ UC, SQD, SQD, 0, AV | ALTP | ACC | PKEY | MIG },
	{ UC, SQD, ERR, 0, 0 },
	{ UC, SQE, RST, 0, 0 },
	{ UC, SQE, RTS, 0, CUR | ACC },
	{ UC, SQE, ERR, 0, 0 },
	{ UC, ERR, RST, 0, 0 },
	{ UC, ERR, ERR, 0, 0 },
};

static const enum ovr_qp_type types[] = { OVR_QPT_RC, OVR_QPT_UC, OVR_QPT_UD };

static const struct expect *lookup(enum ovr_qp_type type,
				   enum ovr_qp_state from, enum ovr_qp_state to)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(legal); i++)
		if (legal[i].type == type && legal[i].from == from &&
		    legal[i].to == to)
			return &legal[i];
	return NULL;
}

static const char *tname(enum ovr_qp_type t)
{
	return t == OVR_QPT_RC ? "RC" : t == OVR_QPT_UC ? "UC" : "UD";
}

/* Names the failing case, since the loops below run hundreds of them. */
static void check(enum ovr_qp_type type, enum ovr_qp_state from,
		  enum ovr_qp_state to, unsigned int mask, int want)
{
	int got = ovr_qp_modify_check(type, from, to, mask);

	if (got != want)
		fail_msg("%s %s->%s mask %#x: got %d, want %d", tname(type),
			 ovr_qp_state_name(from), ovr_qp_state_name(to), mask,
			 got, want);
}

static void test_legal_transitions(void **state)
{
	size_t i;
	unsigned int b;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(legal); i++) {
		const struct expect *e = &legal[i];
		unsigned int req = ~0u, opt = ~0u;
		unsigned int base = STATE | e->req;

		assert_int_equal(ovr_qp_transition_masks(e->type, e->from,
							 e->to, &req, &opt),
				 0);
		assert_int_equal(req, e->req);
		assert_int_equal(opt, e->opt);
		assert_int_equal(req & opt, 0);

		/* exactly the required bits */
		check(e->type, e->from, e->to, base, 0);
		/* and all the optional ones at once */
		check(e->type, e->from, e->to, base | e->opt, 0);
		for (b = 0; b < 32; b++) {
			unsigned int bit = 1u << b;

			if (bit == STATE)
				continue;
			if (e->req & bit) /* one required bit missing */
				check(e->type, e->from, e->to, base & ~bit,
				      -EINVAL);
			else if (e->opt & bit) /* one optional bit added */
				check(e->type, e->from, e->to, base | bit, 0);
			else /* one bit not allowed here */
				check(e->type, e->from, e->to,
				      base | e->opt | bit, -EINVAL);
		}
	}
}

static void test_illegal_transitions(void **state)
{
	size_t t;
	int from, to;

	(void)state;
	for (t = 0; t < ARRAY_SIZE(types); t++)
		for (from = 0; from < NSTATES; from++)
			for (to = 0; to < NSTATES; to++) {
				unsigned int req = 1, opt = 1;

				if (lookup(types[t], from, to))
					continue;
				assert_int_equal(
					ovr_qp_transition_masks(types[t], from,
								to, &req, &opt),
					-EINVAL);
				assert_int_equal(req, 0);
				assert_int_equal(opt, 0);
				check(types[t], from, to, STATE, -EINVAL);
				check(types[t], from, to, OVR_QP_ATTR_ALL,
				      -EINVAL);
			}

	/* the ones the brief names, with masks that would otherwise fit */
	check(RC, RST, RTR, STATE | AV | MTU | DQPN | RQPSN | DRDATOM | RNRT,
	      -EINVAL);
	check(RC, INI, RTS, STATE | SQPSN | TMO | RETRY | RNR | RDATOM,
	      -EINVAL);
	check(RC, RTR, SQD, STATE, -EINVAL);
	check(RC, SQE, RTS, STATE, -EINVAL);
	check(RC, SQE, RTS, STATE | CUR, -EINVAL);
	check(UD, RST, RTR, STATE, -EINVAL);
	check(UD, INI, RTS, STATE | SQPSN, -EINVAL);
	/* nothing enters SQE by modify, and RTR is not re-entered */
	check(UD, RTS, SQE, STATE, -EINVAL);
	check(RC, RTS, SQE, STATE, -EINVAL);
	check(RC, RTR, RTR, STATE, -EINVAL);
	check(UD, RTR, RTR, STATE, -EINVAL);
	/* the kernel's table has no RESET -> ERR */
	check(RC, RST, ERR, STATE, -EINVAL);
	check(UD, RST, ERR, STATE, -EINVAL);
	/* going backwards is only ever to RESET */
	check(RC, RTS, INI, STATE | PKEY | PORT | ACC, -EINVAL);
	check(RC, ERR, RTS, STATE, -EINVAL);
}

/* What the brief calls the key facts, spelled out once more. */
static void test_key_facts(void **state)
{
	int s;

	(void)state;
	for (s = 0; s < NSTATES; s++) {
		check(RC, s, RST, STATE, 0);
		check(UD, s, RST, STATE, 0);
		check(RC, s, RST, STATE | QKEY, -EINVAL);
		if (s == RST)
			continue;
		check(RC, s, ERR, STATE, 0);
		check(UD, s, ERR, STATE, 0);
		check(UD, s, ERR, STATE | PKEY, -EINVAL);
	}
	check(RC, RST, INI, STATE | PKEY | PORT | ACC, 0);
	check(RC, RST, INI, STATE | PKEY | PORT | QKEY, -EINVAL);
	check(UD, RST, INI, STATE | PKEY | PORT | QKEY, 0);
	check(UD, RST, INI, STATE | PKEY | PORT | ACC, -EINVAL);
	check(UD, INI, RTR, STATE, 0);
	check(UD, RTR, RTS, STATE | SQPSN, 0);
	check(UD, RTR, RTS, STATE, -EINVAL);
	/* CAP is never modifiable */
	check(RC, INI, INI, STATE | CAP, -EINVAL);
}

/* Bring-ups as perftest and NCCL-style code issue them. */
static void test_bring_up(void **state)
{
	(void)state;
	/* RC */
	assert_int_equal(ovr_qp_modify_check(OVR_QPT_RC, OVR_QPS_RESET,
					     OVR_QPS_INIT,
					     STATE | PKEY | PORT | ACC),
			 0);
	assert_int_equal(ovr_qp_modify_check(OVR_QPT_RC, OVR_QPS_INIT,
					     OVR_QPS_RTR,
					     STATE | AV | MTU | DQPN | RQPSN |
						     DRDATOM | RNRT),
			 0);
	assert_int_equal(
		ovr_qp_modify_check(OVR_QPT_RC, OVR_QPS_RTR, OVR_QPS_RTS,
				    STATE | TMO | RETRY | RNR | SQPSN | RDATOM),
		0);
	assert_int_equal(ovr_qp_modify_check(OVR_QPT_RC, OVR_QPS_RTS,
					     OVR_QPS_SQD, STATE | SQDN),
			 0);
	assert_int_equal(ovr_qp_modify_check(OVR_QPT_RC, OVR_QPS_SQD,
					     OVR_QPS_SQD, STATE | TMO | RETRY),
			 0);
	assert_int_equal(ovr_qp_modify_check(OVR_QPT_RC, OVR_QPS_SQD,
					     OVR_QPS_RTS, STATE),
			 0);
	assert_int_equal(ovr_qp_modify_check(OVR_QPT_RC, OVR_QPS_RTS,
					     OVR_QPS_ERR, STATE),
			 0);
	assert_int_equal(ovr_qp_modify_check(OVR_QPT_RC, OVR_QPS_ERR,
					     OVR_QPS_RESET, STATE),
			 0);
	/* UD */
	assert_int_equal(ovr_qp_modify_check(OVR_QPT_UD, OVR_QPS_RESET,
					     OVR_QPS_INIT,
					     STATE | PKEY | PORT | QKEY),
			 0);
	assert_int_equal(ovr_qp_modify_check(OVR_QPT_UD, OVR_QPS_INIT,
					     OVR_QPS_RTR, STATE),
			 0);
	assert_int_equal(ovr_qp_modify_check(OVR_QPT_UD, OVR_QPS_RTR,
					     OVR_QPS_RTS, STATE | SQPSN),
			 0);
	/* recovering from a send queue error */
	assert_int_equal(ovr_qp_modify_check(OVR_QPT_UD, OVR_QPS_SQE,
					     OVR_QPS_RTS, STATE),
			 0);
}

/* No OVR_QP_STATE: attributes change in place, checked as cur -> cur. */
static void test_in_place(void **state)
{
	(void)state;
	/* @next is ignored, even out of range */
	check(RC, INI, (enum ovr_qp_state)99, PKEY, 0);
	check(RC, INI, RTR, PKEY | PORT | ACC, 0);
	check(RC, INI, RTR, AV, -EINVAL); /* INIT->RTR's bits do not apply */
	check(UD, INI, RTS, QKEY, 0);
	check(RC, RTS, RST, ACC | RNRT | ALTP | MIG, 0);
	check(UD, RTS, RST, QKEY, 0);
	check(RC, RTS, RST, TMO, -EINVAL);
	check(RC, SQD, RST, TMO | RETRY | RNR | AV | PORT, 0);
	check(UD, SQD, RST, PKEY | QKEY, 0);
	check(UD, SQD, RST, PORT, -EINVAL);
	/* an empty mask where the state has a cur -> cur entry */
	check(RC, RST, RST, 0, 0);
	check(UD, ERR, RST, 0, 0);
	check(RC, INI, RST, 0, 0);
	/* and where it has none */
	check(RC, RTR, RST, 0, -EINVAL);
	check(UD, RTR, RST, QKEY, -EINVAL);
	check(UD, SQE, RST, 0, -EINVAL);
	check(UD, SQE, RST, QKEY, -EINVAL);
	check(RC, RST, RST, PKEY, -EINVAL);
	check(RC, ERR, RST, QKEY, -EINVAL);
	/* out-of-range current state */
	check(RC, (enum ovr_qp_state)7, RST, 0, -EINVAL);
}

static void test_out_of_range(void **state)
{
	static const unsigned int bad_types[] = { 0, 1, 5, 8, 0xffffffffu };
	unsigned int req = 1, opt = 1;
	size_t i;
	int s;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(bad_types); i++) {
		enum ovr_qp_type t = (enum ovr_qp_type)bad_types[i];

		check(t, RST, RST, STATE, -EINVAL);
		check(t, RST, INI, STATE | PKEY | PORT | ACC, -EINVAL);
		check(t, RST, INI, STATE | PKEY | PORT | QKEY, -EINVAL);
		check(t, RTS, ERR, STATE, -EINVAL);
		assert_int_equal(ovr_qp_transition_masks(t, RST, RST, &req,
							 &opt),
				 -EINVAL);
		assert_int_equal(req, 0);
		assert_int_equal(opt, 0);
	}
	for (i = 0; i < ARRAY_SIZE(types); i++) {
		static const unsigned int bad_states[] = { 7, 8, 255,
							   0x80000000u,
							   0xffffffffu };
		size_t j;

		for (j = 0; j < ARRAY_SIZE(bad_states); j++) {
			enum ovr_qp_state b = (enum ovr_qp_state)bad_states[j];

			for (s = 0; s < NSTATES; s++) {
				check(types[i], b, s, STATE, -EINVAL);
				check(types[i], s, b, STATE, -EINVAL);
			}
			check(types[i], b, b, STATE, -EINVAL);
			check(types[i], b, b, 0, -EINVAL);
			assert_int_equal(ovr_qp_transition_masks(
						 types[i], b, ERR, NULL, NULL),
					 -EINVAL);
			assert_int_equal(ovr_qp_transition_masks(types[i], RTS,
								 b, NULL, NULL),
					 -EINVAL);
		}
	}
	/* NULL outputs are allowed on success too */
	assert_int_equal(ovr_qp_transition_masks(OVR_QPT_RC, OVR_QPS_RTR,
						 OVR_QPS_RTS, NULL, NULL),
			 0);
	/* bits beyond DEST_QPN, even on transitions that take anything */
	for (s = 21; s < 32; s++) {
		check(RC, RTS, ERR, STATE | (1u << s), -EINVAL);
		check(UD, SQD, SQD, STATE | PKEY | (1u << s), -EINVAL);
		check(RC, RTS, RTS, 1u << s, -EINVAL);
	}
	assert_int_equal(OVR_QP_ATTR_ALL, (OVR_QP_DEST_QPN << 1) - 1);
}

static void test_cur_state(void **state)
{
	int s;

	(void)state;
	/* listed on the transitions into RTS only */
	check(RC, RTR, RTS, STATE | CUR | SQPSN | TMO | RETRY | RNR | RDATOM,
	      0);
	check(RC, RTS, RTS, STATE | CUR, 0);
	check(RC, SQD, RTS, STATE | CUR, 0);
	check(UD, RTR, RTS, STATE | CUR | SQPSN, 0);
	check(UD, RTS, RTS, STATE | CUR, 0);
	check(UD, SQD, RTS, STATE | CUR, 0);
	check(UD, SQE, RTS, STATE | CUR, 0);
	/* in place, from RTS: still RTS -> RTS */
	check(UD, RTS, RST, CUR | QKEY, 0);
	/* from the states where the kernel refuses the bit outright */
	check(RC, RST, INI, STATE | CUR | PKEY | PORT | ACC, -EINVAL);
	check(RC, INI, INI, STATE | CUR, -EINVAL);
	check(UD, INI, RTR, STATE | CUR, -EINVAL);
	check(RC, ERR, RST, STATE | CUR, -EINVAL);
	/* and on transitions that do not list it */
	for (s = 0; s < NSTATES; s++) {
		check(RC, s, ERR, STATE | CUR, -EINVAL);
		check(UD, s, RST, STATE | CUR, -EINVAL);
	}
	check(RC, RTS, SQD, STATE | CUR, -EINVAL);
	check(UD, SQD, SQD, STATE | CUR, -EINVAL);

	/*
	 * ovr_qp_modify_check_cur(): with the bit, the lookup starts at
	 * attr.cur_state; without it, at the real state and the attribute
	 * is ignored.
	 */
	assert_int_equal(ovr_qp_modify_check_cur(OVR_QPT_UD, OVR_QPS_RTS,
						 OVR_QPS_SQE, OVR_QPS_RTS,
						 STATE | CUR),
			 0);
	assert_int_equal(ovr_qp_modify_check_cur(OVR_QPT_UD, OVR_QPS_SQE,
						 OVR_QPS_SQE, OVR_QPS_RTS,
						 STATE | CUR | QKEY),
			 0);
	/* the RC table has no SQE -> RTS, so no such claim is accepted */
	assert_int_equal(ovr_qp_modify_check_cur(OVR_QPT_RC, OVR_QPS_RTS,
						 OVR_QPS_SQE, OVR_QPS_RTS,
						 STATE | CUR),
			 -EINVAL);
	/* RC: the claim "I am in RTR" demands RTR -> RTS's attributes */
	assert_int_equal(ovr_qp_modify_check_cur(OVR_QPT_RC, OVR_QPS_SQD,
						 OVR_QPS_RTR, OVR_QPS_RTS,
						 STATE | CUR),
			 -EINVAL);
	assert_int_equal(ovr_qp_modify_check_cur(OVR_QPT_RC, OVR_QPS_SQD,
						 OVR_QPS_RTR, OVR_QPS_RTS,
						 STATE | CUR | SQPSN | TMO |
							 RETRY | RNR | RDATOM),
			 0);
	/* a claim of INIT is never accepted, even when true */
	assert_int_equal(
		ovr_qp_modify_check_cur(
			OVR_QPT_RC, OVR_QPS_INIT, OVR_QPS_INIT, OVR_QPS_RTR,
			STATE | CUR | AV | MTU | DQPN | RQPSN | DRDATOM | RNRT),
		-EINVAL);
	/* out of range claims and real states */
	assert_int_equal(ovr_qp_modify_check_cur(OVR_QPT_UD, OVR_QPS_RTS,
						 (enum ovr_qp_state)7,
						 OVR_QPS_RTS, STATE | CUR),
			 -EINVAL);
	assert_int_equal(
		ovr_qp_modify_check_cur(OVR_QPT_UD, (enum ovr_qp_state)7,
					OVR_QPS_RTS, OVR_QPS_RTS, STATE | CUR),
		-EINVAL);
	/* without the bit the claim is ignored, whatever it holds */
	assert_int_equal(
		ovr_qp_modify_check_cur(OVR_QPT_RC, OVR_QPS_INIT,
					(enum ovr_qp_state)99, OVR_QPS_RTR,
					STATE | AV | MTU | DQPN | RQPSN |
						DRDATOM | RNRT),
		0);
	assert_int_equal(ovr_qp_modify_check_cur(OVR_QPT_UD, OVR_QPS_RTS,
						 OVR_QPS_SQE, OVR_QPS_RTS,
						 STATE),
			 0);
	assert_int_equal(ovr_qp_modify_check_cur(OVR_QPT_UD, OVR_QPS_INIT,
						 OVR_QPS_SQE, OVR_QPS_RTS,
						 STATE),
			 -EINVAL);
}

static void test_state_names(void **state)
{
	(void)state;
	assert_string_equal(ovr_qp_state_name(OVR_QPS_RESET), "RESET");
	assert_string_equal(ovr_qp_state_name(OVR_QPS_INIT), "INIT");
	assert_string_equal(ovr_qp_state_name(OVR_QPS_RTR), "RTR");
	assert_string_equal(ovr_qp_state_name(OVR_QPS_RTS), "RTS");
	assert_string_equal(ovr_qp_state_name(OVR_QPS_SQD), "SQD");
	assert_string_equal(ovr_qp_state_name(OVR_QPS_SQE), "SQE");
	assert_string_equal(ovr_qp_state_name(OVR_QPS_ERR), "ERR");
	assert_string_equal(ovr_qp_state_name((enum ovr_qp_state)7), "?");
	assert_string_equal(ovr_qp_state_name((enum ovr_qp_state) - 1), "?");
}

/* libibverbs' numbers, which the provider relies on. */
static void test_abi_numbers(void **state)
{
	(void)state;
	assert_int_equal(OVR_QPS_RESET, 0);
	assert_int_equal(OVR_QPS_SQE, 5);
	assert_int_equal(OVR_QPS_ERR, 6);
	assert_int_equal(OVR_QPT_RC, 2);
	assert_int_equal(OVR_QPT_UC, 3);
	assert_int_equal(OVR_QPT_UD, 4);
	assert_int_equal(OVR_QP_ALT_PATH, 16384);
	assert_int_equal(OVR_QP_SQ_PSN, 65536);
	assert_int_equal(OVR_QP_CAP, 524288);
	assert_int_equal(OVR_QP_DEST_QPN, 1048576);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_legal_transitions),
		cmocka_unit_test(test_illegal_transitions),
		cmocka_unit_test(test_key_facts),
		cmocka_unit_test(test_bring_up),
		cmocka_unit_test(test_in_place),
		cmocka_unit_test(test_out_of_range),
		cmocka_unit_test(test_cur_state),
		cmocka_unit_test(test_state_names),
		cmocka_unit_test(test_abi_numbers),
	};

	return cmocka_run_group_tests_name("engine_qpstate", tests, NULL, NULL);
}
