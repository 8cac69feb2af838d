/* The text of bsw_swx_exact_access.h, NUL-terminated, for the pipeline
 * build to put in front of the code it generates (bsw_pipeline.c). */
	.section .rodata
	.global bsw_exact_access_h
	.type bsw_exact_access_h, @object
bsw_exact_access_h:
	.incbin "bsw_swx_exact_access.h"
	.byte 0
	.size bsw_exact_access_h, . - bsw_exact_access_h
	.section .note.GNU-stack, "", @progbits
