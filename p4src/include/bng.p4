/* The architecture-neutral BNG core: include this from a top. */
#ifndef BNG_CORE_P4
#define BNG_CORE_P4
#include "defines.p4"
#include "headers.p4"
#include "parser.p4"
#include "bng_ingress.p4"
#endif
