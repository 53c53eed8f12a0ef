// SPDX-License-Identifier: MIT
/*
 * ovrdmad's configuration file (dataplane/svc_conf.c): a good file fills
 * every field; every kind of bad file is refused with a message that
 * names the file and the line at fault.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "svc.h"

static char path[64];

/* Loads @text; the message on stderr (if any) goes to @msg. */
static int load(const char *text, struct svc_conf *c, char *msg, size_t cap)
{
	FILE *f, *err;
	int fd, saved, rc;
	size_t n;

	snprintf(path, sizeof(path), "/tmp/ovrdma-conf-test.XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	f = fdopen(fd, "w");
	fputs(text, f);
	fclose(f);
	err = tmpfile();
	assert_non_null(err);
	fflush(stderr);
	saved = dup(2);
	dup2(fileno(err), 2);
	svc_conf_default(c);
	rc = svc_conf_load(c, path);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	rewind(err);
	n = fread(msg, 1, cap - 1, err);
	msg[n] = 0;
	fclose(err);
	unlink(path);
	return rc;
}

static void test_good(void **state)
{
	static struct svc_conf c;
	char msg[512];
	(void)state;

	assert_int_equal(load("; a node\n"
			      "[service]\n"
			      "socket = /tmp/x.sock\n"
			      "group =\n"
			      "underlay_mtu = 1500\n"
			      "rate = 25g\n"
			      "cc = swift\n"
			      "spin_us = 7\n"
			      "dataplane_cores = 3\n"
			      "port_queues = 9\n"
			      "eal = --no-huge -m 256\n"
			      "eal = --vdev=net_memif0\n"
			      "[limits]\n"
			      "qp_per_context = 10\n"
			      "pinned_mb_per_context = 3\n"
			      "cq_mb_per_context = 64\n"
			      "cm_channel_kb = 256\n"
			      "[gpu]\n"
			      "gdrcopy = off\n"
			      "gdrcopy_h2d_max = 8192\n"
			      "gdrcopy_d2h_max = 0\n"
			      "[tenant]\n"
			      "vni = 100\n"
			      "vip = 192.168.1.1 local ovrdma0\n"
			      "vip = 192.168.1.2 host 10.0.0.2 mac "
			      "02:00:00:00:00:02\n"
			      "sg = 192.168.1.0/24\n"
			      "[service]\n"
			      "host = 10.0.0.1\n",
			      &c, msg, sizeof(msg)),
			 0);
	assert_string_equal(msg, "");
	assert_string_equal(c.socket, "/tmp/x.sock");
	assert_string_equal(c.group, "");
	assert_int_equal(c.underlay_mtu, 1500);
	assert_int_equal(c.rate_bps, 25000000000ull);
	assert_string_equal(c.cc, "swift");
	assert_int_equal(c.spin_us, 7);
	assert_int_equal(c.dp_cores, 3);
	assert_int_equal(c.port_queues, 9);
	/* eal lines are joined in order */
	assert_string_equal(c.eal, "--no-huge -m 256 --vdev=net_memif0");
	assert_int_equal(c.ctx_max_qp, 10);
	assert_int_equal(c.ctx_max_pinned, 3ull << 20);
	assert_int_equal(c.ctx_max_cq_bytes, 64ull << 20);
	assert_int_equal(c.cm_channel_bytes, 256ull << 10);
	assert_false(c.gdrcopy);
	assert_int_equal(c.gdrcopy_h2d_max, 8192);
	assert_int_equal(c.gdrcopy_d2h_max, 0);
	assert_int_equal(c.host, 0x0a000001);
	assert_int_equal(c.ntenants, 1);
	assert_int_equal(c.tenants[0], 100);
	assert_int_equal(c.nvips, 2);
	assert_true(c.vips[0].local);
	assert_string_equal(c.vips[0].name, "ovrdma0");
	/* a local vIP names this host even though host= came later */
	assert_int_equal(c.vips[0].host, 0x0a000001);
	assert_false(c.vips[1].local);
	assert_int_equal(c.vips[1].vip, 0xc0a80102);
	assert_int_equal(c.vips[1].host, 0x0a000002);
	assert_int_equal(c.vips[1].mac[5], 2);
	assert_int_equal(c.nsgs, 1);
	assert_int_equal(c.sgs[0].prefix, 0xc0a80100);
	assert_int_equal(c.sgs[0].len, 24);
}

/* Each bad file, the line it must be refused at, and a word of why. */
static const struct bad {
	const char *text;
	int line;
	const char *why;
} bads[] = {
	{ "[service]\nhost = 10.0.0.1\ndataplane_cores = 0\n", 3,
	  "dataplane_cores" },
	{ "[service]\nhost = 10.0.0.1\ndataplane_cores = 17\n", 3,
	  "dataplane_cores" },
	{ "[service]\nhost = 10.0.0.1\ndataplane_cores = automatic\n", 3,
	  "dataplane_cores" },
	{ "[service]\nhost = 10.0.0.1\nport_queues = 0\n", 3, "port_queues" },
	{ "[service]\nhost = 10.0.0.1\nport_queues = autox\n", 3,
	  "port_queues" },
	{ "[service]\nhost = 10.0.0.1\nport_queues = 257\n", 3, "port_queues" },
	{ "[service]\nhost = 10.0.0.1\n[nonsense]\nkey = 1\n", 3,
	  "unknown section" },
	{ "[service]\nhost = 10.0.0.1\n[nonsense]\n", 3, "unknown section" },
	/* a second [tenant] must start with its own vni, not inherit one */
	{ "[service]\nhost = 10.0.0.1\n[tenant]\nvni = 100\n"
	  "sg = 10.0.0.0/8\n[tenant]\nsg = 10.0.0.0/8\n",
	  7, "vni" },
	{ "[service]\nhost = 10.0.0.1\ncolour = blue\n", 3, "unknown key" },
	{ "[service]\nhost = 10.0.0.300\n", 2, "" },
	{ "[service]\nhost = 10.0.0.1\nunderlay_mtu = 100\n", 3, "" },
	{ "[service]\nhost = 10.0.0.1\nrate = fast\n", 3, "" },
	{ "[service]\nhost = 10.0.0.1\ncc = nosuch\n", 3, "" },
	{ "[service]\nhost = 10.0.0.1\n[limits]\nqps = many\n", 4, "" },
	{ "[service]\nhost = 10.0.0.1\n[tenant]\nvip = 1.2.3.4 local\n", 4,
	  "vni" },
	{ "[service]\nhost = 10.0.0.1\n[tenant]\nvni = 100\n"
	  "vip = 1.2.3.4 remote\n",
	  5, "vip" },
	{ "[service]\nhost = 10.0.0.1\n[tenant]\nvni = 100\n"
	  "vip = 1.2.3.4 host 10.0.0.2 mac 02:00\n",
	  5, "MAC" },
	{ "[service]\nhost = 10.0.0.1\n[tenant]\nvni = 100\n"
	  "sg = 192.168.1.1/24\n",
	  5, "host bits" },
	{ "[service]\nhost = 10.0.0.1\n[tenant]\nvni = 100\n[tenant]\n"
	  "vni = 100\n",
	  6, "twice" },
	{ "[service]\nhost = 10.0.0.1\nthis line has no equals sign\n", 3, "" },
	{ "[service]\nhost = 10.0.0.1\n[gpu]\ngdrcopy = on\n", 4,
	  "auto or off" },
	{ "[service]\nhost = 10.0.0.1\n[gpu]\ngdrcopy_d2h_max = 2000000\n", 4,
	  "0..1048576" },
	{ "[service]\nhost = 10.0.0.1\n[gpu]\ngdr = auto\n", 4,
	  "unknown key in [gpu]" },
};

/* Without a [gpu] section: GDRCopy where it is there, the limits of
 * docs/GPU.md. */
static void test_gpu_defaults(void **state)
{
	static struct svc_conf c;
	char msg[512];
	(void)state;

	assert_int_equal(load("[service]\nhost = 10.0.0.1\n[gpu]\n"
			      "gdrcopy = auto\n",
			      &c, msg, sizeof(msg)),
			 0);
	assert_true(c.gdrcopy);
	assert_int_equal(c.gdrcopy_h2d_max, OVR_GDR_BAR_H2D_MAX);
	assert_int_equal(c.gdrcopy_d2h_max, OVR_GDR_BAR_D2H_MAX);
	svc_conf_default(&c);
	assert_true(c.gdrcopy);
}

/* The port's queues: auto unless given (0), "auto" says so again. */
static void test_port_queues(void **state)
{
	static struct svc_conf c;
	char msg[512];
	(void)state;

	assert_int_equal(
		load("[service]\nhost = 10.0.0.1\n", &c, msg, sizeof(msg)), 0);
	assert_int_equal(c.port_queues, 0);
	assert_int_equal(c.dp_cores, 0); /* auto (svc_cores_auto) */
	assert_int_equal(
		load("[service]\nhost = 10.0.0.1\ndataplane_cores = 4\n"
		     "dataplane_cores = auto\n",
		     &c, msg, sizeof(msg)),
		0);
	assert_int_equal(c.dp_cores, 0);
	assert_int_equal(load("[service]\nhost = 10.0.0.1\nport_queues = 4\n"
			      "port_queues = auto\n",
			      &c, msg, sizeof(msg)),
			 0);
	assert_int_equal(c.port_queues, 0);
	assert_int_equal(load("[service]\nhost = 10.0.0.1\nport_queues = 256\n",
			      &c, msg, sizeof(msg)),
			 0);
	assert_int_equal(c.port_queues, 256);
}

static void test_bad(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(bads) / sizeof(bads[0]); i++) {
		static struct svc_conf c;
		char msg[512], want[96];

		if (load(bads[i].text, &c, msg, sizeof(msg)) == 0)
			fail_msg("bad file %zu accepted:\n%s", i, bads[i].text);
		snprintf(want, sizeof(want), "%s:%d: ", path, bads[i].line);
		if (!strstr(msg, want) || !strstr(msg, bads[i].why))
			fail_msg("bad file %zu: message '%s', wanted '%s' and "
				 "'%s'",
				 i, msg, want, bads[i].why);
	}
}

/* inih would cut a long line in two and parse the rest as a line: the
 * file is refused at that line instead */
static void test_long_line(void **state)
{
	static struct svc_conf c;
	char text[600], msg[512], want[96];
	(void)state;

	snprintf(text, sizeof(text),
		 "[service]\nhost = 10.0.0.1\neal = %0250d\n", 0);
	assert_int_equal(load(text, &c, msg, sizeof(msg)), -1);
	snprintf(want, sizeof(want), "%s:3: line too long", path);
	assert_non_null(strstr(msg, want));
}

static void test_missing_file(void **state)
{
	static struct svc_conf c;
	(void)state;

	svc_conf_default(&c);
	assert_int_equal(svc_conf_load(&c, "/nonexistent/ovrdmad.conf"), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good),
		cmocka_unit_test(test_gpu_defaults),
		cmocka_unit_test(test_port_queues),
		cmocka_unit_test(test_bad),
		cmocka_unit_test(test_long_line),
		cmocka_unit_test(test_missing_file),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
