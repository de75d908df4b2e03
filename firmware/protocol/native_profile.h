/*
 * The profile file of the native build's `tinyrps-native run MODEL INPUTS RESULTS PROFILE`
 * (firmware/native/tinyrps_native.c): how far the host's monotonic clock advanced across each
 * inference and each of its kernel calls. The host (src/tinyrps/devices/native.py) reads these
 * constants and layouts from this file (src/tinyrps/firmware/c_facts.py). Little-endian.
 *
 *   header    the fields below;
 *   records   one per sample, in the samples file's order: the count across the whole
 *             trt_run, then the count across each kernel call in chain order
 *             (NATIVE_PROFILE_COUNT_BYTES each: 1 + CALLS counts per record).
 *
 * The counts are wall-clock nanoseconds of this machine (CLOCK_MONOTONIC), not cycles of any
 * core: they vary from run to run with the host's load.
 */
#ifndef TINYRPS_NATIVE_PROFILE_H
#define TINYRPS_NATIVE_PROFILE_H

#define NATIVE_PROFILE_ID "TNPF"
#define NATIVE_PROFILE_VERSION 1
/* what one count is: the key the host files the counts under */
#define NATIVE_PROFILE_COUNTER "nanoseconds"

#define NATIVE_PROFILE_FIELDS(X)                                                                 \
    X(MAGIC, 0, text4) X(VERSION, 4, u32) X(SAMPLES, 8, u32) X(CALLS, 12, u32)                 \
    X(COUNTER, 16, text16)        /* NATIVE_PROFILE_COUNTER */
#define NATIVE_PROFILE_HEADER_BYTES 32
#define NATIVE_PROFILE_COUNT_BYTES 8

#define NATIVE_PROFILE_FIELD(f, o, t) NATIVE_PROFILE_HEADER_##f = o,
enum { NATIVE_PROFILE_FIELDS(NATIVE_PROFILE_FIELD) };
#undef NATIVE_PROFILE_FIELD

#endif
