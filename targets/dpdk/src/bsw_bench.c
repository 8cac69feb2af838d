/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The stock DPDK 22.11 table update path (rte_swx_ctl), driven the same way as
 * ours, so that `make bench-tables` can put both side by side in one run.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bsw_internal.h"

static uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

int
bsw_bench_stock_ctl(struct bsw_pipeline *bp, const char *table_name, uint32_t action_id,
		    uint32_t n, uint32_t batch, const uint32_t *checkpoints,
		    uint32_t n_checkpoints, uint64_t *ns_at)
{
	struct rte_swx_ctl_pipeline *ctl;
	struct rte_swx_table_entry e;
	uint8_t key[64], data[64];
	uint32_t i, c = 0;
	uint64_t t0;
	int status = 0;

	/* rte_swx_ctl takes over the table state of the instance: it must be a
	 * pipeline the table manager has not written to, and the manager lets
	 * go of it for good. */
	status = bsw_tables_release(bp);
	if (status)
		return status;
	ctl = rte_swx_ctl_pipeline_create(bp->inst[0].p);
	if (!ctl) {
		bsw_set_error("rte_swx_ctl_pipeline_create failed");
		return -ENOMEM;
	}
	memset(data, 0, sizeof(data));
	memset(key, 0, sizeof(key));
	memset(&e, 0, sizeof(e));
	e.key = key;
	e.action_id = action_id;
	e.action_data = data;

	t0 = now_ns();
	for (i = 0; i < n; i++) {
		uint32_t k = i + 1;

		memcpy(key, &k, sizeof(k));
		status = rte_swx_ctl_pipeline_table_entry_add(ctl, table_name, &e);
		if (status)
			break;
		if ((i + 1) % batch == 0 || i + 1 == n) {
			status = rte_swx_ctl_pipeline_commit(ctl, 1);
			if (status)
				break;
		}
		if (c < n_checkpoints && i + 1 == checkpoints[c])
			ns_at[c++] = now_ns() - t0;
	}
	rte_swx_ctl_pipeline_free(ctl);
	if (status)
		bsw_set_error("stock rte_swx_ctl add/commit failed at entry %u: %s", i,
			      strerror(-status));
	return status;
}
