/* Filling the caller's detail buffer (load_detail.h): always NUL-terminated, never overrun. */
#include "load_detail.h"

#include <string.h>

#if TRT_LOAD_DETAIL

static void append(trt_detail *d, size_t *used, const char *text, size_t len) {
    if (!d || !d->text || d->size == 0) return;
    while (len-- > 0 && *used + 1 < d->size) d->text[(*used)++] = *text++;
    d->text[*used] = '\0';
}

trt_status trt_fail_named(trt_detail *d, trt_status status, const char *reason, const char *name, size_t name_len) {
    size_t used = 0;
    append(d, &used, reason, strlen(reason));
    if (name) {
        append(d, &used, " ", 1);
        append(d, &used, name, name_len);
    }
    return status;
}

trt_status trt_fail_text(trt_detail *d, trt_status status, const char *reason, const char *name) {
    return trt_fail_named(d, status, reason, name, strlen(name));
}

trt_status trt_fail(trt_detail *d, trt_status status, const char *reason) {
    return trt_fail_named(d, status, reason, NULL, 0);
}

trt_status trt_fail_number(trt_detail *d, trt_status status, const char *reason, uint64_t n) {
    char digits[24];
    size_t len = 0;
    do {
        digits[sizeof digits - 1 - len++] = (char)('0' + n % 10);
        n /= 10;
    } while (n && len < sizeof digits);
    return trt_fail_named(d, status, reason, digits + sizeof digits - len, len);
}
#endif
