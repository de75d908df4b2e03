/*
 * The short reason trt_load gives when it refuses a program: a borrowed, caller-owned
 * text buffer, filled by whoever finds the problem (the loader or an operator binding).
 *
 * TRT_LOAD_DETAIL=0 (at build time) leaves the reasons out: the functions below become
 * inline ones that only return the status, so the compiler drops every reason's text
 * (about 3 KiB of read-only data on a Cortex-M) and the detail buffer stays empty.
 */
#ifndef TINYRPS_LOAD_DETAIL_H
#define TINYRPS_LOAD_DETAIL_H

#include <stddef.h>
#include <stdint.h>

#include "tinyrps_runtime.h"

typedef struct {
    char *text;                /* NULL: no one asked for a reason */
    size_t size;
} trt_detail;

#ifndef TRT_LOAD_DETAIL
#define TRT_LOAD_DETAIL 1
#endif

#if TRT_LOAD_DETAIL
/* Write `reason`, then " name" when name is not NULL; return status. */
trt_status trt_fail_named(trt_detail *d, trt_status status, const char *reason, const char *name, size_t name_len);
trt_status trt_fail(trt_detail *d, trt_status status, const char *reason);
/* Write `reason`, then " name" (NUL-terminated). */
trt_status trt_fail_text(trt_detail *d, trt_status status, const char *reason, const char *name);
/* Write `reason` and a decimal number after it. */
trt_status trt_fail_number(trt_detail *d, trt_status status, const char *reason, uint64_t n);
#else
static inline trt_status trt_fail_named(trt_detail *d, trt_status status, const char *reason, const char *name,
                                        size_t name_len) {
    (void)d, (void)reason, (void)name, (void)name_len;
    return status;
}
static inline trt_status trt_fail(trt_detail *d, trt_status status, const char *reason) {
    (void)d, (void)reason;
    return status;
}
static inline trt_status trt_fail_text(trt_detail *d, trt_status status, const char *reason, const char *name) {
    (void)d, (void)reason, (void)name;
    return status;
}
static inline trt_status trt_fail_number(trt_detail *d, trt_status status, const char *reason, uint64_t n) {
    (void)d, (void)reason, (void)n;
    return status;
}
#endif

#endif
