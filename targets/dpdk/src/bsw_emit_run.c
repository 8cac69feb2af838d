/* SPDX-License-Identifier: Apache-2.0 */
/* Copies the C code of rte_swx_pipeline_codegen() (DPDK 22.11) with each run
 * of a deparser's emits written as one call of bsw_swx_emit.h. DPDK writes a
 * deparser as one line per emit, blank lines between them, the first one
 * perhaps labelled, and the last emits usually fused with tx (after the
 * fence pass, between fences):
 *
 *   LABEL_END : __instr_hdr_emit_exec(p, t, &pipeline_instructions[K]);
 *   \t__instr_hdr_emit_exec(p, t, &pipeline_instructions[K+1]);
 *   ...
 *   \tBSW_FENCE(); __instr_hdr_emit8_tx_exec(p, t, &pipeline_instructions[K+n]); BSW_FENCE();
 *
 * becomes
 *
 *   LABEL_END : BSW_FENCE(); bsw_hdr_emit_run_tx(p, t, &pipeline_instructions[K], n,
 *                                     &pipeline_instructions[K+n], 8); BSW_FENCE();
 *
 * (on one line), or bsw_hdr_emit_run(p, t, &pipeline_instructions[K], n) for
 * a run that does not end in tx. Why: bsw_swx_emit.h then knows the whole
 * run at compile time and, the BNG's headers being declared in deparser
 * order, visits only the valid ones instead of testing 21 valid bits.
 *
 * A run is at least two instructions of consecutive index; a labelled line
 * (a jump target) starts a new run, never continues one. Everything else is
 * copied unchanged, and so is code in which no run occurs. */
#include <stdlib.h>
#include <string.h>

#include "bsw_internal.h"

#define EMIT_CALL "__instr_hdr_emit"
#define INSTR_ARG "(p, t, &pipeline_instructions["
#define FENCE_OPEN "BSW_FENCE(); "
#define FENCE_CLOSE " BSW_FENCE();"

enum emit_kind { LINE_OTHER, LINE_BLANK, LINE_EMIT, LINE_EMIT_TX };

/* One line of generated code as this pass sees it. */
struct emit_line {
	enum emit_kind kind;
	char label[128];   /* "NAME : " or empty */
	int fenced;        /* between BSW_FENCE()s */
	uint32_t index;    /* K of &pipeline_instructions[K] */
	uint32_t n_tx;     /* headers of an emit fused with tx */
};

static int
is_label_prefix(const char *s, size_t n)
{
	size_t i;

	if (n < 4 || n >= sizeof(((struct emit_line *)0)->label) || strncmp(s + n - 3, " : ", 3))
		return 0;
	for (i = 0; i < n - 3; i++)
		if (!(s[i] == '_' || (s[i] >= '0' && s[i] <= '9') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= 'a' && s[i] <= 'z')))
			return 0;
	return 1;
}

static void
classify(const char *line, struct emit_line *e)
{
	const char *call = strstr(line, EMIT_CALL), *s;
	size_t prefix_len;
	unsigned int digits = 0;
	char *end;

	memset(e, 0, sizeof(*e));
	e->kind = LINE_OTHER;
	if (!strcmp(line, "\n")) {
		e->kind = LINE_BLANK;
		return;
	}
	if (!call)
		return;
	/* What stands before the call: a tab or a label, then perhaps a fence. */
	prefix_len = (size_t)(call - line);
	if (prefix_len >= strlen(FENCE_OPEN) &&
	    !strncmp(call - strlen(FENCE_OPEN), FENCE_OPEN, strlen(FENCE_OPEN))) {
		e->fenced = 1;
		prefix_len -= strlen(FENCE_OPEN);
	}
	if (prefix_len == 1 && line[0] == '\t') {
		e->label[0] = 0;
	} else if (is_label_prefix(line, prefix_len)) {
		memcpy(e->label, line, prefix_len);
		e->label[prefix_len] = 0;
	} else {
		return;
	}
	/* The call: emit, emit_tx or emitN_tx, on one pipeline instruction. */
	s = call + strlen(EMIT_CALL);
	if (*s >= '2' && *s <= '8' && s[1] == '_')
		digits = (unsigned int)(*s++ - '0');
	if (!strncmp(s, "_tx_exec" INSTR_ARG, strlen("_tx_exec" INSTR_ARG))) {
		e->n_tx = digits ? digits : 1;
		s += strlen("_tx_exec" INSTR_ARG);
	} else if (!digits && !strncmp(s, "_exec" INSTR_ARG, strlen("_exec" INSTR_ARG))) {
		s += strlen("_exec" INSTR_ARG);
	} else {
		return;
	}
	if (*s < '0' || *s > '9')
		return;
	e->index = (uint32_t)strtoul(s, &end, 10);
	if (strncmp(end, "]);", 3))
		return;
	end += 3;
	if (e->fenced) {
		if (strncmp(end, FENCE_CLOSE, strlen(FENCE_CLOSE)))
			return;
		end += strlen(FENCE_CLOSE);
	}
	if (strcmp(end, "\n"))
		return;
	e->kind = e->n_tx ? LINE_EMIT_TX : LINE_EMIT;
}

/* A run being collected: its lines as they came, for a run too short to
 * fuse, and what the fused call needs. */
struct run {
	char *text;
	size_t len, cap;
	char label[128];
	uint32_t first, n_single;
};

static int
run_append(struct run *r, const char *line)
{
	size_t n = strlen(line);

	if (r->len + n + 1 > r->cap) {
		size_t cap = (r->len + n + 1) * 2;
		char *text = realloc(r->text, cap);

		if (!text)
			return -1;
		r->text = text;
		r->cap = cap;
	}
	memcpy(r->text + r->len, line, n + 1);
	r->len += n;
	return 0;
}

/* Writes out a run of single emits: fused when it has two or more. */
static void
run_flush(struct run *r, FILE *out, uint32_t *n_runs)
{
	if (r->n_single >= 2) {
		fprintf(out, "%s%sbsw_hdr_emit_run(p, t, &pipeline_instructions[%u], %u);\n",
			r->label, r->label[0] ? "" : "\t", r->first, r->n_single);
		(*n_runs)++;
	} else if (r->len) {
		fputs(r->text, out);
	}
	r->len = 0;
	r->n_single = 0;
}

int
bsw_emit_run(FILE *in, FILE *out, uint32_t *n_runs)
{
	struct run r = { NULL, 0, 0, "", 0, 0 };
	char *line = NULL;
	size_t cap = 0;
	int status = 0;

	*n_runs = 0;
	while (!status && getline(&line, &cap, in) != -1) {
		struct emit_line e;

		classify(line, &e);
		if (r.n_single && e.kind == LINE_BLANK) {
			status = run_append(&r, line);
			continue;
		}
		if (r.n_single && !e.label[0] && e.index == r.first + r.n_single) {
			if (e.kind == LINE_EMIT && !e.fenced) {
				r.n_single++;
				status = run_append(&r, line);
				continue;
			}
			if (e.kind == LINE_EMIT_TX) {
				fprintf(out,
					"%s%s%sbsw_hdr_emit_run_tx(p, t, &pipeline_instructions[%u], %u, "
					"&pipeline_instructions[%u], %u);%s\n",
					r.label, r.label[0] ? "" : "\t", e.fenced ? FENCE_OPEN : "",
					r.first, r.n_single, e.index, e.n_tx,
					e.fenced ? FENCE_CLOSE : "");
				(*n_runs)++;
				r.len = 0;
				r.n_single = 0;
				continue;
			}
		}
		run_flush(&r, out, n_runs);
		if (e.kind == LINE_EMIT && !e.fenced) {
			strcpy(r.label, e.label);
			r.first = e.index;
			r.n_single = 1;
			status = run_append(&r, line);
		} else {
			fputs(line, out);
		}
	}
	if (!status)
		run_flush(&r, out, n_runs);
	free(r.text);
	free(line);
	return status || ferror(in) || ferror(out) ? -1 : 0;
}
