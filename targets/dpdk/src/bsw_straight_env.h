/* SPDX-License-Identifier: Apache-2.0 */
/* What a straight-line run loop (bng_switch/straight_codegen.py, which puts
 * this file's text into the code it generates) gets from its worker
 * (bsw_worker.c): when to stop, its epoch and idle flag, how long it may
 * sleep when idle (0: never), the receive back-off's reset before each
 * probe while idle, and the switch's exact-match lookup function for each
 * key size (bsw_table_em_lookup.c; NULL where it has none) and the index
 * table's (bsw_table_index.c), the line table's (bsw_table_line_em.c) and
 * the LPM table's (bsw_table_lpm.c), so that the run loop can tell a table
 * it may look up inline (bsw_swx_em.h, bsw_swx_index.h, bsw_swx_line_em.h,
 * bsw_swx_lpm.h); and, where the spec has the frame-length
 * prelude, each input port's receive beneath the prelude's wrapper
 * (bsw_frame_length.c), which the run loop calls itself so that it can make
 * the prelude where the program reads it, without the wrapper's call and
 * its write in front of the frame. */
#ifndef BSW_STRAIGHT_ENV_H
#define BSW_STRAIGHT_ENV_H

#include <stdint.h>

#include <rte_swx_port.h>
#include <rte_swx_table.h>

/* An input port's receive: as the pipeline's port_in_runtime holds it. */
struct bsw_port_rx {
	rte_swx_port_in_pkt_rx_t pkt_rx;
	void *obj;
};

struct bsw_straight_env {
	volatile uint32_t *stop;
	volatile uint64_t *epoch;
	volatile uint32_t *idle;
	uint32_t idle_us;
	void (*rx_reset)(void *arg);
	void *rx_reset_arg;
	rte_swx_table_lookup_t const *em_lookups;	/* by key size, 0 to BSW_EM_KEY_SIZE_MAX */
	rte_swx_table_lookup_t index_lookup;
	rte_swx_table_lookup_t line_em_lookup;
	rte_swx_table_lookup_t lpm32_lookup;
	/* by input port, beneath the prelude's wrappers; NULL: no wrappers */
	const struct bsw_port_rx *frame_rx;
};

#endif
