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
 * through the run loop).
 *
 * The direct form (bsw_group_chain_direct) names the group instead where it
 * is compiled in the same code: after DPDK's pipeline_adjust(), instruction
 * N of the pipeline is group N, so a jump's N and a fall-through's group + 1
 * say which one. Each group "void\npipeline_func_N(...)" becomes a static
 * bsw_group_N, always_inline when one earlier group is its only caller,
 * and a pipeline_func_N wrapper is appended for DPDK to find. */
#include <limits.h>
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

/* Group ids that have a function in the generated code ("pipeline_func_N"
 * at the start of a line); the others run from DPDK's library (rx, tables,
 * tx). */
#define GROUP_DEF "pipeline_func_"
#define GROUP_BODY "bsw_group_"
#define GROUPS_MAX 65536
#define NO_GROUP ULONG_MAX
#define UNKNOWN_GROUP (ULONG_MAX - 1)	/* a fall-through before any group */

/* The group whose definition starts at `line`, or NO_GROUP. */
static unsigned long
defined_group(const char *line)
{
	return starts_with(line, GROUP_DEF) ? strtoul(line + strlen(GROUP_DEF), NULL, 10) : NO_GROUP;
}

/* How the group a hand-over goes to is named: a group called from one
 * place only, and from an earlier group, is inlined there. */
enum group_kind { GROUP_NONE, GROUP_SHARED, GROUP_INLINE };

/* The group that the hand-over at lines[i] (in group `group`) goes to,
 * UNKNOWN_GROUP for a fall-through outside any group, or NO_GROUP where
 * lines[i] is no hand-over. */
static unsigned long
hand_over_target(char *const *lines, size_t i, size_t n_lines, unsigned long group)
{
	const char *cur = lines[i], *next = i + 1 < n_lines ? lines[i + 1] : "";

	if (starts_with(cur, JUMP_SET) && !strcmp(next, JUMP_RETURN))
		return strtoul(cur + strlen(JUMP_SET), NULL, 10);
	if (!strcmp(cur, FALL_INC) && !strcmp(next, FALL_END))	/* to the next group */
		return group == NO_GROUP ? UNKNOWN_GROUP : group + 1;
	return NO_GROUP;
}

static void
chain_call(FILE *out, const char *indent, const uint8_t *kind, unsigned long g)
{
	if (g < GROUPS_MAX && kind[g] != GROUP_NONE)
		fprintf(out, "%sBSW_CHAIN_TO(p, " GROUP_BODY "%lu);\n", indent, g);
	else
		fprintf(out, "%sBSW_CHAIN(p);\n", indent);
}

static const char *
group_specifiers(uint8_t kind)
{
	return kind == GROUP_INLINE ? "static inline __attribute__((always_inline)) void" :
				      "static void";
}

static int
group_chain(FILE *in, FILE *out, int direct, uint32_t *n_chained)
{
	char **lines = NULL, *line = NULL;
	size_t n_lines = 0, lines_cap = 0, cap = 0, i;
	uint8_t *kind = calloc(GROUPS_MAX, 1);
	uint32_t *callers = calloc(GROUPS_MAX, sizeof(*callers));
	uint8_t *backward = calloc(GROUPS_MAX, 1);
	unsigned long group = NO_GROUP, g, target;
	int prototypes_done = 0, status = -1;

	*n_chained = 0;
	if (!kind || !callers || !backward)
		goto out;
	while (getline(&line, &cap, in) != -1) {
		if (n_lines == lines_cap) {
			size_t more_cap = lines_cap ? 2 * lines_cap : 4096;
			char **more = realloc(lines, more_cap * sizeof(*lines));

			if (!more)
				goto out;
			lines = more;
			lines_cap = more_cap;
		}
		lines[n_lines] = strdup(line);
		if (!lines[n_lines])
			goto out;
		n_lines++;
		g = defined_group(line);
		if (g != NO_GROUP) {
			if (g < GROUPS_MAX)
				kind[g] = GROUP_SHARED;
			/* Groups are renamed only where DPDK's wording is the one
			 * known here ("void" on the line before) and their ids fit;
			 * otherwise every hand-over goes through BSW_CHAIN. */
			if (g >= GROUPS_MAX || n_lines < 2 || strcmp(lines[n_lines - 2], "void\n"))
				direct = 0;
		}
	}
	if (direct) {
		for (i = 0; i < n_lines; i++) {
			g = defined_group(lines[i]);
			if (g != NO_GROUP)
				group = g;
			target = hand_over_target(lines, i, n_lines, group);
			if (target < GROUPS_MAX) {
				callers[target]++;
				backward[target] |= target <= group;
			}
		}
		for (g = 0; g < GROUPS_MAX; g++)
			if (kind[g] == GROUP_SHARED && callers[g] == 1 && !backward[g])
				kind[g] = GROUP_INLINE;
	}
	group = NO_GROUP;
	for (i = 0; i < n_lines; i++) {
		const char *cur = lines[i], *next = i + 1 < n_lines ? lines[i + 1] : "";
		unsigned long cur_def = defined_group(cur), next_def = defined_group(next);
		int def_void = !strcmp(cur, "void\n") && next_def != NO_GROUP;

		if (direct && !prototypes_done && def_void) {
			/* Before the first group's definition: every group's
			 * prototype, so that any group can call any other. */
			prototypes_done = 1;
			for (g = 0; g < GROUPS_MAX; g++)
				if (kind[g] != GROUP_NONE)
					fprintf(out, "%s " GROUP_BODY "%lu(struct rte_swx_pipeline *p);\n",
						group_specifiers(kind[g]), g);
		}
		if (cur_def != NO_GROUP)
			group = cur_def;
		if (direct && def_void)	/* every id is below GROUPS_MAX here */
			fprintf(out, "%s\n", group_specifiers(kind[next_def]));
		else if (direct && cur_def != NO_GROUP)
			fprintf(out, GROUP_BODY "%s", cur + strlen(GROUP_DEF));
		else
			fputs(cur, out);
		target = hand_over_target(lines, i, n_lines, group);
		if (target == NO_GROUP)
			continue;
		if (direct)
			chain_call(out, starts_with(cur, JUMP_SET) ? "\t\t" : "", kind, target);
		else
			fputs(starts_with(cur, JUMP_SET) ? "\t\tBSW_CHAIN(p);\n" : "BSW_CHAIN(p);\n", out);
		(*n_chained)++;
	}
	/* The groups' own names, which DPDK looks up in the library. */
	if (direct)
		for (g = 0; g < GROUPS_MAX; g++)
			if (kind[g] != GROUP_NONE)
				fprintf(out, "\nvoid\n" GROUP_DEF "%lu(struct rte_swx_pipeline *p)\n{\n"
					"\t" GROUP_BODY "%lu(p);\n}\n", g, g);
	status = ferror(in) || ferror(out) ? -1 : 0;
out:
	for (i = 0; i < n_lines; i++)
		free(lines[i]);
	free(lines);
	free(line);
	free(kind);
	free(callers);
	free(backward);
	return status;
}

int
bsw_group_chain(FILE *in, FILE *out, uint32_t *n_chained)
{
	return group_chain(in, out, 0, n_chained);
}

int
bsw_group_chain_direct(FILE *in, FILE *out, uint32_t *n_chained)
{
	return group_chain(in, out, 1, n_chained);
}
