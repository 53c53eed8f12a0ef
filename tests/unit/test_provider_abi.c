// SPDX-License-Identifier: MIT
/*
 * The provider's declarations of libibverbs' private ABI
 * (provider/ovrdma_abi.h) against the libibverbs built against: each
 * test makes libibverbs itself read or write the structures and checks
 * that it found every field where ovrdma_abi.h says it is.
 *
 * 1. verbs_context_ops: verbs_set_ops() copies each non-NULL verb into
 *    public slots of struct verbs_context / ibv_context_ops (from
 *    <infiniband/verbs.h>) and the whole table into its private copy.
 *    Every verb gets a distinct fake address; each public slot must hold
 *    the fake of the verb of the same name (a shifted member shows up as
 *    its neighbour's fake), and the private copy must hold exactly our
 *    OVRDMA_NOPS verbs (76 in rdma-core 44, 83 in 64) in order and nothing after them (a guard after our table must
 *    not be copied).
 * 2. verbs_device_ops / verbs_sysfs_dev / verbs_device: a driver
 *    registered with verbs_register_driver_<PABI> over a synthetic sysfs
 *    tree (needs root for the /dev/infiniband node; skipped otherwise)
 *    must be offered the device with the sysfs fields in place, be held
 *    to its ABI range, and get its device object back filled in.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cmocka.h>

#include "ovrdma_abi.h"

#define NOPS (sizeof(struct verbs_context_ops) / sizeof(void *))
#define GUARDS 4

static void *fake(size_t i)
{
	return (void *)(uintptr_t)(0x5a5a0000u + 16u * i);
}

/* our table with a guard after it: nothing past the table may be read */
static struct {
	struct verbs_context_ops ops;
	void *guard[GUARDS];
} tbl;

#define SLOT(member)                           \
	((void *)*(void **)((char *)&tbl.ops + \
			    offsetof(struct verbs_context_ops, member)))
#define CHECK_PUB(field, member) assert_ptr_equal((void *)(field), SLOT(member))

static void test_context_ops(void **state)
{
	void **slots = (void **)&tbl.ops;
	struct verbs_context *v = calloc(1, sizeof(*v));
	/* libibverbs' private context (verbs_ex_private) holds its copy */
	uint64_t *priv = calloc(1, 65536);
	struct ibv_context_ops *c = &v->context.ops;
	size_t first = SIZE_MAX;

	(void)state;
	assert_non_null(v);
	assert_non_null(priv);
	assert_int_equal(NOPS, OVRDMA_NOPS);
	for (size_t i = 0; i < NOPS; i++)
		slots[i] = fake(i);
	for (size_t i = 0; i < GUARDS; i++)
		tbl.guard[i] = fake(1000 + i);
	v->priv = (void *)priv;
	verbs_set_ops(v, &tbl.ops);

	/* public slots of struct verbs_context */
	CHECK_PUB(v->advise_mr, advise_mr);
	CHECK_PUB(v->alloc_dm, alloc_dm);
	CHECK_PUB(v->alloc_null_mr, alloc_null_mr);
	CHECK_PUB(v->alloc_parent_domain, alloc_parent_domain);
	CHECK_PUB(v->alloc_td, alloc_td);
	CHECK_PUB(v->attach_counters_point_flow, attach_counters_point_flow);
	CHECK_PUB(v->create_counters, create_counters);
	CHECK_PUB(v->close_xrcd, close_xrcd);
	CHECK_PUB(v->ibv_create_flow, create_flow);
	CHECK_PUB(v->create_flow_action_esp, create_flow_action_esp);
	CHECK_PUB(v->create_qp_ex, create_qp_ex);
	CHECK_PUB(v->create_rwq_ind_table, create_rwq_ind_table);
	CHECK_PUB(v->create_srq_ex, create_srq_ex);
	CHECK_PUB(v->create_wq, create_wq);
	CHECK_PUB(v->dealloc_td, dealloc_td);
	CHECK_PUB(v->destroy_counters, destroy_counters);
	CHECK_PUB(v->ibv_destroy_flow, destroy_flow);
	CHECK_PUB(v->destroy_flow_action, destroy_flow_action);
	CHECK_PUB(v->destroy_rwq_ind_table, destroy_rwq_ind_table);
	CHECK_PUB(v->destroy_wq, destroy_wq);
	CHECK_PUB(v->free_dm, free_dm);
	CHECK_PUB(v->get_srq_num, get_srq_num);
	CHECK_PUB(v->modify_cq, modify_cq);
	CHECK_PUB(v->modify_flow_action_esp, modify_flow_action_esp);
	CHECK_PUB(v->modify_qp_rate_limit, modify_qp_rate_limit);
	CHECK_PUB(v->modify_wq, modify_wq);
	CHECK_PUB(v->open_qp, open_qp);
	CHECK_PUB(v->open_xrcd, open_xrcd);
	CHECK_PUB(v->post_srq_ops, post_srq_ops);
	CHECK_PUB(v->query_device_ex, query_device_ex);
	CHECK_PUB(v->query_rt_values, query_rt_values);
	CHECK_PUB(v->read_counters, read_counters);
	CHECK_PUB(v->reg_dm_mr, reg_dm_mr);
#if OVRDMA_OPS_V59
	CHECK_PUB(v->alloc_dmah, alloc_dmah);
	CHECK_PUB(v->dealloc_dmah, dealloc_dmah);
	CHECK_PUB(v->reg_mr_ex, reg_mr_ex);
#endif
#if OVRDMA_OPS_V62
	CHECK_PUB(v->dm_export_dmabuf_fd, dm_export_dmabuf_fd);
#endif
#if OVRDMA_OPS_V64
	CHECK_PUB(v->alloc_buf, alloc_buf);
	CHECK_PUB(v->free_buf, free_buf);
#endif
	/* public slots of struct ibv_context_ops */
	CHECK_PUB(c->alloc_mw, alloc_mw);
	CHECK_PUB(c->_compat_alloc_pd, alloc_pd);
	CHECK_PUB(c->_compat_async_event, async_event);
	CHECK_PUB(c->_compat_attach_mcast, attach_mcast);
	CHECK_PUB(c->bind_mw, bind_mw);
	CHECK_PUB(c->_compat_cq_event, cq_event);
	CHECK_PUB(c->_compat_create_ah, create_ah);
	CHECK_PUB(c->_compat_create_cq, create_cq);
	CHECK_PUB(c->_compat_create_qp, create_qp);
	CHECK_PUB(c->_compat_create_srq, create_srq);
	CHECK_PUB(c->dealloc_mw, dealloc_mw);
	CHECK_PUB(c->_compat_dealloc_pd, dealloc_pd);
	CHECK_PUB(c->_compat_dereg_mr, dereg_mr);
	CHECK_PUB(c->_compat_destroy_ah, destroy_ah);
	CHECK_PUB(c->_compat_destroy_cq, destroy_cq);
	CHECK_PUB(c->_compat_destroy_qp, destroy_qp);
	CHECK_PUB(c->_compat_destroy_srq, destroy_srq);
	CHECK_PUB(c->_compat_detach_mcast, detach_mcast);
	CHECK_PUB(c->_compat_modify_qp, modify_qp);
	CHECK_PUB(c->_compat_modify_srq, modify_srq);
	CHECK_PUB(c->poll_cq, poll_cq);
	CHECK_PUB(c->post_recv, post_recv);
	CHECK_PUB(c->post_send, post_send);
	CHECK_PUB(c->post_srq_recv, post_srq_recv);
	CHECK_PUB(c->_compat_query_qp, query_qp);
	CHECK_PUB(c->_compat_query_srq, query_srq);
	CHECK_PUB(c->_compat_reg_mr, reg_mr);
	CHECK_PUB(c->req_notify_cq, req_notify_cq);
	CHECK_PUB(c->_compat_rereg_mr, rereg_mr);
	CHECK_PUB(c->_compat_resize_cq, resize_cq);

	/* the private copy: our verbs, in order, and no guard */
	for (size_t w = 0; w < 65536 / 8; w++) {
		for (size_t g = 0; g < GUARDS; g++)
			assert_ptr_not_equal((void *)(uintptr_t)priv[w],
					     fake(1000 + g));
		if (first == SIZE_MAX && (void *)(uintptr_t)priv[w] == fake(0))
			first = w;
	}
	assert_true(first != SIZE_MAX);
	assert_true(first + NOPS <= 65536 / 8);
	for (size_t i = 0; i < NOPS; i++)
		assert_ptr_equal((void *)(uintptr_t)priv[first + i], fake(i));
	free(priv);
	free(v);
}

/* ---- device discovery ---------------------------------------------------- */

#define DEVNAME "ovrabitest"
#define ABI 7

static char root[128], uverbs[64], cdev[128];
static struct verbs_sysfs_dev *seen;
static int offered, allocated;

struct test_device {
	struct verbs_device vdev;
	uint64_t canary;
};

static bool t_match(struct verbs_sysfs_dev *sd)
{
	char path[512];

	if (strcmp(sd->ibdev_name, DEVNAME))
		return false;
	offered++;
	snprintf(path, sizeof(path), "%s/class/infiniband/%s", root, DEVNAME);
	if (strcmp(sd->sysfs_name, uverbs) || strcmp(sd->ibdev_path, path) ||
	    sd->sysfs_cdev != makedev(1, 3) || sd->node_type != IBV_NODE_CA ||
	    sd->abi_ver != ABI || sd->time_created.tv_sec == 0) {
		fprintf(stderr,
			"test: sysfs_dev fields misplaced: '%s' '%s' %lu %d "
			"%u\n",
			sd->sysfs_name, sd->ibdev_path,
			(unsigned long)sd->sysfs_cdev, (int)sd->node_type,
			sd->abi_ver);
		return false;
	}
	seen = sd;
	return true;
}

static struct verbs_device *t_alloc(struct verbs_sysfs_dev *sd)
{
	struct test_device *d = calloc(1, sizeof(*d));

	(void)sd;
	if (!d)
		return NULL;
	d->canary = 0xc0ffee;
	allocated++;
	return &d->vdev;
}

static void t_uninit(struct verbs_device *vd)
{
	free(vd);
}

static const struct verbs_device_ops t_ops = {
	.name = "ovrabitest",
	.match_min_abi_version = ABI,
	.match_max_abi_version = ABI,
	.match_device = t_match,
	.alloc_device = t_alloc,
	.uninit_device = t_uninit,
};

/* a driver whose ABI range excludes the device: never allocates */
static int narrow_allocs;

static struct verbs_device *n_alloc(struct verbs_sysfs_dev *sd)
{
	(void)sd;
	narrow_allocs++;
	return NULL;
}

static bool n_match(struct verbs_sysfs_dev *sd)
{
	return !strcmp(sd->ibdev_name, DEVNAME);
}

static const struct verbs_device_ops n_ops = {
	.name = "ovrabinarrow",
	.match_min_abi_version = ABI + 1,
	.match_max_abi_version = ABI + 2,
	.match_device = n_match,
	.alloc_device = n_alloc,
	.uninit_device = t_uninit,
};

static void put(const char *dir, const char *name, const char *text)
{
	char path[512];
	FILE *f;

	assert_true((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) <
		    sizeof(path));
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static int tree_up(void)
{
	char d[512];

	snprintf(root, sizeof(root), "/tmp/ovrabi-%d", (int)getpid());
	snprintf(uverbs, sizeof(uverbs), "uverbs-ovrabitest-%d", (int)getpid());
	snprintf(cdev, sizeof(cdev), "/dev/infiniband/%s", uverbs);
	mkdir("/dev/infiniband", 0755);
	if (symlink("/dev/null", cdev))
		return -errno;
	snprintf(d, sizeof(d),
		 "mkdir -p %s/class/infiniband_verbs/%s "
		 "%s/class/infiniband/%s/ports/1",
		 root, uverbs, root, DEVNAME);
	if (system(d))
		return -EIO;
	snprintf(d, sizeof(d), "%s/class/infiniband_verbs", root);
	put(d, "abi_version", "6\n");
	snprintf(d, sizeof(d), "%s/class/infiniband_verbs/%s", root, uverbs);
	put(d, "ibdev", DEVNAME "\n");
	put(d, "dev", "1:3\n");
	put(d, "abi_version", "7\n");
	snprintf(d, sizeof(d), "%s/class/infiniband/%s", root, DEVNAME);
	put(d, "node_type", "1: CA\n");
	put(d, "node_guid", "0200:0064:c0a8:0101\n");
	return 0;
}

static void tree_down(void)
{
	char cmd[256];

	unlink(cdev);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	if (system(cmd)) {
		/* best effort */
	}
}

static void test_device_discovery(void **state)
{
	struct ibv_device **list;
	struct ibv_device *dev = NULL;
	struct verbs_device *vd;
	int n;

	(void)state;
	if (geteuid() != 0) {
		fprintf(stderr, "test: discovery needs root "
				"(/dev/infiniband); skipped\n");
		skip();
	}
	assert_int_equal(tree_up(), 0);
	verbs_register_driver(&n_ops);
	verbs_register_driver(&t_ops);
	list = ibv_get_device_list(&n);
	if (!list && errno == ENOSYS) {
		/* RDMA netlink answered: the sysfs tree is not read here */
		tree_down();
		skip();
	}
	assert_non_null(list);
	for (int i = 0; i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), DEVNAME))
			dev = list[i];
	if (!dev || !seen) {
		fail_msg("device %s not found or not offered", DEVNAME);
		return;
	}
	assert_int_equal(offered, 1);
	assert_int_equal(allocated, 1);
	assert_int_equal(narrow_allocs, 0);
	vd = (struct verbs_device *)dev;
	assert_ptr_equal(vd->ops, &t_ops);
	assert_ptr_equal(vd->sysfs, seen);
	assert_true(atomic_load(&vd->refcount) >= 1);
	assert_int_equal(((struct test_device *)vd)->canary, 0xc0ffee);
	assert_int_equal(dev->node_type, IBV_NODE_CA);
	assert_int_equal(dev->transport_type, IBV_TRANSPORT_IB);
	assert_string_equal(dev->dev_name, uverbs);
	assert_string_equal(dev->ibdev_path, seen->ibdev_path);
	ibv_free_device_list(list);
	tree_down();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_context_ops),
		cmocka_unit_test(test_device_discovery),
	};
	char path[128];

	/* before libibverbs' first look at sysfs */
	snprintf(path, sizeof(path), "/tmp/ovrabi-%d", (int)getpid());
	setenv("SYSFS_PATH", path, 1);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
