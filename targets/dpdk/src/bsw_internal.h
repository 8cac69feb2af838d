/* SPDX-License-Identifier: Apache-2.0 */
/* Shared between the bsw modules; not part of the library interface. */
#ifndef BSW_INTERNAL_H
#define BSW_INTERNAL_H

#include <stdint.h>
#include <stdio.h>
#include <rte_ring.h>
#include <rte_mempool.h>
#include <rte_swx_pipeline.h>
#include <rte_swx_ctl.h>
#include <rte_swx_table.h>
#include <rte_swx_table_em.h>
#include <rte_spinlock.h>

#include "bsw.h"
#include "bsw_straight_env.h"

void bsw_set_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

typedef void (*bsw_straight_run_t)(struct rte_swx_pipeline *p, const struct bsw_straight_env *env);

/* One worker's progress, read by the table manager to know when no packet can
 * still hold a table state that was just replaced. */
struct bsw_worker {
	struct rte_swx_pipeline *p;
	uint32_t lcore_id;
	uint32_t idle_us;
	int32_t nice;
	struct bsw_rx_backoff *rx_backoff;	/* its instance's (bsw_rx_backoff.c) */
	const struct bsw_port_rx *frame_rx;	/* its instance's frame_length_ports */
	volatile uint64_t epoch;	/* incremented after every pipeline run */
	volatile uint32_t idle;		/* 1: sleeping, no packet in flight */
	volatile uint32_t running;
	volatile uint32_t stop;
	uint32_t launched;	/* on lcore_id (which may be 0) until waited for */
	struct bsw_hand_path *hand_path;	/* set: runs it instead of the pipeline (bench only) */
	/* set: the program as straight-line code (bsw_straight.c), run instead */
	bsw_straight_run_t straight_run;
};

struct bsw_hand_path;
/* bsw_bench_hand_path.c: the worker's loop over w->hand_path until w->stop. */
void bsw_hand_path_run(struct bsw_worker *w);

/* Per-table parameters the table objects were created with. */
struct bsw_table {
	struct rte_swx_table_ops ops;
	struct rte_swx_table_params params;
	char args[64];
	int is_stub;
	int is_exact;
	uint32_t action_data_size;
	uint32_t n_match_fields;
	uint32_t first_offset;	/* bit offset of the first key field */
	/* A table the switch implements itself (bsw_table_lpm.c,
	 * bsw_table_index.c): ops are ours, pipeline_ops the type the pipeline
	 * built its first object with. */
	int is_own;
	struct rte_swx_table_ops pipeline_ops;
	/* Per action id of the pipeline (n_actions): BSW_ACTION_FOR_ENTRIES
	 * and/or BSW_ACTION_FOR_DEFAULT where the table has that action. A
	 * data plane that called an action of another table, or one past the
	 * pipeline's, would run another table's code or jump through memory
	 * past p->action_funcs. */
	uint8_t *action_use;
	uint32_t n_actions;
};

/* Whether the data plane looks table bt up in DPDK's exact-match table type
 * (the type whose lookup bsw_table_lookup.c switches between one step and
 * stages, and whose objects bsw_table_em_lookup.c reads). */
static inline int
bsw_table_is_dpdk_em(const struct bsw_table *bt)
{
	return !bt->is_stub && bt->is_exact && bt->ops.lkp == rte_swx_table_exact_match_ops.lkp;
}

/* bsw_table_em_lookup.c: a one-step lookup of DPDK's exact-match table
 * object obj of table bt with its key size a constant, or NULL where the
 * table (another type, its own hash, a key over 32 bytes) or the object
 * does not allow it. */
rte_swx_table_lookup_t bsw_table_em_fast(const struct bsw_table *bt, const void *obj);
/* Those lookups by key size (0 to BSW_EM_KEY_SIZE_MAX, NULL for 0), which
 * the straight-line code recognises to inline them (bsw_swx_em.h). */
rte_swx_table_lookup_t const *bsw_table_em_lookups(void);

#define BSW_ACTION_FOR_ENTRIES 1
#define BSW_ACTION_FOR_DEFAULT 2

struct bsw_instance {
	struct rte_swx_pipeline *p;
	/* Two table state arrays: the one the data plane reads (active) and the
	 * standby that the manager writes; they swap on commit. */
	struct rte_swx_table_state *active;
	struct rte_swx_table_state *standby;
	struct rte_ring *cpu_in;	/* pipeline -> controller */
	struct rte_ring *cpu_out;	/* controller -> pipeline */
	/* the receives beneath the frame-length prelude's wrappers, by input
	 * port (bsw_frame_length.c); NULL without the prelude */
	struct bsw_port_rx *frame_length_ports;
	struct bsw_rx_backoff *rx_backoff;	/* wrapped input ports (bsw_rx_backoff.c) */
};

struct bsw_pipeline {
	uint32_t n_instances;
	struct bsw_instance inst[BSW_MAX_INSTANCES];
	struct bsw_worker workers[BSW_MAX_INSTANCES];
	uint32_t n_tables, n_states;	/* n_states: tables + selectors + learners */
	struct bsw_table *tables;
	struct rte_mempool *pktmbuf_pool;	/* packet-out buffers */
	uint32_t rr_next;		/* packet-in: next instance to poll */
	/* The CPU rings have a single consumer and a single producer; the
	 * server's threads and the packet channel take turns. */
	rte_spinlock_t cpu_in_lock, cpu_out_lock;
	struct bsw_packet_channel *channel;	/* bsw_packet_channel.c, or NULL */
	int workers_started;
	int released;		/* tables handed to rte_swx_ctl (benchmark) */
	int no_index_tables;	/* DPDK's exact type only (bsw_pipeline.c: index_tables_wanted) */
	int no_line_em_tables;	/* no line tables either (bsw_pipeline.c: line_em_tables_wanted) */
	uint32_t n_threads;	/* SWX threads its packets rotate over (bsw_thread_rotation.c) */
};

int bsw_tables_init(struct bsw_pipeline *bp);
void bsw_tables_free(struct bsw_pipeline *bp);
/* Drop the standby arrays: someone else (rte_swx_ctl) manages the tables now.
 * -ENOMEM when an empty table of the pipeline's type cannot be created. */
int bsw_tables_release(struct bsw_pipeline *bp);
void bsw_workers_quiesce(struct bsw_pipeline *bp);

/* Receive back-off (bsw_rx_backoff.c). enable: prepare it for the
 * instance's input ports (as they are then, beneath the frame-length
 * prelude's wrappers where there are some: so call it after those); set,
 * with the workers stopped: wrap the ports so they skip up to max_skip
 * tries after empty receives, or unwrap them (0); reset: every port tried
 * again from now. */
struct bsw_rx_backoff;
int bsw_rx_backoff_enable(struct bsw_instance *inst);
void bsw_rx_backoff_set(struct bsw_rx_backoff *b, uint32_t max_skip);
void bsw_rx_backoff_reset(struct bsw_rx_backoff *b);

/* The next packet-in from any instance's CPU ring (round robin), or NULL. */
struct rte_mbuf *bsw_cpu_in_dequeue(struct bsw_pipeline *bp);

/* bsw_pipeline.c: 1 when a line of the spec starts with the blank-separated
 * words (tokens as DPDK's spec parser splits them, after an instruction's
 * label), 0 when none does, -1 when the spec cannot be read. */
int bsw_spec_has_line(const char *spec_path, const char *words);
/* Frame length prelude (bsw_frame_length.c): 1 when the spec declares it. */
int bsw_spec_wants_frame_length(const char *spec_path);
/* Wrap the instance's input ports so each frame gets the prelude. */
int bsw_frame_length_enable(struct bsw_instance *inst);

/* bsw_exact_access_fence.c: copies generated pipeline C from in to out with
 * compiler fences around the DPDK instructions `header` (the text of
 * bsw_swx_exact_access.h) does not replace; *n_fenced counts them. */
int bsw_exact_access_fence(const char *header, FILE *in, FILE *out, uint32_t *n_fenced);
/* bsw_group_chain.c: copies generated pipeline C from in to out with a
 * BSW_CHAIN(p) call at each hand-over to the next instruction group; sets
 * *n_chained to their number. The _direct form calls a group compiled in
 * the same code by its name instead, and inlines the groups called from one
 * place only. */
int bsw_group_chain(FILE *in, FILE *out, uint32_t *n_chained);
int bsw_group_chain_direct(FILE *in, FILE *out, uint32_t *n_chained);

/* bsw_thread_rotation.c */
uint32_t bsw_threads_wanted(const char *spec_path, int chain);
int bsw_threads_header(const char *include_dir, const char *out_dir, uint32_t n_threads);
struct rte_swx_pipeline;
int bsw_threads_install(struct rte_swx_pipeline *p);

/* bsw_port_reader_free.c: frees what the ring and ethdev readers still
 * hold and empties their bursts, before rte_swx_pipeline_free(); returns
 * how many ring or ethdev readers failed its checks (left to DPDK's free as
 * they are); ports of other types are not its business. */
uint32_t bsw_port_readers_release(struct rte_swx_pipeline *p);
/* bsw_emit_run.c: copies generated pipeline C from in to out with each run
 * of two or more consecutive emits (the last perhaps fused with tx) as one
 * call of bsw_swx_emit.h; sets *n_runs to their number. */
int bsw_emit_run(FILE *in, FILE *out, uint32_t *n_runs);

/* Table types of the switch's own, put in place of the pipeline's by the
 * table manager (bsw_table.c) before its standby arrays are made and
 * before any packet. bsw_table_lpm.c: 32-bit LPM tables as rte_lpm
 * (DIR-24-8) in place of DPDK's ACL-based wildcard type, eligible with
 * one 32-bit LPM field in metadata. bsw_table_index.c: exact tables on one
 * small id as arrays, eligible with one exact 1-, 2- or 4-byte metadata
 * field and a size of at most BSW_INDEX_MAX_SLOTS. */
extern const struct rte_swx_table_ops bsw_lpm32_table_ops;
int bsw_lpm32_eligible(struct rte_swx_pipeline *p, uint32_t table_id, uint32_t n_match_fields);
#define BSW_INDEX_MAX_SLOTS 4096
extern const struct rte_swx_table_ops bsw_index_table_ops;
int bsw_index_eligible(struct rte_swx_pipeline *p, uint32_t table_id, uint32_t n_match_fields,
		       uint32_t size);
/* bsw_table_line_em.c: large exact tables with whole entries in 64-byte
 * buckets, eligible with at least BSW_LINE_EM_MIN_KEYS entries, exact
 * fields that fill the key's span of at most BSW_EM_KEY_SIZE_MAX bytes, no
 * hash of the table's own, and two entries (key, 2-byte tag, action data
 * of key_size and action_data_size bytes) to a line. */
#define BSW_LINE_EM_MIN_KEYS 0x4000
extern const struct rte_swx_table_ops bsw_line_em_table_ops;
int bsw_line_em_eligible(struct rte_swx_pipeline *p, uint32_t table_id, uint32_t n_match_fields,
			 uint32_t size, uint32_t key_size, uint32_t action_data_size);

#endif
