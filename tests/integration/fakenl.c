// SPDX-License-Identifier: MIT
/*
 * libfakenl.so: a stand-in for a kernel with RDMA devices, for the
 * discovery test (tests/integration/discovery.sh, docs/PROVIDER.md,
 * "Discovery beside the kernel's RDMA stack"). Preloaded after the
 * interposer, it is what the interposer finds below itself:
 *
 *   - socket(AF_NETLINK, *, NETLINK_RDMA) answers as ib_core does
 *     (drivers/infiniband/core/nldev.c): the GET dump lists the devices
 *     of $FAKENL_DEVICES ("name:index,..."; default "rxe_fake:3"; empty:
 *     none, a kernel with ib_core and no hardware), GET and GET_CHARDEV
 *     of an unknown index fail -EINVAL, GET_CHARDEV "uverbs" names
 *     uverbs_fake<index> with RDMA_DRIVER_RXE (so rdma-core's rxe
 *     provider claims it), "rdma_cm" without an index names rdma_cm,
 *     SYS_GET says copy-on-fork; any other dump is empty, any other
 *     command -EOPNOTSUPP. The socket is one end of a SEQPACKET
 *     socketpair: the answers are written to the other end when the
 *     request is sent, so poll() and blocking reads behave.
 *   - the kernel's sysfs and device nodes of those devices:
 *     /sys/class/infiniband[_verbs][/...] and /dev/infiniband/uverbs_fake*
 *     are opened (and stat'ed, listed) under $FAKENL_ROOT.
 *   - $FAKENL_LOG, when set, gets one line per request received.
 *
 * Written for the test from the kernel's uapi headers, on purpose
 * without the interposer's message code (provider/ovrdma_nl.c): the two
 * check each other, and libibverbs checks both.
 */
#undef _FILE_OFFSET_BITS
#undef _FORTIFY_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <pthread.h>
#include <rdma/ib_user_ioctl_verbs.h>
#include <rdma/rdma_netlink.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))
#define MAX_DEVS 8
#define MAX_SOCKS 16

struct kdev {
	char name[64];
	uint32_t index;
};

struct fsock {
	int fd, peer;
	uint32_t portid;
};

static struct kdev devs[MAX_DEVS];
static unsigned int ndevs;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static struct fsock socks[MAX_SOCKS];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void *next(const char *name)
{
	return dlsym(RTLD_NEXT, name);
}

#define REAL(fn) ((__typeof__(&fn))next(#fn))

static void load_devs(void)
{
	const char *env = getenv("FAKENL_DEVICES");
	char list[512], *save = NULL;

	snprintf(list, sizeof(list), "%s", env ? env : "rxe_fake:3");
	for (char *t = strtok_r(list, ",", &save); t && ndevs < MAX_DEVS;
	     t = strtok_r(NULL, ",", &save)) {
		char *colon = strchr(t, ':');

		if (!colon)
			continue;
		*colon = 0;
		snprintf(devs[ndevs].name, sizeof(devs[0].name), "%s", t);
		devs[ndevs].index = (uint32_t)strtoul(colon + 1, NULL, 10);
		ndevs++;
	}
}

static const struct kdev *dev_by_index(uint32_t index)
{
	for (unsigned int i = 0; i < ndevs; i++)
		if (devs[i].index == index)
			return &devs[i];
	return NULL;
}

static struct fsock *sock_of(int fd)
{
	for (unsigned int i = 0; i < MAX_SOCKS; i++)
		if (socks[i].peer > 0 && socks[i].fd == fd)
			return &socks[i];
	return NULL;
}

/* ---- messages, as the kernel writes them ---- */

struct msg {
	unsigned char buf[4096];
	size_t len;
};

static struct nlmsghdr *begin(struct msg *m, uint16_t type, uint16_t flags,
			      uint32_t seq, uint32_t portid)
{
	struct nlmsghdr *h = (struct nlmsghdr *)(m->buf + m->len);

	memset(h, 0, NLMSG_HDRLEN);
	h->nlmsg_type = type;
	h->nlmsg_flags = flags;
	h->nlmsg_seq = seq;
	h->nlmsg_pid = portid;
	m->len += NLMSG_HDRLEN;
	return h;
}

static void attr(struct msg *m, uint16_t type, const void *data, size_t len)
{
	struct nlattr *a = (struct nlattr *)(m->buf + m->len);

	a->nla_type = type;
	a->nla_len = (uint16_t)(NLA_HDRLEN + len);
	memcpy(a + 1, data, len);
	memset((unsigned char *)(a + 1) + len, 0,
	       NLA_ALIGN(a->nla_len) - a->nla_len);
	m->len += NLA_ALIGN(a->nla_len);
}

static void attr_u8(struct msg *m, uint16_t type, uint8_t v)
{
	attr(m, type, &v, 1);
}

static void attr_u32(struct msg *m, uint16_t type, uint32_t v)
{
	attr(m, type, &v, 4);
}

static void attr_u64(struct msg *m, uint16_t type, uint64_t v)
{
	attr(m, type, &v, 8);
}

static void attr_str(struct msg *m, uint16_t type, const char *s)
{
	attr(m, type, s, strlen(s) + 1);
}

static void end(struct msg *m, struct nlmsghdr *h)
{
	h->nlmsg_len = (uint32_t)(m->buf + m->len - (unsigned char *)h);
}

static void put_dev(struct msg *m, const struct kdev *d, uint32_t seq,
		    uint32_t portid, uint16_t flags)
{
	struct nlmsghdr *h =
		begin(m, RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET),
		      flags, seq, portid);

	attr_u32(m, RDMA_NLDEV_ATTR_DEV_INDEX, d->index);
	attr_str(m, RDMA_NLDEV_ATTR_DEV_NAME, d->name);
	attr_u32(m, RDMA_NLDEV_ATTR_PORT_INDEX, 1);
	attr_u64(m, RDMA_NLDEV_ATTR_CAP_FLAGS, 0);
	attr_str(m, RDMA_NLDEV_ATTR_FW_VERSION, "1.0.0");
	attr_u64(m, RDMA_NLDEV_ATTR_NODE_GUID,
		 0x0011223344550000ull | d->index);
	attr_u64(m, RDMA_NLDEV_ATTR_SYS_IMAGE_GUID,
		 0x0011223344550000ull | d->index);
	attr_u8(m, RDMA_NLDEV_ATTR_DEV_NODE_TYPE, 1);
	attr_u8(m, RDMA_NLDEV_ATTR_DEV_DIM, 0);
	attr_str(m, RDMA_NLDEV_ATTR_DEV_PROTOCOL, "roce");
	end(m, h);
}

static void put_error(struct msg *m, const struct nlmsghdr *req,
		      uint32_t portid, int error)
{
	struct nlmsghdr *h = begin(m, NLMSG_ERROR, 0, req->nlmsg_seq, portid);
	struct nlmsgerr *e = (struct nlmsgerr *)(m->buf + m->len);
	/* the whole request echoed on an error, its header on an ack */
	size_t echo = error ? req->nlmsg_len : NLMSG_HDRLEN;

	e->error = error;
	memcpy(&e->msg, req, echo);
	m->len += NLMSG_ALIGN(sizeof(e->error) + echo);
	end(m, h);
}

static void put_done(struct msg *m, uint32_t seq, uint32_t portid)
{
	struct nlmsghdr *h = begin(m, NLMSG_DONE, NLM_F_MULTI, seq, portid);
	int zero = 0;

	memcpy(m->buf + m->len, &zero, sizeof(zero));
	m->len += NLMSG_ALIGN(sizeof(zero));
	end(m, h);
}

static const struct nlattr *find_attr(const struct nlmsghdr *h, uint16_t type)
{
	const unsigned char *p = NLMSG_DATA(h);
	int left = (int)(h->nlmsg_len - NLMSG_HDRLEN);

	while (left >= NLA_HDRLEN) {
		const struct nlattr *a = (const struct nlattr *)p;

		if (a->nla_len < NLA_HDRLEN || a->nla_len > left)
			return NULL;
		if ((a->nla_type & NLA_TYPE_MASK) == type)
			return a;
		left -= NLA_ALIGN(a->nla_len);
		p += NLA_ALIGN(a->nla_len);
	}
	return NULL;
}

static void log_req(const struct nlmsghdr *h, const struct nlattr *idx,
		    const struct nlattr *type)
{
	const char *path = getenv("FAKENL_LOG");
	FILE *f;

	if (!path || !(f = REAL(fopen)(path, "a")))
		return;
	fprintf(f, "req op=%u flags=0x%x seq=%u", RDMA_NL_GET_OP(h->nlmsg_type),
		h->nlmsg_flags, h->nlmsg_seq);
	if (idx)
		fprintf(f, " index=%u", *(const uint32_t *)(idx + 1));
	if (type)
		fprintf(f, " chardev=%s", (const char *)(type + 1));
	fprintf(f, "\n");
	fclose(f);
}

/* The kernel's answer to the request @h, appended to @m. */
static void answer(struct msg *m, const struct nlmsghdr *h, uint32_t portid)
{
	const struct nlattr *idx = find_attr(h, RDMA_NLDEV_ATTR_DEV_INDEX);
	const struct nlattr *type = find_attr(h, RDMA_NLDEV_ATTR_CHARDEV_TYPE);
	unsigned int op = RDMA_NL_GET_OP(h->nlmsg_type);
	const struct kdev *d =
		idx ? dev_by_index(*(const uint32_t *)(idx + 1)) : NULL;
	struct nlmsghdr *r;
	char name[64];

	log_req(h, idx, type);
	if (RDMA_NL_GET_CLIENT(h->nlmsg_type) != RDMA_NL_NLDEV) {
		put_error(m, h, portid, -EOPNOTSUPP);
		return;
	}
	if (h->nlmsg_flags & NLM_F_DUMP) {
		if (op == RDMA_NLDEV_CMD_GET)
			for (unsigned int i = 0; i < ndevs; i++)
				put_dev(m, &devs[i], h->nlmsg_seq, portid,
					NLM_F_MULTI);
		put_done(m, h->nlmsg_seq, portid);
		return;
	}
	switch (op) {
	case RDMA_NLDEV_CMD_GET:
		if (!d) {
			put_error(m, h, portid, -EINVAL);
			return;
		}
		put_dev(m, d, h->nlmsg_seq, portid, 0);
		break;
	case RDMA_NLDEV_CMD_GET_CHARDEV:
		if (!type || (idx && !d)) {
			put_error(m, h, portid, -EINVAL);
			return;
		}
		r = begin(m, h->nlmsg_type, 0, h->nlmsg_seq, portid);
		if (d && !strcmp((const char *)(type + 1), "uverbs")) {
			snprintf(name, sizeof(name), "uverbs_fake%u", d->index);
			/* dev_t 0: libibverbs skips the rdev check and
			 * does not wait for udev (util/open_cdev.c) */
			attr_u64(m, RDMA_NLDEV_ATTR_CHARDEV, 0);
			/* the driver's uverbs ABI: rxe's is 2 */
			attr_u64(m, RDMA_NLDEV_ATTR_CHARDEV_ABI, 2);
			attr_str(m, RDMA_NLDEV_ATTR_CHARDEV_NAME, name);
			attr_u32(m, RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID,
				 RDMA_DRIVER_RXE);
		} else if (!d && !strcmp((const char *)(type + 1), "rdma_cm")) {
			/* a dynamic misc minor, as the kernel's ucma has
			 * (not ovrdma's 10:58: the interposer must answer
			 * with its own) */
			attr_u64(m, RDMA_NLDEV_ATTR_CHARDEV, (10u << 8) | 123u);
			attr_u64(m, RDMA_NLDEV_ATTR_CHARDEV_ABI, 4);
			attr_str(m, RDMA_NLDEV_ATTR_CHARDEV_NAME, "rdma_cm");
		} else {
			m->len = (size_t)((unsigned char *)r - m->buf);
			put_error(m, h, portid, -EOPNOTSUPP);
			return;
		}
		end(m, r);
		break;
	case RDMA_NLDEV_CMD_SYS_GET:
		r = begin(m, h->nlmsg_type, 0, h->nlmsg_seq, portid);
		attr_u8(m, RDMA_NLDEV_SYS_ATTR_NETNS_MODE, 1);
		attr_u8(m, RDMA_NLDEV_SYS_ATTR_COPY_ON_FORK, 1);
		end(m, r);
		break;
	default:
		put_error(m, h, portid, -EOPNOTSUPP);
		return;
	}
	if (h->nlmsg_flags & NLM_F_ACK)
		put_error(m, h, portid, 0);
}

/* The "kernel" receives @len bytes of requests on @s. */
static void receive(struct fsock *s, const void *buf, size_t len)
{
	const struct nlmsghdr *h = buf;
	int left = (int)len;

	for (; (left >= (int)sizeof(*h) && h->nlmsg_len >= sizeof(*h) &&
		h->nlmsg_len <= (unsigned int)left);
	     h = NLMSG_NEXT(h, left)) {
		struct msg m = { .len = 0 };

		answer(&m, h, s->portid);
		if (REAL(write)(s->peer, m.buf, m.len) < 0)
			perror("fakenl: write");
	}
}

/* ---- the socket ---- */

EXPORT int socket(int domain, int type, int protocol)
{
	int sv[2];

	if (domain != AF_NETLINK || protocol != NETLINK_RDMA)
		return REAL(socket)(domain, type, protocol);
	pthread_once(&once, load_devs);
	if (REAL(socketpair)(AF_UNIX, SOCK_SEQPACKET | (type & SOCK_CLOEXEC), 0,
			     sv))
		return -1;
	pthread_mutex_lock(&lock);
	for (unsigned int i = 0; i < MAX_SOCKS; i++)
		if (socks[i].peer <= 0) {
			socks[i] =
				(struct fsock){ .fd = sv[0],
						.peer = sv[1],
						.portid = (uint32_t)getpid() +
							  i };
			pthread_mutex_unlock(&lock);
			return sv[0];
		}
	pthread_mutex_unlock(&lock);
	REAL(close)(sv[0]);
	REAL(close)(sv[1]);
	errno = ENOBUFS;
	return -1;
}

EXPORT int bind(int fd, const struct sockaddr *addr, socklen_t len)
{
	struct fsock *s = sock_of(fd);

	if (!s)
		return REAL(bind)(fd, addr, len);
	return 0; /* the port id is the socket's */
}

EXPORT int getsockname(int fd, struct sockaddr *addr, socklen_t *len)
{
	struct fsock *s = sock_of(fd);
	struct sockaddr_nl nl = { .nl_family = AF_NETLINK };

	if (!s)
		return REAL(getsockname)(fd, addr, len);
	nl.nl_pid = s->portid;
	memcpy(addr, &nl, *len < sizeof(nl) ? *len : sizeof(nl));
	*len = sizeof(nl);
	return 0;
}

EXPORT int setsockopt(int fd, int level, int name, const void *val,
		      socklen_t len)
{
	if (sock_of(fd) && level == SOL_NETLINK)
		return 0;
	return REAL(setsockopt)(fd, level, name, val, len);
}

EXPORT ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
	struct fsock *s = sock_of(fd);
	unsigned char buf[16384];
	size_t len = 0;

	if (!s)
		return REAL(sendmsg)(fd, msg, flags);
	for (size_t i = 0; i < msg->msg_iovlen; i++) {
		if (len + msg->msg_iov[i].iov_len > sizeof(buf)) {
			errno = EMSGSIZE;
			return -1;
		}
		memcpy(buf + len, msg->msg_iov[i].iov_base,
		       msg->msg_iov[i].iov_len);
		len += msg->msg_iov[i].iov_len;
	}
	receive(s, buf, len);
	return (ssize_t)len;
}

EXPORT ssize_t sendto(int fd, const void *buf, size_t len, int flags,
		      const struct sockaddr *to, socklen_t tolen)
{
	struct fsock *s = sock_of(fd);

	if (!s)
		return REAL(sendto)(fd, buf, len, flags, to, tolen);
	receive(s, buf, len);
	return (ssize_t)len;
}

EXPORT ssize_t send(int fd, const void *buf, size_t len, int flags)
{
	struct fsock *s = sock_of(fd);

	if (!s)
		return REAL(send)(fd, buf, len, flags);
	receive(s, buf, len);
	return (ssize_t)len;
}

EXPORT ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
	struct fsock *s = sock_of(fd);
	struct sockaddr_nl *from = msg->msg_name;
	socklen_t namelen = msg->msg_namelen;
	ssize_t n;

	if (!s)
		return REAL(recvmsg)(fd, msg, flags);
	msg->msg_name = NULL;
	msg->msg_namelen = 0;
	n = REAL(recvmsg)(fd, msg, flags);
	msg->msg_name = from;
	if (from && namelen >= sizeof(*from)) {
		memset(from, 0, sizeof(*from));
		from->nl_family = AF_NETLINK; /* nl_pid 0: the kernel */
	}
	msg->msg_namelen = sizeof(*from);
	return n;
}

EXPORT ssize_t recvfrom(int fd, void *buf, size_t len, int flags,
			struct sockaddr *from, socklen_t *fromlen)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct msghdr m = { .msg_name = from,
			    .msg_namelen = fromlen ? *fromlen : 0,
			    .msg_iov = &iov,
			    .msg_iovlen = 1 };
	ssize_t n;

	if (!sock_of(fd))
		return REAL(recvfrom)(fd, buf, len, flags, from, fromlen);
	n = recvmsg(fd, &m, flags);
	if (fromlen)
		*fromlen = m.msg_namelen;
	return n;
}

EXPORT ssize_t recv(int fd, void *buf, size_t len, int flags)
{
	if (!sock_of(fd))
		return REAL(recv)(fd, buf, len, flags);
	return recvfrom(fd, buf, len, flags, NULL, NULL);
}

EXPORT int close(int fd)
{
	pthread_mutex_lock(&lock);
	for (unsigned int i = 0; i < MAX_SOCKS; i++)
		if (socks[i].peer > 0 && socks[i].fd == fd) {
			REAL(close)(socks[i].peer);
			socks[i].peer = 0;
		}
	pthread_mutex_unlock(&lock);
	return REAL(close)(fd);
}

/* ---- the kernel's files ---- */

/* @path under $FAKENL_ROOT when it is one of the fake kernel's. */
static const char *fake_path(const char *path, char *buf, size_t cap)
{
	const char *root = getenv("FAKENL_ROOT");

	if (!root || !path)
		return path;
	if (!strncmp(path, "/sys/class/infiniband", 21) &&
	    (path[21] == 0 || path[21] == '/' || path[21] == '_')) {
		snprintf(buf, cap, "%s%s", root, path + 4);
		return buf;
	}
	if (!strncmp(path, "/dev/infiniband/uverbs_fake", 27)) {
		snprintf(buf, cap, "%s%s", root, path);
		return buf;
	}
	return path;
}

#define MODE(flags, mode)                                                    \
	do {                                                                 \
		if (((flags)&O_CREAT) || ((flags)&O_TMPFILE) == O_TMPFILE) { \
			va_list ap;                                          \
			va_start(ap, flags);                                 \
			mode = va_arg(ap, mode_t);                           \
			va_end(ap);                                          \
		}                                                            \
	} while (0)

EXPORT int open(const char *path, int flags, ...)
{
	char buf[4096];
	mode_t mode = 0;

	MODE(flags, mode);
	return REAL(open)(fake_path(path, buf, sizeof(buf)), flags, mode);
}

EXPORT int open64(const char *path, int flags, ...)
{
	char buf[4096];
	mode_t mode = 0;

	MODE(flags, mode);
	return REAL(open64)(fake_path(path, buf, sizeof(buf)), flags, mode);
}

EXPORT int openat(int dirfd, const char *path, int flags, ...)
{
	char buf[4096];
	mode_t mode = 0;

	MODE(flags, mode);
	return REAL(openat)(dirfd, fake_path(path, buf, sizeof(buf)), flags,
			    mode);
}

EXPORT int openat64(int dirfd, const char *path, int flags, ...)
{
	char buf[4096];
	mode_t mode = 0;

	MODE(flags, mode);
	return REAL(openat64)(dirfd, fake_path(path, buf, sizeof(buf)), flags,
			      mode);
}

EXPORT FILE *fopen(const char *path, const char *mode)
{
	char buf[4096];

	return REAL(fopen)(fake_path(path, buf, sizeof(buf)), mode);
}

EXPORT FILE *fopen64(const char *path, const char *mode)
{
	char buf[4096];

	return REAL(fopen64)(fake_path(path, buf, sizeof(buf)), mode);
}

EXPORT int stat(const char *path, struct stat *st)
{
	char buf[4096];

	return REAL(stat)(fake_path(path, buf, sizeof(buf)), st);
}

EXPORT int stat64(const char *path, struct stat64 *st)
{
	char buf[4096];

	return REAL(stat64)(fake_path(path, buf, sizeof(buf)), st);
}

EXPORT int lstat(const char *path, struct stat *st)
{
	char buf[4096];

	return REAL(lstat)(fake_path(path, buf, sizeof(buf)), st);
}

/* ls(1) and other coreutils */
EXPORT int statx(int dirfd, const char *path, int flags, unsigned int mask,
		 struct statx *st)
{
	char buf[4096];

	return REAL(statx)(dirfd, fake_path(path, buf, sizeof(buf)), flags,
			   mask, st);
}

EXPORT int access(const char *path, int how)
{
	char buf[4096];

	return REAL(access)(fake_path(path, buf, sizeof(buf)), how);
}

EXPORT DIR *opendir(const char *path)
{
	char buf[4096];

	return REAL(opendir)(fake_path(path, buf, sizeof(buf)));
}
