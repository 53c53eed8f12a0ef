/* SPDX-License-Identifier: MIT */
/*
 * Verbs QP state machine: which modify_qp calls are legal.
 *
 * The rules are those of the Linux kernel's ib_modify_qp_is_ok() (the
 * qp_state_table of drivers/infiniband/core/verbs.c), restricted to RC, UC
 * and UD, leaving out its RoCE, XRC and raw-packet entries, so that a
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
 *                          SQE --> RTS          (UD, UC; SQE is entered by
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

#include <ovrdma/verbs.h>

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
