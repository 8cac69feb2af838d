/* SPDX-License-Identifier: Apache-2.0 */
/* A meter of an SWX meter array checked as the switch's meter instruction
 * checks it (bsw_swx_exact_access.h, bsw_meter_mmi_exec): the colour out,
 * its statistics counted. A meter never set, or reset, has DPDK's colour
 * mask GREEN and is GREEN without the trTCM check; a NULL profile is a meter
 * being reset. Used by the straight-line code (straight_codegen.py puts this
 * text into it) and the bench's hand-written paths. Needs
 * rte_swx_pipeline_internal.h, rte_meter.h and rte_cycles.h first. */
#ifndef BSW_SWX_METER_H
#define BSW_SWX_METER_H

static __rte_always_inline enum rte_color
bsw_meter_color(struct meter *m, uint32_t length, enum rte_color color_in)
{
	enum rte_color color_out = RTE_COLOR_GREEN;
	enum rte_color mask = __atomic_load_n(&m->color_mask, __ATOMIC_RELAXED);

	if (mask != RTE_COLOR_GREEN) {
		struct meter_profile *mp = __atomic_load_n(&m->profile, __ATOMIC_RELAXED);

		if (mp != NULL) {
			color_out = rte_meter_trtcm_color_aware_check(&m->m, &mp->profile, rte_get_tsc_cycles(),
								      length, color_in);
			color_out &= mask;
		}
	}
	m->n_pkts[color_out]++;
	m->n_bytes[color_out] += length;
	return color_out;
}

#endif
