/*
 * Batch mode over semihosting, for bulk evaluation: read a file of N 28x28
 * uint8 images, run each, write a file of fixed-size records, exit. The host
 * files are named on the semihosting command line:
 *     <anything> <images file> <outputs file>
 * Output file: a header, one record per image, the per-layer profile, a
 * trailer (layouts below and in docs/firmware.md; src/tinyrps/firmware/qemu.py
 * reads them). Exit status: 0 done, 1 bad arguments or I/O, 2 the program did
 * not load, 3 a CPU fault.
 */
#include "batch.h"

#include <string.h>

#include "batch_input.h"
#include "board.h"
#include "link_frame.h"
#include "semihost.h"

#define BATCH_MAGIC "TRPO"
#define BATCH_VERSION 3u
#define BATCH_HEADER_BYTES 144u
#define BATCH_RECORD_BYTES 96u
#define BATCH_PROFILE_MAGIC "TRPL"
#define BATCH_PROFILE_HEADER_BYTES 16u
#define BATCH_LAYER_BYTES 64u
#define BATCH_LAYER_NAME_BYTES 40u
#define BATCH_LAYER_VARIANT_BYTES 8u
#define BATCH_TRAILER_MAGIC "TRPE"
#define BATCH_TRAILER_BYTES 16u
#define BATCH_BOARD_NAME_BYTES 16u

#define EXIT_OK 0
#define EXIT_IO 1
#define EXIT_NOT_LOADED 2
#define EXIT_FAULT 3

/* The runtime's chain has at most this many kernel calls (TRT_MAX_INSTRUCTIONS). */
#define BATCH_MAX_LAYERS 32

/* SysTick ticks of each kernel call, summed over the batch's images. */
static uint64_t layer_ticks[BATCH_MAX_LAYERS];

/*
 * header: char[4] "TRPO", u32 version, u32 header bytes, u32 record bytes,
 *         u32 image count, i32 load status, u32 arena needed, u32 arena capacity,
 *         u32 program bytes, u32 boot instructions, u8[32] program SHA-256 (at 40),
 *         char[48] load detail (at 72), char[16] board name (at 120), zero padding.
 * record: i32 status, u32 n outputs, u64 instructions, i8[16] outputs, f32[16] logits.
 * profile: char[4] "TRPL", u32 layers, u32 layer bytes, u32 images profiled, then per
 *         kernel call: char[40] operator name, char[8] the kernel variant the runtime bound
 *         ("mve", "dsp", "c"), u64 multiply-accumulates per inference, u64 instructions
 *         summed over the images.
 * trailer (written last, so a complete file ends with it): char[4] "TRPE",
 *         u32 stack bytes used, u32 stack size, u32 records written.
 */
static void encode_header(const firmware_state *fw, uint32_t count, uint8_t header[BATCH_HEADER_BYTES])
{
    memset(header, 0, BATCH_HEADER_BYTES);
    memcpy(header, BATCH_MAGIC, 4);
    link_put_u32(header + 4, BATCH_VERSION);
    link_put_u32(header + 8, BATCH_HEADER_BYTES);
    link_put_u32(header + 12, BATCH_RECORD_BYTES);
    link_put_u32(header + 16, count);
    link_put_u32(header + 20, (uint32_t)fw->load_status);
    link_put_u32(header + 24, (uint32_t)fw->arena_needed);
    link_put_u32(header + 28, (uint32_t)fw->arena_capacity);
    link_put_u32(header + 32, (uint32_t)fw->model.length);
    link_put_u32(header + 36, fw->boot_instructions);
    memcpy(header + 40, fw->model_sha256, SHA256_DIGEST_BYTES);
    text_copy((char *)header + 72, LOAD_DETAIL_BYTES, fw->load_detail);
    text_copy((char *)header + 120, BATCH_BOARD_NAME_BYTES, firmware_board_name());
}

static void encode_trailer(uint32_t records, uint8_t trailer[BATCH_TRAILER_BYTES])
{
    memcpy(trailer, BATCH_TRAILER_MAGIC, 4);
    link_put_u32(trailer + 4, (uint32_t)board_stack_used());
    link_put_u32(trailer + 8, (uint32_t)board_stack_size());
    link_put_u32(trailer + 12, records);
}

static void encode_record(trt_status status, size_t n_out, uint64_t instructions, const int8_t *out_q,
                          const float *logits, uint8_t record[BATCH_RECORD_BYTES])
{
    memset(record, 0, BATCH_RECORD_BYTES);
    link_put_u32(record, (uint32_t)status);
    link_put_u32(record + 4, (uint32_t)n_out);
    link_put_u64(record + 8, instructions);
    for (size_t i = 0; i < n_out && i < FIRMWARE_MAX_LOGITS; i++) {
        uint32_t bits;
        memcpy(&bits, &logits[i], sizeof bits);
        record[16 + i] = (uint8_t)out_q[i];
        link_put_u32(record + 32 + 4 * i, bits);
    }
}

static __attribute__((noreturn)) void fail(const char *why)
{
    semihost_print("tinyrps firmware batch: ");
    semihost_print(why);
    semihost_print("\n");
    semihost_exit(EXIT_IO);
}

static int layer_count(const firmware_state *fw)
{
    int layers = fw->load_status == TRT_OK ? trt_instruction_count(fw->program) : 0;
    return layers < BATCH_MAX_LAYERS ? layers : BATCH_MAX_LAYERS;
}

static void add_layer_profile(const firmware_state *fw)
{
    for (int i = 0; i < layer_count(fw); i++) {
        uint64_t ticks = 0, macs = 0;
        if (trt_instruction_profile(fw->program, i, &ticks, &macs) == TRT_OK)
            layer_ticks[i] += ticks;
    }
}

static void write_all(int out, const void *data, size_t len)
{
    if (semihost_write_all(out, data, len) != 0)
        fail("cannot write the outputs file");
}

static void write_profile(const firmware_state *fw, int out, uint32_t images)
{
    uint8_t header[BATCH_PROFILE_HEADER_BYTES];
    memcpy(header, BATCH_PROFILE_MAGIC, 4);
    link_put_u32(header + 4, (uint32_t)layer_count(fw));
    link_put_u32(header + 8, BATCH_LAYER_BYTES);
    link_put_u32(header + 12, images);
    write_all(out, header, sizeof header);
    for (int i = 0; i < layer_count(fw); i++) {
        uint8_t layer[BATCH_LAYER_BYTES];
        uint64_t ticks = 0, macs = 0;
        trt_instruction_profile(fw->program, i, &ticks, &macs);
        text_copy((char *)layer, BATCH_LAYER_NAME_BYTES, trt_instruction_name(fw->program, i));
        text_copy((char *)layer + 40, BATCH_LAYER_VARIANT_BYTES, trt_instruction_variant(fw->program, i));
        link_put_u64(layer + 48, macs);
        link_put_u64(layer + 56, board_ticks_to_instructions(layer_ticks[i]));
        write_all(out, layer, sizeof layer);
    }
}

static void run_images(firmware_state *fw, int in, int out, uint32_t count)
{
    static uint8_t image[TRT_IMAGE_BYTES];
    uint8_t record[BATCH_RECORD_BYTES];
    for (uint32_t i = 0; i < count; i++) {
        if (semihost_read_all(in, image, sizeof image) != 0)
            fail("cannot read the images file");
        int8_t out_q[FIRMWARE_MAX_LOGITS] = {0};
        float logits[FIRMWARE_MAX_LOGITS] = {0};
        size_t n_out = 0;
        uint64_t instructions = 0;
        trt_status status = firmware_infer(fw, image, out_q, logits, &n_out, &instructions);
        if (status == TRT_OK)
            add_layer_profile(fw);
        encode_record(status, n_out, instructions, out_q, logits, record);
        write_all(out, record, sizeof record);
    }
}

void run_batch(firmware_state *fw)
{
    static char line[512];
    char *images_path, *outputs_path;
    if (semihost_command_line(line, sizeof line - 1) != 0 || batch_file_names(line, &images_path, &outputs_path) != 0)
        fail("expected '<images file> <outputs file>' on the semihosting command line");
    int in = semihost_open(images_path, SEMIHOST_OPEN_READ);
    if (in < 0)
        fail("cannot open the images file");
    uint32_t images_in_file;
    if (batch_image_count(semihost_file_length(in), &images_in_file) != 0)
        fail("the images file is not a whole number of 784-byte images");
    uint32_t count = fw->load_status == TRT_OK ? images_in_file : 0;
    int out = semihost_open(outputs_path, SEMIHOST_OPEN_WRITE);
    if (out < 0)
        fail("cannot create the outputs file");
    uint8_t header[BATCH_HEADER_BYTES];
    encode_header(fw, count, header);
    write_all(out, header, sizeof header);
    run_images(fw, in, out, count);
    write_profile(fw, out, count);
    uint8_t trailer[BATCH_TRAILER_BYTES];
    encode_trailer(count, trailer);
    write_all(out, trailer, sizeof trailer);
    semihost_close(in);
    semihost_close(out);
    semihost_exit(fw->load_status == TRT_OK ? EXIT_OK : EXIT_NOT_LOADED);
}

void batch_report_fault(const char *what)
{
    semihost_print("tinyrps firmware fault: ");
    semihost_print(what);
    semihost_print("\n");
    semihost_exit(EXIT_FAULT);
}
