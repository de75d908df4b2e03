/*
 * Test harness: the firmware's frame receiver (firmware/protocol/link_frame.c) fed
 * from a file, built natively with sanitizers by test_link_frame_native.py.
 *
 *   harness STREAM GAPS   STREAM: the received bytes; GAPS: positions (one per line,
 *                         ascending) where the line goes quiet before that byte.
 * Prints one line per event: "F type seq length crc32-of-payload" or "E code seq value",
 * then "END" when the stream is exhausted and the receiver waits for more.
 */
#include <stdio.h>
#include <stdlib.h>

#include "crc32.h"
#include "link_frame.h"

static unsigned char *stream;
static long stream_len, position;
static long *gaps;
static long gap_count, next_gap;
static int quiet_reported;

static int read_byte(uint32_t timeout_ms)
{
    (void)timeout_ms;
    if (next_gap < gap_count && gaps[next_gap] == position && !quiet_reported) {
        quiet_reported = 1;
        return -1;
    }
    if (position >= stream_len) {
        if (timeout_ms == LINK_WAIT_FOREVER) {
            printf("END\n");
            exit(0);
        }
        return -1;
    }
    while (next_gap < gap_count && gaps[next_gap] <= position)
        next_gap++;
    quiet_reported = 0;
    return stream[position++];
}

static void write_bytes(const uint8_t *data, size_t len)
{
    (void)data;
    (void)len;
}

static unsigned char *read_file(const char *path, long *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        exit(2);
    fseek(f, 0, SEEK_END);
    *len = ftell(f);
    rewind(f);
    unsigned char *data = malloc(*len ? (size_t)*len : 1);
    if (fread(data, 1, (size_t)*len, f) != (size_t)*len)
        exit(2);
    fclose(f);
    return data;
}

int main(int argc, char **argv)
{
    if (argc != 3)
        return 2;
    stream = read_file(argv[1], &stream_len);
    FILE *g = fopen(argv[2], "r");
    if (!g)
        return 2;
    gaps = malloc(sizeof(long) * 100000);
    while (gap_count < 100000 && fscanf(g, "%ld", &gaps[gap_count]) == 1)
        gap_count++;
    fclose(g);

    static link_receiver rx;
    link_io io = {read_byte, write_bytes};
    link_receiver_init(&rx, io);
    for (;;) {
        link_event ev = link_next(&rx);
        if (ev.is_error)
            printf("E %u %u %ld\n", ev.error, ev.seq, (long)ev.value);
        else
            printf("F %u %u %u %08lx\n", ev.frame.type, ev.frame.seq, ev.frame.length,
                   (unsigned long)crc32_update(0, ev.frame.payload, ev.frame.length));
    }
}
