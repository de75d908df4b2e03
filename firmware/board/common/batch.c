/*
 * Batch mode over semihosting, for bulk work: read a samples file (every input of
 * the program, per sample), run each sample, write a results file, exit. The host
 * files are named on the semihosting command line:
 *     <anything> <samples file> <results file>
 * The files' layouts are protocol/batch_format.h (and docs/firmware.md;
 * src/tinyrps/firmware/qemu.py reads them). Exit status: BATCH_EXIT_LIST.
 */
#include "batch.h"

#include <string.h>

#include "batch_format.h"
#include "batch_input.h"
#include "board.h"
#include "link_frame.h"
#include "semihost.h"
#include "tensor_desc.h"

/* SysTick ticks of each kernel call, summed over the batch's samples. */
static uint64_t layer_ticks[TRT_MAX_KERNEL_CALLS];

static __attribute__((noreturn)) void fail(const char *why)
{
    semihost_print("tinyrps firmware batch: ");
    semihost_print(why);
    semihost_print("\n");
    semihost_exit(BATCH_EXIT_IO);
}

static void write_all(int out, const void *data, size_t len)
{
    if (semihost_write_all(out, data, len) != 0)
        fail("cannot write the results file");
}

static int loaded(const firmware_state *fw) { return fw->load_status == TRT_OK; }

/* Bytes of one sample (every input) and of one record (its header, every output and raw int8). */
static uint32_t sample_bytes(const firmware_state *fw)
{
    uint32_t total = 0;
    trt_tensor_info t;
    for (int i = 0; i < trt_input_count(fw->program); i++)
        if (trt_input(fw->program, i, &t) == TRT_OK)
            total += (uint32_t)t.nbytes;
    return total;
}

static uint32_t record_bytes(const firmware_state *fw)
{
    uint32_t total = BATCH_RECORD_HEADER_BYTES;
    trt_tensor_info t;
    for (int i = 0; i < trt_output_count(fw->program); i++)
        if (trt_output(fw->program, i, &t) == TRT_OK)
            total += (uint32_t)(t.nbytes + (t.has_int8 ? t.numel : 0));
    return total;
}

static void write_header(const firmware_state *fw, int out, uint32_t count)
{
    int inputs = trt_input_count(fw->program), outputs = trt_output_count(fw->program);
    uint8_t header[BATCH_HEADER_FIXED_BYTES];
    memset(header, 0, sizeof header);
    memcpy(header + BATCH_HEADER_MAGIC, BATCH_HEADER_ID, 4);
    link_put_u32(header + BATCH_HEADER_VERSION, BATCH_VERSION);
    link_put_u32(header + BATCH_HEADER_HEADER_BYTES,
                 (uint32_t)(BATCH_HEADER_FIXED_BYTES + TENSOR_DESC_BYTES * (inputs + outputs)));
    link_put_u32(header + BATCH_HEADER_RECORD_BYTES, record_bytes(fw));
    link_put_u32(header + BATCH_HEADER_COUNT, count);
    link_put_u32(header + BATCH_HEADER_LOAD_STATUS, (uint32_t)fw->load_status);
    link_put_u32(header + BATCH_HEADER_ARENA_NEEDED, (uint32_t)fw->arena_needed);
    link_put_u32(header + BATCH_HEADER_ARENA_CAPACITY, (uint32_t)fw->arena_capacity);
    trt_arena_parts parts;
    trt_arena_layout(fw->program, &parts);
    link_put_u32(header + BATCH_HEADER_ARENA_PLANNED, (uint32_t)parts.planned);
    link_put_u32(header + BATCH_HEADER_ARENA_WORKSPACE, (uint32_t)parts.workspace);
    link_put_u32(header + BATCH_HEADER_ARENA_WORKING, (uint32_t)parts.working);
    link_put_u32(header + BATCH_HEADER_PROGRAM_BYTES, (uint32_t)fw->model.length);
    link_put_u32(header + BATCH_HEADER_BOOT_INSTRUCTIONS, fw->boot_instructions);
    link_put_u32(header + BATCH_HEADER_LOAD_INSTRUCTIONS, fw->load_instructions);
    if (fw->sha256_known) {
        memcpy(header + BATCH_HEADER_SHA256, fw->model_sha256, SHA256_DIGEST_BYTES);
        link_put_u32(header + BATCH_HEADER_SHA256_INSTRUCTIONS, fw->sha256_instructions);
        link_put_u32(header + BATCH_HEADER_SHA256_KNOWN, 1);
    }
    text_copy((char *)header + BATCH_HEADER_LOAD_DETAIL, LOAD_DETAIL_BYTES, fw->load_detail);
    text_copy((char *)header + BATCH_HEADER_BOARD, 16, firmware_board_name());
    link_put_u16(header + BATCH_HEADER_INPUTS, (uint16_t)inputs);
    link_put_u16(header + BATCH_HEADER_OUTPUTS, (uint16_t)outputs);
    link_put_u32(header + BATCH_HEADER_SAMPLE_BYTES, sample_bytes(fw));
    link_put_u32(header + BATCH_HEADER_LIMIT_COUNT, TRT_LIMIT_COUNT);
    for (int i = 0; i < TRT_LIMIT_COUNT && i < BATCH_MAX_LIMITS; i++)
        link_put_u32(header + BATCH_HEADER_LIMITS + 4 * i, trt_limit(i, NULL));
    write_all(out, header, sizeof header);
    uint8_t desc[TENSOR_DESC_BYTES];
    trt_tensor_info t;
    for (int i = 0; i < inputs; i++) {
        trt_input(fw->program, i, &t);
        tensor_desc_encode(&t, desc);
        write_all(out, desc, sizeof desc);
    }
    for (int i = 0; i < outputs; i++) {
        trt_output(fw->program, i, &t);
        tensor_desc_encode(&t, desc);
        write_all(out, desc, sizeof desc);
    }
}

static void write_trailer(int out, uint32_t records)
{
    uint8_t trailer[BATCH_TRAILER_BYTES];
    memcpy(trailer + BATCH_TRAILER_MAGIC, BATCH_TRAILER_ID, 4);
    link_put_u32(trailer + BATCH_TRAILER_STACK_USED, (uint32_t)board_stack_used());
    link_put_u32(trailer + BATCH_TRAILER_STACK_SIZE, (uint32_t)board_stack_size());
    link_put_u32(trailer + BATCH_TRAILER_RECORDS, records);
    write_all(out, trailer, sizeof trailer);
}

/* The record of the last run: its header, then every output's bytes and raw int8 values, read
 * in place from the arena. */
static void write_record(const firmware_state *fw, int out, trt_status status, uint64_t instructions)
{
    uint8_t header[BATCH_RECORD_HEADER_BYTES];
    memset(header, 0, sizeof header);
    link_put_u32(header + BATCH_RECORD_STATUS, (uint32_t)status);
    link_put_u64(header + BATCH_RECORD_INSTRUCTIONS, instructions);
    write_all(out, header, sizeof header);
    trt_tensor_info t;
    for (int i = 0; i < trt_output_count(fw->program); i++) {
        trt_output(fw->program, i, &t);
        write_all(out, t.data, t.nbytes);
        const int8_t *q;
        size_t count;
        if (trt_output_int8(fw->program, i, &q, &count) == TRT_OK)
            write_all(out, q, count);
    }
}

static int layer_count(const firmware_state *fw) { return loaded(fw) ? trt_call_count(fw->program) : 0; }

static void add_layer_profile(const firmware_state *fw)
{
    for (int i = 0; i < layer_count(fw); i++) {
        uint64_t ticks = 0, macs = 0;
        if (trt_call_profile(fw->program, i, &ticks, &macs) == TRT_OK)
            layer_ticks[i] += ticks;
    }
}

static void write_profile(const firmware_state *fw, int out, uint32_t samples)
{
    uint8_t header[BATCH_PROFILE_HEADER_BYTES];
    memcpy(header + BATCH_PROFILE_MAGIC, BATCH_PROFILE_ID, 4);
    link_put_u32(header + BATCH_PROFILE_LAYERS, (uint32_t)layer_count(fw));
    link_put_u32(header + BATCH_PROFILE_LAYER_BYTES, BATCH_LAYER_BYTES);
    link_put_u32(header + BATCH_PROFILE_SAMPLES, samples);
    write_all(out, header, sizeof header);
    for (int i = 0; i < layer_count(fw); i++) {
        uint8_t layer[BATCH_LAYER_BYTES];
        uint64_t ticks = 0, macs = 0;
        trt_call_profile(fw->program, i, &ticks, &macs);
        text_copy((char *)layer + BATCH_LAYER_OPERATOR, BATCH_LAYER_VARIANT - BATCH_LAYER_OPERATOR,
                  trt_call_name(fw->program, i));
        text_copy((char *)layer + BATCH_LAYER_VARIANT, BATCH_LAYER_MACS - BATCH_LAYER_VARIANT,
                  trt_call_variant(fw->program, i));
        link_put_u64(layer + BATCH_LAYER_MACS, macs);
        link_put_u64(layer + BATCH_LAYER_INSTRUCTIONS, board_ticks_to_instructions(layer_ticks[i]));
        link_put_u32(layer + BATCH_LAYER_VARIANT_INDEX, (uint32_t)trt_call_variant_index(fw->program, i));
        link_put_u32(layer + BATCH_LAYER_LAYER_PAD, 0);
        write_all(out, layer, sizeof layer);
    }
}

/* Each sample's inputs are read straight into the program's input tensors. */
static void run_samples(firmware_state *fw, int in, int out, uint32_t count)
{
    trt_tensor_info t;
    for (uint32_t s = 0; s < count; s++) {
        for (int i = 0; i < trt_input_count(fw->program); i++) {
            trt_input(fw->program, i, &t);
            if (semihost_read_all(in, t.data, t.nbytes) != 0)
                fail("cannot read the samples file");
        }
        uint64_t instructions = 0;
        trt_status status = firmware_run(fw, &instructions);
        if (status == TRT_OK)
            add_layer_profile(fw);
        write_record(fw, out, status, instructions);
    }
}

void run_batch(firmware_state *fw)
{
    static char line[512];
    char *samples_path, *results_path;
    if (semihost_command_line(line, sizeof line - 1) != 0 || batch_file_names(line, &samples_path, &results_path) != 0)
        fail("expected '<samples file> <results file>' on the semihosting command line");
    int in = semihost_open(samples_path, SEMIHOST_OPEN_READ);
    if (in < 0)
        fail("cannot open the samples file");
    uint32_t count = 0;
    if (loaded(fw) && batch_sample_count(semihost_file_length(in), sample_bytes(fw), &count) != 0)
        fail("the samples file is not a whole number of the program's samples (its inputs)");
    int out = semihost_open(results_path, SEMIHOST_OPEN_WRITE);
    if (out < 0)
        fail("cannot create the results file");
    if (fw->model.flags & BOOT_FLAG_SHA256)
        firmware_sha256(fw);
    write_header(fw, out, count);
    run_samples(fw, in, out, count);
    write_profile(fw, out, count);
    write_trailer(out, count);
    semihost_close(in);
    semihost_close(out);
    semihost_exit(loaded(fw) ? BATCH_EXIT_OK : BATCH_EXIT_NOT_LOADED);
}

void batch_report_fault(const char *what)
{
    semihost_print("tinyrps firmware fault: ");
    semihost_print(what);
    semihost_print("\n");
    semihost_exit(BATCH_EXIT_FAULT);
}
