/* SPDX-License-Identifier: Apache-2.0 */
/* Compiler fences around the DPDK instructions that bsw_swx_exact_access.h
 * does not replace.
 *
 * The header's field accesses are typed (through packed one-member structs
 * of the field's width), so gcc knows that a field store cannot change the
 * thread's struct pointers and keeps them in registers instead of reloading
 * two pointers before every access. The price is C's aliasing rule: gcc may
 * now move one of our typed stores past a DPDK instruction that reads the
 * same bytes through a pointer of another type (DPDK's checksum forms read
 * a header as uint32_t words, its remaining field moves use uint64_t).
 * Every such call in the generated code gets a compiler fence on each side,
 * so memory is as the instruction expects on entry and as the next one
 * expects on exit. Instructions that touch no
 * field bytes (header extract, lookahead, validate, invalidate, emit: they
 * move pointers, valid bits and whole headers with memcpy) are left alone,
 * unless they read a metadata field (an emit fused with tx reads the output
 * port), and so are the calls the header replaces (it names them with a
 * #define). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bsw_internal.h"

#define CALL_PREFIX "__instr_"
#define CALL_SUFFIX "_exec("
#define FENCE "BSW_FENCE();"

/* DPDK instructions that read or write no field bytes... */
static const char *const unfenced_prefixes[] = {
	"hdr_extract", "hdr_lookahead", "hdr_validate", "hdr_invalidate", "hdr_emit",
};
/* ...except the forms of them that read a metadata field as uint64_t: the
 * output port (emits fused with tx, named *_tx) and the header size
 * (hdr_extract_m). */
#define TX_SUFFIX "_tx"
#define EXTRACT_M "hdr_extract_m"

/* Whether the header replaces __instr_<name>_exec (it #defines that name). */
static int
replaced(const char *header, const char *name, size_t n)
{
	char key[160];

	if (n + 32 > sizeof(key))
		return 0;
	snprintf(key, sizeof(key), "#define " CALL_PREFIX "%.*s_exec ", (int)n, name);
	return strstr(header, key) != NULL;
}

static int
fenced(const char *header, const char *name, size_t n)
{
	size_t i;

	if (replaced(header, name, n))
		return 0;
	if ((n >= strlen(TX_SUFFIX) &&
	     !strncmp(name + n - strlen(TX_SUFFIX), TX_SUFFIX, strlen(TX_SUFFIX))) ||
	    (n == strlen(EXTRACT_M) && !strncmp(name, EXTRACT_M, n)))
		return 1;
	for (i = 0; i < RTE_DIM(unfenced_prefixes); i++)
		if (!strncmp(name, unfenced_prefixes[i], strlen(unfenced_prefixes[i])))
			return 0;
	return 1;
}

int
bsw_exact_access_fence(const char *header, FILE *in, FILE *out, uint32_t *n_fenced)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;

	*n_fenced = 0;
	while ((len = getline(&line, &cap, in)) != -1) {
		const char *s = line;
		const char *call;

		while ((call = strstr(s, CALL_PREFIX)) != NULL) {
			const char *name = call + strlen(CALL_PREFIX);
			const char *suffix = strstr(name, CALL_SUFFIX);
			const char *end;

			/* One call per statement, `__instr_x_exec(p, t, &...[n]);`:
			 * the fence goes after any label, before the call, and after
			 * its semicolon. */
			end = suffix ? strstr(suffix, ");") : NULL;
			if (!end || !fenced(header, name, (size_t)(suffix - name))) {
				fwrite(s, 1, (size_t)(name - s), out);
				s = name;
				continue;
			}
			end += 2;
			fwrite(s, 1, (size_t)(call - s), out);
			fputs(FENCE " ", out);
			fwrite(call, 1, (size_t)(end - call), out);
			fputs(" " FENCE, out);
			(*n_fenced)++;
			s = end;
		}
		fputs(s, out);
	}
	free(line);
	return ferror(in) || ferror(out) ? -1 : 0;
}
