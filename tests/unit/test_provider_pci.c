// SPDX-License-Identifier: MIT
/*
 * The interposer's PCI functions for ovrdma devices and its NCCL
 * settings (provider/ovrdma_preload_pci.c, ovrdma_preload.c; docs/GPU.md
 * "NCCL out of the box"), read as NCCL 2.28 reads them, on a fake PCI
 * tree (OVRDMA_SYS_ROOT) and the fake CUDA driver (tests/fakecuda):
 *
 *   1. a GPU behind a PCI switch: ncclIbGetPciPath's realpath of
 *      <sys>/class/infiniband/ovrdma0/device, its port and VF merging
 *      (a no-op), the subsystem ("pci"), the bus id and xml.cc's
 *      getPciPath of it (the same function), every file ncclTopoGet-
 *      XmlFromSys reads (class, vendor, device, subsystem_*, link speed
 *      and width of the function and of "..", numa_node), the parent
 *      walk (the GPU's parent bridge: distance PIX); a bus the kernel
 *      has is skipped; a second device gets its own bus; answers stay
 *      when the current device changes; <sys>/bus/pci/devices/<bdf>;
 *      open(), stat(), access(), writing refused; realpath into the
 *      caller's buffer; a path one byte too long; unknown files ENOENT;
 *      the tree's devices in name order on the host's GPUs in address
 *      order (a GPU on the root bus: the function there too, NCCL's
 *      parent walk ends at the CPU);
 *   2. no answer (realpath ENOENT, as before) without libcuda in the
 *      process, with libcuda but no current context, for a kernel
 *      device, for a name not in the tree, with OVRDMA_NCCL_PCI=none;
 *      then with a context: answered (a later question is not stuck);
 *   3. OVRDMA_NCCL_PCI naming the function, without CUDA (bus ids not
 *      here or malformed: no answer); one GPU on the host: every device
 *      next to it, on the same bus whatever the order of the questions;
 *   4. NCCL_GIN_TYPE=2 where the user set nothing and the kernel has no
 *      mlx5 device; left alone when the environment, ~/.nccl.conf or
 *      $NCCL_CONF_FILE sets it, beside an mlx5 device, and with
 *      OVRDMA_NCCL_DEFAULTS=0.
 *
 * The program re-executes itself with libovrdma-preload.so in
 * LD_PRELOAD (argv[1]) and the fake CUDA driver's path (argv[2]); each
 * case runs in a child of its own, so that the interposer's choice of a
 * GPU - made once per process - starts afresh.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

static char self[PATH_MAX], preload[PATH_MAX], fakecuda[PATH_MAX];
/* the temporary directory, resolved; short, so that every path made
 * from them fits PATH_MAX */
#define SHORT 512
static char top[SHORT / 2], sys_root[SHORT], tree[SHORT], home[SHORT];

/* the fake PCI tree: a GPU behind a switch, a GPU on the root bus */
#define BRIDGE "/devices/pci0000:15/0000:15:01.0/0000:16:00.0"
#define GPU BRIDGE "/0000:17:00.0"
#define ROOTGPU "/devices/pci0000:40/0000:40:05.0"

/* ---- helpers (the children report with CHECK, the parent asserts) ---- */

#define CHECK(cond)                                                     \
	do {                                                            \
		if (!(cond)) {                                          \
			fprintf(stderr,                                 \
				"%s:%d: CHECK(%s) failed (errno %d)\n", \
				__FILE__, __LINE__, #cond, errno);      \
			return 1;                                       \
		}                                                       \
	} while (0)

#define CHECK_STR(a, b)                                                    \
	do {                                                               \
		const char *a_ = (a), *b_ = (b);                           \
		if (!a_ || !b_ || strcmp(a_, b_) != 0) {                   \
			fprintf(stderr, "%s:%d: '%s' != '%s'\n", __FILE__, \
				__LINE__, a_ ? a_ : "(null)",              \
				b_ ? b_ : "(null)");                       \
			return 1;                                          \
		}                                                          \
	} while (0)

static void put(const char *path, const char *content)
{
	char p[PATH_MAX];
	FILE *f;

	snprintf(p, sizeof(p), "%s%s", sys_root, path);
	f = fopen(p, "w");
	assert_non_null(f);
	fputs(content, f);
	fclose(f);
}

static void mkdirs(const char *base, const char *path)
{
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s%s", base, path);
	for (char *s = p + 1; *s; s++)
		if (*s == '/') {
			*s = 0;
			mkdir(p, 0755);
			*s = '/';
		}
	mkdir(p, 0755);
}

static void link_to(const char *target, const char *at)
{
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s%s", sys_root, at);
	assert_int_equal(symlink(target, p), 0);
}

/* The fake /sys and ovrdmad's tree (two devices). */
static void make_trees(void)
{
	char p[PATH_MAX];

	snprintf(sys_root, sizeof(sys_root), "%s/sys", top);
	snprintf(tree, sizeof(tree), "%s/tree", top);
	snprintf(home, sizeof(home), "%s/home", top);
	mkdirs(top, "/home");
	mkdirs(sys_root, GPU);
	mkdirs(sys_root, BRIDGE "/pci_bus/0000:17");
	mkdirs(sys_root, ROOTGPU);
	mkdirs(sys_root, "/bus/pci/devices");
	mkdirs(sys_root, "/class/pci_bus");
	put(BRIDGE "/class", "0x060400\n");
	put(BRIDGE "/max_link_speed", "16.0 GT/s PCIe\n");
	put(BRIDGE "/max_link_width", "8\n");
	put(GPU "/class", "0x030200\n");
	put(GPU "/vendor", "0x10de\n");
	put(GPU "/max_link_speed", "32.0 GT/s PCIe\n");
	put(GPU "/max_link_width", "16\n");
	put(GPU "/numa_node", "1\n");
	put(GPU "/local_cpulist", "8-15\n");
	put(ROOTGPU "/class", "0x030000\n");
	put(ROOTGPU "/vendor", "0x10de\n");
	put(ROOTGPU "/numa_node", "0\n");
	/* not a GPU (another vendor) */
	mkdirs(sys_root, "/devices/pci0000:15/0000:15:02.0");
	put("/devices/pci0000:15/0000:15:02.0/class", "0x030000\n");
	put("/devices/pci0000:15/0000:15:02.0/vendor", "0x1af4\n");
	link_to("../../../devices/pci0000:15/0000:15:02.0",
		"/bus/pci/devices/0000:15:02.0");
	link_to("../../../devices/pci0000:15/0000:15:01.0/0000:16:00.0/0000:17:00.0",
		"/bus/pci/devices/0000:17:00.0");
	link_to("../../../devices/pci0000:40/0000:40:05.0",
		"/bus/pci/devices/0000:40:05.0");
	link_to("../../devices/pci0000:15/0000:15:01.0/0000:16:00.0/pci_bus/0000:17",
		"/class/pci_bus/0000:17");
	/* a bus the kernel has at the top of the range: skipped */
	mkdirs(sys_root, "/devices/pci0000:ff/pci_bus/0000:ff");
	link_to("../../devices/pci0000:ff/pci_bus/0000:ff",
		"/class/pci_bus/0000:ff");
	/* a kernel RDMA device (not mlx5) */
	mkdirs(sys_root, "/class/infiniband/rxe0");
	for (int i = 0; i < 3; i++) {
		static const int num[] = { 0, 2, 10 };

		snprintf(p, sizeof(p), "/class/infiniband/ovrdma%d", num[i]);
		mkdirs(tree, p);
		snprintf(p, sizeof(p),
			 "%s/class/infiniband/ovrdma%d/ovrdma_socket", tree,
			 num[i]);
		FILE *f = fopen(p, "w");
		assert_non_null(f);
		fputs("/run/ovrdma/ovrdmad.sock\n", f);
		fclose(f);
	}
	/* in the tree, but the kernel has a device of that name */
	mkdirs(tree, "/class/infiniband/rxe0");
	snprintf(p, sizeof(p), "%s/class/infiniband/rxe0/ovrdma_socket", tree);
	fclose(fopen(p, "w"));
}

/* Runs @fn in a child; its exit status. */
static int in_child(int (*fn)(void))
{
	int st;
	pid_t pid = fork();

	if (pid == 0)
		_exit(fn());
	assert_true(pid > 0);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* The fake CUDA driver loaded as the application would, and device 0's
 * primary context made current (or not). */
static int load_cuda(int with_context)
{
	int (*init)(unsigned int), (*retain)(void **, int), (*set)(void *);
	void *h = dlopen(fakecuda, RTLD_NOW | RTLD_GLOBAL), *ctx;

	CHECK(h);
	*(void **)&init = dlsym(h, "cuInit");
	*(void **)&retain = dlsym(h, "cuDevicePrimaryCtxRetain");
	*(void **)&set = dlsym(h, "cuCtxSetCurrent");
	CHECK(init && retain && set);
	CHECK(init(0) == 0);
	if (with_context) {
		CHECK(retain(&ctx, 0) == 0);
		CHECK(set(ctx) == 0);
	}
	return 0;
}

static int set_current(int on)
{
	int (*retain)(void **, int), (*set)(void *);
	void *h = dlopen(fakecuda, RTLD_NOW | RTLD_NOLOAD), *ctx = NULL;

	CHECK(h);
	*(void **)&retain = dlsym(h, "cuDevicePrimaryCtxRetain");
	*(void **)&set = dlsym(h, "cuCtxSetCurrent");
	if (on)
		CHECK(retain(&ctx, 0) == 0);
	CHECK(set(ctx) == 0);
	return 0;
}

/* The file @dir/@name as NCCL's ncclTopoGetStrFromSys reads it: fopen,
 * fread, the last byte cut. */
static int read_sys(const char *dir, const char *name, char *out, size_t cap)
{
	char path[PATH_MAX];
	size_t n;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "r");
	if (!f)
		return -1;
	n = fread(out, 1, cap - 1, f);
	fclose(f);
	if (n == 0)
		return -1;
	out[n - 1] = 0;
	return 0;
}

/* ncclIbGetPciPath for @dev: the realpath, merged; NULL and errno. */
static char *nccl_pci_path(const char *dev)
{
	char path[PATH_MAX];
	char *p;

	snprintf(path, sizeof(path), "%s/class/infiniband/%s/device", sys_root,
		 dev);
	p = realpath(path, NULL);
	if (p) {
		size_t n = strlen(p);

		p[n - 1] = '0';
		p[n - 3] = p[n - 4] = '0';
	}
	return p;
}

/* ---- 1. a GPU behind a switch ---------------------------------------- */

static int case_switch(void)
{
	char want[PATH_MAX], path[PATH_MAX], bus[PATH_MAX], s[256],
		buf[PATH_MAX];
	char *p, *q, *busid, *sub;
	struct stat st;
	int fd;

	CHECK(load_cuda(1) == 0);
	p = nccl_pci_path("ovrdma0");
	CHECK(p);
	/* bus ff is the kernel's: fe, under the GPU's parent bridge */
	snprintf(want, sizeof(want), "%s" BRIDGE "/0000:fe:00.0", sys_root);
	CHECK_STR(p, want);
	/* ncclTopoGetSubsystem */
	snprintf(path, sizeof(path), "%s/subsystem", p);
	sub = realpath(path, NULL);
	CHECK(sub);
	CHECK_STR(strrchr(sub, '/') + 1, "pci");
	free(sub);
	/* ncclTopoFillNet: the bus id; xml.cc getPciPath */
	busid = strrchr(p, '/') + 1;
	CHECK_STR(busid, "0000:fe:00.0");
	snprintf(bus, sizeof(bus), "%s/class/pci_bus/%.7s/../../%s", sys_root,
		 busid, busid);
	q = realpath(bus, NULL);
	CHECK_STR(q, p);
	/* the upper-case form NCCL never writes, but a bus id may be */
	snprintf(bus, sizeof(bus),
		 "%s/class/pci_bus/0000:FE/../../0000:FE:00.0", sys_root);
	free(q);
	q = realpath(bus, NULL);
	CHECK_STR(q, p);
	/* ncclTopoGetXmlFromSys */
	CHECK(read_sys(q, "class", s, sizeof(s)) == 0);
	CHECK_STR(s, "0x020000");
	CHECK(read_sys(q, "vendor", s, sizeof(s)) == 0);
	CHECK_STR(s, "0x0000");
	CHECK(read_sys(q, "device", s, sizeof(s)) == 0);
	CHECK(read_sys(q, "subsystem_vendor", s, sizeof(s)) == 0);
	CHECK(read_sys(q, "subsystem_device", s, sizeof(s)) == 0);
	CHECK(read_sys(q, "max_link_speed", s, sizeof(s)) == 0);
	CHECK_STR(s, "32.0 GT/s PCIe"); /* the GPU's */
	CHECK(read_sys(q, "../max_link_speed", s, sizeof(s)) == 0);
	CHECK_STR(s, "16.0 GT/s PCIe"); /* the bridge's */
	CHECK(read_sys(q, "max_link_width", s, sizeof(s)) == 0);
	CHECK_STR(s, "16");
	CHECK(read_sys(q, "../max_link_width", s, sizeof(s)) == 0);
	CHECK_STR(s, "8");
	CHECK(read_sys(q, "numa_node", s, sizeof(s)) == 0);
	CHECK_STR(s, "1");
	CHECK(read_sys(q, "local_cpulist", s, sizeof(s)) == 0);
	CHECK_STR(s, "8-15");
	/* the parent walk: the GPU's parent, a bus id, already known to
	 * NCCL from the GPU: NIC and GPU under one switch (PIX) */
	*strrchr(q, '/') = 0;
	CHECK_STR(strrchr(q, '/') + 1, "0000:16:00.0");
	snprintf(want, sizeof(want), "%s" BRIDGE, sys_root);
	CHECK_STR(q, want);
	free(q);
	/* files NCCL does not read: ENOENT; writing: refused */
	errno = 0;
	CHECK(read_sys(p, "reset", s, sizeof(s)) < 0 && errno == ENOENT);
	snprintf(path, sizeof(path), "%s/class", p);
	CHECK(!fopen(path, "w") && errno == EACCES);
	CHECK(open(path, O_WRONLY) < 0 && errno == EACCES);
	CHECK(access(path, W_OK) < 0 && errno == EACCES);
	CHECK(access(path, R_OK) == 0);
	/* open(2) and stat(2) of a made file */
	fd = open(path, O_RDONLY | O_CLOEXEC);
	CHECK(fd >= 0);
	CHECK(read(fd, s, sizeof(s)) == 9 && memcmp(s, "0x020000\n", 9) == 0);
	close(fd);
	CHECK(stat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 9);
	/* the function's directory: a directory */
	CHECK(stat(p, &st) == 0 && S_ISDIR(st.st_mode));
	/* <sys>/bus/pci/devices/<bdf> and the device link's own files */
	snprintf(path, sizeof(path), "%s/bus/pci/devices/0000:fe:00.0",
		 sys_root);
	q = realpath(path, buf);
	CHECK(q == buf);
	CHECK_STR(buf, p);
	snprintf(path, sizeof(path), "%s/class/infiniband/ovrdma0/device",
		 sys_root);
	CHECK(read_sys(path, "numa_node", s, sizeof(s)) == 0);
	CHECK_STR(s, "1");
	/* the tree's devices in name order (ovrdma0, 2, 10) on the host's
	 * GPUs in address order (17:00.0, 40:05.0; 15:02.0 is another
	 * vendor's): device 2 next to the GPU on the root bus, device 10
	 * next to the first again; each on a bus of its own */
	q = nccl_pci_path("ovrdma2");
	snprintf(want, sizeof(want), "%s/devices/pci0000:40/0000:fd:00.0",
		 sys_root);
	CHECK_STR(q, want);
	CHECK(read_sys(q, "numa_node", s, sizeof(s)) == 0);
	CHECK_STR(s, "0");
	/* NCCL's parent walk: pci0000:40 is no bus id, a CPU (PHB) */
	*strrchr(q, '/') = 0;
	CHECK_STR(strrchr(q, '/') + 1, "pci0000:40");
	free(q);
	q = nccl_pci_path("ovrdma10");
	snprintf(want, sizeof(want), "%s" BRIDGE "/0000:fc:00.0", sys_root);
	CHECK_STR(q, want);
	free(q);
	/* kept when the thread's current device changes or goes */
	CHECK(set_current(0) == 0);
	q = nccl_pci_path("ovrdma0");
	CHECK_STR(q, p);
	free(q);
	/* a path one byte too long for PATH_MAX: not ours, the kernel's
	 * answer */
	memset(path, 'a', sizeof(path));
	memcpy(path, p, strlen(p));
	path[strlen(p)] = '/';
	path[sizeof(path) - 1] = 0;
	errno = 0;
	CHECK(!realpath(path, NULL) && errno != 0);
	CHECK(!fopen(path, "r"));
	free(p);
	return 0;
}

/* ---- 2. no answer without a GPU --------------------------------------- */

static int nothing(const char *dev)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/class/infiniband/%s/device", sys_root,
		 dev);
	errno = 0;
	CHECK(!realpath(path, NULL));
	CHECK(errno == ENOENT);
	return 0;
}

static int case_no_gpu(void)
{
	char want[PATH_MAX];
	char *p;

	/* no libcuda in the process */
	CHECK(nothing("ovrdma0") == 0);
	/* libcuda, no current context */
	CHECK(load_cuda(0) == 0);
	CHECK(nothing("ovrdma0") == 0);
	/* a kernel device's name, a name the tree lacks */
	CHECK(set_current(1) == 0);
	CHECK(nothing("rxe0") == 0);
	CHECK(nothing("ovrdma7") == 0);
	CHECK(nothing("ovrdma0/..") == 0);
	CHECK(nothing("..") == 0);
	setenv("OVRDMA_NCCL_PCI", "none", 1);
	CHECK(nothing("ovrdma0") == 0);
	unsetenv("OVRDMA_NCCL_PCI");
	/* with a context now: answered */
	p = nccl_pci_path("ovrdma0");
	snprintf(want, sizeof(want), "%s" BRIDGE "/0000:fe:00.0", sys_root);
	CHECK_STR(p, want);
	free(p);
	return 0;
}

/* ---- 3. named by OVRDMA_NCCL_PCI; a GPU on the root bus ---------------- */

static int case_named(void)
{
	char want[PATH_MAX], s[64];
	char *p;

	/* no CUDA at all: the named function, for every device */
	setenv("OVRDMA_NCCL_PCI", "00000000:40:05.0", 1); /* 8-digit */
	p = nccl_pci_path("ovrdma0");
	snprintf(want, sizeof(want), "%s/devices/pci0000:40/0000:fe:00.0",
		 sys_root);
	CHECK_STR(p, want);
	CHECK(read_sys(p, "numa_node", s, sizeof(s)) == 0);
	CHECK_STR(s, "0");
	free(p);
	setenv("OVRDMA_NCCL_PCI", "17:00.0", 1); /* read at each device */
	p = nccl_pci_path("ovrdma2");
	snprintf(want, sizeof(want), "%s" BRIDGE "/0000:fd:00.0", sys_root);
	CHECK_STR(p, want);
	free(p);
	return 0;
}

static int case_bad_name(void)
{
	setenv("OVRDMA_NCCL_PCI", "0000:99:00.0", 1); /* not here */
	CHECK(nothing("ovrdma0") == 0);
	setenv("OVRDMA_NCCL_PCI", "not-a-bus-id", 1);
	CHECK(nothing("ovrdma0") == 0);
	setenv("OVRDMA_NCCL_PCI", "0000:17:00.0:trailing", 1);
	CHECK(nothing("ovrdma0") == 0);
	setenv("OVRDMA_NCCL_PCI", "0000:17:00.0", 1);
	CHECK(nothing("rxe0") == 0); /* the kernel's device */
	return 0;
}

/* One GPU on the host: every device next to it; the buses do not
 * depend on the order of the questions. */
static int case_one_gpu(void)
{
	char from[PATH_MAX], to[PATH_MAX], want[PATH_MAX];
	char *p;
	int rc = 0;

	snprintf(from, sizeof(from), "%s" ROOTGPU "/vendor", sys_root);
	snprintf(to, sizeof(to), "%s" ROOTGPU "/vendor.off", sys_root);
	CHECK(rename(from, to) == 0);
	if (load_cuda(1) != 0)
		rc = 1;
	for (int i = 0; i < 2; i++) {
		static const char *const dev[] = { "ovrdma10", "ovrdma2" };
		static const char *const bus[] = { "fc", "fd" };

		p = nccl_pci_path(dev[i]);
		snprintf(want, sizeof(want), "%s" BRIDGE "/0000:%s:00.0",
			 sys_root, bus[i]);
		if (!p || strcmp(p, want) != 0) {
			fprintf(stderr, "one GPU: %s: %s, not %s\n", dev[i],
				p ? p : "(null)", want);
			rc = 1;
		}
		free(p);
	}
	CHECK(rename(to, from) == 0);
	return rc;
}

static void test_switch(void **state)
{
	(void)state;
	assert_int_equal(in_child(case_switch), 0);
}

static void test_no_gpu(void **state)
{
	(void)state;
	assert_int_equal(in_child(case_no_gpu), 0);
}

static void test_named(void **state)
{
	(void)state;
	assert_int_equal(in_child(case_named), 0);
	assert_int_equal(in_child(case_bad_name), 0);
	assert_int_equal(in_child(case_one_gpu), 0);
}

/* ---- 4. NCCL_GIN_TYPE ---------------------------------------------------- */

/* NCCL_GIN_TYPE as a fresh process with the interposer sees it, with
 * @n more VAR=VALUE (VALUE NULL: unset) */
static void gin_type(char *out, size_t cap, int n, ...)
{
	int fds[2], st;
	ssize_t got;
	va_list ap;
	pid_t pid;

	assert_int_equal(pipe(fds), 0);
	pid = fork();
	if (pid == 0) {
		va_start(ap, n);
		for (int i = 0; i < n; i++) {
			const char *k = va_arg(ap, const char *);
			const char *v = va_arg(ap, const char *);

			if (v)
				setenv(k, v, 1);
			else
				unsetenv(k);
		}
		va_end(ap);
		dup2(fds[1], 1);
		execl(self, self, "--gin", (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	got = read(fds[0], out, cap - 1);
	close(fds[0]);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	out[got > 0 ? got : 0] = 0;
	out[strcspn(out, "\n")] = 0;
}

static bool etc_sets_gin(void)
{
	char line[256];
	FILE *f = fopen("/etc/nccl.conf", "r");
	bool yes = false;

	while (f && fgets(line, sizeof(line), f))
		yes |= strncmp(line, "NCCL_GIN_TYPE=", 14) == 0;
	if (f)
		fclose(f);
	return yes;
}

static void test_gin_type(void **state)
{
	char v[64], conf[PATH_MAX], mlx[PATH_MAX];
	FILE *f;

	(void)state;
	if (etc_sets_gin()) {
		/* this machine's /etc/nccl.conf decides: nothing set */
		gin_type(v, sizeof(v), 1, "NCCL_GIN_TYPE", NULL);
		assert_string_equal(v, "unset");
		return;
	}
	gin_type(v, sizeof(v), 1, "NCCL_GIN_TYPE", NULL);
	assert_string_equal(v, "2");
	gin_type(v, sizeof(v), 1, "NCCL_GIN_TYPE", "3");
	assert_string_equal(v, "3");
	gin_type(v, sizeof(v), 2, "NCCL_GIN_TYPE", NULL, "OVRDMA_NCCL_DEFAULTS",
		 "0");
	assert_string_equal(v, "unset");
	/* ~/.nccl.conf */
	snprintf(conf, sizeof(conf), "%s/.nccl.conf", home);
	f = fopen(conf, "w");
	assert_non_null(f);
	fputs("# a comment\nNCCL_DEBUG=INFO\nNCCL_GIN_TYPE=3\n", f);
	fclose(f);
	gin_type(v, sizeof(v), 1, "NCCL_GIN_TYPE", NULL);
	assert_string_equal(v, "unset");
	/* $NCCL_CONF_FILE replaces ~/.nccl.conf */
	snprintf(conf, sizeof(conf), "%s/other.conf", home);
	f = fopen(conf, "w");
	assert_non_null(f);
	fputs("#NCCL_GIN_TYPE=3\nNCCL_GIN_TYPEX=1\n", f);
	fclose(f);
	gin_type(v, sizeof(v), 2, "NCCL_GIN_TYPE", NULL, "NCCL_CONF_FILE",
		 conf);
	assert_string_equal(v, "2");
	/* beside an mlx5 device (NCCL finds GDAKI devices: no crash) */
	snprintf(mlx, sizeof(mlx), "%s/class/infiniband/mlx5_0", sys_root);
	assert_int_equal(mkdir(mlx, 0755), 0);
	gin_type(v, sizeof(v), 2, "NCCL_GIN_TYPE", NULL, "NCCL_CONF_FILE",
		 conf);
	assert_string_equal(v, "unset");
	rmdir(mlx);
}

/* ---- the run --------------------------------------------------------- */

static void rm_rf(const char *path)
{
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", path);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", path);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_switch),
		cmocka_unit_test(test_no_gpu),
		cmocka_unit_test(test_named),
		cmocka_unit_test(test_gin_type),
	};
	const char *t = getenv("TEST_PCI_TOP");
	char tmpl[] = "/tmp/ovrdma-pci.XXXXXX", self_top[PATH_MAX];
	int rc;

	if (argc == 2 && strcmp(argv[1], "--gin") == 0) {
		const char *v = getenv("NCCL_GIN_TYPE");

		printf("%s\n", v ? v : "unset");
		return 0;
	}
	if (!realpath("/proc/self/exe", self))
		return 1;
	if (!t) {
		/* first run: the trees, then again with the interposer */
		if (argc != 3 || !realpath(argv[1], preload) ||
		    !realpath(argv[2], fakecuda)) {
			fprintf(stderr,
				"usage: %s LIBOVRDMA_PRELOAD LIBFAKECUDA\n",
				argv[0]);
			return 2;
		}
		if (!mkdtemp(tmpl) || !realpath(tmpl, self_top) ||
		    strlen(self_top) >= 100)
			return 1;
		snprintf(top, sizeof(top), "%s", self_top);
		setenv("TEST_PCI_TOP", top, 1);
		make_trees();
		setenv("LD_PRELOAD", preload, 1);
		setenv("OVRDMA_SYS_ROOT", sys_root, 1);
		setenv("OVRDMA_SYSFS", tree, 1);
		setenv("OVRDMA_LIBCUDA", fakecuda, 1);
		setenv("HOME", home, 1);
		unsetenv("SYSFS_PATH");
		unsetenv("OVRDMA_NCCL_PCI");
		unsetenv("OVRDMA_NCCL_DEFAULTS");
		unsetenv("NCCL_CONF_FILE");
		/* a sanitizer's runtime need not come first here */
		setenv("ASAN_OPTIONS", "verify_asan_link_order=0", 0);
		{
			pid_t pid = fork();
			int st;

			if (pid == 0) {
				execl(self, self, argv[1], argv[2],
				      (char *)NULL);
				_exit(127);
			}
			waitpid(pid, &st, 0);
			rm_rf(top);
			return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
		}
	}
	if (strlen(t) >= 100)
		return 2;
	snprintf(top, sizeof(top), "%s", t);
	snprintf(sys_root, sizeof(sys_root), "%s/sys", top);
	snprintf(tree, sizeof(tree), "%s/tree", top);
	snprintf(home, sizeof(home), "%s/home", top);
	if (!realpath(argv[1], preload) || !realpath(argv[2], fakecuda))
		return 2;
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	return rc;
}
