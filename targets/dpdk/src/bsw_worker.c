/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Worker lcores: each runs one pipeline instance. A polling lcore eats a whole
 * core, which makes a lab on a 2-core machine unusable, so a worker that has
 * seen no packet for a while sleeps, doubling the sleep up to idle_us.
 *
 * Where the workers share cores with the control plane (a lab, a small box),
 * a burst of punted packets must not starve forwarding: workers raise their
 * own scheduling priority (nice), which costs nothing while they sleep.
 */
#include <errno.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_pause.h>

#include "bsw_internal.h"

/* Instructions per rte_swx_pipeline_run() call. A packet captures the table
 * state at rx and keeps it until tx; with 16 pipeline threads, a packet of up
 * to QUANTUM * QUIESCE_EPOCHS / 16 instructions is done after QUIESCE_EPOCHS
 * runs. */
#define QUANTUM 1024
#define QUIESCE_EPOCHS 4
/* Runs between two output flushes while busy. */
#define FLUSH_EVERY 64
/* Consecutive runs that received nothing before the worker goes idle: the
 * polling tail after the last packet; QUIESCE_EPOCHS of them also finish
 * any packet in flight. An idle run is QUANTUM rx instructions, most of
 * which skip their port (bsw_rx_backoff.c). */
#define EMPTY_RUNS_BEFORE_SLEEP 8
/* Most tries an empty input port is skipped after empty receives while the
 * worker runs (bsw_rx_backoff.c). */
#define RX_BACKOFF_MAX_SKIP 64

static uint64_t
rx_total(struct rte_swx_pipeline *p, uint32_t n_ports_in)
{
	uint64_t sum = 0;
	uint32_t i;

	for (i = 0; i < n_ports_in; i++) {
		struct rte_swx_port_in_stats st;

		memset(&st, 0, sizeof(st));
		rte_swx_ctl_pipeline_port_in_stats_read(p, i, &st);
		sum += st.n_pkts;
	}
	return sum;
}

static void
rx_backoff_reset(void *arg)
{
	bsw_rx_backoff_reset(arg);
}

static int
worker_main(void *arg)
{
	struct bsw_worker *w = arg;
	struct rte_swx_ctl_pipeline_info pi;
	uint64_t last_rx = 0, rx;
	uint32_t empty = 0, sleep_us = 1, i = 0, probe;

	rte_swx_ctl_pipeline_info_get(w->p, &pi);
	probe = 2 * pi.n_ports_in;
	if (w->nice && setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), w->nice))
		RTE_LOG(WARNING, USER1, "bsw: worker on lcore %u: nice %d: %s\n", w->lcore_id, w->nice,
			strerror(errno));
	if (w->straight_run) {
		struct bsw_straight_env env = {
			.stop = &w->stop, .epoch = &w->epoch, .idle = &w->idle, .idle_us = w->idle_us,
			.rx_reset = rx_backoff_reset, .rx_reset_arg = w->rx_backoff,
			.em_lookups = bsw_table_em_lookups(),
			.index_lookup = bsw_index_table_ops.lkp,
			.line_em_lookup = bsw_line_em_table_ops.lkp,
			.lpm32_lookup = bsw_lpm32_table_ops.lkp,
			.frame_rx = w->frame_rx,
		};

		w->straight_run(w->p, &env);
		__atomic_store_n(&w->running, 0, __ATOMIC_RELEASE);
		return 0;
	}
	if (w->hand_path) {
		/* bench_bng.py --hand-written: a hand-written path instead */
		bsw_hand_path_run(w);
		__atomic_store_n(&w->running, 0, __ATOMIC_RELEASE);
		return 0;
	}
	while (!__atomic_load_n(&w->stop, __ATOMIC_ACQUIRE)) {
		rte_swx_pipeline_run(w->p, QUANTUM);
		__atomic_fetch_add(&w->epoch, 1, __ATOMIC_SEQ_CST);
		if (++i % FLUSH_EVERY == 0)
			rte_swx_pipeline_flush(w->p);
		if (!w->idle_us)
			continue;                        /* pure polling: never idle */
		rx = rx_total(w->p, pi.n_ports_in);
		if (rx != last_rx) {
			last_rx = rx;
			empty = 0;
			continue;
		}
		if (++empty < EMPTY_RUNS_BEFORE_SLEEP)
			continue;
		rte_swx_pipeline_flush(w->p);

		/* No packet for EMPTY_RUNS_BEFORE_SLEEP runs:
		 * nothing is in flight, so the table manager may treat us as
		 * quiescent while we sleep. Between sleeps, a probe: a run of a
		 * few instructions, enough for two real receive tries on every
		 * input port (the back-off is reset first). A full quantum per
		 * wake would be far more tries, and on a libpcap port each one
		 * is a syscall; probes keep an idle worker cheap.
		 * Probe runs do not count as epochs: a packet a probe takes in
		 * finishes in the full runs that follow, which do. */
		sleep_us = 1;
		while (!__atomic_load_n(&w->stop, __ATOMIC_ACQUIRE)) {
			__atomic_store_n(&w->idle, 1, __ATOMIC_SEQ_CST);
			usleep(sleep_us);
			__atomic_store_n(&w->idle, 0, __ATOMIC_SEQ_CST);
			bsw_rx_backoff_reset(w->rx_backoff);	/* the probe tries every port */
			rte_swx_pipeline_run(w->p, probe);
			rx = rx_total(w->p, pi.n_ports_in);
			if (rx != last_rx) {
				last_rx = rx;
				empty = 0;
				break;
			}
			if (sleep_us < w->idle_us)
				sleep_us = sleep_us * 2 > w->idle_us ? w->idle_us : sleep_us * 2;
		}
	}
	rte_swx_pipeline_flush(w->p);
	__atomic_store_n(&w->running, 0, __ATOMIC_RELEASE);
	return 0;
}

int
bsw_workers_start(struct bsw_pipeline *bp, uint32_t idle_us, int32_t nice)
{
	uint32_t lcore, k = 0;

	if (bp->workers_started)
		return 0;
	if (bsw_n_worker_lcores() < bp->n_instances) {
		bsw_set_error("%u pipeline instances need %u worker lcores, EAL has %u",
			      bp->n_instances, bp->n_instances, bsw_n_worker_lcores());
		return -EINVAL;
	}
	RTE_LCORE_FOREACH_WORKER(lcore) {
		struct bsw_worker *w = &bp->workers[k];

		if (k == bp->n_instances)
			break;
		w->lcore_id = lcore;
		w->idle_us = idle_us;
		w->nice = nice;
		/* Pure polling (idle_us 0) keeps every try on every port. */
		bsw_rx_backoff_set(w->rx_backoff, idle_us ? RX_BACKOFF_MAX_SKIP : 0);
		w->stop = 0;
		w->idle = 0;
		w->running = 1;
		if (rte_eal_remote_launch(worker_main, w, lcore)) {
			bsw_set_error("lcore %u is busy", lcore);
			w->running = 0;
			bsw_workers_stop(bp);
			return -EBUSY;
		}
		w->launched = 1;
		k++;
	}
	bp->workers_started = 1;
	return 0;
}

int
bsw_workers_stop(struct bsw_pipeline *bp)
{
	uint32_t k;

	for (k = 0; k < bp->n_instances; k++)
		__atomic_store_n(&bp->workers[k].stop, 1, __ATOMIC_RELEASE);
	/* Every launched worker is waited for, whatever its lcore id and even
	 * if it has already cleared `running`: the pipeline may be freed next. */
	for (k = 0; k < bp->n_instances; k++)
		if (bp->workers[k].launched) {
			rte_eal_wait_lcore(bp->workers[k].lcore_id);
			bp->workers[k].launched = 0;
		}
	bp->workers_started = 0;
	return 0;
}

void
bsw_workers_quiesce(struct bsw_pipeline *bp)
{
	uint64_t start[BSW_MAX_INSTANCES];
	uint32_t k, pending;

	if (!bp->workers_started)
		return;
	/* What the caller stored before (the swapped table state pointer, a
	 * plain store inside DPDK) must be visible before the idle flags are
	 * read: without a full fence the store can wait in this CPU's store
	 * buffer while a worker wakes (idle = 0), reads the old pointer and is
	 * still counted idle, and the old tables are then rewritten or freed
	 * under it (x86 reorders a store with a later load; seq_cst loads
	 * alone are plain loads there). */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	for (k = 0; k < bp->n_instances; k++)
		start[k] = __atomic_load_n(&bp->workers[k].epoch, __ATOMIC_SEQ_CST);
	do {
		pending = 0;
		for (k = 0; k < bp->n_instances; k++) {
			struct bsw_worker *w = &bp->workers[k];

			if (!__atomic_load_n(&w->running, __ATOMIC_SEQ_CST) ||
			    __atomic_load_n(&w->idle, __ATOMIC_SEQ_CST))
				continue;
			if (__atomic_load_n(&w->epoch, __ATOMIC_SEQ_CST) - start[k] <
			    QUIESCE_EPOCHS)
				pending++;
		}
		if (pending)
			rte_pause();
	} while (pending);
}
