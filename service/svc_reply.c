// SPDX-License-Identifier: MIT
/*
 * Answering control requests (docs/SERVICE.md section 2): one reply per
 * request, file descriptors as SCM_RIGHTS, and the per-context limits
 * that a refused request reports once to the operator.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "svc.h"

int svc_take_fd(struct svc_req *r, int i)
{
	int fd = r->fds[i];

	r->fds[i] = -1;
	return fd;
}

int svc_reply(struct svc_ctx *c, const struct ovr_ctl_hdr *req, int status,
	      const void *body, size_t blen, const int *fds, int nfds)
{
	struct ovr_ctl_hdr h = {
		.op = req->op,
		.version = OVR_CTL_VERSION,
		.len = (uint32_t)(sizeof(h) + (status ? 0 : blen)),
		.seq = req->seq,
		.status = status,
	};
	struct iovec iov[2] = { { &h, sizeof(h) },
				{ (void *)body, status ? 0 : blen } };
	union {
		char buf[CMSG_SPACE(sizeof(int) * 4)];
		struct cmsghdr align;
	} u;
	struct msghdr m = { .msg_iov = iov, .msg_iovlen = 2 };

	if (!status && nfds > 0) {
		struct cmsghdr *cm;

		memset(&u, 0, sizeof(u));
		m.msg_control = u.buf;
		m.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
		cm = CMSG_FIRSTHDR(&m);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * (size_t)nfds);
	}
	/* a client that does not read its replies loses its context */
	return sendmsg(c->fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT) < 0 ? -errno : 0;
}

int svc_status(struct svc_ctx *c, const struct ovr_ctl_hdr *req, int rc)
{
	return svc_reply(c, req, rc, NULL, 0, NULL, 0);
}

int svc_limit(struct svc_ctx *c, const struct ovr_ctl_hdr *h,
	      enum svc_limit which, uint64_t value, int err)
{
	static const char *const names[] = {
		[SVC_LIM_PD] = "pd_per_context",
		[SVC_LIM_MR] = "mr_per_context",
		[SVC_LIM_PINNED] = "pinned_mb_per_context",
		[SVC_LIM_CQ] = "cq_per_context",
		[SVC_LIM_QP] = "qp_per_context",
		[SVC_LIM_QP_NODE] = "qps (of the node)",
		[SVC_LIM_SRQ] = "srq_per_context",
		[SVC_LIM_AH] = "ah_per_context",
		[SVC_LIM_CQ_MB] = "cq_mb_per_context",
	};

	if (!(c->limits_logged & (1u << which))) {
		c->limits_logged |= 1u << which;
		fprintf(stderr,
			"ovrdmad: context %u (pid %d, %s): limit %s = %llu "
			"reached, request refused (%s)\n",
			c->id, (int)c->pid, c->client[0] ? c->client : "-",
			names[which], (unsigned long long)value,
			strerror(-err));
	}
	return svc_status(c, h, err);
}
