/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Straight-line execution (bng_switch/straight_codegen.py): a library
 * generated from the program's spec whose bsw_straight_run() the workers
 * call in place of rte_swx_pipeline_run(), over the same pipeline's ports,
 * tables, register and meter arrays. The library checks that the pipeline
 * is the one it was generated for before it is used.
 */
#include <dlfcn.h>
#include <errno.h>
#include <string.h>

#include "bsw_internal.h"

typedef int (*straight_check_t)(struct rte_swx_pipeline *p, char *err, size_t err_size);

int
bsw_straight_load(struct bsw_pipeline *bp, const char *lib_path)
{
	straight_check_t check;
	bsw_straight_run_t run;
	char err[256] = "";
	void *lib;
	uint32_t k;

	if (bp->workers_started) {
		bsw_set_error("straight-line execution can be set only while no worker runs");
		return -EBUSY;
	}
	lib = dlopen(lib_path, RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		bsw_set_error("dlopen %s: %s", lib_path, dlerror());
		return -EINVAL;
	}
	check = (straight_check_t)dlsym(lib, "bsw_straight_check");
	run = (bsw_straight_run_t)dlsym(lib, "bsw_straight_run");
	if (!check || !run) {
		bsw_set_error("%s: not a straight-line pipeline library", lib_path);
		dlclose(lib);
		return -EINVAL;
	}
	for (k = 0; k < bp->n_instances; k++)
		if (check(bp->inst[k].p, err, sizeof(err))) {
			bsw_set_error("%s does not fit this pipeline: %s", lib_path, err);
			dlclose(lib);
			return -EINVAL;
		}
	for (k = 0; k < bp->n_instances; k++)
		bp->workers[k].straight_run = run;
	/* kept open for the pipeline's life: the workers may run it */
	return 0;
}
