/* SPDX-License-Identifier: MIT */
/*
 * Verbs QP state machine: which modify_qp calls are legal.
 *
 * The rules are those of the Linux kernel's ib_modify_qp_is_ok() (the
 * qp_state_table of drivers/infiniband/core/verbs.c), restricted to RC and
 * UD and leaving out its RoCE, XRC and raw-packet entries, so that a
 * modify_qp that real hardware behind the kernel refuses with EINVAL is
 * refused here too. The states, QP types and mask bits carry libibverbs'
 * numbers (IBV_QPS_*, IBV_QPT_*, IBV_QP_*) so the provider maps them 1:1.
 *
 *                  +--------------------------- any state --> RESET
 *                  |  +------ any state except RESET ------> ERR
 *                  v  v
 *   RESET --> INIT --> RTR --> RTS <--> SQD
 *              ^ |              ^ |     ^ |
 *              +-+              +-+     +-+     (attributes changed in place)
 *                          SQE --> RTS          (UD only; SQE is entered by
 *                                                the device, never by modify)
 *
 * For each legal (type, from, to) the table names the attributes that
 * must be in the mask (required) and those that may be (optional);
 * OVR_QP_STATE is needed to change state and allowed everywhere. Any other
 * bit makes the call invalid. A mask without OVR_QP_STATE changes
 * attributes in place: it is checked as the transition from the state to
 * itself, which exists only for RESET and ERR (empty mask), INIT, RTS and
 * SQD. As in the kernel, RESET -> ERR is not a legal transition.
 *
 * OVR_QP_CUR_STATE (attr.cur_state) is the application telling the device
 * which state the QP is in; the kernel then looks the transition up from
 * that state instead of the one it knows, and allows the bit only on the
 * transitions RTR, RTS, SQD and SQE -> RTS. ovr_qp_modify_check_cur() does
 * exactly that; ovr_qp_modify_check() takes the state to look up from.
 */
#ifndef OVR_DP_QPSTATE_H
#define OVR_DP_QPSTATE_H

/* = enum ibv_qp_state */
enum ovr_qp_state {
	OVR_QPS_RESET = 0,
	OVR_QPS_INIT,
	OVR_QPS_RTR,
	OVR_QPS_RTS,
	OVR_QPS_SQD,
	OVR_QPS_SQE,
	OVR_QPS_ERR,
};

/* = IBV_QPT_RC / IBV_QPT_UD; the only types the engine runs */
enum ovr_qp_type {
	OVR_QPT_RC = 2,
	OVR_QPT_UD = 4,
};

/* = enum ibv_qp_attr_mask, up to IBV_QP_DEST_QPN */
enum ovr_qp_attr_mask {
	OVR_QP_STATE = 1 << 0,
	OVR_QP_CUR_STATE = 1 << 1,
	OVR_QP_EN_SQD_ASYNC_NOTIFY = 1 << 2,
	OVR_QP_ACCESS_FLAGS = 1 << 3,
	OVR_QP_PKEY_INDEX = 1 << 4,
	OVR_QP_PORT = 1 << 5,
	OVR_QP_QKEY = 1 << 6,
	OVR_QP_AV = 1 << 7,
	OVR_QP_PATH_MTU = 1 << 8,
	OVR_QP_TIMEOUT = 1 << 9,
	OVR_QP_RETRY_CNT = 1 << 10,
	OVR_QP_RNR_RETRY = 1 << 11,
	OVR_QP_RQ_PSN = 1 << 12,
	OVR_QP_MAX_QP_RD_ATOMIC = 1 << 13,
	OVR_QP_ALT_PATH = 1 << 14,
	OVR_QP_MIN_RNR_TIMER = 1 << 15,
	OVR_QP_SQ_PSN = 1 << 16,
	OVR_QP_MAX_DEST_RD_ATOMIC = 1 << 17,
	OVR_QP_PATH_MIG_STATE = 1 << 18,
	OVR_QP_CAP = 1 << 19,
	OVR_QP_DEST_QPN = 1 << 20,
};

/* Every bit above; any other bit in a mask is invalid. */
#define OVR_QP_ATTR_ALL ((1u << 21) - 1)

/*
 * 0 when modifying a QP of @type, looked up from state @cur, with @mask is
 * legal; -EINVAL otherwise (unknown type or state, a required attribute
 * missing, an attribute not allowed on that transition, a bit outside
 * OVR_QP_ATTR_ALL). @next is used only when @mask has OVR_QP_STATE;
 * without it the call changes attributes in place (cur -> cur).
 * When @mask has OVR_QP_CUR_STATE, @cur must be attr.cur_state (see
 * ovr_qp_modify_check_cur()), and it must be RTR, RTS, SQD or SQE.
 */
int ovr_qp_modify_check(enum ovr_qp_type type, enum ovr_qp_state cur,
			enum ovr_qp_state next, unsigned int mask);

/*
 * The check the kernel does for a QP whose real state is @real: the
 * transition is looked up from @cur_state_attr (attr.cur_state) when @mask
 * has OVR_QP_CUR_STATE, from @real otherwise (then @cur_state_attr is
 * ignored). Like the kernel it does not compare @cur_state_attr with
 * @real: the table alone decides (only X -> RTS, X in RTR/RTS/SQD/SQE).
 */
int ovr_qp_modify_check_cur(enum ovr_qp_type type, enum ovr_qp_state real,
			    enum ovr_qp_state cur_state_attr,
			    enum ovr_qp_state next, unsigned int mask);

/* "RESET", "INIT", "RTR", "RTS", "SQD", "SQE", "ERR"; "?" for others. */
const char *ovr_qp_state_name(enum ovr_qp_state s);

/*
 * The attributes a transition requires and those it allows, OVR_QP_STATE
 * left out of both (it is needed to change state and always allowed).
 * Returns 0, or -EINVAL with 0/0 when the transition is not legal for
 * @type. Either pointer may be NULL.
 */
int ovr_qp_transition_masks(enum ovr_qp_type type, enum ovr_qp_state cur,
			    enum ovr_qp_state next, unsigned int *required,
			    unsigned int *optional);

#endif /* OVR_DP_QPSTATE_H */
