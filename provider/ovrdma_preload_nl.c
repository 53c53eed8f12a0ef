// SPDX-License-Identifier: MIT
/*
 * The interposer's NETLINK_RDMA sockets (docs/PROVIDER.md, "Discovery
 * beside the kernel's RDMA stack"): every request goes to the kernel as
 * the application wrote it; the answers to the device requests
 * ovrdma_nl.c notes come back with ovrdma's devices in them.
 *
 * A socket is tracked from socket(AF_NETLINK, *, NETLINK_RDMA) to its
 * close(). While nothing is tracked (every process most of the time),
 * the overrides of send, recv and close cost one atomic load, and they
 * take no lock for an fd that is not tracked. Reads:
 * while a noted request waits for its answer, a datagram is taken from
 * the kernel (at most the application's buffer: the kernel sizes its
 * dumps by what readers ask for), rewritten, and handed out in
 * datagrams of whole messages no longer than the application's buffer
 * (one, unless ours do not fit beside the kernel's); MSG_PEEK and
 * MSG_TRUNC keep their meaning. A datagram left over is not seen by
 * poll(): libibverbs, librdmacm and iproute2's rdma read blocking.
 *
 * Where the kernel has no RDMA netlink, socket() fails as it did and
 * libibverbs scans the sysfs tree instead: nothing here is involved.
 */
#include <errno.h>
#include <linux/netlink.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "ovrdma_preload.h"

/* sockets open at once; a program opens one at a time */
#define SOCKS_MAX 16
/* what is read of a kernel datagram at the least (a peek may ask for
 * less); the kernel's own dump datagrams hold about 3.7 KB */
#define READ_MIN 4096u

/* A rewritten datagram not yet read. */
struct dgram {
	struct dgram *next;
	struct sockaddr_nl from;
	size_t len;
	unsigned char data[];
};

/* One tracked socket. */
struct nlsock {
	int fd;
	ino_t ino; /* the socket's inode: the fd may be reused unseen */
	pthread_mutex_t lock; /* the rest */
	struct ovrdma_nl_sock nl;
	struct dgram *head, **tail;
};

static struct nlsock *socks[SOCKS_MAX]; /* under socks_lock */
static pthread_mutex_t socks_lock = PTHREAD_MUTEX_INITIALIZER;
/* The fast path's test, read without the lock (written under it): the
 * overrides lock nothing for another fd, so that close() or send() in a
 * signal handler cannot wait on a lock its own thread holds. */
static unsigned int nsocks;
static int fds[SOCKS_MAX] = { [0 ... SOCKS_MAX - 1] = -1 };

/* Kernel device indices of the last dump in this process: what our
 * indices avoid for requests on another socket. Under kidx_lock, taken
 * under a socket's lock (never with socks_lock). */
static uint32_t last_kidx[OVRDMA_NL_KDEVS_MAX];
static unsigned int last_nk;
static pthread_mutex_t kidx_lock = PTHREAD_MUTEX_INITIALIZER;

static void *next_socket, *next_close, *next_sendmsg, *next_sendto, *next_send,
	*next_recvmsg, *next_recvfrom, *next_recv;

void ovrdma_nl_resolve(void)
{
	NEXT(socket);
	NEXT(close);
	NEXT(sendmsg);
	NEXT(sendto);
	NEXT(send);
	NEXT(recvmsg);
	NEXT(recvfrom);
	NEXT(recv);
}

static ino_t inode_of(int fd)
{
	struct stat st;

	return fstat(fd, &st) ? 0 : st.st_ino;
}

static void free_queue(struct nlsock *s)
{
	while (s->head) {
		struct dgram *d = s->head;

		s->head = d->next;
		free(d);
	}
	s->tail = &s->head;
}

/* Must hold socks_lock (and not s->lock: a reader of the socket holds
 * it only while it is not blocked in the kernel). */
static void untrack_locked(unsigned int i)
{
	struct nlsock *s = socks[i];

	pthread_mutex_lock(&s->lock); /* a user of it finishes */
	pthread_mutex_unlock(&s->lock);
	socks[i] = NULL;
	__atomic_store_n(&fds[i], -1, __ATOMIC_RELEASE);
	__atomic_sub_fetch(&nsocks, 1, __ATOMIC_RELEASE);
	free_queue(s);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

static void track(int fd)
{
	struct nlsock *s = calloc(1, sizeof(*s));

	if (!s)
		return; /* the socket works, answered by the kernel alone */
	s->fd = fd;
	s->ino = inode_of(fd);
	s->tail = &s->head;
	pthread_mutex_init(&s->lock, NULL);
	pthread_mutex_lock(&socks_lock);
	for (unsigned int i = 0; i < SOCKS_MAX; i++)
		if (socks[i] && socks[i]->fd == fd) /* closed unseen */
			untrack_locked(i);
	for (unsigned int i = 0; i < SOCKS_MAX; i++)
		if (!socks[i]) {
			socks[i] = s;
			__atomic_store_n(&fds[i], fd, __ATOMIC_RELEASE);
			__atomic_add_fetch(&nsocks, 1, __ATOMIC_RELEASE);
			s = NULL;
			break;
		}
	pthread_mutex_unlock(&socks_lock);
	if (s) {
		pthread_mutex_destroy(&s->lock);
		free(s);
	}
}

/* Might @fd be tracked? No lock taken. */
static bool maybe_tracked(int fd)
{
	if (!__atomic_load_n(&nsocks, __ATOMIC_ACQUIRE))
		return false;
	for (unsigned int i = 0; i < SOCKS_MAX; i++)
		if (__atomic_load_n(&fds[i], __ATOMIC_ACQUIRE) == fd)
			return true;
	return false;
}

/* The tracked socket @fd, locked; NULL for any other fd. */
static struct nlsock *lookup(int fd)
{
	struct nlsock *s = NULL;

	if (!maybe_tracked(fd))
		return NULL;
	pthread_mutex_lock(&socks_lock);
	for (unsigned int i = 0; i < SOCKS_MAX; i++)
		if (socks[i] && socks[i]->fd == fd) {
			if (socks[i]->ino != inode_of(fd)) {
				untrack_locked(i); /* another file now */
				break;
			}
			s = socks[i];
			pthread_mutex_lock(&s->lock);
			break;
		}
	pthread_mutex_unlock(&socks_lock);
	return s;
}

/* The tree's devices, indexed as this socket's last dump left them (or
 * the process's last dump). */
static void current_devs(struct nlsock *s, struct ovrdma_nl_devs *devs)
{
	ovrdma_tree_devs(devs);
	if (s->nl.nk) {
		ovrdma_nl_assign(devs, s->nl.kidx, s->nl.nk);
		return;
	}
	pthread_mutex_lock(&kidx_lock);
	ovrdma_nl_assign(devs, last_kidx, last_nk);
	pthread_mutex_unlock(&kidx_lock);
}

__attribute__((visibility("default"))) int socket(int domain, int type,
						  int protocol)
{
	int fd = NEXT(socket)(domain, type, protocol);

	if (fd >= 0 && domain == AF_NETLINK && protocol == NETLINK_RDMA)
		track(fd);
	return fd;
}

__attribute__((visibility("default"))) int close(int fd)
{
	ovrdma_cm_close(fd); /* an rdma_cm channel's (one atomic load) */
	if (maybe_tracked(fd)) {
		pthread_mutex_lock(&socks_lock);
		for (unsigned int i = 0; i < SOCKS_MAX; i++)
			if (socks[i] && socks[i]->fd == fd)
				untrack_locked(i);
		pthread_mutex_unlock(&socks_lock);
	}
	return NEXT(close)(fd);
}

/* Notes the requests among @len bytes at @buf. Must hold s->lock. */
static void note(struct nlsock *s, const void *buf, size_t len)
{
	struct ovrdma_nl_devs devs;

	current_devs(s, &devs);
	/* no room: the answers go through as the kernel wrote them */
	ovrdma_nl_note_requests(&s->nl, buf, len, &devs);
}

/* The requests of @msg, gathered (a request fits one page or so; more
 * than 64 KB is not a device request and goes through unnoted). */
static void note_msg(struct nlsock *s, const struct msghdr *msg)
{
	size_t len = 0, off = 0;
	unsigned char *buf;

	for (size_t i = 0; i < msg->msg_iovlen; i++)
		len += msg->msg_iov[i].iov_len;
	if (!len || len > 65536 || !(buf = malloc(len)))
		return;
	for (size_t i = 0; i < msg->msg_iovlen; i++) {
		memcpy(buf + off, msg->msg_iov[i].iov_base,
		       msg->msg_iov[i].iov_len);
		off += msg->msg_iov[i].iov_len;
	}
	note(s, buf, len);
	free(buf);
}

__attribute__((visibility("default"))) ssize_t
sendmsg(int fd, const struct msghdr *msg, int flags)
{
	struct nlsock *s = lookup(fd);
	ssize_t n;

	if (!s)
		return NEXT(sendmsg)(fd, msg, flags);
	/* noted before it leaves: another thread may read the answer */
	note_msg(s, msg);
	pthread_mutex_unlock(&s->lock);
	n = NEXT(sendmsg)(fd, msg, flags);
	return n;
}

__attribute__((visibility("default"))) ssize_t sendto(int fd, const void *buf,
						      size_t len, int flags,
						      const struct sockaddr *to,
						      socklen_t tolen)
{
	struct nlsock *s = lookup(fd);

	if (s) {
		if (len <= 65536)
			note(s, buf, len);
		pthread_mutex_unlock(&s->lock);
	}
	return NEXT(sendto)(fd, buf, len, flags, to, tolen);
}

__attribute__((visibility("default"))) ssize_t send(int fd, const void *buf,
						    size_t len, int flags)
{
	struct nlsock *s = lookup(fd);

	if (s) {
		if (len <= 65536)
			note(s, buf, len);
		pthread_mutex_unlock(&s->lock);
	}
	return NEXT(send)(fd, buf, len, flags);
}

static size_t iov_len(const struct msghdr *msg)
{
	size_t len = 0;

	for (size_t i = 0; i < msg->msg_iovlen; i++)
		len += msg->msg_iov[i].iov_len;
	return len;
}

/* A datagram as the kernel sent it. */
struct kdgram {
	struct sockaddr_nl from;
	ssize_t len;
	unsigned char *data;
};

/*
 * Reads one datagram from the kernel, at most @want bytes (the
 * application's buffer; READ_MIN for a smaller peek). Not under s->lock:
 * the read may block, and the application may send on the socket from
 * another thread meanwhile. Returns its length, 0 at end of file, or -1
 * with errno (EAGAIN included: what the application sees).
 */
static ssize_t read_kernel(int fd, size_t want, int flags, struct kdgram *k)
{
	size_t cap = want > READ_MIN ? want : READ_MIN;
	struct iovec iov;
	struct msghdr m = {
		.msg_name = &k->from,
		.msg_namelen = sizeof(k->from),
		.msg_iov = &iov,
		.msg_iovlen = 1,
	};
	int e;

	memset(&k->from, 0, sizeof(k->from));
	k->data = malloc(cap);
	if (!k->data) {
		errno = ENOMEM;
		return -1;
	}
	iov.iov_base = k->data;
	iov.iov_len = cap;
	/* no MSG_TRUNC: what does not fit is what the application would
	 * have lost too */
	k->len = NEXT(recvmsg)(fd, &m, flags & ~(MSG_PEEK | MSG_TRUNC));
	if (k->len <= 0) {
		e = errno;
		free(k->data);
		k->data = NULL;
		errno = e;
	}
	return k->len;
}

static void queue(struct nlsock *s, const struct sockaddr_nl *from,
		  const unsigned char *buf, size_t len)
{
	struct dgram *d = malloc(sizeof(*d) + len);

	if (!d)
		return; /* lost, as the kernel drops what a reader has no
			 * room for */
	d->next = NULL;
	d->from = *from;
	d->len = len;
	memcpy(d->data, buf, len);
	*s->tail = d;
	s->tail = &d->next;
}

/*
 * Queues the rewrite of the kernel's datagram @k, cut into datagrams of
 * at most @want bytes (whole messages). Must hold s->lock.
 */
static void queue_rewrite(struct nlsock *s, const struct kdgram *k, size_t want)
{
	struct ovrdma_nl_devs devs;
	const unsigned char *out;
	unsigned char *buf;
	size_t cap, off = 0;
	ssize_t len;

	current_devs(s, &devs);
	cap = (size_t)k->len + (devs.n + 2) * OVRDMA_NL_DEV_MSG_MAX;
	buf = malloc(cap);
	len = buf ? ovrdma_nl_rewrite(&s->nl, k->data, (size_t)k->len, buf, cap,
				      &devs) :
		    -ENOMEM;
	out = buf;
	if (len < 0) { /* hand on the kernel's datagram as it came */
		out = k->data;
		len = k->len;
	}
	if (s->nl.nk) {
		pthread_mutex_lock(&kidx_lock);
		memcpy(last_kidx, s->nl.kidx, s->nl.nk * sizeof(last_kidx[0]));
		last_nk = s->nl.nk;
		pthread_mutex_unlock(&kidx_lock);
	}
	while (off < (size_t)len) {
		size_t n = ovrdma_nl_chunk(out + off, (size_t)len - off,
					   want ? want : 1);

		queue(s, &k->from, out + off, n);
		off += n;
	}
	free(buf);
}

/* A datagram into @msg as recvmsg(2) delivers it: the bytes that fit,
 * MSG_TRUNC, the sender. Returns the bytes copied. */
static size_t deliver(struct msghdr *msg, const struct sockaddr_nl *from,
		      const unsigned char *data, size_t len)
{
	size_t off = 0;

	msg->msg_flags = 0;
	for (size_t i = 0; i < msg->msg_iovlen && off < len; i++) {
		size_t n = msg->msg_iov[i].iov_len;

		if (n > len - off)
			n = len - off;
		memcpy(msg->msg_iov[i].iov_base, data + off, n);
		off += n;
	}
	if (off < len)
		msg->msg_flags |= MSG_TRUNC;
	if (msg->msg_name) {
		socklen_t n = msg->msg_namelen < sizeof(*from) ?
				      msg->msg_namelen :
				      sizeof(*from);

		memcpy(msg->msg_name, from, n);
		msg->msg_namelen = sizeof(*from);
	}
	msg->msg_controllen = 0; /* no credentials or pktinfo of ours */
	return off;
}

/* Hands the first queued datagram to @msg. Must hold s->lock; the queue
 * is not empty. */
static ssize_t serve(struct nlsock *s, struct msghdr *msg, int flags)
{
	struct dgram *d = s->head;
	size_t len = d->len;
	size_t off = deliver(msg, &d->from, d->data, len);

	if (!(flags & MSG_PEEK)) {
		s->head = d->next;
		if (!s->head)
			s->tail = &s->head;
		free(d);
	}
	return (flags & MSG_TRUNC) ? (ssize_t)len : (ssize_t)off;
}

__attribute__((visibility("default"))) ssize_t
recvmsg(int fd, struct msghdr *msg, int flags)
{
	struct nlsock *s = lookup(fd);
	struct kdgram k;
	ssize_t n;

	if (!s)
		return NEXT(recvmsg)(fd, msg, flags);
	while (!s->head) {
		size_t want = iov_len(msg);

		if (!ovrdma_nl_pending(&s->nl)) {
			pthread_mutex_unlock(&s->lock);
			return NEXT(recvmsg)(fd, msg, flags);
		}
		pthread_mutex_unlock(&s->lock);
		if (read_kernel(fd, want, flags, &k) <= 0)
			return k.len;
		s = lookup(fd);
		if (!s) { /* closed meanwhile: nothing to rewrite for */
			n = (ssize_t)deliver(msg, &k.from, k.data,
					     (size_t)k.len);
			free(k.data);
			return n;
		}
		/* a peek asks for a length, with any buffer: the datagrams
		 * are cut to what a read without peek would take */
		queue_rewrite(s, &k,
			      (flags & MSG_PEEK) && want < READ_MIN ? READ_MIN :
								      want);
		free(k.data);
	}
	n = serve(s, msg, flags);
	pthread_mutex_unlock(&s->lock);
	return n;
}

__attribute__((visibility("default"))) ssize_t recvfrom(int fd, void *buf,
							size_t len, int flags,
							struct sockaddr *from,
							socklen_t *fromlen)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct msghdr m = {
		.msg_name = from,
		.msg_namelen = fromlen ? *fromlen : 0,
		.msg_iov = &iov,
		.msg_iovlen = 1,
	};
	struct nlsock *s = lookup(fd);
	ssize_t n;

	if (!s)
		return NEXT(recvfrom)(fd, buf, len, flags, from, fromlen);
	pthread_mutex_unlock(&s->lock);
	if (!from)
		m.msg_namelen = 0;
	n = recvmsg(fd, &m, flags);
	if (n >= 0 && fromlen)
		*fromlen = m.msg_namelen;
	return n;
}

__attribute__((visibility("default"))) ssize_t recv(int fd, void *buf,
						    size_t len, int flags)
{
	struct nlsock *s = lookup(fd);

	if (!s)
		return NEXT(recv)(fd, buf, len, flags);
	pthread_mutex_unlock(&s->lock);
	return recvfrom(fd, buf, len, flags, NULL, NULL);
}
