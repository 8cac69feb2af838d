/* The xorshift generator the differential checks (swx_*_check.c) draw
 * their cases from: seeded the same every run, so a failure repeats. */
#ifndef SWX_CHECK_RNG_H
#define SWX_CHECK_RNG_H

#include <stdint.h>

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint64_t
rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

#endif /* SWX_CHECK_RNG_H */
