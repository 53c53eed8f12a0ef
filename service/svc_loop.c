// SPDX-License-Identifier: MIT
/*
 * ovrdmad's start, stop and its two threads (docs/SERVICE.md section 5).
 * The dataplane thread (the one that called svc_init) runs the rounds
 * (svc_dp.c) and sleeps when idle; the control thread blocks in epoll on
 * the control sockets (svc_conn.c), the contexts' pidfds, the CM
 * channels and rtnetlink, and handles what arrives with the world
 * stopped: the dataplane parked between two rounds, or asleep. So the
 * two never run at once, everything they share is as single-threaded
 * as it was when one thread did both, and the dataplane's only cost is
 * a relaxed load per round. This is the only file that uses both the
 * dataplane and the control side.
 *
 * Idle: after spin_us without work the dataplane sets the service
 * page's `sleeping`, looks at every doorbell once more (see ring.h),
 * arms the port's receive interrupt and blocks in epoll on the wake
 * eventfd, the receive interrupt and the engine's next timer (or the
 * heartbeat). A port without receive interrupts naps at most NAP_MAX_NS
 * instead. The control thread wakes it after each stop of the world
 * that found it asleep: what it changed may want a round at once.
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
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

static int ep_add(int epfd, int fd, uint64_t tag)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = tag };

	return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
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
	s->ctl_stop_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (s->epfd < 0 || s->ctl_stop_fd < 0 ||
	    ep_add(s->epfd, s->ctl_stop_fd, SVC_EV_STOP))
		return -errno;
	for (uint32_t i = 0; i < s->ncores; i++) {
		struct svc_core *core = &s->core[i];

		core->dp_epfd = epoll_create1(EPOLL_CLOEXEC);
		core->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		core->timer_fd = timerfd_create(CLOCK_MONOTONIC,
						TFD_NONBLOCK | TFD_CLOEXEC);
		if (core->dp_epfd < 0 || core->wake_fd < 0 ||
		    core->timer_fd < 0)
			return -errno;
		if (ep_add(core->dp_epfd, core->wake_fd, SVC_EV_WAKE) ||
		    ep_add(core->dp_epfd, core->timer_fd, SVC_EV_TIMER))
			return -errno;
	}
	/* each port queue's interrupt: its core's (the tag names it) */
	for (uint32_t i = 0; i < s->ncores && ops->rx_intr_fd; i++)
		for (uint32_t j = 0; j < svc_core_nrxq(&s->core[i]); j++) {
			uint32_t q = svc_core_rxq(&s->core[i], j);

			if (ops->rx_intr_fd(s->port, q) >= 0 &&
			    ep_add(s->core[i].dp_epfd,
				   ops->rx_intr_fd(s->port, q),
				   SVC_EV_RX | (uint64_t)q << 16))
				return -errno;
		}
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
	s->listen_fd = s->epfd = s->svc_fd = -1;
	s->ndev_fd = s->ctl_stop_fd = -1;
	s->ctl_cpu = -1; /* any of s->cpus, until ovrdmad plans */
	pthread_mutex_init(&s->stw_lock, NULL);
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
	for (uint32_t i = 0; s->core && i < s->ncores; i++) {
		int cfds[] = { s->core[i].dp_epfd, s->core[i].wake_fd,
			       s->core[i].timer_fd };

		for (size_t j = 0; j < sizeof(cfds) / sizeof(cfds[0]); j++)
			if (cfds[j] >= 0)
				close(cfds[j]);
	}
	svc_dp_fini(s);
	if (s->page && s->page != MAP_FAILED)
		munmap(s->page, 4096);
	int fds[] = { s->listen_fd, s->epfd, s->ctl_stop_fd, s->svc_fd };

	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
		if (fds[i] >= 0)
			close(fds[i]);
	if (s->conf.socket[0])
		unlink(s->conf.socket);
}

/* ---- the loop ------------------------------------------------------------ */

/* The dataplane's events: a wakeup, the timer, the port's interrupt. */
static void dp_events(struct svc_core *core, struct epoll_event *ev, int n)
{
	struct svc *s = core->s;

	for (int i = 0; i < n; i++) {
		uint64_t tag = ev[i].data.u64 & 0xffff, junk;
		unsigned int q = (unsigned int)(ev[i].data.u64 >> 16);
		int fd = tag == SVC_EV_WAKE ?
				 core->wake_fd :
			 tag == SVC_EV_TIMER ?
				 core->timer_fd :
				 s->port_ops->rx_intr_fd(s->port, q);

		if (tag == SVC_EV_RX && s->port_ops->rx_intr_ack)
			s->port_ops->rx_intr_ack(s->port, q);
		else if (read(fd, &junk, sizeof(junk)) < 0 && errno != EAGAIN)
			perror("ovrdmad: read");
	}
}

/* The control thread's events, with the world stopped. */
static void ctl_events(struct svc *s, struct epoll_event *ev, int n)
{
	for (int i = 0; i < n; i++) {
		uint64_t tag = ev[i].data.u64;

		switch (tag) {
		case SVC_EV_LISTEN:
			s->stw_wake = true;
			svc_ctl_accept(s);
			break;
		case SVC_EV_NDEV:
			s->stw_wake = true;
			svc_sysfs_ndev_event(s);
			break;
		case SVC_EV_STOP:
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
static int nap_wait(struct svc_core *core, struct epoll_event *ev, uint64_t now,
		    uint64_t until)
{
	static bool no_pwait2;
	struct itimerspec its = { 0 };

	if (!no_pwait2) {
		struct timespec ts = {
			.tv_sec = (time_t)((until - now) / 1000000000ull),
			.tv_nsec = (long)((until - now) % 1000000000ull),
		};
		int n = epoll_pwait2(core->dp_epfd, ev, 16, &ts, NULL);

		if (n >= 0 || errno != ENOSYS)
			return n;
		no_pwait2 = true;
	}
	its.it_value.tv_sec = (time_t)(until / 1000000000ull);
	its.it_value.tv_nsec = (long)(until % 1000000000ull);
	timerfd_settime(core->timer_fd, TFD_TIMER_ABSTIME, &its, NULL);
	return epoll_wait(core->dp_epfd, ev, 16, -1);
}

/* ---- stopping the world --------------------------------------------------- */

static void futex_wait(_Atomic uint32_t *w, uint32_t val,
		       const struct timespec *rel)
{
	syscall(SYS_futex, (uint32_t *)w, FUTEX_WAIT_PRIVATE, val, rel, NULL,
		0);
}

static void futex_wake(_Atomic uint32_t *w)
{
	syscall(SYS_futex, (uint32_t *)w, FUTEX_WAKE_PRIVATE, INT_MAX, NULL,
		NULL, 0);
}

/* @core leaves: a stop of the world may begin, and one that waits is
 * woken (the seq_cst store and load pair with stw_wait's: a stopper that
 * set stw after our load sees active 0 and does not wait). */
static void dp_leave(struct svc_core *core)
{
	atomic_store(&core->active, 0);
	if (atomic_load(&core->s->stw))
		futex_wake(&core->active);
}

/* @core comes back, after any stop of the world under way. The seq_cst
 * store and load pair with stw_wait's (Dekker): either the stopper sees
 * the core active or the core sees stw. */
static void dp_enter(struct svc_core *core)
{
	struct svc *s = core->s;

	for (;;) {
		atomic_store(&core->active, 1);
		if (!atomic_load(&s->stw))
			return;
		dp_leave(core);
		while (atomic_load(&s->stw))
			futex_wait(&s->stw, 1, NULL);
	}
}

/* Between two rounds, with a stop asked for: off the VPC's readers
 * (the control thread may wait for a grace period), parked until the
 * stop ends. */
static void dp_park(struct svc_core *core)
{
	ovr_vpc_thread_offline();
	dp_leave(core);
	dp_enter(core);
	ovr_vpc_thread_online();
}

/* Asks every core to park and waits until each has (or is asleep), at
 * most until @deadline (CLOCK_MONOTONIC ns; 0: no bound). 0, or
 * -ETIMEDOUT with the request withdrawn. stw_lock is held. */
static int stw_wait(struct svc *s, uint64_t deadline)
{
	s->stw_wake = true;
	s->stw_cm_at = s->cm_next_at;
	s->stw_tx = s->core[0].cnt.tx_frames;
	atomic_store(&s->stw, 1);
	for (uint32_t i = 0; i < s->ncores; i++)
		while (atomic_load(&s->core[i].active)) {
			struct timespec rel = { 0, 1000000 }; /* 1 ms */

			if (deadline && svc_now() >= deadline) {
				atomic_store(&s->stw, 0);
				futex_wake(&s->stw);
				return -ETIMEDOUT;
			}
			futex_wait(&s->core[i].active, 1, &rel);
		}
	return 0;
}

void svc_stw_enter(struct svc *s)
{
	pthread_mutex_lock(&s->stw_lock);
	stw_wait(s, 0);
}

void svc_stw_exit(struct svc *s)
{
	uint32_t asleep;
	uint64_t one = 1;

	atomic_store(&s->stw, 0);
	futex_wake(&s->stw);
	/* asleep: its timers and its view of the work may be stale now */
	asleep = s->stw_wake || s->cm_next_at < s->stw_cm_at ||
				 s->core[0].cnt.tx_frames != s->stw_tx ?
			 atomic_load(&s->page->sleeping) :
			 0;
	for (; asleep; asleep &= asleep - 1) {
		uint32_t i = (uint32_t)__builtin_ctz(asleep);

		if (i < s->ncores &&
		    write(s->core[i].wake_fd, &one, sizeof(one)) < 0) {
			/* a full counter: it wakes anyway */
		}
	}
	pthread_mutex_unlock(&s->stw_lock);
}

/* ---- a core's sleep ------------------------------------------------------- */

/*
 * The service page's `sleeping` holds a bit per sleeping core: clients
 * write the wake fd of the core serving the QP they ring while its bit is
 * set (ring.h), and the cores that hand each other frames look at it
 * (svc_dp.c, kick_cores). A core with a port queue (core 0, and each core below the
 * port's queues) naps where the port has no receive interrupt; the
 * others sleep until woken or their next timer.
 */
static void svc_sleep(struct svc_core *core, uint64_t next)
{
	struct svc *s = core->s;
	struct epoll_event ev[16];
	uint32_t bit = 1u << core->idx;
	uint64_t now, until;
	uint32_t nrxq = svc_core_nrxq(core);
	bool has_q = nrxq > 0;
	int rxfd = has_q && s->port_ops->rx_intr_fd ?
			   s->port_ops->rx_intr_fd(s->port,
						   svc_core_rxq(core, 0)) :
			   -1;
	int n;

	atomic_fetch_or(&s->page->sleeping, bit);
	atomic_thread_fence(memory_order_seq_cst);
	if (svc_dp_pending(core)) {
		atomic_fetch_and(&s->page->sleeping, ~bit);
		return;
	}
	now = svc_now();
	until = now + OVR_RING_HEARTBEAT_NS / 4;
	if (rxfd < 0 && has_q) {
		if (!core->nap_ns)
			core->nap_ns = NAP_MIN_NS;
		if (until > now + core->nap_ns)
			until = now + core->nap_ns;
		core->nap_ns = core->nap_ns * 2 > NAP_MAX_NS ? NAP_MAX_NS :
							       core->nap_ns * 2;
	}
	if (next < until)
		until = next;
	if (until <= now) {
		atomic_fetch_and(&s->page->sleeping, ~bit);
		return;
	}
	for (uint32_t j = 0; rxfd >= 0 && j < nrxq; j++)
		s->port_ops->rx_intr(s->port, svc_core_rxq(core, j), true);
	core->cnt.sleeps++;
	ovr_vpc_thread_offline();
	/* asleep, the world may stop: svc_stw_exit wakes us after it */
	dp_leave(core);
	n = nap_wait(core, ev, now, until);
	dp_enter(core);
	ovr_vpc_thread_online();
	for (uint32_t j = 0; rxfd >= 0 && j < nrxq; j++)
		s->port_ops->rx_intr(s->port, svc_core_rxq(core, j), false);
	atomic_fetch_and(&s->page->sleeping, ~bit);
	core->cnt.wakeups++;
	if (n > 0)
		dp_events(core, ev, n);
}

/* ---- the control thread ---------------------------------------------------- */

static void *ctl_main(void *arg)
{
	struct svc *s = arg;
	struct epoll_event ev[16];

	/* its own VPC reader handle: the CM's datagrams and kicks of QPs
	 * send through the overlay from this thread */
	s->ctl_vt = ovr_vpc_thread_register(s->vpc);
	if (!s->ctl_vt) {
		perror("ovrdmad: control thread: VPC reader");
		s->stop = 1;
		return NULL;
	}
	ovr_vpc_thread_offline();
	while (!s->stop) {
		int n = epoll_wait(s->epfd, ev, 16, -1);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			perror("ovrdmad: control epoll");
			break;
		}
		svc_stw_enter(s);
		s->stw_wake = false; /* what the events need says */
		for (uint32_t i = 0; i < s->ncores; i++)
			s->core[i].vt = s->ctl_vt;
		ovr_vpc_thread_online();
		ctl_events(s, ev, n);
		ovr_vpc_thread_offline();
		for (uint32_t i = 0; i < s->ncores; i++)
			s->core[i].vt = s->core[i].own_vt;
		svc_stw_exit(s);
	}
	ovr_vpc_thread_online();
	ovr_vpc_thread_unregister(s->ctl_vt);
	s->ctl_vt = NULL;
	return NULL;
}

/* ---- snapshots for other threads ---------------------------------------- */

int svc_qp_snapshot(struct svc *s, uint32_t qpn, struct svc_qp_snap *out,
		    unsigned int max, unsigned int timeout_ms)
{
	uint64_t deadline = svc_now() + (uint64_t)timeout_ms * 1000000ull;
	struct timespec abs;
	unsigned int n = 0;
	int rc;

	clock_gettime(CLOCK_REALTIME, &abs);
	abs.tv_sec += timeout_ms / 1000;
	abs.tv_nsec += (long)(timeout_ms % 1000) * 1000000l;
	if (abs.tv_nsec >= 1000000000l) {
		abs.tv_sec++;
		abs.tv_nsec -= 1000000000l;
	}
	rc = pthread_mutex_timedlock(&s->stw_lock, &abs);
	if (rc)
		return rc == ETIMEDOUT ? -ETIMEDOUT : -rc;
	rc = stw_wait(s, deadline);
	if (rc) {
		pthread_mutex_unlock(&s->stw_lock);
		return rc;
	}
	for (struct svc_ctx *c = s->ctxs; c; c = c->next)
		for (uint32_t i = 0; i < c->nobj && n < max; i++) {
			struct svc_qp *qp = c->obj[i].p;
			struct svc_qp_snap *o = &out[n];
			struct ovr_eng_qp_attr qa;

			if (c->obj[i].type != SVC_OBJ_QP ||
			    (qpn && qp->qpn != qpn) ||
			    ovr_eng_qp_stats(qp->core->eng, qp->qpn, &o->st) ||
			    ovr_eng_qp_query(qp->core->eng, qp->qpn, &qa))
				continue;
			o->ctx = c->id;
			o->qpn = qp->qpn;
			o->dest_qpn = qa.dest_qp_num;
			o->peer_vip = qp->connected ? qp->flow.dst_vip : 0;
			n++;
		}
	svc_stw_exit(s);
	return (int)n;
}

/* ---- a core's loop ---------------------------------------------------------- */

/* Rounds of @core until s->stop; core 0 also runs the CM's timers and
 * the heartbeat. */
static void core_loop(struct svc_core *core)
{
	struct svc *s = core->s;
	uint64_t now = svc_now(), idle_since = now;
	uint64_t spin = (uint64_t)s->conf.spin_us * 1000ull;
	uint64_t cpu0 = 0; /* the sampled round's start on the CPU clock */

	core->dev_wait_ns = SVC_DEV_WAIT_MIN_NS;
	/* naps end when asked (nap_wait), not up to 50 us later */
	prctl(PR_SET_TIMERSLACK, 1000ul);
	dp_enter(core);
	while (!s->stop) {
		uint64_t next, prev = now;
		bool work, copying;

		now = svc_now();
		/* the round before, up to now: busy if it did work, polling
		 * if it did not and did not sleep (busy_ns, poll_ns) */
		if (core->last_round == SVC_ROUND_BUSY) {
			core->cnt.busy_rounds++;
			core->cnt.busy_ns += now - prev;
		} else if (core->last_round == SVC_ROUND_POLL) {
			core->cnt.poll_ns += now - prev;
		}
		if (cpu0) {
			uint64_t cpu = thread_cpu_ns() - cpu0;

			if (core->last_round == SVC_ROUND_BUSY) {
				core->cnt.busy_smp_ns += now - prev;
				core->cnt.busy_smp_cpu_ns += cpu;
			} else if (core->last_round == SVC_ROUND_POLL) {
				core->cnt.poll_smp_ns += now - prev;
				core->cnt.poll_smp_cpu_ns += cpu;
			}
			cpu0 = 0;
		}
		if (++core->round_seq % SVC_CPU_SAMPLE == 0)
			cpu0 = thread_cpu_ns();
		work = svc_dp_round(core, now, &next);
		core->last_round = work ? SVC_ROUND_BUSY : SVC_ROUND_POLL;
		if (core->idx == 0) {
			/* the CM's timers: run when one is due (a walk of
			 * every id), else only its deadline kept in mind */
			uint64_t t = s->cm_next_at <= now ?
					     svc_cm_poll(s, now) :
					     s->cm_next_at;

			if (t < next)
				next = t;
			heartbeat(s, now);
		}
		copying = core->dev_closed != core->dev_done;
		ovr_vpc_quiescent();
		if (atomic_load_explicit(&s->stw, memory_order_relaxed)) {
			/* the control thread's turn; what it changed may
			 * want a round at once, so none is skipped after */
			dp_park(core);
			core->last_round = SVC_ROUND_SLEPT;
			idle_since = now = svc_now();
			core->nap_ns = NAP_MIN_NS;
			continue;
		}
		if (work || next <= now) {
			idle_since = now;
			core->nap_ns = NAP_MIN_NS;
		} else if (now - idle_since >= spin) {
			if (copying) {
				core->cnt.dev_naps++;
				core->dev_wait_ns =
					core->dev_wait_ns * 2 >
							SVC_DEV_WAIT_MAX_NS ?
						SVC_DEV_WAIT_MAX_NS :
						core->dev_wait_ns * 2;
			}
			svc_sleep(core, next);
			core->last_round = SVC_ROUND_SLEPT;
			idle_since = svc_now();
		}
	}
	dp_leave(core);
}

/* Cores but 0: a thread each, with a VPC reader of its own. */
static void *core_main(void *arg)
{
	struct svc_core *core = arg;
	char name[16];

	snprintf(name, sizeof(name), "ovrdmad-dp%u", core->idx);
	pthread_setname_np(pthread_self(), name);
	core->vt = core->own_vt = ovr_vpc_thread_register(core->s->vpc);
	if (!core->vt) {
		perror("ovrdmad: dataplane core: VPC reader");
		core->s->stop = 1;
		return NULL;
	}
	if (core->s->port_ops->thread_init)
		core->s->port_ops->thread_init(core->s->port);
	core_loop(core);
	/* the world is ours to leave: unregister with the reader online */
	ovr_vpc_thread_unregister(core->own_vt);
	core->vt = core->own_vt = NULL;
	return NULL;
}

int svc_run(struct svc *s)
{
	uint64_t one = 1;
	uint32_t started = 1;
	int rc;

	s->core[0].thread = pthread_self();
	rc = pthread_create(&s->ctl_thread, NULL, ctl_main, s);
	if (rc) {
		fprintf(stderr, "ovrdmad: control thread: %s\n", strerror(rc));
		return -rc;
	}
	s->ctl_started = true;
	pthread_setname_np(s->ctl_thread, "ovrdmad-ctl");
	/* each thread on its CPU (svc_cpu.c), not on core 0's that it
	 * inherits from the main thread EAL pinned */
	rc = svc_cpu_pin(s->ctl_thread, s->ctl_cpu, &s->cpus);
	if (rc)
		fprintf(stderr, "ovrdmad: control thread on CPU %d: %s\n",
			s->ctl_cpu, strerror(rc));
	rc = 0;
	for (; started < s->ncores; started++) {
		struct svc_core *core = &s->core[started];

		rc = pthread_create(&core->thread, NULL, core_main, core);
		if (rc) {
			fprintf(stderr, "ovrdmad: dataplane core %u: %s\n",
				started, strerror(rc));
			s->stop = 1;
			break;
		}
		rc = svc_cpu_pin(core->thread, core->cpu, &s->cpus);
		if (rc)
			fprintf(stderr,
				"ovrdmad: dataplane core %u on CPU %d: %s\n",
				started, core->cpu, strerror(rc));
		rc = 0;
	}
	atomic_store(&s->threads_up, !s->stop);
	core_loop(&s->core[0]);
	atomic_store(&s->threads_up, false);
	atomic_store(&s->page->stopping, 1);
	/* the other threads end; svc_fini runs with the world ours */
	for (uint32_t i = 1; i < started; i++) {
		if (write(s->core[i].wake_fd, &one, sizeof(one)) < 0)
			perror("ovrdmad: stop a dataplane core");
		pthread_join(s->core[i].thread, NULL);
	}
	if (write(s->ctl_stop_fd, &one, sizeof(one)) < 0)
		perror("ovrdmad: stop the control thread");
	pthread_join(s->ctl_thread, NULL);
	s->ctl_started = false;
	return rc ? -rc : 0;
}
