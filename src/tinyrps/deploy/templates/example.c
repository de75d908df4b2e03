/*
 * The smallest application of @name@: @what@
 * and print the answer. The application around it supplies example_print (a UART, a log,
 * semihosting) and whatever starts main (its startup code, an RTOS task).
 */
#include <stdint.h>

#include "@name@.h"

/* One line of text, without a newline, to wherever the application shows it. */
void example_print(const char *line);

/* The library's only memory besides its tables: static here, anywhere the application likes. */
static uint8_t arena[@MACRO@_ARENA_BYTES] @MACRO@_ALIGN16;

/* Text without printf: a decimal integer, and a score in thousandths. */
static char *put_text(char *out, const char *text) {
    while (*text) *out++ = *text++;
    return out;
}

static char *put_int(char *out, long value) {
    char digits[24];
    int n = 0;
    unsigned long u = value < 0 ? 0ul - (unsigned long)value : (unsigned long)value;
    if (value < 0) *out++ = '-';
    do {
        digits[n++] = (char)('0' + u % 10u);
        u /= 10u;
    } while (u);
    while (n) *out++ = digits[--n];
    return out;
}

static char *put_score(char *out, double x) {
    long thousandths = (long)(x * 1000.0 + (x < 0 ? -0.5 : 0.5));
    if (thousandths < 0) {
        *out++ = '-';
        thousandths = -thousandths;
    }
    out = put_int(out, thousandths / 1000);
    *out++ = '.';
    *out++ = (char)('0' + thousandths / 100 % 10);
    *out++ = (char)('0' + thousandths / 10 % 10);
    *out++ = (char)('0' + thousandths % 10);
    return out;
}
@main@