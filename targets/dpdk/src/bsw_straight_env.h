/* SPDX-License-Identifier: Apache-2.0 */
/* What a straight-line run loop (bng_switch/straight_codegen.py, which puts
 * this file's text into the code it generates) gets from its worker
 * (bsw_worker.c): when to stop, its epoch and idle flag, how long it may
 * sleep when idle (0: never), and the receive back-off's reset before each
 * probe while idle. */
#ifndef BSW_STRAIGHT_ENV_H
#define BSW_STRAIGHT_ENV_H

#include <stdint.h>

struct bsw_straight_env {
	volatile uint32_t *stop;
	volatile uint64_t *epoch;
	volatile uint32_t *idle;
	uint32_t idle_us;
	void (*rx_reset)(void *arg);
	void *rx_reset_arg;
};

#endif
