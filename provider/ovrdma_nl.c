// SPDX-License-Identifier: MIT
/*
 * RDMA netlink messages for the interposer (ovrdma_nl.h): notes the
 * application's device requests, writes ovrdma's devices into the
 * kernel's answers. Written from the kernel's uapi
 * (<rdma/rdma_netlink.h>, <linux/netlink.h>) and what rdma-core 44's
 * libibverbs and librdmacm parse (docs/PROVIDER.md).
 */
#include <errno.h>
#include <linux/netlink.h>
#include <stdbool.h>
#include <rdma/rdma_netlink.h>
#include <string.h>

#include "ovrdma_nl.h"

#define TYPE_GET RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET)
#define TYPE_CHARDEV RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET_CHARDEV)

/* The uverbs client's name in GET_CHARDEV (rdmanl_get_chardev). */
#define CHARDEV_UVERBS "uverbs"
/* librdmacm's (check_abi_version_nl) */
#define CHARDEV_CM "rdma_cm"

/* A message being written: @len bytes of @buf used so far. */
struct wbuf {
	unsigned char *buf;
	size_t cap, len;
	int err; /* -ENOSPC once anything did not fit */
};

static void *reserve(struct wbuf *w, size_t n)
{
	size_t need = NLMSG_ALIGN(n);
	void *p;

	if (w->err || w->cap - w->len < need) {
		w->err = -ENOSPC;
		return NULL;
	}
	p = w->buf + w->len;
	memset(p, 0, need);
	w->len += need;
	return p;
}

static struct nlmsghdr *put_hdr(struct wbuf *w, uint16_t type, uint16_t flags,
				uint32_t seq, uint32_t portid)
{
	struct nlmsghdr *h = reserve(w, NLMSG_HDRLEN);

	if (h) {
		h->nlmsg_type = type;
		h->nlmsg_flags = flags;
		h->nlmsg_seq = seq;
		h->nlmsg_pid = portid;
	}
	return h;
}

static void put_attr(struct wbuf *w, uint16_t type, const void *data,
		     size_t len)
{
	struct nlattr *a = reserve(w, NLA_HDRLEN + len);

	if (!a)
		return;
	a->nla_type = type;
	a->nla_len = (uint16_t)(NLA_HDRLEN + len);
	memcpy((unsigned char *)a + NLA_HDRLEN, data, len);
}

static void put_u8(struct wbuf *w, uint16_t type, uint8_t v)
{
	put_attr(w, type, &v, sizeof(v));
}

static void put_u32(struct wbuf *w, uint16_t type, uint32_t v)
{
	put_attr(w, type, &v, sizeof(v));
}

/* Unaligned u64 payloads, as on x86 (no RDMA_NLDEV_ATTR_PAD): readers
 * copy them out (libnl's nla_get_u64). */
static void put_u64(struct wbuf *w, uint16_t type, uint64_t v)
{
	put_attr(w, type, &v, sizeof(v));
}

static void put_str(struct wbuf *w, uint16_t type, const char *s)
{
	put_attr(w, type, s, strlen(s) + 1); /* NLA_NUL_STRING */
}

/* Closes the message begun at @start: its length, or the error. */
static ssize_t end_msg(struct wbuf *w, size_t start)
{
	struct nlmsghdr *h = (struct nlmsghdr *)(w->buf + start);

	if (w->err)
		return w->err;
	h->nlmsg_len = (uint32_t)(w->len - start);
	return (ssize_t)(w->len - start);
}

uint64_t ovrdma_nl_encode_dev(unsigned int major, unsigned int minor)
{
	return (minor & 0xffu) | ((uint64_t)(major & 0xfffu) << 8) |
	       ((uint64_t)(minor & ~0xffu) << 12);
}

/* FNV-1a, 32 bits: a stable spread of names (not a security property). */
static uint32_t name_hash(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 16777619u;
	return h;
}

static int taken_by(uint32_t idx, const uint32_t *taken, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		if (taken[i] == idx)
			return 1;
	return 0;
}

void ovrdma_nl_assign(struct ovrdma_nl_devs *devs, const uint32_t *taken,
		      unsigned int ntaken)
{
	for (unsigned int i = 0; i < devs->n; i++) {
		uint32_t off =
			name_hash(devs->dev[i].name) % OVRDMA_NL_INDEX_SPAN;
		uint32_t idx;
		int clash;

		/* at most ntaken + i steps: each skips one index in use */
		do {
			idx = OVRDMA_NL_INDEX_BASE + off;
			clash = taken_by(idx, taken, ntaken);
			for (unsigned int j = 0; j < i && !clash; j++)
				clash = devs->dev[j].index == idx;
			off = (off + 1) % OVRDMA_NL_INDEX_SPAN;
		} while (clash);
		devs->dev[i].index = idx;
	}
}

const struct ovrdma_nl_dev *ovrdma_nl_find(const struct ovrdma_nl_devs *devs,
					   uint32_t index)
{
	for (unsigned int i = 0; i < devs->n; i++)
		if (devs->dev[i].index == index)
			return &devs->dev[i];
	return NULL;
}

ssize_t ovrdma_nl_put_dev(void *buf, size_t cap, const struct ovrdma_nl_dev *d,
			  uint32_t seq, uint32_t portid, uint16_t flags)
{
	struct wbuf w = { .buf = buf, .cap = cap };

	put_hdr(&w, TYPE_GET, flags, seq, portid);
	/* fill_dev_info()'s attributes, in its order */
	put_u32(&w, RDMA_NLDEV_ATTR_DEV_INDEX, d->index);
	put_str(&w, RDMA_NLDEV_ATTR_DEV_NAME, d->name);
	put_u32(&w, RDMA_NLDEV_ATTR_PORT_INDEX, 1); /* the number of ports */
	put_u64(&w, RDMA_NLDEV_ATTR_CAP_FLAGS, 0);
	if (d->fw_ver[0])
		put_str(&w, RDMA_NLDEV_ATTR_FW_VERSION, d->fw_ver);
	put_u64(&w, RDMA_NLDEV_ATTR_NODE_GUID, d->node_guid);
	put_u64(&w, RDMA_NLDEV_ATTR_SYS_IMAGE_GUID, d->sys_image_guid);
	put_u8(&w, RDMA_NLDEV_ATTR_DEV_NODE_TYPE, d->node_type);
	put_u8(&w, RDMA_NLDEV_ATTR_DEV_DIM, 0);
	/* verbs semantics of RoCE v2 (docs/PROVIDER.md, "Verbs") */
	put_str(&w, RDMA_NLDEV_ATTR_DEV_PROTOCOL, "roce");
	return end_msg(&w, 0);
}

ssize_t ovrdma_nl_put_chardev(void *buf, size_t cap,
			      const struct ovrdma_nl_dev *d, uint32_t seq,
			      uint32_t portid)
{
	struct wbuf w = { .buf = buf, .cap = cap };

	put_hdr(&w, TYPE_CHARDEV, 0, seq, portid);
	put_u64(&w, RDMA_NLDEV_ATTR_CHARDEV, d->cdev);
	/*
	 * The device's uverbs ABI: 0, what the sysfs route reads for an
	 * ovrdma device (no abi_version file) and the only one the provider
	 * matches (match_min/max_abi_version).
	 */
	put_u64(&w, RDMA_NLDEV_ATTR_CHARDEV_ABI, 0);
	put_str(&w, RDMA_NLDEV_ATTR_CHARDEV_NAME, d->uverbs);
	/* RDMA_DRIVER_UNKNOWN: libibverbs matches providers by name and
	 * match_device() instead (ovrdma_match_device) */
	put_u32(&w, RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID, 0);
	return end_msg(&w, 0);
}

ssize_t ovrdma_nl_put_cm_chardev(void *buf, size_t cap, uint32_t seq,
				 uint32_t portid)
{
	struct wbuf w = { .buf = buf, .cap = cap };

	put_hdr(&w, TYPE_CHARDEV, 0, seq, portid);
	put_u64(&w, RDMA_NLDEV_ATTR_CHARDEV,
		ovrdma_nl_encode_dev(OVRDMA_NL_CM_MAJOR, OVRDMA_NL_CM_MINOR));
	put_u64(&w, RDMA_NLDEV_ATTR_CHARDEV_ABI, OVRDMA_NL_CM_ABI);
	put_str(&w, RDMA_NLDEV_ATTR_CHARDEV_NAME, CHARDEV_CM);
	return end_msg(&w, 0);
}

ssize_t ovrdma_nl_put_error(void *buf, size_t cap, const void *req,
			    uint32_t portid, int error)
{
	const struct nlmsghdr *rh = req;
	struct wbuf w = { .buf = buf, .cap = cap };
	struct nlmsgerr *e;

	/* an ack carries the request's header only (netlink_ack()) */
	put_hdr(&w, NLMSG_ERROR, 0, rh->nlmsg_seq, portid);
	e = reserve(&w, sizeof(*e));
	if (e) {
		e->error = error;
		e->msg = *rh;
	}
	return end_msg(&w, 0);
}

/* The attributes of the message @h: @tb[type] = the attribute, or NULL
 * (the last of a type wins, as nla_parse). */
static void parse_attrs(const struct nlmsghdr *h, const struct nlattr **tb,
			unsigned int max)
{
	const unsigned char *p = NLMSG_DATA(h);
	size_t left = h->nlmsg_len - NLMSG_HDRLEN;

	memset(tb, 0, sizeof(*tb) * max);
	while (left >= NLA_HDRLEN) {
		const struct nlattr *a = (const struct nlattr *)p;
		size_t step = NLA_ALIGN(a->nla_len);
		unsigned int type = a->nla_type & NLA_TYPE_MASK;

		if (a->nla_len < NLA_HDRLEN || a->nla_len > left)
			return;
		if (type < max)
			tb[type] = a;
		if (step >= left)
			return;
		p += step;
		left -= step;
	}
}

static const void *attr_data(const struct nlattr *a)
{
	return (const unsigned char *)a + NLA_HDRLEN;
}

static int attr_u32(const struct nlattr *a, uint32_t *v)
{
	if (!a || a->nla_len < NLA_HDRLEN + sizeof(*v))
		return 0;
	memcpy(v, attr_data(a), sizeof(*v));
	return 1;
}

/* NLMSG_OK for an int count, without its signed / unsigned comparison */
static inline bool nl_ok(const struct nlmsghdr *h, int left)
{
	return left >= (int)sizeof(*h) && h->nlmsg_len >= sizeof(*h) &&
	       h->nlmsg_len <= (unsigned int)left;
}
/* Is the string attribute @a exactly @s? */
static int attr_is(const struct nlattr *a, const char *s)
{
	size_t n = strlen(s);

	return a && a->nla_len >= NLA_HDRLEN + n &&
	       memcmp(attr_data(a), s, n) == 0 &&
	       (a->nla_len == NLA_HDRLEN + n ||
		((const char *)attr_data(a))[n] == 0);
}

static void copy_str(char *dst, size_t cap, const struct nlattr *a)
{
	size_t n = a ? a->nla_len - NLA_HDRLEN : 0;

	if (n >= cap)
		n = cap - 1;
	if (n)
		memcpy(dst, attr_data(a), n);
	dst[n] = 0;
}

static int note(struct ovrdma_nl_sock *s, const struct nlmsghdr *h,
		uint8_t kind, uint32_t index)
{
	struct ovrdma_nl_req *r;

	if (s->nreq == OVRDMA_NL_PENDING_MAX)
		return -ENOSPC;
	r = &s->req[s->nreq++];
	r->seq = h->nlmsg_seq;
	r->flags = h->nlmsg_flags;
	r->kind = kind;
	r->index = index;
	return 1;
}

int ovrdma_nl_note_requests(struct ovrdma_nl_sock *s, const void *buf,
			    size_t len, const struct ovrdma_nl_devs *devs)
{
	const struct nlmsghdr *h = buf;
	unsigned int was = s->nreq;
	int left = (int)(len > INT32_MAX ? INT32_MAX : len);
	int noted = 0;

	for (; nl_ok(h, left); h = NLMSG_NEXT(h, left)) {
		const struct nlattr *tb[RDMA_NLDEV_ATTR_MAX];
		uint32_t idx;
		int rc = 0;

		if (h->nlmsg_type != TYPE_GET && h->nlmsg_type != TYPE_CHARDEV)
			continue;
		parse_attrs(h, tb, RDMA_NLDEV_ATTR_MAX);
		if (h->nlmsg_type == TYPE_GET && (h->nlmsg_flags & NLM_F_DUMP))
			rc = note(s, h, OVRDMA_NL_DUMP, 0);
		else if (h->nlmsg_type == TYPE_CHARDEV &&
			 !tb[RDMA_NLDEV_ATTR_DEV_INDEX] &&
			 attr_is(tb[RDMA_NLDEV_ATTR_CHARDEV_TYPE], CHARDEV_CM))
			/* librdmacm: the rdma_cm this process has is ours */
			rc = note(s, h, OVRDMA_NL_CMDEV, 0);
		else if (!attr_u32(tb[RDMA_NLDEV_ATTR_DEV_INDEX], &idx) ||
			 !ovrdma_nl_find(devs, idx))
			continue; /* the kernel's */
		else if (h->nlmsg_type == TYPE_GET)
			rc = note(s, h, OVRDMA_NL_DEV, idx);
		else if (attr_is(tb[RDMA_NLDEV_ATTR_CHARDEV_TYPE],
				 CHARDEV_UVERBS))
			rc = note(s, h, OVRDMA_NL_CHARDEV, idx);
		/* another client's char device (rdma_cm, umad) of an ovrdma
		 * index: the kernel's -EINVAL stands, ovrdma has none */
		if (rc < 0) {
			s->nreq = was;
			return rc;
		}
		noted += rc;
	}
	return noted;
}

static struct ovrdma_nl_req *find_req(struct ovrdma_nl_sock *s, uint32_t seq)
{
	for (unsigned int i = 0; i < s->nreq; i++)
		if (s->req[i].seq == seq)
			return &s->req[i];
	return NULL;
}

static void drop_req(struct ovrdma_nl_sock *s, struct ovrdma_nl_req *r)
{
	*r = s->req[--s->nreq];
}

/* A device message of the dump @seq: the kernel's device, remembered. */
static void note_kernel_dev(struct ovrdma_nl_sock *s, const struct nlmsghdr *h)
{
	const struct nlattr *tb[RDMA_NLDEV_ATTR_MAX];
	uint32_t idx;

	if (h->nlmsg_seq != s->dump_seq) {
		s->dump_seq = h->nlmsg_seq;
		s->nk = 0;
	}
	parse_attrs(h, tb, RDMA_NLDEV_ATTR_MAX);
	if (!attr_u32(tb[RDMA_NLDEV_ATTR_DEV_INDEX], &idx) ||
	    s->nk == OVRDMA_NL_KDEVS_MAX)
		return;
	s->kidx[s->nk] = idx;
	copy_str(s->kname[s->nk], sizeof(s->kname[0]),
		 tb[RDMA_NLDEV_ATTR_DEV_NAME]);
	s->nk++;
}

static int kernel_named(const struct ovrdma_nl_sock *s, const char *name)
{
	for (unsigned int i = 0; i < s->nk; i++)
		if (strcmp(s->kname[i], name) == 0)
			return 1;
	return 0;
}

/* Copies the message @h as it is, padded: its length in @out, or -ENOSPC. */
static ssize_t copy_msg(const struct nlmsghdr *h, unsigned char *out,
			size_t cap)
{
	size_t n = NLMSG_ALIGN(h->nlmsg_len);

	if (cap < n)
		return -ENOSPC;
	memcpy(out, h, h->nlmsg_len);
	memset(out + h->nlmsg_len, 0, n - h->nlmsg_len);
	return (ssize_t)n;
}

/* Ours, then the kernel's NLMSG_DONE @h, for the dump @r. */
static ssize_t put_dump_end(struct ovrdma_nl_sock *s, const struct nlmsghdr *h,
			    unsigned char *out, size_t cap,
			    struct ovrdma_nl_devs *devs)
{
	size_t len = 0;
	ssize_t n;

	if (s->dump_seq != h->nlmsg_seq) {
		/* a dump that showed no kernel device */
		s->dump_seq = h->nlmsg_seq;
		s->nk = 0;
	}
	ovrdma_nl_assign(devs, s->kidx, s->nk);
	for (unsigned int i = 0; i < devs->n; i++) {
		/* a kernel device of the same name wins: libibverbs would
		 * list two, and the files are the kernel's */
		if (kernel_named(s, devs->dev[i].name))
			continue;
		n = ovrdma_nl_put_dev(out + len, cap - len, &devs->dev[i],
				      h->nlmsg_seq, h->nlmsg_pid, NLM_F_MULTI);
		if (n < 0)
			return n;
		len += (size_t)n;
	}
	n = copy_msg(h, out + len, cap - len);
	return n < 0 ? n : (ssize_t)len + n;
}

/* The answer to the noted GET / GET_CHARDEV @r, for which the kernel
 * said @h (its error): ours, and an ack if asked for. */
static ssize_t put_answer(const struct ovrdma_nl_req *r,
			  const struct nlmsghdr *h, unsigned char *out,
			  size_t cap, const struct ovrdma_nl_devs *devs)
{
	const struct nlmsgerr *e = NLMSG_DATA(h);
	const struct ovrdma_nl_dev *d = ovrdma_nl_find(devs, r->index);
	ssize_t n, m;

	if (r->kind == OVRDMA_NL_CMDEV)
		n = ovrdma_nl_put_cm_chardev(out, cap, h->nlmsg_seq,
					     h->nlmsg_pid);
	else if (!d) /* gone from the tree since: the kernel's error stands */
		return 0;
	else if (r->kind == OVRDMA_NL_DEV)
		n = ovrdma_nl_put_dev(out, cap, d, h->nlmsg_seq, h->nlmsg_pid,
				      0);
	else
		n = ovrdma_nl_put_chardev(out, cap, d, h->nlmsg_seq,
					  h->nlmsg_pid);
	if (n < 0 || !(r->flags & NLM_F_ACK))
		return n;
	m = ovrdma_nl_put_error(out + n, cap - (size_t)n, &e->msg, h->nlmsg_pid,
				0);
	return m < 0 ? m : n + m;
}

/* The kernel's GET_CHARDEV "rdma_cm" reply @h, copied with ours in its
 * CHARDEV (the same size: the value changes in place). */
static ssize_t copy_cm_chardev(const struct nlmsghdr *h, unsigned char *out,
			       size_t cap)
{
	uint64_t v =
		ovrdma_nl_encode_dev(OVRDMA_NL_CM_MAJOR, OVRDMA_NL_CM_MINOR);
	const struct nlattr *tb[RDMA_NLDEV_ATTR_MAX], *a;
	ssize_t n = copy_msg(h, out, cap);

	if (n < 0)
		return n;
	parse_attrs((const struct nlmsghdr *)out, tb, RDMA_NLDEV_ATTR_MAX);
	a = tb[RDMA_NLDEV_ATTR_CHARDEV];
	if (a && a->nla_len == NLA_HDRLEN + sizeof(v))
		memcpy(out + ((const unsigned char *)a - out) + NLA_HDRLEN, &v,
		       sizeof(v));
	return n;
}

/* Is @h the kernel's answer to the GET / GET_CHARDEV @r (its reply or
 * its error), not another message with the same sequence number? */
static int answers(const struct ovrdma_nl_req *r, const struct nlmsghdr *h)
{
	uint16_t reply = r->kind == OVRDMA_NL_DEV ? TYPE_GET : TYPE_CHARDEV;

	return h->nlmsg_type == NLMSG_ERROR || h->nlmsg_type == reply;
}

static int is_error(const struct nlmsghdr *h)
{
	const struct nlmsgerr *e = NLMSG_DATA(h);

	return h->nlmsg_type == NLMSG_ERROR &&
	       h->nlmsg_len >= NLMSG_LENGTH(sizeof(*e)) && e->error != 0;
}

ssize_t ovrdma_nl_rewrite(struct ovrdma_nl_sock *s, const void *in, size_t len,
			  void *out, size_t cap, struct ovrdma_nl_devs *devs)
{
	const struct nlmsghdr *h = in;
	unsigned char *o = out;
	int left = (int)(len > INT32_MAX ? INT32_MAX : len);
	size_t olen = 0;

	for (; nl_ok(h, left); h = NLMSG_NEXT(h, left)) {
		struct ovrdma_nl_req *r = find_req(s, h->nlmsg_seq);
		ssize_t n = 0;

		if (r && r->kind == OVRDMA_NL_DUMP) {
			if (h->nlmsg_type == TYPE_GET) {
				note_kernel_dev(s, h);
			} else if (h->nlmsg_type == NLMSG_DONE) {
				n = put_dump_end(s, h, o + olen, cap - olen,
						 devs);
				drop_req(s, r);
			} else if (h->nlmsg_type == NLMSG_ERROR) {
				drop_req(s, r); /* the dump failed */
			}
		} else if (r && answers(r, h)) {
			/* the kernel's one answer: an error for an index of
			 * ours is replaced; anything else is its own, but
			 * for the number of its rdma_cm char device */
			if (is_error(h))
				n = put_answer(r, h, o + olen, cap - olen,
					       devs);
			else if (r->kind == OVRDMA_NL_CMDEV)
				n = copy_cm_chardev(h, o + olen, cap - olen);
			drop_req(s, r);
		}
		if (n == 0) /* the kernel's message, as it came */
			n = copy_msg(h, o + olen, cap - olen);
		if (n < 0)
			return n;
		olen += (size_t)n;
	}
	/* a truncated tail (MSG_TRUNC) goes on as it came */
	if (left > 0) {
		if (cap - olen < (size_t)left)
			return -ENOSPC;
		memcpy(o + olen, h, (size_t)left);
		olen += (size_t)left;
	}
	return (ssize_t)olen;
}

size_t ovrdma_nl_chunk(const void *buf, size_t len, size_t max)
{
	const struct nlmsghdr *h = buf;
	int left = (int)(len > INT32_MAX ? INT32_MAX : len);
	size_t used = 0;

	for (; nl_ok(h, left); h = NLMSG_NEXT(h, left)) {
		size_t n = NLMSG_ALIGN(h->nlmsg_len);

		if (n > len - used)
			n = len - used;
		if (used && used + n > max)
			return used;
		used += n;
	}
	/* a partial message (the kernel's truncated tail) goes alone */
	return used ? used : len;
}
