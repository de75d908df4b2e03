/*
 * The short reason trt_load gives when it refuses a program: a borrowed, caller-owned
 * text buffer, filled by whoever finds the problem (the loader or an operator binding).
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

/* Write `reason`, then " name" when name is not NULL; return status. */
trt_status trt_fail_named(trt_detail *d, trt_status status, const char *reason, const char *name, size_t name_len);
trt_status trt_fail(trt_detail *d, trt_status status, const char *reason);
/* Write `reason` and a decimal number after it. */
trt_status trt_fail_number(trt_detail *d, trt_status status, const char *reason, uint64_t n);

#endif
