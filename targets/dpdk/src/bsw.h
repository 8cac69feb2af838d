/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bsw: the BNG switch library. A small DPDK library that runs any program
 * compiled by p4c-dpdk on the DPDK 22.11 SWX pipeline:
 *   - EAL, mempool, ports (ethdev over af_packet/tap/PCI, rings for the CPU port),
 *   - pipeline build through rte_swx_pipeline_codegen() + gcc + build_from_lib,
 *   - N worker lcores, each running its own pipeline instance,
 *   - a table manager that replaces rte_swx_ctl for table writes (O(1) per
 *     exact-match entry, double-buffered, one consistent update for all
 *     instances),
 *   - packet-in/out through the CPU port rings.
 *
 * It is driven by the P4Runtime server (Python, through ctypes): that is why
 * the interface is flat structs and raw byte buffers. Every function returns 0
 * or a negative errno and, where it helps, fills bsw_last_error().
 */
#ifndef BSW_H
#define BSW_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define BSW_NAME_SIZE 64
#define BSW_MAX_INSTANCES 16

/* ---- process ---- */
const char *bsw_last_error(void);
int bsw_eal_init(int argc, char **argv);
int bsw_mempool_create(const char *name, uint32_t n_mbufs, uint32_t mbuf_size);
/* Probe a vdev (e.g. "net_af_packet0,iface=veth0,qpairs=2") or PCI device, then
 * configure n_queues rx/tx queues on it and start it. */
int bsw_ethdev_open(const char *devargs, const char *dev_name, uint32_t n_queues,
		    uint32_t mtu, const char *mempool);
int bsw_ring_create(const char *name, uint32_t size);
uint32_t bsw_n_worker_lcores(void);

/* Software distribution of one port over the pipeline instances
 * (bsw_distributor.c): an I/O thread between the port's single queue pair
 * and, per instance k, the rings <ring_prefix>k_rx / <ring_prefix>k_tx.
 * Returns the distributor's index for bsw_distributor_stats. */
struct bsw_distributor_stats {
	uint64_t rx;			/* frames read from the port */
	uint64_t rx_dropped;		/* an instance's input ring was full */
	uint64_t tx;			/* frames the port took */
	uint64_t tx_dropped;		/* the port refused them */
	uint64_t to_instance[BSW_MAX_INSTANCES];
};
int bsw_distributor_start(uint16_t port_id, const char *ring_prefix, uint32_t n_instances,
			  uint32_t idle_us);
int bsw_distributor_stats(uint32_t idx, struct bsw_distributor_stats *out);
void bsw_distributors_stop(void);
uint32_t bsw_flow_hash(const uint8_t *frame, uint32_t len);

/* ---- pipeline ---- */
struct bsw_pipeline;

enum bsw_build_mode {
	BSW_BUILD_COMPILED = 0,		/* codegen + gcc; interpreted if that fails */
	BSW_BUILD_INTERPRETED = 1,	/* DPDK's instruction interpreter */
	BSW_BUILD_COMPILED_ONLY = 2,	/* codegen + gcc, no fallback */
};

/* Build n_instances pipelines from one .spec, each instance with its own I/O
 * spec text. Compiled: codegen into work_dir, gcc with the DPDK internal
 * headers found in include_dir (Debian source package of the same DPDK
 * version), rte_swx_pipeline_build_from_lib(). Interpreted: DPDK's spec
 * parser and rte_swx_pipeline_build(). *used_mode tells which route ran. */
int bsw_pipeline_build(const char *spec_path, const char *work_dir,
		       const char *include_dir, uint32_t mode, uint32_t n_instances,
		       const char **iospec_texts, struct bsw_pipeline **out,
		       uint32_t *used_mode);
void bsw_pipeline_free(struct bsw_pipeline *bp);
/* Whether DPDK takes the spec, checked the way its codegen builds a
 * pipeline from it (every declaration and instruction), without table
 * memory, ports or a compiler: P4Runtime's VERIFY. */
int bsw_spec_check(const char *spec_path);

/* Workers: instance i runs on the i-th worker lcore. idle_us is the longest
 * sleep of the idle back-off (0: pure polling); nice is the workers' own
 * scheduling priority (0: unchanged, negative: ahead of the control plane). */
int bsw_workers_start(struct bsw_pipeline *bp, uint32_t idle_us, int32_t nice);
int bsw_workers_stop(struct bsw_pipeline *bp);

/* ---- introspection (mirrors rte_swx_ctl info, flattened for ctypes) ---- */
struct bsw_pipeline_info {
	uint32_t n_ports_in, n_ports_out, n_actions, n_tables, n_regarrays, n_metarrays;
};
struct bsw_table_info {
	char name[BSW_NAME_SIZE];
	uint32_t n_match_fields, n_actions, size;
	uint32_t is_exact;	/* exact-match table: incremental updates */
	uint32_t key_size;	/* bytes of the key buffer a table entry carries */
	uint32_t action_data_size;
	uint32_t default_action_is_const;
};
struct bsw_match_field_info {
	uint32_t match_type;	/* 0 wildcard, 1 lpm, 2 exact (enum rte_swx_table_match_type) */
	uint32_t is_header;	/* header: network byte order; metadata: host order */
	uint32_t n_bits;
	uint32_t byte_offset;	/* offset inside the entry key buffer */
};
struct bsw_action_info {
	char name[BSW_NAME_SIZE];
	uint32_t n_args;
};
struct bsw_action_arg_info {
	char name[BSW_NAME_SIZE];
	uint32_t n_bits;
	uint32_t is_network_byte_order;
};
struct bsw_table_action_info {
	uint32_t action_id;
	uint32_t for_entries;
	uint32_t for_default;
};
struct bsw_array_info {
	char name[BSW_NAME_SIZE];
	uint32_t size;
};

int bsw_pipeline_info(struct bsw_pipeline *bp, struct bsw_pipeline_info *info);
int bsw_table_info(struct bsw_pipeline *bp, uint32_t table_id, struct bsw_table_info *info);
int bsw_match_field_info(struct bsw_pipeline *bp, uint32_t table_id, uint32_t field_id,
			 struct bsw_match_field_info *info);
int bsw_table_action_info(struct bsw_pipeline *bp, uint32_t table_id, uint32_t i,
			  struct bsw_table_action_info *info);
int bsw_action_info(struct bsw_pipeline *bp, uint32_t action_id, struct bsw_action_info *info);
int bsw_action_arg_info(struct bsw_pipeline *bp, uint32_t action_id, uint32_t arg_id,
			struct bsw_action_arg_info *info);
int bsw_regarray_info(struct bsw_pipeline *bp, uint32_t id, struct bsw_array_info *info);
int bsw_metarray_info(struct bsw_pipeline *bp, uint32_t id, struct bsw_array_info *info);

/* ---- table manager ---- */
enum bsw_op_kind {
	BSW_OP_ADD = 0,		/* exact table: add or overwrite an entry */
	BSW_OP_DEL = 1,		/* exact table: delete an entry */
	BSW_OP_DEFAULT = 2,	/* any table: set the default action */
	BSW_OP_REBUILD = 3,	/* wildcard table: replace all entries (entries[]) */
};

struct bsw_entry {
	const uint8_t *key;		/* table key_size bytes */
	const uint8_t *key_mask;	/* wildcard tables only; NULL: all bits */
	uint32_t priority;		/* wildcard tables: 0 is the highest */
	uint32_t action_id;
	const uint8_t *action_data;	/* table action_data_size bytes (zero padded) */
};

struct bsw_op {
	uint32_t kind;
	uint32_t table_id;
	struct bsw_entry entry;		/* ADD, DEL (key only), DEFAULT (action) */
	/* ADD over an existing key: the entry as it was, so that a failed batch
	 * can be rolled back; NULL key when the ADD inserts a new key. */
	struct bsw_entry undo;
	const struct bsw_entry *entries;	/* REBUILD */
	uint32_t n_entries;			/* REBUILD */
};

/* Apply a batch as one update visible to the data plane at once, on every
 * instance. On failure nothing of the batch is visible, *n_done tells which op
 * failed, and the tables are as before. */
int bsw_table_commit(struct bsw_pipeline *bp, const struct bsw_op *ops, uint32_t n_ops,
		     uint32_t *n_done);

/* bsw_table_commit() for a batch serialized into one byte string, which is
 * what the Python binding sends: building a ctypes bsw_op and its entries
 * per update cost as much as checking the update. Host byte order, no
 * padding. Each op is
 *	u32 kind, u32 table_id, u32 n_entries (REBUILD; 0 otherwise)
 * followed by n_entries packed entries for a REBUILD and two (entry, undo)
 * for any other op. A packed entry is
 *	u32 flags (BSW_PACKED_*), u32 priority, u32 action_id,
 *	key (table key_size bytes) if BSW_PACKED_KEY,
 *	key mask (key_size bytes) if BSW_PACKED_MASK,
 *	action data (table action_data_size bytes) if BSW_PACKED_DATA;
 * an absent field is a NULL pointer in the bsw_entry, and an entry with no
 * flags is an absent undo. A buffer that does not hold exactly n_ops ops is
 * refused with -EINVAL before anything is applied. */
#define BSW_PACKED_KEY	1u
#define BSW_PACKED_MASK	2u
#define BSW_PACKED_DATA	4u
int bsw_table_commit_packed(struct bsw_pipeline *bp, const uint8_t *buf, size_t len,
			    uint32_t n_ops, uint32_t *n_done);

/* The index p4c-dpdk's direct counters and meters use for the entry of an
 * exact-match table with this key (table key_size bytes): what the SWX
 * `entryid` instruction reads when a packet hits it, 1 + the entry's slot in
 * the table. Every instance and both state arrays hold the same slot for an
 * entry, because the same ops are applied to all of them in the same order.
 * Returns -ENOENT when the key is not in the table, -EINVAL for a table that
 * is not exact-match. Not safe against a concurrent bsw_table_commit(). */
int bsw_table_entry_index(struct bsw_pipeline *bp, uint32_t table_id, const uint8_t *key,
			  uint64_t *index);
/* The entry of an exact-match table with this key, as the data plane of
 * the first instance finds it: its action id, its action data (the
 * table's action data size, the largest of its actions' arguments, into
 * action_data) and its index as above; NULL skips any of them. -ENOENT
 * when the key is not in the table. Not safe against a concurrent
 * bsw_table_commit(). */
int bsw_table_entry_read(struct bsw_pipeline *bp, uint32_t table_id, const uint8_t *key,
			 uint64_t *action_id, uint8_t *action_data, uint64_t *index);
/* The type that holds table table_id: "line" (bsw_table_line_em.c),
 * "index" (bsw_table_index.c), "lpm32" (bsw_table_lpm.c), "exact" (DPDK's
 * exact match), "dpdk" (another of DPDK's) or "stub"; NULL for no table. */
const char *bsw_table_type(struct bsw_pipeline *bp, uint32_t table_id);

/* Exact-match tables looked up in one step (1) or in SWX's prefetching
 * stages with a packet switch between them (0, DPDK's default); see
 * bsw_table_lookup.c. Only before the workers start. */
int bsw_table_lookup_set(struct bsw_pipeline *bp, int one_step);
/* For tests: looks each of n_keys keys (key_size bytes each, back to back)
 * up in exact-match table table_id of the first instance with DPDK's
 * one-step lookup and with the switch's (bsw_table_em_lookup.c); counts the
 * keys DPDK found and those whose results differ. -ENOTSUP where the table
 * has no lookup of the switch's. */
int bsw_table_em_compare(struct bsw_pipeline *bp, uint32_t table_id, const uint8_t *keys,
			 uint32_t n_keys, uint32_t *n_hits, uint32_t *n_differ);

/* The SWX threads the compiled pipeline's packets rotate over (4 unless
 * BSW_SWX_THREADS said otherwise at build time; DPDK's 16 when interpreted)
 * and how many of the yielding instruction handlers point at the copies in
 * its library (bsw_thread_rotation.c): all of them, or none at 16. */
int bsw_pipeline_thread_rotation(struct bsw_pipeline *bp, uint32_t *n_threads,
				 uint32_t *n_own_handlers);

/* ---- counters, meters, registers (summed / applied over instances) ---- */
int bsw_regarray_read(struct bsw_pipeline *bp, const char *name, uint32_t index,
		      uint64_t *value);
int bsw_regarray_write(struct bsw_pipeline *bp, const char *name, uint32_t index,
		       uint64_t value);
/* The name of the DPDK meter profile of these parameters: 'p' and 43
 * characters holding all their bits, so two configurations never share one. */
#define BSW_METER_PROFILE_NAME_SIZE 45
void bsw_meter_profile_name(char name[BSW_METER_PROFILE_NAME_SIZE], uint64_t cir, uint64_t pir,
			    uint64_t cbs, uint64_t pbs);
/* Two-rate three-colour meter (RFC 2698) profile; rates in bytes/s, bursts in bytes. */
int bsw_meter_set(struct bsw_pipeline *bp, const char *metarray, uint32_t index,
		  uint64_t cir, uint64_t pir, uint64_t cbs, uint64_t pbs);
int bsw_meter_reset(struct bsw_pipeline *bp, const char *metarray, uint32_t index);
/* What the meter has coloured since it was last set or reset (DPDK clears
 * them then), by colour (rte_color: green, yellow, red), over instances. */
int bsw_meter_stats_read(struct bsw_pipeline *bp, const char *metarray, uint32_t index,
			 uint64_t n_pkts[3], uint64_t n_bytes[3]);

/* ---- ports statistics ---- */
int bsw_port_stats(struct bsw_pipeline *bp, uint32_t port_id, uint64_t *rx_pkts,
		   uint64_t *rx_bytes, uint64_t *tx_pkts, uint64_t *tx_bytes,
		   uint64_t *tx_drops);

/* ---- CPU port ---- */
/* Receive one packet sent by any instance to the CPU port (rings named
 * "<prefix><i>_in"). Blocks up to timeout_us. Returns its length, 0 on
 * timeout, or a negative errno; -ENOSPC when buf is too small. */
int bsw_packet_in_recv(struct bsw_pipeline *bp, uint8_t *buf, uint32_t buf_size,
		       uint32_t timeout_us);
/* Inject one packet into instance 0 through the CPU port's reader ring. */
int bsw_packet_out_send(struct bsw_pipeline *bp, const uint8_t *data, uint32_t len);
int bsw_cpu_port_config(struct bsw_pipeline *bp, const char *ring_prefix, const char *mempool);

/* ---- packet channel (bsw_packet_channel.c) ---- */
/* A field of the packet_in or packet_out header: its P4Info metadata id and
 * where it sits in the header (bits from the header's first bit, MSB first). */
struct bsw_channel_field {
	uint32_t id;
	uint32_t bit_offset;
	uint32_t width;		/* 1..64 */
};
#define BSW_CHANNEL_MAX_FIELDS 32
enum {
	BSW_CHANNEL_PACKET_IN,		/* sent to the controller */
	BSW_CHANNEL_PACKET_IN_DROPS,	/* shorter than the packet_in header, too long, or unsent at the end */
	BSW_CHANNEL_PACKET_OUT,		/* injected */
	BSW_CHANNEL_PACKET_OUT_ERRORS,	/* malformed, unknown field, value too wide, ring full */
	BSW_CHANNEL_N_STATS
};
/* Serve the connected SOCK_SEQPACKET socket fd from a thread of its own:
 * every packet-in goes to it (bsw_packet_in_recv then returns none) and
 * every message from it is injected as a packet-out. The caller keeps the
 * socket and closes it after bsw_packet_channel_stop. */
int bsw_packet_channel_start(struct bsw_pipeline *bp, int fd,
			     const struct bsw_channel_field *in, uint32_t n_in, uint32_t in_bytes,
			     const struct bsw_channel_field *out, uint32_t n_out, uint32_t out_bytes);
/* Stop serving (joins the thread); nothing if none is served.
 * bsw_pipeline_free calls it. */
void bsw_packet_channel_stop(struct bsw_pipeline *bp);
/* Copies the served channel's counters into stats[BSW_CHANNEL_N_STATS]
 * (zeros when none); returns 1 while its thread serves, 0 once the peer
 * closed or failed, or when none is served. */
int bsw_packet_channel_stats(struct bsw_pipeline *bp, uint64_t *stats);

/* ---- benchmark helpers (stock rte_swx_ctl path, for comparison) ---- */
/* Insert n entries with consecutive 32-bit keys into an exact table through
 * rte_swx_ctl (add + commit every batch entries); writes the elapsed
 * nanoseconds after each checkpoint count into ns_at[]. */
int bsw_bench_stock_ctl(struct bsw_pipeline *bp, const char *table_name, uint32_t action_id,
			uint32_t n, uint32_t batch, const uint32_t *checkpoints,
			uint32_t n_checkpoints, uint64_t *ns_at);
/* bench_bng.py --hand-written: the workers run a hand-written path of the
 * bng program ("pppoe_up" or "lns_up") over this pipeline's ports, tables,
 * meters and counters, polling input port `port`, instead of the pipeline;
 * "" puts the pipeline back. Only while no worker runs. See
 * bsw_bench_hand_path.c. */
int bsw_bench_hand_path_set(struct bsw_pipeline *bp, const char *role, uint32_t port);
/* Workers started from now on run the program as the straight-line code in
 * lib_path (generated by bng_switch/straight_codegen.py, compiled by the
 * caller), which checks that it fits this pipeline. See bsw_straight.c. */
int bsw_straight_load(struct bsw_pipeline *bp, const char *lib_path);

#ifdef __cplusplus
}
#endif
#endif
