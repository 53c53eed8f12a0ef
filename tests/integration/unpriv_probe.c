// SPDX-License-Identifier: MIT
/*
 * unpriv_probe: what an unprivileged application must not reach through
 * ovrdmad (docs/SERVICE.md section 4, docs/OPERATIONS.md "Who may use
 * the devices"), run as an ordinary user against one ovrdmad:
 *
 *   unpriv_probe exec SOCK DEV HELPER
 *       A context registers private memory (the process route) and
 *       connects a QP to a second context of the same user; its process
 *       then keeps the control socket open across execve() of HELPER, a
 *       set-user-ID-root copy of this program, which maps a secret at
 *       the registered addresses ("unpriv_probe secret ..."). The second
 *       context's RDMA READ and WRITE of the region must fail: the
 *       registration named the memory of the program that registered
 *       it, not of whatever its pid runs later. SKIP (exit 77) when
 *       HELPER does not run as root (a nosuid file system).
 *   unpriv_probe rights SOCK DEV
 *       REG_MR requests an application can forge on its own socket:
 *       the process route with another file than a /proc/PID/mem open
 *       read-write (none: EINVAL; a file of its own, /proc/self/status:
 *       EINVAL; /proc/self/mem read-only: EACCES), another user's
 *       process (its /proc/PID/mem: the kernel refuses the open, so
 *       there is nothing to pass), a root-owned file it may only read
 *       (/bin/sh) registered for device writes (EACCES; for reads it is
 *       what the user may read anyway: accepted); then a good
 *       registration on the same context.
 *
 * Prints "unpriv_probe: MODE: PASS|FAIL|SKIP: why"; exit 0, 1 or 77.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <ovrdma/client.h>
#include <ovrdma/ctl.h>
#include <ovrdma/ring.h>
#include <ovrdma/util.h>

#define LEN (64u << 10)
/* where the victim registers and the helper maps its secret: fixed, so
 * that both images have the same addresses there */
#define FIX ((void *)0x7e5500000000ull)
#define PAT_OWN 'A' /* the registering program's bytes */
#define PAT_SECRET 'S' /* the set-user-ID program's */
#define PAT_PEER 'W' /* what the peer WRITEs */
#define WAIT_S 10.0

struct side {
	struct ovr_cl *cl;
	struct ovr_ctl_dev dev;
	uint32_t pd;
	struct ovr_cl_cq *cq;
	struct ovr_cl_qp *qp;
	struct ovr_cl_mr *mr;
	uint8_t *buf;
};

struct info {
	uint32_t qpn, vip, rkey;
};

static const char *mode = "?";
static int nfail;

static void result(const char *verdict, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void result(const char *verdict, const char *fmt, ...)
{
	va_list ap;

	printf("unpriv_probe: %s: %s: ", mode, verdict);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

static void die(const char *what, int err)
{
	result("FAIL", "%s: %s", what, strerror(err < 0 ? -err : err));
	exit(1);
}

static void xread(int fd, void *p, size_t n)
{
	if (read(fd, p, n) != (ssize_t)n)
		die("pipe read", errno ? errno : EPIPE);
}

static void xwrite(int fd, const void *p, size_t n)
{
	if (write(fd, p, n) != (ssize_t)n)
		die("pipe write", errno);
}

static void setup(struct side *s, const char *sock, const char *dev,
		  uint8_t *buf)
{
	struct ovr_ctl_qp_cap cap = { .max_send_wr = 8,
				      .max_recv_wr = 8,
				      .max_send_sge = 1,
				      .max_recv_sge = 1 };
	int rc;

	s->cl = ovr_cl_connect(sock, "unpriv_probe");
	if (!s->cl)
		die(sock, errno);
	rc = ovr_cl_open(s->cl, dev, &s->dev);
	if (rc)
		die("open", rc);
	rc = ovr_cl_alloc_pd(s->cl, &s->pd);
	if (rc)
		die("alloc_pd", rc);
	s->cq = ovr_cl_create_cq(s->cl, 16, OVR_CTL_NO_CHANNEL, 0);
	if (!s->cq)
		die("create_cq", errno);
	s->qp = ovr_cl_create_qp(s->cl, s->pd, s->cq, s->cq, &cap, false, 0);
	if (!s->qp)
		die("create_qp", errno);
	s->buf = buf;
	s->mr = ovr_cl_reg_mr(s->cl, s->pd, buf, LEN, OVR_ACCESS_ALL);
	if (!s->mr)
		die("reg_mr", errno);
}

static void connect_to(struct side *s, const struct info *peer)
{
	const char *what = NULL;
	int rc = ovr_cl_connect_rc(s->cl, s->qp, &s->dev, peer->qpn, peer->vip,
				   OVR_ACCESS_REMOTE, &what);

	if (rc)
		die(what ? what : "connect", rc);
}

/* One RDMA READ or WRITE of LEN bytes at the peer's FIX; its status, or
 * -1 when none came within WAIT_S. */
static int rdma(struct side *s, uint32_t opcode, uint32_t rkey)
{
	struct ovr_cl_sge sg = { (uint64_t)(uintptr_t)s->buf, LEN,
				 s->mr->lkey };
	struct ovr_cl_send_wr wr = { .opcode = opcode,
				     .send_flags = OVR_SEND_SIGNALED,
				     .sg_list = &sg,
				     .num_sge = 1,
				     .rkey = rkey,
				     .remote_addr = (uint64_t)(uintptr_t)FIX };
	struct ovr_cl_wc wc;
	uint64_t t0 = ovr_mono_ns();
	int rc = ovr_cl_post_send(s->qp, &wr);

	if (rc)
		die("post_send", rc);
	while ((ovr_mono_ns() - t0) * 1e-9 < WAIT_S) {
		rc = ovr_cl_poll_cq(s->cq, 1, &wc);
		if (rc < 0)
			die("poll_cq", rc);
		if (rc == 1)
			return (int)wc.status;
		usleep(100);
	}
	return -1;
}

static const char *status_str(int st)
{
	switch (st) {
	case -1:
		return "no completion";
	case OVR_WC_SUCCESS:
		return "success";
	case OVR_WC_WR_FLUSH_ERR:
		return "flushed";
	case OVR_WC_REM_ACCESS_ERR:
		return "remote access error";
	case OVR_WC_REM_OP_ERR:
		return "remote operation error";
	case OVR_WC_REM_ABORT_ERR:
		return "remote abort";
	case OVR_WC_RETRY_EXC_ERR:
		return "retry exceeded";
	default:
		return "another error";
	}
}

static bool all(const uint8_t *p, size_t n, uint8_t v)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != v)
			return false;
	return true;
}

/* ---- exec ------------------------------------------------------------------ */

/* the set-user-ID helper: FIX holds a secret until the parent says */
static int run_secret(int ready, int cmd)
{
	uint8_t *p, v = geteuid() == 0 ? 'R' : 'N';
	char c;

	p = mmap(FIX, LEN, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (p != FIX)
		v = 'M';
	else
		memset(p, PAT_SECRET, LEN);
	xwrite(ready, &v, 1);
	if (read(cmd, &c, 1) != 1)
		return 1;
	v = p == FIX && all(p, LEN, PAT_SECRET) ? 'K' : 'X';
	xwrite(ready, &v, 1);
	return 0;
}

static void victim(const char *sock, const char *dev, const char *helper,
		   int to_p, int from_p, int ready, int cmd)
{
	struct side s = { 0 };
	struct info me, peer;
	uint8_t *p;
	char go, a1[16], a2[16];

	p = mmap(FIX, LEN, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (p != FIX)
		die("mmap at the fixed address", errno);
	memset(p, PAT_OWN, LEN);
	setup(&s, sock, dev, p);
	me = (struct info){ ovr_cl_qp_num(s.qp), s.dev.vip, s.mr->rkey };
	xwrite(to_p, &me, sizeof(me));
	xread(from_p, &peer, sizeof(peer));
	connect_to(&s, &peer);
	xwrite(to_p, "c", 1);
	xread(from_p, &go, 1);
	/* what a hostile application would do: the control socket (and
	 * with it the context, its QP and its registration) survives the
	 * exec */
	for (int fd = 3; fd < 1024; fd++)
		fcntl(fd, F_SETFD, 0);
	snprintf(a1, sizeof(a1), "%d", ready);
	snprintf(a2, sizeof(a2), "%d", cmd);
	execl(helper, helper, "secret", a1, a2, (char *)NULL);
	die(helper, errno);
}

static int run_exec(const char *sock, const char *dev, const char *helper)
{
	int c2p[2], p2c[2], rdy[2], cmd[2], st, rd, rc = 0;
	struct side s = { 0 };
	struct info me, peer;
	uint8_t *buf;
	pid_t pid;
	char c;

	if (pipe(c2p) || pipe(p2c) || pipe(rdy) || pipe(cmd))
		die("pipe", errno);
	pid = fork();
	if (pid < 0)
		die("fork", errno);
	if (pid == 0) {
		close(c2p[0]);
		close(p2c[1]);
		close(rdy[0]);
		close(cmd[1]);
		victim(sock, dev, helper, c2p[1], p2c[0], rdy[1], cmd[0]);
	}
	close(c2p[1]);
	close(p2c[0]);
	close(rdy[1]);
	close(cmd[0]);
	buf = aligned_alloc(4096, LEN);
	if (!buf)
		die("aligned_alloc", ENOMEM);
	setup(&s, sock, dev, buf);
	xread(c2p[0], &peer, sizeof(peer));
	me = (struct info){ ovr_cl_qp_num(s.qp), s.dev.vip, s.mr->rkey };
	xwrite(p2c[1], &me, sizeof(me));
	connect_to(&s, &peer);
	xread(c2p[0], &c, 1);

	/* the registration works while its program runs */
	memset(buf, 0, LEN);
	st = rdma(&s, OVR_WR_RDMA_READ, peer.rkey);
	if (st != OVR_WC_SUCCESS || !all(buf, LEN, PAT_OWN)) {
		result("FAIL", "READ before the exec: %s, %s", status_str(st),
		       all(buf, LEN, PAT_OWN) ? "bytes right" : "bytes wrong");
		rc = 1;
		goto out;
	}

	xwrite(p2c[1], "g", 1);
	xread(rdy[0], &c, 1);
	if (c != 'R') {
		result("SKIP", "%s did not run as root (%s)", helper,
		       c == 'N' ? "set-user-ID ignored: a nosuid file system?" :
				  "its mapping failed");
		rc = 77;
		goto out;
	}
	memset(buf, 0, LEN);
	st = rdma(&s, OVR_WR_RDMA_READ, peer.rkey);
	if (st == OVR_WC_SUCCESS && !all(buf, LEN, 0)) {
		result("FAIL",
		       "RDMA READ after the exec returned the "
		       "set-user-ID program's memory (%s)",
		       all(buf, LEN, PAT_SECRET) ? "its secret" : "bytes");
		rc = 1;
	} else if (st < 0) {
		result("FAIL",
		       "RDMA READ after the exec: no completion in "
		       "%.0f s",
		       WAIT_S);
		rc = 1;
	}
	rd = st;
	memset(buf, PAT_PEER, LEN);
	st = rdma(&s, OVR_WR_RDMA_WRITE, peer.rkey);
	xwrite(cmd[1], "q", 1);
	xread(rdy[0], &c, 1);
	if (c != 'K') {
		result("FAIL",
		       "RDMA WRITE after the exec (%s) changed "
		       "the set-user-ID program's memory",
		       status_str(st));
		rc = 1;
	}
	if (!rc)
		result("PASS",
		       "after the registering program exec'd a set-user-ID "
		       "root program: READ %s, WRITE %s; its memory neither "
		       "read nor written",
		       status_str(rd), status_str(st));
out:
	close(p2c[1]);
	close(cmd[1]);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	ovr_cl_close(s.cl);
	return rc;
}

/* ---- rights ------------------------------------------------------------- */

/* One request on the raw socket @fd, @nfds descriptors with it: the
 * reply's status (descriptors it carries are closed). */
static int raw(int fd, uint16_t op, const void *body, size_t len,
	       const int *fds, int nfds)
{
	static uint32_t seq;
	struct ovr_ctl_hdr h = { .op = op,
				 .version = OVR_CTL_VERSION,
				 .len = (uint32_t)(sizeof(h) + len),
				 .seq = ++seq };
	struct iovec iov[2] = { { &h, sizeof(h) }, { (void *)body, len } };
	union {
		char b[CMSG_SPACE(sizeof(int) * 4)];
		struct cmsghdr align;
	} cb;
	struct msghdr m = { .msg_iov = iov, .msg_iovlen = 2 };
	static char buf[OVR_CTL_MSG_MAX];
	ssize_t n;

	memset(&cb, 0, sizeof(cb));
	if (nfds) {
		struct cmsghdr *cm = (struct cmsghdr *)(void *)cb.b;

		m.msg_control = cb.b;
		m.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * (size_t)nfds);
	}
	if (sendmsg(fd, &m, MSG_NOSIGNAL) < 0)
		die("sendmsg", errno);
	iov[0] = (struct iovec){ buf, sizeof(buf) };
	m = (struct msghdr){ .msg_iov = iov,
			     .msg_iovlen = 1,
			     .msg_control = cb.b,
			     .msg_controllen = sizeof(cb.b) };
	n = recvmsg(fd, &m, MSG_CMSG_CLOEXEC);
	if (n < (ssize_t)sizeof(h))
		die("recvmsg", n < 0 ? errno : EPROTO);
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&m); cm;
	     cm = CMSG_NXTHDR(&m, cm))
		for (size_t i = 0;
		     cm->cmsg_type == SCM_RIGHTS &&
		     i < (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		     i++) {
			int got;

			memcpy(&got, CMSG_DATA(cm) + i * sizeof(int),
			       sizeof(int));
			close(got);
		}
	memcpy(&h, buf, sizeof(h));
	return h.status;
}

/* REG_MR @what expecting @want (0 or -errno) */
static void expect(int sk, const char *what, const struct ovr_ctl_reg_mr_req *q,
		   int fd, int want)
{
	size_t len = offsetof(struct ovr_ctl_reg_mr_req, seg) +
		     q->nseg * sizeof(q->seg[0]);
	int st = raw(sk, OVR_CTL_REG_MR, q, len, &fd, fd >= 0 ? 1 : 0);

	printf("unpriv_probe: rights: %s: %s (want %s)\n", what,
	       st ? strerror(-st) : "accepted",
	       want ? strerror(-want) : "accepted");
	if (st != want)
		nfail++;
}

static int run_rights(const char *sock, const char *dev)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	struct ovr_ctl_hello_req hq = { .ring_abi = OVR_RING_ABI_VERSION };
	struct ovr_ctl_open_req oq = { 0 };
	struct ovr_ctl_reg_mr_req q = { 0 };
	char tmp[] = "/tmp/unpriv_probe.XXXXXX";
	uint8_t *buf = aligned_alloc(4096, 4096);
	int sk, pfd[2], fd, st;

	sk = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", sock);
	if (sk < 0 || connect(sk, (struct sockaddr *)&a, sizeof(a)))
		die(sock, errno);
	snprintf(hq.client, sizeof(hq.client), "unpriv_probe");
	snprintf(oq.name, sizeof(oq.name), "%s", dev);
	if (!buf || pipe2(pfd, O_CLOEXEC))
		die("setup", ENOMEM);
	if ((st = raw(sk, OVR_CTL_HELLO, &hq, sizeof(hq), NULL, 0)) ||
	    (st = raw(sk, OVR_CTL_OPEN, &oq, sizeof(oq), &pfd[1], 1)) ||
	    (st = raw(sk, OVR_CTL_ALLOC_PD, NULL, 0, NULL, 0)))
		die("HELLO / OPEN / ALLOC_PD", st);
	memset(buf, 1, 4096);

	/* the process route names the address space by a file */
	q = (struct ovr_ctl_reg_mr_req){ .pd = 1,
					 .access = OVR_ACCESS_ALL,
					 .va = (uintptr_t)buf,
					 .len = 4096,
					 .span = (uintptr_t)buf,
					 .flags = OVR_CTL_MR_PROC };
	expect(sk, "process route without a file", &q, -1, -EINVAL);
	fd = mkstemp(tmp);
	if (fd < 0 || ftruncate(fd, 1 << 20))
		die("mkstemp", errno);
	unlink(tmp);
	expect(sk, "process route with a file of its own", &q, fd, -EINVAL);
	close(fd);
	fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	expect(sk, "process route with /proc/self/status", &q, fd, -EINVAL);
	close(fd);
	fd = open("/proc/self/oom_score_adj", O_RDWR | O_CLOEXEC);
	expect(sk, "process route with /proc/self/oom_score_adj", &q, fd,
	       -EINVAL);
	close(fd);
	fd = open("/proc/self/mem", O_RDONLY | O_CLOEXEC);
	expect(sk, "process route with /proc/self/mem read-only", &q, fd,
	       -EACCES);
	close(fd);
	/* another user's process: root's init */
	errno = 0;
	fd = open("/proc/1/mem", O_RDWR | O_CLOEXEC);
	printf("unpriv_probe: rights: opening /proc/1/mem (root's): %s\n",
	       fd < 0 ? strerror(errno) : "opened");
	if (fd >= 0) {
		nfail++;
		close(fd);
	}

	/* the object route: what the user may open, as opened */
	fd = open("/bin/sh", O_RDONLY | O_CLOEXEC);
	q = (struct ovr_ctl_reg_mr_req){ .pd = 1,
					 .access = OVR_ACCESS_ALL,
					 .va = 0x10000000,
					 .len = 4096,
					 .span = 0x10000000,
					 .nseg = 1,
					 .seg = { { 0, 4096 } } };
	expect(sk,
	       "object route, root's /bin/sh (read-only) for device "
	       "writes",
	       &q, fd, -EACCES);
	q.access = OVR_ACCESS_REMOTE_READ;
	expect(sk, "object route, root's /bin/sh for reads", &q, fd, 0);
	close(fd);

	/* and the context still serves a good registration */
	q = (struct ovr_ctl_reg_mr_req){ .pd = 1,
					 .access = OVR_ACCESS_ALL,
					 .va = (uintptr_t)buf,
					 .len = 4096,
					 .span = (uintptr_t)buf,
					 .flags = OVR_CTL_MR_PROC };
	fd = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
	expect(sk, "process route with its own /proc/self/mem", &q, fd, 0);
	close(fd);
	close(sk);
	if (nfail)
		result("FAIL", "%d of the requests above answered otherwise",
		       nfail);
	else
		result("PASS", "every forged request refused with its error, "
			       "the good one accepted");
	return nfail ? 1 : 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 4 && !strcmp(argv[1], "secret"))
		return run_secret(atoi(argv[2]), atoi(argv[3]));
	if (argc < 2)
		goto usage;
	mode = argv[1];
	if (!strcmp(mode, "exec") && argc == 5)
		return run_exec(argv[2], argv[3], argv[4]);
	if (!strcmp(mode, "rights") && argc == 4)
		return run_rights(argv[2], argv[3]);
usage:
	fprintf(stderr, "usage: unpriv_probe exec SOCK DEV HELPER\n"
			"       unpriv_probe rights SOCK DEV\n");
	return 2;
}
