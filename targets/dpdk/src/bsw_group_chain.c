/* SPDX-License-Identifier: Apache-2.0 */
/* Copies the C code of rte_swx_pipeline_codegen() (DPDK 22.11) with a
 * BSW_CHAIN(p) call (bsw_swx_group_chain.h) wherever an instruction group
 * hands over to the next one through the run loop. DPDK writes those
 * hand-overs in two forms, each on lines of its own:
 *
 *   a jump to another group:      thread_ip_set(t, &p->instructions[N]);
 *                                 return;
 *   the end of a group that       thread_ip_inc(p);
 *   falls through to the next:    }
 *
 * The call goes between the two lines. Everything else is copied unchanged,
 * and so is code in which neither form occurs (a program whose groups all
 * end in tx, or a DPDK that words them differently: it then runs as before,
 * through the run loop). */
#include <stdlib.h>
#include <string.h>

#include "bsw_internal.h"

#define JUMP_SET "\t\tthread_ip_set(t, &p->instructions["
#define JUMP_RETURN "\t\treturn;\n"
#define FALL_INC "thread_ip_inc(p);\n"
#define FALL_END "}\n"

static int
starts_with(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

int
bsw_group_chain(FILE *in, FILE *out, uint32_t *n_chained)
{
	char *prev = NULL, *line = NULL;
	size_t prev_cap = 0, cap = 0;
	int have_prev = 0;

	*n_chained = 0;
	while (getline(&line, &cap, in) != -1) {
		if (have_prev) {
			fputs(prev, out);
			if ((starts_with(prev, JUMP_SET) && !strcmp(line, JUMP_RETURN)) ||
			    (!strcmp(prev, FALL_INC) && !strcmp(line, FALL_END))) {
				fputs(starts_with(prev, JUMP_SET) ? "\t\tBSW_CHAIN(p);\n" :
								    "BSW_CHAIN(p);\n",
				      out);
				(*n_chained)++;
			}
		}
		/* The current line becomes the one looked back on. */
		{
			char *tmp = prev;
			size_t tmp_cap = prev_cap;

			prev = line;
			prev_cap = cap;
			line = tmp;
			cap = tmp_cap;
		}
		have_prev = 1;
	}
	if (have_prev)
		fputs(prev, out);
	free(prev);
	free(line);
	return ferror(in) || ferror(out) ? -1 : 0;
}
