// SPDX-License-Identifier: MIT
/*
 * The interposer's RDMA netlink messages (provider/ovrdma_nl.c,
 * docs/PROVIDER.md "Discovery beside the kernel's RDMA stack"), read
 * back with libnl - the library libibverbs and librdmacm read the
 * kernel's answers with - under the attribute policy of rdma-core 44's
 * util/rdma_nl.c (rdmanl_policy: the types below), and with the
 * attributes ibdev_nl.c and cma.c require. The requests are built as
 * rdmanl_get_devices / rdmanl_get_chardev build them.
 *
 *   1. a dump: the kernel's devices untouched, ours before NLMSG_DONE,
 *      NLM_F_MULTI, the dump's sequence number and port id, DONE last;
 *      the dump spread over two datagrams; a kernel device of the same
 *      name wins; an index the kernel uses is stepped over;
 *   2. GET_CHARDEV "uverbs" of our index: the kernel's -EINVAL becomes
 *      the answer (CHARDEV decoding to /dev/null's 1:3, ABI 0, the
 *      uverbs name), with an ack after it when NLM_F_ACK was asked;
 *      GET of our index: the device;
 *   3. what is the kernel's goes through byte for byte: GET_CHARDEV of
 *      a kernel index, rdma_cm's (no index), another client's char
 *      device of our index, a failed dump, SYS_GET;
 *   4. limits: a full request table notes nothing; a truncated tail is
 *      copied; datagrams are cut at message boundaries; indices are
 *      stable, within ovrdma's range and non-negative as an int.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/sysmacros.h>

#include <cmocka.h>
#include <netlink/attr.h>
#include <netlink/msg.h>
#include <rdma/rdma_netlink.h>

#include "ovrdma_nl.h"

#define SEQ 0x6b000001u
#define PORTID 4242u
#define TYPE_GET RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET)
#define TYPE_CHARDEV RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET_CHARDEV)

/* rdma-core 44, util/rdma_nl.c: the types libibverbs and librdmacm
 * check - unchanged through rdma-core's master of 2026-08 (v44.0..master
 * changes neither this policy nor libibverbs/ibdev_nl.c's reading of the
 * answers but for one error's sign; librdmacm's check_abi_version_nl is
 * the same), so the newer releases GPU servers run (50 on Ubuntu 24.04)
 * parse what this test parses */
static struct nla_policy policy[RDMA_NLDEV_ATTR_MAX] = {
	[RDMA_NLDEV_ATTR_CHARDEV] = { .type = NLA_U64 },
	[RDMA_NLDEV_ATTR_CHARDEV_ABI] = { .type = NLA_U64 },
	[RDMA_NLDEV_ATTR_DEV_INDEX] = { .type = NLA_U32 },
	[RDMA_NLDEV_ATTR_DEV_NODE_TYPE] = { .type = NLA_U8 },
	[RDMA_NLDEV_ATTR_NODE_GUID] = { .type = NLA_U64 },
	[RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID] = { .type = NLA_U32 },
	[RDMA_NLDEV_ATTR_PORT_INDEX] = { .type = NLA_U32 },
	[RDMA_NLDEV_ATTR_CHARDEV_NAME] = { .type = NLA_NUL_STRING },
	[RDMA_NLDEV_ATTR_DEV_NAME] = { .type = NLA_NUL_STRING },
	[RDMA_NLDEV_ATTR_DEV_PROTOCOL] = { .type = NLA_NUL_STRING },
	[RDMA_NLDEV_SYS_ATTR_COPY_ON_FORK] = { .type = NLA_U8 },
};

/* Every attribute of @tb the policy types has the kernel's exact size
 * (libnl checks only minimum lengths). */
static void check_sizes(struct nlattr **tb)
{
	for (int i = 0; i < RDMA_NLDEV_ATTR_MAX; i++) {
		int want = policy[i].type == NLA_U8  ? 1 :
			   policy[i].type == NLA_U32 ? 4 :
			   policy[i].type == NLA_U64 ? 8 :
						       -1;

		if (tb[i] && want > 0)
			assert_int_equal(nla_len(tb[i]), want);
	}
}

/* A datagram being assembled (kernel answers, requests). */
struct dgram {
	unsigned char buf[8192];
	size_t len;
};

static void add(struct dgram *d, const struct nl_msg *m)
{
	const struct nlmsghdr *h = nlmsg_hdr((struct nl_msg *)m);

	assert_true(d->len + NLMSG_ALIGN(h->nlmsg_len) <= sizeof(d->buf));
	memcpy(d->buf + d->len, h, h->nlmsg_len);
	d->len += NLMSG_ALIGN(h->nlmsg_len);
}

/* The kernel's device message of a dump (fill_dev_info's required). */
static struct nl_msg *kernel_dev(uint32_t index, const char *name)
{
	struct nl_msg *m = nlmsg_alloc_simple(TYPE_GET, NLM_F_MULTI);

	nlmsg_hdr(m)->nlmsg_seq = SEQ;
	nlmsg_hdr(m)->nlmsg_pid = PORTID;
	nla_put_u32(m, RDMA_NLDEV_ATTR_DEV_INDEX, index);
	nla_put_string(m, RDMA_NLDEV_ATTR_DEV_NAME, name);
	nla_put_u32(m, RDMA_NLDEV_ATTR_PORT_INDEX, 1);
	nla_put_u64(m, RDMA_NLDEV_ATTR_NODE_GUID, 0x1122334455667788ull);
	nla_put_u8(m, RDMA_NLDEV_ATTR_DEV_NODE_TYPE, 1);
	return m;
}

static struct nl_msg *kernel_done(uint32_t seq)
{
	struct nl_msg *m = nlmsg_alloc_simple(NLMSG_DONE, NLM_F_MULTI);
	int zero = 0;

	nlmsg_hdr(m)->nlmsg_seq = seq;
	nlmsg_hdr(m)->nlmsg_pid = PORTID;
	nlmsg_append(m, &zero, sizeof(zero), NLMSG_ALIGNTO);
	return m;
}

/* The kernel's error for the request @req (the request echoed). */
static struct nl_msg *kernel_error(const struct nl_msg *req, int error)
{
	const struct nlmsghdr *rh = nlmsg_hdr((struct nl_msg *)req);
	struct nl_msg *m = nlmsg_alloc_simple(NLMSG_ERROR, 0);
	struct nlmsgerr e = { .error = error };

	nlmsg_hdr(m)->nlmsg_seq = rh->nlmsg_seq;
	nlmsg_hdr(m)->nlmsg_pid = PORTID;
	nlmsg_append(m, &e, sizeof(e.error), NLMSG_ALIGNTO);
	nlmsg_append(m, (void *)rh, rh->nlmsg_len, NLMSG_ALIGNTO);
	return m;
}

/* rdmanl_get_devices' request */
static struct nl_msg *req_dump(uint32_t seq)
{
	struct nl_msg *m = nlmsg_alloc_simple(TYPE_GET, NLM_F_DUMP);

	nlmsg_hdr(m)->nlmsg_flags |= NLM_F_REQUEST;
	nlmsg_hdr(m)->nlmsg_seq = seq;
	return m;
}

/* rdmanl_get_chardev's request (index -1: none) */
static struct nl_msg *req_chardev(uint32_t seq, int index, const char *type,
				  int flags)
{
	struct nl_msg *m = nlmsg_alloc_simple(TYPE_CHARDEV, flags);

	nlmsg_hdr(m)->nlmsg_flags |= NLM_F_REQUEST;
	nlmsg_hdr(m)->nlmsg_seq = seq;
	if (index != -1)
		nla_put_u32(m, RDMA_NLDEV_ATTR_DEV_INDEX, (uint32_t)index);
	nla_put_string(m, RDMA_NLDEV_ATTR_CHARDEV_TYPE, type);
	return m;
}

static void note_one(struct ovrdma_nl_sock *s, struct nl_msg *req,
		     const struct ovrdma_nl_devs *devs, int want)
{
	struct nlmsghdr *h = nlmsg_hdr(req);

	assert_int_equal(ovrdma_nl_note_requests(s, h, h->nlmsg_len, devs),
			 want);
	nlmsg_free(req);
}

/* One ovrdma device as the tree gives it (no index yet). */
static void tree(struct ovrdma_nl_devs *devs, const char *name)
{
	struct ovrdma_nl_dev *d = &devs->dev[devs->n++];

	memset(d, 0, sizeof(*d));
	snprintf(d->name, sizeof(d->name), "%s", name);
	snprintf(d->uverbs, sizeof(d->uverbs), "uverbs-0badcafe-%s", name);
	snprintf(d->fw_ver, sizeof(d->fw_ver), "ovrdma-0.1.0");
	d->node_type = 1;
	d->node_guid = 0x02000064c0a80101ull;
	d->sys_image_guid = d->node_guid;
	d->cdev = ovrdma_nl_encode_dev(1, 3);
}

static ssize_t rewrite(struct ovrdma_nl_sock *s, const struct dgram *in,
		       struct dgram *out, struct ovrdma_nl_devs *devs)
{
	ssize_t n = ovrdma_nl_rewrite(s, in->buf, in->len, out->buf,
				      sizeof(out->buf), devs);

	assert_true(n >= 0);
	out->len = (size_t)n;
	return n;
}

/* The messages of @d, one after another, as libnl walks them. */
static int split(const struct dgram *d, struct nlmsghdr **h, int max)
{
	struct nlmsghdr *m = (struct nlmsghdr *)d->buf;
	int left = (int)d->len, n = 0;

	while (nlmsg_ok(m, left) && n < max) {
		h[n++] = m;
		m = nlmsg_next(m, &left);
	}
	assert_int_equal(left, 0); /* nothing but whole messages */
	return n;
}

/* A device message as find_sysfs_devs_nl_cb reads it. */
static void check_dev(struct nlmsghdr *h, const char *name, uint16_t flags,
		      uint32_t *index)
{
	struct nlattr *tb[RDMA_NLDEV_ATTR_MAX];

	assert_int_equal(h->nlmsg_type, TYPE_GET);
	assert_int_equal(h->nlmsg_flags, flags);
	assert_int_equal(h->nlmsg_seq, SEQ);
	assert_int_equal(h->nlmsg_pid, PORTID);
	assert_int_equal(nlmsg_parse(h, 0, tb, RDMA_NLDEV_ATTR_MAX - 1, policy),
			 0);
	check_sizes(tb);
	assert_non_null(tb[RDMA_NLDEV_ATTR_DEV_NAME]);
	assert_non_null(tb[RDMA_NLDEV_ATTR_DEV_NODE_TYPE]);
	assert_non_null(tb[RDMA_NLDEV_ATTR_DEV_INDEX]);
	assert_non_null(tb[RDMA_NLDEV_ATTR_NODE_GUID]);
	assert_non_null(tb[RDMA_NLDEV_ATTR_PORT_INDEX]);
	assert_string_equal(nla_get_string(tb[RDMA_NLDEV_ATTR_DEV_NAME]), name);
	assert_int_equal(nla_get_u8(tb[RDMA_NLDEV_ATTR_DEV_NODE_TYPE]), 1);
	assert_int_equal(nla_get_u32(tb[RDMA_NLDEV_ATTR_PORT_INDEX]), 1);
	assert_true(nla_get_u64(tb[RDMA_NLDEV_ATTR_NODE_GUID]) ==
		    0x02000064c0a80101ull);
	assert_string_equal(nla_get_string(tb[RDMA_NLDEV_ATTR_DEV_PROTOCOL]),
			    "roce");
	*index = nla_get_u32(tb[RDMA_NLDEV_ATTR_DEV_INDEX]);
	assert_true(*index >= OVRDMA_NL_INDEX_BASE);
	assert_true(*index < OVRDMA_NL_INDEX_BASE + OVRDMA_NL_INDEX_SPAN);
	assert_true((int)*index > 0); /* ibv_get_device_index() */
}

static void test_dump(void **state)
{
	struct ovrdma_nl_sock s = { 0 };
	struct ovrdma_nl_devs devs = { 0 };
	struct dgram in = { 0 }, out = { 0 };
	struct nlmsghdr *h[8];
	struct nl_msg *k;
	uint32_t idx;

	(void)state;
	tree(&devs, "ovrdma0");
	note_one(&s, req_dump(SEQ), &devs, 1);
	assert_true(ovrdma_nl_pending(&s));
	k = kernel_dev(3, "mlx5_0");
	add(&in, k);
	nlmsg_free(k);
	k = kernel_done(SEQ);
	add(&in, k);
	nlmsg_free(k);
	rewrite(&s, &in, &out, &devs);
	assert_int_equal(split(&out, h, 8), 3);
	/* the kernel's, byte for byte, first */
	assert_memory_equal(h[0], in.buf, h[0]->nlmsg_len);
	check_dev(h[1], "ovrdma0", NLM_F_MULTI, &idx);
	assert_int_equal(idx, devs.dev[0].index);
	assert_int_equal(h[2]->nlmsg_type, NLMSG_DONE);
	assert_int_equal(h[2]->nlmsg_seq, SEQ);
	assert_false(ovrdma_nl_pending(&s));
	/* the kernel's index is remembered for later requests */
	assert_int_equal(s.nk, 1);
	assert_int_equal(s.kidx[0], 3);
}

/* The kernel's part in one datagram, its DONE in the next; the kernel
 * happens to use the index ours would have. */
static void test_dump_two_datagrams(void **state)
{
	struct ovrdma_nl_sock s = { 0 };
	struct ovrdma_nl_devs devs = { 0 }, probe = { 0 };
	struct dgram in1 = { 0 }, in2 = { 0 }, out = { 0 };
	struct nlmsghdr *h[8];
	struct nl_msg *k;
	uint32_t idx;

	(void)state;
	tree(&probe, "ovrdma0");
	ovrdma_nl_assign(&probe, NULL, 0);
	tree(&devs, "ovrdma0");
	note_one(&s, req_dump(SEQ), &devs, 1);
	k = kernel_dev(probe.dev[0].index, "mlx5_0");
	add(&in1, k);
	nlmsg_free(k);
	k = kernel_dev(7, "mlx5_1");
	add(&in1, k);
	nlmsg_free(k);
	rewrite(&s, &in1, &out, &devs);
	assert_int_equal(out.len, in1.len);
	assert_memory_equal(out.buf, in1.buf, in1.len);
	assert_true(ovrdma_nl_pending(&s));
	k = kernel_done(SEQ);
	add(&in2, k);
	nlmsg_free(k);
	rewrite(&s, &in2, &out, &devs);
	assert_int_equal(split(&out, h, 8), 2);
	check_dev(h[0], "ovrdma0", NLM_F_MULTI, &idx);
	assert_int_not_equal(idx, probe.dev[0].index);
	assert_int_equal(h[1]->nlmsg_type, NLMSG_DONE);
	assert_int_equal(s.nk, 2);
}

/* A kernel device called ovrdma0 wins; ovrdma1 is still added. */
static void test_dump_name_clash(void **state)
{
	struct ovrdma_nl_sock s = { 0 };
	struct ovrdma_nl_devs devs = { 0 };
	struct dgram in = { 0 }, out = { 0 };
	struct nlmsghdr *h[8];
	struct nl_msg *k;
	uint32_t idx;

	(void)state;
	tree(&devs, "ovrdma0");
	tree(&devs, "ovrdma1");
	note_one(&s, req_dump(SEQ), &devs, 1);
	k = kernel_dev(0, "ovrdma0");
	add(&in, k);
	nlmsg_free(k);
	k = kernel_done(SEQ);
	add(&in, k);
	nlmsg_free(k);
	rewrite(&s, &in, &out, &devs);
	assert_int_equal(split(&out, h, 8), 3);
	assert_memory_equal(h[0], in.buf, h[0]->nlmsg_len);
	check_dev(h[1], "ovrdma1", NLM_F_MULTI, &idx);
	assert_int_equal(h[2]->nlmsg_type, NLMSG_DONE);
}

/* A kernel without devices: its DONE alone. */
static void test_dump_no_kernel_devices(void **state)
{
	struct ovrdma_nl_sock s = { 0 };
	struct ovrdma_nl_devs devs = { 0 };
	struct dgram in = { 0 }, out = { 0 };
	struct nlmsghdr *h[8];
	struct nl_msg *k;
	uint32_t idx;

	(void)state;
	tree(&devs, "ovrdma0");
	note_one(&s, req_dump(SEQ), &devs, 1);
	k = kernel_done(SEQ);
	add(&in, k);
	nlmsg_free(k);
	rewrite(&s, &in, &out, &devs);
	assert_int_equal(split(&out, h, 8), 2);
	check_dev(h[0], "ovrdma0", NLM_F_MULTI, &idx);
	assert_int_equal(h[1]->nlmsg_type, NLMSG_DONE);
	assert_int_equal(s.nk, 0);
}

/* find_uverbs_nl_cb and libibverbs' decoding of CHARDEV */
/* A GET_CHARDEV answer parsed as librdmacm and libibverbs parse it (its
 * three attributes there, the kernel's sizes): its char device, as they
 * decode it (huge_encode_dev), into @tb the attributes. */
static dev_t parse_chardev(struct nlmsghdr *h, struct nlattr **tb)
{
	uint64_t cdev64;

	assert_int_equal(h->nlmsg_type, TYPE_CHARDEV);
	assert_int_equal(h->nlmsg_seq, SEQ + 1);
	assert_int_equal(h->nlmsg_pid, PORTID);
	assert_int_equal(nlmsg_parse(h, 0, tb, RDMA_NLDEV_ATTR_MAX - 1, policy),
			 0);
	check_sizes(tb);
	assert_non_null(tb[RDMA_NLDEV_ATTR_CHARDEV]);
	assert_non_null(tb[RDMA_NLDEV_ATTR_CHARDEV_ABI]);
	assert_non_null(tb[RDMA_NLDEV_ATTR_CHARDEV_NAME]);
	cdev64 = nla_get_u64(tb[RDMA_NLDEV_ATTR_CHARDEV]);
	return makedev((cdev64 & 0xfff00) >> 8,
		       (cdev64 & 0xff) | ((cdev64 >> 12) & 0xfff00));
}

static void check_chardev(struct nlmsghdr *h, const char *name)
{
	struct nlattr *tb[RDMA_NLDEV_ATTR_MAX];

	assert_int_equal(h->nlmsg_flags, 0);
	assert_true(parse_chardev(h, tb) == makedev(1, 3));
	/* the provider matches ABI 0 only */
	assert_true(nla_get_u64(tb[RDMA_NLDEV_ATTR_CHARDEV_ABI]) == 0);
	assert_string_equal(nla_get_string(tb[RDMA_NLDEV_ATTR_CHARDEV_NAME]),
			    name);
	assert_int_equal(nla_get_u32(tb[RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID]), 0);
}

static void test_chardev(void **state)
{
	struct ovrdma_nl_sock s = { 0 };
	struct ovrdma_nl_devs devs = { 0 };
	struct dgram in = { 0 }, out = { 0 };
	struct nlmsghdr *h[4];
	struct nl_msg *req, *k;
	int idx;

	(void)state;
	tree(&devs, "ovrdma0");
	ovrdma_nl_assign(&devs, NULL, 0);
	idx = (int)devs.dev[0].index;
	req = req_chardev(SEQ + 1, idx, "uverbs", 0);
	k = kernel_error(req, -EINVAL);
	note_one(&s, req, &devs, 1);
	add(&in, k);
	nlmsg_free(k);
	rewrite(&s, &in, &out, &devs);
	assert_int_equal(split(&out, h, 4), 1);
	check_chardev(h[0], "uverbs-0badcafe-ovrdma0");
	assert_false(ovrdma_nl_pending(&s));
}

static void test_chardev_ack(void **state)
{
	struct ovrdma_nl_sock s = { 0 };
	struct ovrdma_nl_devs devs = { 0 };
	struct dgram in = { 0 }, out = { 0 };
	struct nlmsghdr *h[4];
	struct nl_msg *req, *k;
	struct nlmsgerr *e;

	(void)state;
	tree(&devs, "ovrdma0");
	ovrdma_nl_assign(&devs, NULL, 0);
	req = req_chardev(SEQ + 1, (int)devs.dev[0].index, "uverbs", NLM_F_ACK);
	k = kernel_error(req, -EINVAL);
	note_one(&s, req, &devs, 1);
	add(&in, k);
	nlmsg_free(k);
	rewrite(&s, &in, &out, &devs);
	assert_int_equal(split(&out, h, 4), 2);
	check_chardev(h[0], "uverbs-0badcafe-ovrdma0");
	assert_int_equal(h[1]->nlmsg_type, NLMSG_ERROR);
	assert_int_equal(h[1]->nlmsg_seq, SEQ + 1);
	assert_int_equal(h[1]->nlmsg_len, NLMSG_LENGTH(sizeof(*e)));
	e = nlmsg_data(h[1]);
	assert_int_equal(e->error, 0);
	assert_int_equal(e->msg.nlmsg_type, TYPE_CHARDEV);
	assert_int_equal(e->msg.nlmsg_seq, SEQ + 1);
}

static void test_get_ours(void **state)
{
	struct ovrdma_nl_sock s = { 0 };
	struct ovrdma_nl_devs devs = { 0 };
	struct dgram in = { 0 }, out = { 0 };
	struct nlmsghdr *h[4];
	struct nl_msg *req, *k;
	uint32_t idx;

	(void)state;
	tree(&devs, "ovrdma0");
	ovrdma_nl_assign(&devs, NULL, 0);
	req = nlmsg_alloc_simple(TYPE_GET, NLM_F_REQUEST);
	nlmsg_hdr(req)->nlmsg_seq = SEQ;
	nla_put_u32(req, RDMA_NLDEV_ATTR_DEV_INDEX, devs.dev[0].index);
	k = kernel_error(req, -EINVAL);
	note_one(&s, req, &devs, 1);
	add(&in, k);
	nlmsg_free(k);
	rewrite(&s, &in, &out, &devs);
	assert_int_equal(split(&out, h, 4), 1);
	check_dev(h[0], "ovrdma0", 0, &idx);
	assert_int_equal(idx, devs.dev[0].index);
}

/* Requests and answers that are the kernel's: @req not noted, the
 * answer @k unchanged. */
static void passes(struct nl_msg *req, struct nl_msg *k,
		   struct ovrdma_nl_devs *devs)
{
	struct ovrdma_nl_sock s = { 0 };
	struct dgram in = { 0 }, out = { 0 };

	add(&in, k);
	nlmsg_free(k);
	note_one(&s, req, devs, 0);
	assert_false(ovrdma_nl_pending(&s));
	rewrite(&s, &in, &out, devs);
	assert_int_equal(out.len, in.len);
	assert_memory_equal(out.buf, in.buf, in.len);
}

static void test_kernel_requests_pass(void **state)
{
	struct ovrdma_nl_devs devs = { 0 };
	struct nl_msg *req, *k;
	int ours;

	(void)state;
	tree(&devs, "ovrdma0");
	ovrdma_nl_assign(&devs, NULL, 0);
	ours = (int)devs.dev[0].index;
	/* a kernel device's char device: its answer */
	req = req_chardev(SEQ + 1, 3, "uverbs", 0);
	k = nlmsg_alloc_simple(TYPE_CHARDEV, 0);
	nlmsg_hdr(k)->nlmsg_seq = SEQ + 1;
	nla_put_u64(k, RDMA_NLDEV_ATTR_CHARDEV, (231u << 8) | 192u);
	nla_put_u64(k, RDMA_NLDEV_ATTR_CHARDEV_ABI, 1);
	nla_put_string(k, RDMA_NLDEV_ATTR_CHARDEV_NAME, "uverbs0");
	passes(req, k, &devs);
	/* another client's char device of an ovrdma index: none */
	req = req_chardev(SEQ + 1, ours, "umad", 0);
	passes(req, kernel_error(req, -EINVAL), &devs);
	/* GET_CHARDEV of an index neither has */
	req = req_chardev(SEQ + 1, 12345, "uverbs", 0);
	passes(req, kernel_error(req, -EINVAL), &devs);
	/* SYS_GET (get_copy_on_fork) */
	req = nlmsg_alloc_simple(RDMA_NL_GET_TYPE(RDMA_NL_NLDEV,
						  RDMA_NLDEV_CMD_SYS_GET),
				 NLM_F_REQUEST);
	nlmsg_hdr(req)->nlmsg_seq = SEQ + 2;
	k = nlmsg_alloc_simple(nlmsg_hdr(req)->nlmsg_type, 0);
	nlmsg_hdr(k)->nlmsg_seq = SEQ + 2;
	nla_put_u8(k, RDMA_NLDEV_SYS_ATTR_COPY_ON_FORK, 1);
	passes(req, k, &devs);
}

/* A GET_CHARDEV "rdma_cm" answer as librdmacm's check_abi_version_nl_cb
 * reads it: ovrdma's misc 10:58 (what the interposer's fstat says of its
 * channel), ABI 4, /dev/infiniband/rdma_cm. */
static void check_cm_chardev(struct nlmsghdr *h)
{
	struct nlattr *tb[RDMA_NLDEV_ATTR_MAX];

	assert_true(parse_chardev(h, tb) == makedev(10, 58));
	assert_true((uint32_t)nla_get_u64(tb[RDMA_NLDEV_ATTR_CHARDEV_ABI]) ==
		    4);
	assert_string_equal(nla_get_string(tb[RDMA_NLDEV_ATTR_CHARDEV_NAME]),
			    "rdma_cm");
}

/*
 * librdmacm's GET_CHARDEV "rdma_cm" (no index) on a kernel with RDMA:
 * the kernel's rdma_cm has a dynamic misc minor, and librdmacm opens
 * /dev/infiniband/rdma_cm only if its st_rdev is that number - the
 * interposer's channel says 10:58, so the answer says 10:58 too; where
 * the kernel has no rdma_cm (rdma_ucm not loaded), ours in place of its
 * error; everything else of the kernel's answer as it was.
 */
static void test_cm_chardev(void **state)
{
	struct ovrdma_nl_devs devs = { 0 };
	struct nlmsghdr *h[4];
	struct nl_msg *req, *k;
	struct nlmsgerr *e;
	(void)state;

	tree(&devs, "ovrdma0");
	ovrdma_nl_assign(&devs, NULL, 0);
	/* has: the kernel's answer, 10:123 (and its ack if asked); else no
	 * rdma_cm in the kernel: ours (and an ack if asked) */
	for (int c = 0; c < 4; c++) {
		struct ovrdma_nl_sock s = { 0 };
		struct dgram in = { 0 }, out = { 0 };
		int has = c < 2, ack = c & 1;

		req = req_chardev(SEQ + 1, -1, "rdma_cm", ack ? NLM_F_ACK : 0);
		if (has) {
			k = nlmsg_alloc_simple(TYPE_CHARDEV, 0);
			nlmsg_hdr(k)->nlmsg_seq = SEQ + 1;
			nlmsg_hdr(k)->nlmsg_pid = PORTID;
			nla_put_u64(k, RDMA_NLDEV_ATTR_CHARDEV,
				    ovrdma_nl_encode_dev(10, 123));
			nla_put_u64(k, RDMA_NLDEV_ATTR_CHARDEV_ABI, 4);
			nla_put_string(k, RDMA_NLDEV_ATTR_CHARDEV_NAME,
				       "rdma_cm");
			add(&in, k);
			nlmsg_free(k);
		}
		if (!has || ack) {
			k = kernel_error(req, has ? 0 : -EOPNOTSUPP);
			add(&in, k);
			nlmsg_free(k);
		}
		note_one(&s, req, &devs, 1);
		rewrite(&s, &in, &out, &devs);
		if (has)
			assert_int_equal(out.len, in.len); /* in place */
		assert_int_equal(split(&out, h, 4), ack ? 2 : 1);
		check_cm_chardev(h[0]);
		if (ack) {
			assert_int_equal(h[1]->nlmsg_type, NLMSG_ERROR);
			e = nlmsg_data(h[1]);
			assert_int_equal(e->error, 0);
			if (!has)
				assert_int_equal(e->msg.nlmsg_type,
						 TYPE_CHARDEV);
		}
		assert_false(ovrdma_nl_pending(&s));
	}
	/* rdma_cm of a device index (no such thing in the kernel): not
	 * ours to answer */
	req = req_chardev(SEQ + 1, 3, "rdma_cm", 0);
	passes(req, kernel_error(req, -EINVAL), &devs);
}

/* A dump the kernel refuses: its error, and nothing of ours. */
static void test_dump_refused(void **state)
{
	struct ovrdma_nl_sock s = { 0 };
	struct ovrdma_nl_devs devs = { 0 };
	struct dgram in = { 0 }, out = { 0 };
	struct nl_msg *req = req_dump(SEQ), *k = kernel_error(req, -EPERM);

	(void)state;
	tree(&devs, "ovrdma0");
	note_one(&s, req, &devs, 1);
	add(&in, k);
	nlmsg_free(k);
	rewrite(&s, &in, &out, &devs);
	assert_int_equal(out.len, in.len);
	assert_memory_equal(out.buf, in.buf, in.len);
	assert_false(ovrdma_nl_pending(&s));
}

static void test_limits(void **state)
{
	struct ovrdma_nl_sock s = { 0 };
	struct ovrdma_nl_devs devs = { 0 }, again = { 0 };
	struct dgram in = { 0 }, out = { 0 };
	struct nlmsghdr *h;
	struct nl_msg *k;
	size_t first;

	(void)state;
	tree(&devs, "ovrdma0");
	for (unsigned int i = 0; i < OVRDMA_NL_PENDING_MAX; i++)
		note_one(&s, req_dump(SEQ + i), &devs, 1);
	/* two requests in one send, the table full: neither noted */
	k = req_dump(SEQ + 100);
	add(&in, k);
	nlmsg_free(k);
	k = req_dump(SEQ + 101);
	add(&in, k);
	nlmsg_free(k);
	assert_int_equal(ovrdma_nl_note_requests(&s, in.buf, in.len, &devs),
			 -ENOSPC);
	assert_int_equal(s.nreq, OVRDMA_NL_PENDING_MAX);

	/* a datagram truncated in its second message: the first as it
	 * is, the rest copied */
	memset(&s, 0, sizeof(s));
	in.len = 0;
	k = kernel_dev(3, "mlx5_0");
	add(&in, k);
	nlmsg_free(k);
	first = in.len;
	k = kernel_dev(4, "mlx5_1");
	add(&in, k);
	nlmsg_free(k);
	in.len -= 10;
	rewrite(&s, &in, &out, &devs);
	assert_int_equal(out.len, in.len);
	assert_memory_equal(out.buf, in.buf, in.len);
	assert_int_equal(ovrdma_nl_chunk(out.buf, out.len, 65536), first);
	assert_int_equal(ovrdma_nl_chunk(out.buf + first, out.len - first,
					 65536),
			 out.len - first);

	/* cut at message boundaries, one at least */
	in.len = 0;
	for (int i = 0; i < 3; i++) {
		k = kernel_dev((uint32_t)i, "mlx5_x");
		add(&in, k);
		nlmsg_free(k);
	}
	h = (struct nlmsghdr *)in.buf;
	assert_int_equal(ovrdma_nl_chunk(in.buf, in.len, 1),
			 NLMSG_ALIGN(h->nlmsg_len));
	assert_int_equal(ovrdma_nl_chunk(in.buf, in.len,
					 2 * NLMSG_ALIGN(h->nlmsg_len) + 1),
			 2 * NLMSG_ALIGN(h->nlmsg_len));
	assert_int_equal(ovrdma_nl_chunk(in.buf, in.len, in.len), in.len);

	/* the same names, the same indices, in any process */
	tree(&devs, "ovrdma1");
	ovrdma_nl_assign(&devs, NULL, 0);
	tree(&again, "ovrdma0");
	tree(&again, "ovrdma1");
	ovrdma_nl_assign(&again, NULL, 0);
	assert_int_equal(devs.dev[0].index, again.dev[0].index);
	assert_int_equal(devs.dev[1].index, again.dev[1].index);
	assert_int_not_equal(devs.dev[0].index, devs.dev[1].index);
	assert_ptr_equal(ovrdma_nl_find(&devs, devs.dev[1].index),
			 &devs.dev[1]);
	assert_null(ovrdma_nl_find(&devs, 3));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dump),
		cmocka_unit_test(test_dump_two_datagrams),
		cmocka_unit_test(test_dump_name_clash),
		cmocka_unit_test(test_dump_no_kernel_devices),
		cmocka_unit_test(test_chardev),
		cmocka_unit_test(test_chardev_ack),
		cmocka_unit_test(test_get_ours),
		cmocka_unit_test(test_kernel_requests_pass),
		cmocka_unit_test(test_cm_chardev),
		cmocka_unit_test(test_dump_refused),
		cmocka_unit_test(test_limits),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
