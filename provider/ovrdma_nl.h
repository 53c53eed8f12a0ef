/* SPDX-License-Identifier: MIT */
/*
 * RDMA netlink as the interposer speaks it (docs/PROVIDER.md, "Discovery
 * beside the kernel's RDMA stack"): the requests libibverbs makes to
 * find devices, and the kernel's answers with ovrdma's devices added.
 *
 * Messages of client RDMA_NL_NLDEV carry no family header: nlmsghdr,
 * then attributes. libibverbs (rdma-core 44 and later, util/rdma_nl.c,
 * libibverbs/ibdev_nl.c) asks
 *   - RDMA_NLDEV_CMD_GET with NLM_F_DUMP: one NLM_F_MULTI message per
 *     device (DEV_INDEX u32, DEV_NAME string, DEV_NODE_TYPE u8,
 *     NODE_GUID u64, PORT_INDEX u32 required), then NLMSG_DONE;
 *   - RDMA_NLDEV_CMD_GET_CHARDEV with DEV_INDEX and CHARDEV_TYPE
 *     "uverbs": one message (CHARDEV u64, CHARDEV_ABI u64, CHARDEV_NAME
 *     string required; UVERBS_DRIVER_ID u32 optional).
 * The kernel answers a request for an index it does not have with an
 * NLMSG_ERROR of -EINVAL: that error, for an index of ours, is what the
 * rewrite replaces, so every answer the application reads is the
 * rewrite of a kernel answer to the same request (and a poll on the
 * socket says readable when there is something to read).
 *
 * Pure: no I/O. provider/ovrdma_preload_nl.c feeds it the application's
 * requests and the kernel's datagrams; tests/unit/test_provider_nl.c
 * checks its output against libnl's parser and libibverbs' policy.
 */
#ifndef OVRDMA_NL_H
#define OVRDMA_NL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * Device indices: the kernel takes them from 0..INT32_MAX, cyclically
 * (xa_limit_31b), one per registration since boot. Ours sit at the top
 * of that range, where a kernel would arrive only after some two
 * billion registrations, and stay below INT32_MAX so that
 * ibv_get_device_index() (an int) is not negative. An index the kernel
 * reports in the same dump is skipped.
 */
#define OVRDMA_NL_INDEX_BASE 0x7f000000u
#define OVRDMA_NL_INDEX_SPAN 0x00fffff0u /* BASE + SPAN < INT32_MAX */

#define OVRDMA_NL_NAME_MAX 64 /* IB_DEVICE_NAME_MAX */
#define OVRDMA_NL_DEVS_MAX 32 /* devices of one tree announced */
#define OVRDMA_NL_KDEVS_MAX 64 /* kernel devices remembered per dump */
#define OVRDMA_NL_PENDING_MAX 16 /* requests in flight per socket */
/* The longest message ovrdma_nl_put_dev() writes (names at their max). */
#define OVRDMA_NL_DEV_MSG_MAX 512

/* One ovrdma device as netlink announces it (read from ovrdmad's tree). */
struct ovrdma_nl_dev {
	uint32_t index; /* ovrdma_nl_assign() */
	uint8_t node_type; /* the kernel's RDMA_NODE_*: 1, an IB CA */
	uint64_t node_guid; /* host order, as the kernel sends it */
	uint64_t sys_image_guid;
	uint64_t cdev; /* huge_encode_dev() of /dev/infiniband/<uverbs> */
	char name[OVRDMA_NL_NAME_MAX]; /* ibdev, class/infiniband/<name> */
	char uverbs[OVRDMA_NL_NAME_MAX]; /* class/infiniband_verbs/<uverbs> */
	char fw_ver[OVRDMA_NL_NAME_MAX]; /* empty: not sent */
};

struct ovrdma_nl_devs {
	struct ovrdma_nl_dev dev[OVRDMA_NL_DEVS_MAX];
	unsigned int n;
};

enum ovrdma_nl_kind {
	OVRDMA_NL_DUMP, /* CMD_GET, NLM_F_DUMP: append ours before DONE */
	OVRDMA_NL_DEV, /* CMD_GET of one of our indices */
	OVRDMA_NL_CHARDEV, /* CMD_GET_CHARDEV "uverbs" of one of ours */
	OVRDMA_NL_CMDEV, /* CMD_GET_CHARDEV "rdma_cm" (no index): ours */
};

/* A request whose answer is rewritten. */
struct ovrdma_nl_req {
	uint32_t seq;
	uint32_t index; /* DEV, CHARDEV: the device */
	uint16_t flags; /* the request's nlmsg_flags (NLM_F_ACK) */
	uint8_t kind; /* enum ovrdma_nl_kind */
};

/*
 * The rewrite state of one NETLINK_RDMA socket: its requests in flight
 * and what the dump being answered has shown of the kernel's devices.
 * Owner: the socket's entry in ovrdma_preload_nl.c, under its lock.
 */
struct ovrdma_nl_sock {
	struct ovrdma_nl_req req[OVRDMA_NL_PENDING_MAX];
	unsigned int nreq;
	/* kernel devices of the last dump (indices and names), kept after
	 * its DONE: the indices that ours avoided */
	uint32_t kidx[OVRDMA_NL_KDEVS_MAX];
	char kname[OVRDMA_NL_KDEVS_MAX][OVRDMA_NL_NAME_MAX];
	unsigned int nk;
	uint32_t dump_seq; /* the dump whose kernel devices nk counts */
};

/* huge_encode_dev(): how the kernel sends a dev_t in CHARDEV. */
uint64_t ovrdma_nl_encode_dev(unsigned int major, unsigned int minor);

/*
 * Gives every device an index: BASE plus a hash of its name within
 * SPAN (the same name, the same index, in every process), stepping past
 * the @ntaken indices of @taken (the kernel's) and each other's.
 */
void ovrdma_nl_assign(struct ovrdma_nl_devs *devs, const uint32_t *taken,
		      unsigned int ntaken);

/* The device of @devs with @index, or NULL. */
const struct ovrdma_nl_dev *ovrdma_nl_find(const struct ovrdma_nl_devs *devs,
					   uint32_t index);

/*
 * Messages as the kernel writes them (drivers/infiniband/core/nldev.c:
 * fill_dev_info, nldev_get_chardev, netlink_ack), into @buf of @cap
 * bytes. Return the length written, or -ENOSPC.
 */
ssize_t ovrdma_nl_put_dev(void *buf, size_t cap, const struct ovrdma_nl_dev *d,
			  uint32_t seq, uint32_t portid, uint16_t flags);
ssize_t ovrdma_nl_put_chardev(void *buf, size_t cap,
			      const struct ovrdma_nl_dev *d, uint32_t seq,
			      uint32_t portid);
/*
 * GET_CHARDEV "rdma_cm": the char device of the interposer's rdma_cm
 * (docs/PROVIDER.md, "rdma_cm"), misc 10:58 as ovrdma_preload_cm.c's
 * fstat says, ABI 4, in place of the kernel's. librdmacm opens
 * /dev/infiniband/NAME and checks its st_rdev against this number.
 */
#define OVRDMA_NL_CM_MAJOR 10
#define OVRDMA_NL_CM_MINOR 58
#define OVRDMA_NL_CM_ABI 4
ssize_t ovrdma_nl_put_cm_chardev(void *buf, size_t cap, uint32_t seq,
				 uint32_t portid);
/* An NLMSG_ERROR of @error (0: an ack) for the request header @req. */
ssize_t ovrdma_nl_put_error(void *buf, size_t cap, const void *req,
			    uint32_t portid, int error);

/*
 * The application sends @len bytes of requests: those to rewrite the
 * answers of are noted in @s (GET dumps; GET and GET_CHARDEV "uverbs"
 * of an index of @devs; GET_CHARDEV "rdma_cm" without an index). Returns how many were noted, or -ENOSPC when
 * @s has no room (nothing noted: the requests go to the kernel and
 * their answers through unchanged).
 */
int ovrdma_nl_note_requests(struct ovrdma_nl_sock *s, const void *buf,
			    size_t len, const struct ovrdma_nl_devs *devs);

/* Are answers to requests of @s still expected? */
static inline int ovrdma_nl_pending(const struct ovrdma_nl_sock *s)
{
	return s->nreq != 0;
}

/*
 * One datagram of @len bytes from the kernel, rewritten into @out (of
 * @cap bytes): the kernel's messages in their order, with, before the
 * NLMSG_DONE of a noted dump, one message per device of @devs the kernel
 * did not name itself (indices assigned here, avoiding the kernel's, and
 * written back into @devs), in place of the -EINVAL of a noted
 * GET / GET_CHARDEV the answer (and an ack when NLM_F_ACK was asked),
 * and for GET_CHARDEV "rdma_cm" ours: the kernel's reply with our char
 * device number, or ours in place of its error.
 * A truncated trailing message is copied as it is. Returns the length
 * of @out, or -ENOSPC (@cap too small: at least @len plus
 * (devs->n + 1) * OVRDMA_NL_DEV_MSG_MAX is enough).
 */
ssize_t ovrdma_nl_rewrite(struct ovrdma_nl_sock *s, const void *in, size_t len,
			  void *out, size_t cap, struct ovrdma_nl_devs *devs);

/*
 * The length of the first datagram to hand out of the @len bytes of
 * messages at @buf: whole messages, as many as fit in @max, at least one.
 */
size_t ovrdma_nl_chunk(const void *buf, size_t len, size_t max);

#endif /* OVRDMA_NL_H */
