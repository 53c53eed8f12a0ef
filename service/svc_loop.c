// SPDX-License-Identifier: MIT
/*
 * ovrdmad's start, stop and its one poll loop (docs/SERVICE.md section
 * 5): the loop runs the dataplane's rounds (svc_dp.c), looks at the
 * control sockets between them (svc_conn.c), answers snapshots for other
 * threads, and sleeps when idle. This is the only file that uses both
 * the dataplane and the control side.
 *
 * Idle: after spin_us without work the loop sets the service page's
 * `sleeping`, looks at every doorbell once more (see ring.h), arms the
 * port's receive interrupt and blocks in epoll on the control sockets,
 * the wake eventfd, the receive interrupt and a timerfd set to the
 * engine's next timer (or the heartbeat). A port without receive
 * interrupts naps at most NAP_MAX_NS instead.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "svc.h"

/* Without receive interrupts an idle loop naps, starting at NAP_MIN_NS
 * and doubling up to NAP_MAX_NS while nothing happens: a long-idle node
 * costs ~1000 wakeups/s, and the first frame after a long silence waits
 * at most NAP_MAX_NS (doorbells and control requests wake it at once). */
#define NAP_MIN_NS 20000ull
#define NAP_MAX_NS 1000000ull
#define CTL_EVERY_NS 200000ull /* busy: look at control sockets */
/* One round in SVC_CPU_SAMPLE is timed on the thread's CPU clock too
 * (busy_smp_*, poll_smp_*): a system call each end, about 0.5 us on a
 * 2-vCPU VM, so about 16 ns a round on average. */
#define SVC_CPU_SAMPLE 64u

static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- setup --------------------------------------------------------------- */

static int ep_add(struct svc *s, int fd, uint64_t tag)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = tag };

	return epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev);
}

/* the service page: clients map it read-only */
static int page_init(struct svc *s)
{
	s->svc_fd = memfd_create("ovrdma-svc", MFD_CLOEXEC);
	if (s->svc_fd < 0 || ftruncate(s->svc_fd, 4096))
		return -errno;
	s->page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED,
		       s->svc_fd, 0);
	if (s->page == MAP_FAILED)
		return -errno;
	s->page->abi = OVR_RING_ABI_VERSION;
	if (getentropy(&s->page->incarnation, sizeof(s->page->incarnation)))
		s->page->incarnation = svc_now();
	atomic_store(&s->page->heartbeat_ns, svc_now());
	atomic_store_explicit((_Atomic uint32_t *)&s->page->magic,
			      OVR_RING_SVC_MAGIC, memory_order_release);
	return 0;
}

static int events_init(struct svc *s)
{
	const struct svc_port_ops *ops = s->port_ops;

	s->epfd = epoll_create1(EPOLL_CLOEXEC);
	s->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	s->timer_fd =
		timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (s->epfd < 0 || s->wake_fd < 0 || s->timer_fd < 0)
		return -errno;
	if (ep_add(s, s->wake_fd, SVC_EV_WAKE) ||
	    ep_add(s, s->timer_fd, SVC_EV_TIMER))
		return -errno;
	if (ops->rx_intr_fd && ops->rx_intr_fd(s->port) >= 0 &&
	    ep_add(s, ops->rx_intr_fd(s->port), SVC_EV_RX))
		return -errno;
	return 0;
}

/* A vIP of the configuration: a local one gets a device. */
static int conf_vip(struct svc *s, const struct svc_conf_vip *v)
{
	struct ovr_vpc_binding b = { .host = v->local ? s->conf.host : v->host,
				     .dev = OVR_VPC_DEV_NONE };
	int rc;

	memcpy(b.mac, v->local ? s->mac : v->mac, 6);
	if (v->local) {
		b.dev = svc_dev_add(s, v->vni, v->vip, v->name);
		if (b.dev < 0) {
			fprintf(stderr, "ovrdmad: device for vip: %s\n",
				strerror(-b.dev));
			return b.dev;
		}
	}
	rc = ovr_vpc_vip_add(s->vpc, v->vni, v->vip, &b);
	if (rc) {
		fprintf(stderr, "ovrdmad: vip %u in tenant %u: %s\n", v->vip,
			v->vni, strerror(-rc));
		return rc;
	}
	return 0;
}

/* tenants and bindings from the configuration */
static int conf_apply(struct svc *s)
{
	for (uint32_t i = 0; i < s->conf.ntenants; i++) {
		int rc = ovr_vpc_tenant_add(s->vpc, s->conf.tenants[i]);

		if (rc)
			return rc;
	}
	for (uint32_t i = 0; i < s->conf.nvips; i++) {
		int rc = conf_vip(s, &s->conf.vips[i]);

		if (rc)
			return rc;
	}
	for (uint32_t t = 0; t < s->conf.ntenants; t++) {
		struct ovr_vpc_sg_rule r[SVC_MAX_TENANT_VIPS];
		unsigned int n = 0;

		for (uint32_t i = 0; i < s->conf.nsgs; i++)
			if (s->conf.sgs[i].vni == s->conf.tenants[t])
				r[n++] = (struct ovr_vpc_sg_rule){
					.prefix = s->conf.sgs[i].prefix,
					.len = (uint8_t)s->conf.sgs[i].len
				};
		if (n && ovr_vpc_sg_set(s->vpc, s->conf.tenants[t], r, n))
			return -EINVAL;
	}
	return 0;
}

int svc_init(struct svc *s, const struct svc_port_ops *ops, void *port,
	     const uint8_t mac[6])
{
	int rc;

	s->port_ops = ops;
	s->port = port;
	memcpy(s->mac, mac, 6);
	s->listen_fd = s->epfd = s->wake_fd = s->timer_fd = s->svc_fd = -1;
	s->ndev_fd = -1;
	s->next_pd = 1;
	s->next_ctx_id = 1;
	s->cm_next_at = UINT64_MAX;
	s->cm_next_id = 1;
	s->cm_next_port = 40000;

	rc = svc_dp_init(s);
	if (!rc)
		rc = page_init(s);
	if (!rc)
		rc = events_init(s);
	if (!rc)
		rc = conf_apply(s);
	if (!rc)
		rc = svc_ctl_listen(s);
	if (rc)
		return rc;
	/* after listen: a published device names a socket that answers;
	 * a tree that cannot be written is logged, not fatal */
	svc_sysfs_init(s);
	return 0;
}

void svc_fini(struct svc *s)
{
	svc_sysfs_fini(s);
	svc_ctl_close_all(s);
	svc_mcast_fini(s);
	svc_dp_fini(s);
	if (s->page && s->page != MAP_FAILED)
		munmap(s->page, 4096);
	int fds[] = { s->listen_fd, s->epfd, s->wake_fd, s->timer_fd,
		      s->svc_fd };

	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
		if (fds[i] >= 0)
			close(fds[i]);
	if (s->conf.socket[0])
		unlink(s->conf.socket);
}

/* ---- the loop ------------------------------------------------------------ */

static void handle_events(struct svc *s, struct epoll_event *ev, int n)
{
	for (int i = 0; i < n; i++) {
		uint64_t tag = ev[i].data.u64, junk;

		switch (tag) {
		case SVC_EV_LISTEN:
			svc_ctl_accept(s);
			break;
		case SVC_EV_NDEV:
			svc_sysfs_ndev_event(s);
			break;
		case SVC_EV_WAKE:
		case SVC_EV_TIMER:
		case SVC_EV_RX:
			if (tag == SVC_EV_RX && s->port_ops->rx_intr_ack)
				s->port_ops->rx_intr_ack(s->port);
			else if (read(tag == SVC_EV_WAKE ?
					      s->wake_fd :
				      tag == SVC_EV_TIMER ?
					      s->timer_fd :
					      s->port_ops->rx_intr_fd(s->port),
				      &junk, sizeof(junk)) < 0 &&
				 errno != EAGAIN)
				perror("ovrdmad: read");
			break;
		default:
			if (tag & SVC_EV_CMOUT) {
				uintptr_t c = (uintptr_t)(tag & ~SVC_EV_CMOUT);

				svc_cm_flush(s, (struct svc_ctx *)c);
				break;
			}
			if (tag & SVC_EV_PIDFD) {
				svc_ctx_exited(
					s,
					(struct svc_ctx
						 *)(uintptr_t)(tag &
							       ~SVC_EV_PIDFD));
				break;
			}
			svc_ctl_input(s, (struct svc_ctx *)(uintptr_t)tag);
			/* @ctx may be gone: stop using this batch */
			return;
		}
	}
}

static void poll_control(struct svc *s)
{
	struct epoll_event ev[16];
	int n = epoll_wait(s->epfd, ev, 16, 0);

	if (n > 0)
		handle_events(s, ev, n);
}

static void heartbeat(struct svc *s, uint64_t now)
{
	if (now - s->last_heartbeat >= OVR_RING_HEARTBEAT_NS / 4) {
		s->last_heartbeat = now;
		if (s->port_ops->tick)
			s->port_ops->tick(s->port, now);
		atomic_store_explicit(&s->page->heartbeat_ns, now,
				      memory_order_relaxed);
	}
}

/*
 * Wait for an event of the loop's epoll set until @until (CLOCK_MONOTONIC
 * ns; @now is the time). One system call: epoll_pwait2's own timeout
 * (Linux 5.11), late by at most the loop thread's timer slack (1 us,
 * svc_run; the default 50 us would stretch a 20 us nap); where the kernel
 * lacks it (ENOSYS, remembered), the timerfd armed to @until and an
 * epoll_wait without a timeout, two calls and a timer of its own.
 * Returns epoll's count (or -1).
 */
static int nap_wait(struct svc *s, struct epoll_event *ev, uint64_t now,
		    uint64_t until)
{
	static bool no_pwait2;
	struct itimerspec its = { 0 };

	if (!no_pwait2) {
		struct timespec ts = {
			.tv_sec = (time_t)((until - now) / 1000000000ull),
			.tv_nsec = (long)((until - now) % 1000000000ull),
		};
		int n = epoll_pwait2(s->epfd, ev, 16, &ts, NULL);

		if (n >= 0 || errno != ENOSYS)
			return n;
		no_pwait2 = true;
	}
	its.it_value.tv_sec = (time_t)(until / 1000000000ull);
	its.it_value.tv_nsec = (long)(until % 1000000000ull);
	timerfd_settime(s->timer_fd, TFD_TIMER_ABSTIME, &its, NULL);
	return epoll_wait(s->epfd, ev, 16, -1);
}

static void svc_sleep(struct svc *s, uint64_t next)
{
	struct epoll_event ev[16];
	uint64_t now, until;
	int rxfd = s->port_ops->rx_intr_fd ? s->port_ops->rx_intr_fd(s->port) :
					     -1;
	int n;

	atomic_store(&s->page->sleeping, 1);
	atomic_thread_fence(memory_order_seq_cst);
	if (svc_dp_pending(s)) {
		atomic_store(&s->page->sleeping, 0);
		return;
	}
	now = svc_now();
	until = now + OVR_RING_HEARTBEAT_NS / 4;
	if (rxfd < 0) {
		if (!s->nap_ns)
			s->nap_ns = NAP_MIN_NS;
		if (until > now + s->nap_ns)
			until = now + s->nap_ns;
		s->nap_ns = s->nap_ns * 2 > NAP_MAX_NS ? NAP_MAX_NS :
							 s->nap_ns * 2;
	}
	if (next < until)
		until = next;
	if (until <= now) {
		atomic_store(&s->page->sleeping, 0);
		return;
	}
	if (rxfd >= 0)
		s->port_ops->rx_intr(s->port, true);
	s->cnt.sleeps++;
	ovr_vpc_thread_offline();
	n = nap_wait(s, ev, now, until);
	ovr_vpc_thread_online();
	if (rxfd >= 0)
		s->port_ops->rx_intr(s->port, false);
	atomic_store(&s->page->sleeping, 0);
	s->cnt.wakeups++;
	if (n > 0)
		handle_events(s, ev, n);
}

/* ---- snapshots for other threads ---------------------------------------- */

struct svc_snap_req {
	uint32_t qpn;
	struct svc_qp_snap *out;
	unsigned int max, n;
	_Atomic int done;
};

/* Dataplane side: answer a pending request. */
static void snap_serve(struct svc *s)
{
	struct svc_snap_req *r = atomic_exchange(&s->snap_req, NULL);

	if (!r)
		return;
	r->n = 0;
	for (struct svc_ctx *c = s->ctxs; c; c = c->next)
		for (uint32_t i = 0; i < c->nobj && r->n < r->max; i++) {
			struct svc_qp *qp = c->obj[i].p;
			struct svc_qp_snap *o = &r->out[r->n];
			struct ovr_eng_qp_attr qa;

			if (c->obj[i].type != SVC_OBJ_QP ||
			    (r->qpn && qp->qpn != r->qpn) ||
			    ovr_eng_qp_stats(s->eng, qp->qpn, &o->st) ||
			    ovr_eng_qp_query(s->eng, qp->qpn, &qa))
				continue;
			o->ctx = c->id;
			o->qpn = qp->qpn;
			o->dest_qpn = qa.dest_qp_num;
			o->peer_vip = qp->connected ? qp->flow.dst_vip : 0;
			r->n++;
		}
	atomic_store_explicit(&r->done, 1, memory_order_release);
}

int svc_qp_snapshot(struct svc *s, uint32_t qpn, struct svc_qp_snap *out,
		    unsigned int max, unsigned int timeout_ms)
{
	struct svc_snap_req r = { .qpn = qpn, .out = out, .max = max };
	struct svc_snap_req *none = NULL;
	uint64_t one = 1;

	if (!atomic_compare_exchange_strong(&s->snap_req, &none, &r))
		return -EBUSY;
	if (write(s->wake_fd, &one, sizeof(one)) < 0) {
		/* a full counter: the service is awake anyway */
	}
	for (unsigned int t = 0; t < timeout_ms * 10; t++) {
		if (atomic_load_explicit(&r.done, memory_order_acquire))
			return (int)r.n;
		usleep(100);
	}
	/* withdraw it, unless the dataplane has taken it: then wait */
	none = &r;
	if (atomic_compare_exchange_strong(&s->snap_req, &none, NULL))
		return -ETIMEDOUT;
	while (!atomic_load_explicit(&r.done, memory_order_acquire))
		usleep(100);
	return (int)r.n;
}

int svc_run(struct svc *s)
{
	uint64_t now = svc_now(), idle_since = now, last_ctl = now;
	uint64_t spin = (uint64_t)s->conf.spin_us * 1000ull;
	uint64_t cpu0 = 0; /* the sampled round's start on the CPU clock */

	s->dev_wait_ns = SVC_DEV_WAIT_MIN_NS;
	/* naps end when asked (nap_wait), not up to 50 us later */
	prctl(PR_SET_TIMERSLACK, 1000ul);
	while (!s->stop) {
		uint64_t next, prev = now;
		bool work, copying;

		now = svc_now();
		/* the round before, up to now: busy if it did work, polling
		 * if it did not and did not sleep (busy_ns, poll_ns) */
		if (s->last_round == SVC_ROUND_BUSY) {
			s->cnt.busy_rounds++;
			s->cnt.busy_ns += now - prev;
		} else if (s->last_round == SVC_ROUND_POLL) {
			s->cnt.poll_ns += now - prev;
		}
		if (cpu0) {
			uint64_t cpu = thread_cpu_ns() - cpu0;

			if (s->last_round == SVC_ROUND_BUSY) {
				s->cnt.busy_smp_ns += now - prev;
				s->cnt.busy_smp_cpu_ns += cpu;
			} else if (s->last_round == SVC_ROUND_POLL) {
				s->cnt.poll_smp_ns += now - prev;
				s->cnt.poll_smp_cpu_ns += cpu;
			}
			cpu0 = 0;
		}
		if (++s->round_seq % SVC_CPU_SAMPLE == 0)
			cpu0 = thread_cpu_ns();
		work = svc_dp_round(s, now, &next);
		s->last_round = work ? SVC_ROUND_BUSY : SVC_ROUND_POLL;
		if (s->cm_next_at <= now || s->cm_next_at < next) {
			uint64_t t = svc_cm_poll(s, now);

			if (t < next)
				next = t;
		}
		copying = s->dev_closed != s->dev_done;
		heartbeat(s, now);
		ovr_vpc_quiescent();
		if (now - last_ctl >= CTL_EVERY_NS) {
			last_ctl = now;
			poll_control(s);
			snap_serve(s);
		}
		if (work || next <= now) {
			idle_since = now;
			s->nap_ns = NAP_MIN_NS;
		} else if (now - idle_since >= spin) {
			if (copying) {
				s->cnt.dev_naps++;
				s->dev_wait_ns =
					s->dev_wait_ns * 2 >
							SVC_DEV_WAIT_MAX_NS ?
						SVC_DEV_WAIT_MAX_NS :
						s->dev_wait_ns * 2;
			}
			svc_sleep(s, next);
			s->last_round = SVC_ROUND_SLEPT;
			idle_since = last_ctl = svc_now();
		}
	}
	atomic_store(&s->page->stopping, 1);
	return 0;
}
