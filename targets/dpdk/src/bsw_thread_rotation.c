/* SPDX-License-Identifier: Apache-2.0 */
/* A compiled pipeline's packets rotate over 4 of SWX's threads, not 16.
 *
 * An SWX pipeline keeps up to 16 packets in flight, one per thread, and
 * moves to the next thread at every yield (after rx, after a lookup that is
 * not done, after tx). Each thread has its own metadata, header storage and
 * output list, so 16 of them keep 16 sets of those lines warm in the L1
 * cache beside the tables and the packets. The exact-match lookups are one
 * step here (bsw_table_lookup.c), so nothing waits on the next thread's
 * prefetch, and fewer threads leave the cache to the rest. Measured on the
 * BNG (make bench-ab BENCH_AB_ARGS="--env BSW_SWX_THREADS=4,16", 40k
 * sessions, 64 B; three runs of 6, 8 and 6 rounds, the second on three
 * roles), 4 threads against 16: pppoe_up +1.2/+3.9/+1.2%, pppoe_down
 * -0.3/+3.6/+2.9%, lac_up +4.8/+4.3%, lac_down +4.3/+9.4%, lns_up
 * -8.5/+4.5/+9.0%, lns_down +3.6/+2.4%. 8 threads, one run: lns_up +9.6%,
 * pppoe_up +4.0%, lac_up +0.2%. A staged lookup (config table_lookup:
 * staged) yields while its prefetch is in flight, and has fewer packets to
 * cover it with here.
 *
 * DPDK wraps the thread index at RTE_SWX_PIPELINE_THREADS_MAX in two inline
 * functions of its internal header, thread_yield() and thread_yield_cond(),
 * which the generated code compiles in. The macro also sizes the pipeline's
 * thread array, so it cannot change; instead the generated code is compiled
 * against a copy of the header whose two functions wrap at BSW_SWX_THREADS
 * (the struct layouts are the library's, untouched). The instruction types
 * whose handlers yield from the library are pointed at copies compiled the
 * same way (bsw_swx_threads.h): all yields of the pipeline then wrap alike.
 * BSW_SWX_THREADS=16 (or 1, 2, 8) at pipeline build time chooses another
 * rotation; 16 compiles nothing of this. The copies include the chained
 * table step, so a build without group chaining (BSW_SWX_GROUP_CHAIN=0)
 * keeps 16 threads too: an A/B of chaining compares 4 chained threads with
 * 16 unchained ones. */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bsw_internal.h"
#include "rte_swx_pipeline_internal.h"

#define BSW_SWX_THREADS_DEFAULT 4

/* DPDK 22.11's two lines that wrap the thread index, as its header spells
 * them; anything else is left alone (and the rotation stays at 16). */
static const char *const yield_lines[] = {
	"\tp->thread_id = (p->thread_id + 1) & (RTE_SWX_PIPELINE_THREADS_MAX - 1);\n",
	"\tp->thread_id = (p->thread_id + cond) & (RTE_SWX_PIPELINE_THREADS_MAX - 1);\n",
};

uint32_t
bsw_threads_wanted(const char *spec_path, int chain)
{
	const char *v = getenv("BSW_SWX_THREADS");
	static const char *const no_copy[] = { "learner", "selector", "extern" };
	uint32_t n = BSW_SWX_THREADS_DEFAULT, i;

	if (v && *v) {
		char *end;
		unsigned long x = strtoul(v, &end, 10);

		if (*end || !x || x > RTE_SWX_PIPELINE_THREADS_MAX || (x & (x - 1))) {
			fprintf(stderr, "bsw: BSW_SWX_THREADS=%s is not a power of two up to %d: "
				"using %d\n", v, RTE_SWX_PIPELINE_THREADS_MAX,
				RTE_SWX_PIPELINE_THREADS_MAX);
			return RTE_SWX_PIPELINE_THREADS_MAX;
		}
		n = (uint32_t)x;
	}
	/* The table handler copy is the chained one; and a learner, selector
	 * or extern yields from a handler with no copy here. */
	if (!chain)
		return RTE_SWX_PIPELINE_THREADS_MAX;
	for (i = 0; i < RTE_DIM(no_copy) && n < RTE_SWX_PIPELINE_THREADS_MAX; i++)
		if (bsw_spec_has_line(spec_path, no_copy[i]) != 0)
			n = RTE_SWX_PIPELINE_THREADS_MAX;
	return n;
}

int
bsw_threads_header(const char *include_dir, const char *out_dir, uint32_t n_threads)
{
	char in_path[600], out_path[600], *text = NULL, *line = NULL;
	size_t cap = 0, size = 0;
	uint32_t found[RTE_DIM(yield_lines)] = { 0 }, i;
	FILE *in, *mem, *out;
	ssize_t len;
	int status = 0;

	snprintf(in_path, sizeof(in_path), "%s/rte_swx_pipeline_internal.h", include_dir);
	snprintf(out_path, sizeof(out_path), "%s/rte_swx_pipeline_internal.h", out_dir);
	in = fopen(in_path, "r");
	if (!in) {
		bsw_set_error("cannot read %s: %s", in_path, strerror(errno));
		return -errno;
	}
	mem = open_memstream(&text, &size);
	if (!mem) {
		fclose(in);
		return -ENOMEM;
	}
	while ((len = getline(&line, &cap, in)) != -1) {
		for (i = 0; i < RTE_DIM(yield_lines); i++)
			if (!strcmp(line, yield_lines[i]))
				break;
		if (i < RTE_DIM(yield_lines)) {
			found[i]++;
			fprintf(mem, "\tp->thread_id = (p->thread_id + %s) & (%u - 1);"
				" /* bsw_thread_rotation.c */\n", i ? "cond" : "1", n_threads);
		} else {
			fwrite(line, 1, (size_t)len, mem);
		}
	}
	free(line);
	fclose(in);
	if (fclose(mem))
		status = -EIO;
	for (i = 0; i < RTE_DIM(yield_lines) && !status; i++)
		if (found[i] != 1) {
			bsw_set_error("%s: the thread yield line %u occurs %u times, not once: not the "
				      "DPDK 22.11 header the thread rotation was written for",
				      in_path, i, found[i]);
			status = -ENOTSUP;
		}
	if (!status && mkdir(out_dir, 0755) && errno != EEXIST) {
		bsw_set_error("cannot create %s: %s", out_dir, strerror(errno));
		status = -errno;
	}
	/* Written to a name of its own and renamed, as the compiled library is:
	 * another build in the same work_dir may be reading it. */
	if (!status) {
		char tmp_path[640];

		snprintf(tmp_path, sizeof(tmp_path), "%s.%d.tmp", out_path, (int)getpid());
		out = fopen(tmp_path, "w");
		if (!out || fwrite(text, 1, size, out) != size) {
			bsw_set_error("cannot write %s: %s", tmp_path, strerror(errno));
			status = -EIO;
		}
		if (out && fclose(out) && !status) {
			bsw_set_error("cannot write %s: %s", tmp_path, strerror(errno));
			status = -EIO;
		}
		if (!status && rename(tmp_path, out_path)) {
			bsw_set_error("rename %s: %s", tmp_path, strerror(errno));
			status = -EIO;
		}
		if (status)
			unlink(tmp_path);
	}
	free(text);
	return status;
}

/* Every instruction type whose handler yields, with its copy compiled into
 * the pipeline's library (bsw_swx_threads.h). */
static const struct {
	enum instruction_type type;
	const char *name;
} handlers[] = {
	{ INSTR_RX, "bsw_instr_rx" },
	{ INSTR_TX, "bsw_instr_tx" },
	{ INSTR_TX_I, "bsw_instr_tx_i" },
	{ INSTR_DROP, "bsw_instr_drop" },
	{ INSTR_HDR_EMIT_TX, "bsw_instr_hdr_emit_tx" },
	{ INSTR_HDR_EMIT2_TX, "bsw_instr_hdr_emit2_tx" },
	{ INSTR_HDR_EMIT3_TX, "bsw_instr_hdr_emit3_tx" },
	{ INSTR_HDR_EMIT4_TX, "bsw_instr_hdr_emit4_tx" },
	{ INSTR_HDR_EMIT5_TX, "bsw_instr_hdr_emit5_tx" },
	{ INSTR_HDR_EMIT6_TX, "bsw_instr_hdr_emit6_tx" },
	{ INSTR_HDR_EMIT7_TX, "bsw_instr_hdr_emit7_tx" },
	{ INSTR_HDR_EMIT8_TX, "bsw_instr_hdr_emit8_tx" },
	{ INSTR_TABLE_AF, "bsw_instr_table_af" },
};

int
bsw_threads_install(struct rte_swx_pipeline *p)
{
	instr_exec_t funcs[RTE_DIM(handlers)];
	uint32_t i;

	/* After build_from_lib every table instruction is INSTR_TABLE_AF; the
	 * other yielding types have no copy (bsw_threads_wanted keeps their
	 * programs at 16 threads, so finding one here is a bug). */
	for (i = 0; i < p->n_instructions; i++)
		switch (p->instructions[i].type) {
		case INSTR_TABLE:
		case INSTR_SELECTOR:
		case INSTR_LEARNER:
		case INSTR_LEARNER_AF:
		case INSTR_EXTERN_OBJ:
		case INSTR_EXTERN_FUNC:
			bsw_set_error("instruction %u (type %d) yields from DPDK's library, which "
				      "the thread rotation has no copy of", i, p->instructions[i].type);
			return -ENOTSUP;
		default:
			break;
		}
	for (i = 0; i < RTE_DIM(handlers); i++) {
		funcs[i] = (instr_exec_t)dlsym(p->lib, handlers[i].name);
		if (!funcs[i]) {
			bsw_set_error("the compiled pipeline has no %s: built without the thread "
				      "rotation it was cached for?", handlers[i].name);
			return -ENOENT;
		}
	}
	for (i = 0; i < RTE_DIM(handlers); i++)
		p->instruction_table[handlers[i].type] = funcs[i];
	return 0;
}

static uint32_t
threads_own_handlers(struct rte_swx_pipeline *p)
{
	uint32_t i, n = 0;

	for (i = 0; i < RTE_DIM(handlers) && p->lib; i++) {
		void *f = dlsym(p->lib, handlers[i].name);

		n += f && p->instruction_table[handlers[i].type] == (instr_exec_t)f;
	}
	return n;
}

int
bsw_pipeline_thread_rotation(struct bsw_pipeline *bp, uint32_t *n_threads, uint32_t *n_own_handlers)
{
	*n_threads = bp->n_threads;
	*n_own_handlers = threads_own_handlers(bp->inst[0].p);
	return 0;
}
