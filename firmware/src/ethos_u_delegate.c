/*
 * Ethos-U delegates: the part of a program Vela compiled for an Arm Ethos-U NPU.
 *
 * The delegate's processed bytes (inline in the program) are a `vela_bin_stream`: blocks of a
 * 16-byte NUL-padded name, a u32 length, a u8 flag and 11 reserved bytes, then the data padded
 * to 16 bytes, in the order vela_bin_stream, cmd_data (the COP1 payload the driver runs),
 * weight_data (region 0), scratch_size (u32: region 1's size), inputs, outputs (each an i32
 * count, then per tensor i32 shape[6], element size, offset in the scratch, region),
 * vela_end_stream. Every length and offset is checked at load.
 *
 * The fast scratch (region 2) is not in the blob: its size is what the command stream writes
 * there, found by one pass over the stream at load (fast_scratch_bytes) - the end of every DMA
 * destination, weight and scale stream and OFM it places in region 2. The scratch and the fast
 * scratch are the delegate call's working memory, placed by the loader where no value of the
 * memory plan is live while it runs. A run copies the inputs into the scratch, invokes the NPU
 * driver (tinyrps_runtime.h) and copies the output back.
 */
#include <string.h>

#include "ethos_u_delegate.h"
#include "ethos_u_params.h"
#include "load_code.h"

#pragma weak trt_npu_reserve
#pragma weak trt_npu_invoke
#pragma weak trt_npu_release

#define BLOCK_HEADER 32
#define IO_RECORD_WORDS 9           /* shape[6], element size, offset, region */
#define COP1 0x31504F43u            /* "COP1" little-endian */
#define MAX_REGION_BYTES ((uint64_t)1 << 30)

typedef char ethos_u_params_fit[sizeof(ethos_u_params) <= sizeof(trt_params) ? 1 : -1];

static size_t align16(size_t n) { return (n + 15u) & ~(size_t)15u; }

static uint32_t read_u32(const uint8_t *b) {
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

/* ---- running ------------------------------------------------------------------------------- */

static const ethos_u_params *params_of(const trt_params *p) { return (const ethos_u_params *)(const void *)p; }

static size_t ethos_u_scratch(const trt_params *p) { (void)p; return sizeof(int32_t); }

static void ethos_u_prepare(trt_params *p, void *workspace) {
    ethos_u_params *e = (ethos_u_params *)(void *)p;
    e->status = (int32_t *)workspace;
    *e->status = TRT_OK;
}

static size_t ethos_u_temp(const trt_params *p) {
    return align16(params_of(p)->scratch_bytes) + align16(params_of(p)->fast_bytes);
}

static void ethos_u_invoke(const trt_params *params, void *temp) {
    const ethos_u_params *p = params_of(params);
    uint8_t *scratch = (uint8_t *)temp, *fast = scratch + align16(p->scratch_bytes);
    for (int i = 0; i < p->n_inputs; i++) memcpy(scratch + p->io[i].offset, p->io[i].arena_data, p->io[i].bytes);
    uint64_t bases[TRT_NPU_REGIONS] = {(uintptr_t)p->weights, (uintptr_t)scratch, (uintptr_t)fast};
    /* the fast scratch as allocated (16-byte aligned, ethos_u_temp): the command stream's furthest end,
     * rounded up, so a model that sizes it from every access it makes finds its bytes there */
    const size_t sizes[TRT_NPU_REGIONS] = {p->weight_bytes, p->scratch_bytes, align16(p->fast_bytes)};
    struct trt_npu_driver *driver = trt_npu_reserve();
    int failed = 1;
    if (driver) {
        failed = trt_npu_invoke(driver, p->cmd, (int)p->cmd_bytes, bases, sizes, TRT_NPU_REGIONS, NULL) != 0;
        trt_npu_release(driver);
    }
    *p->status = failed ? TRT_ERR_NPU : TRT_OK;
    if (failed) return;
    for (int i = p->n_inputs; i < p->n_inputs + p->n_outputs; i++)
        memcpy(p->io[i].arena_data, scratch + p->io[i].offset, p->io[i].bytes);
}

static const trt_kernel_variant ETHOS_U_VARIANT = {"npu", NULL, ethos_u_scratch, ethos_u_prepare, ethos_u_temp,
                                                   ethos_u_invoke};
static const trt_operator ETHOS_U_DELEGATE = {"EthosUBackend", "delegate", NULL, &ETHOS_U_VARIANT, 1, NULL};

trt_status trt_ethos_u_status(const trt_program *prog) {
    for (int i = 0; i < prog->n_calls; i++)
        if (prog->calls[i].op == &ETHOS_U_DELEGATE && *params_of(&prog->calls[i].p)->status != TRT_OK)
            return TRT_ERR_NPU;
    return TRT_OK;
}

TRT_LOAD_CODE_BEGIN

int trt_ethos_u_backend(const char *id, uint32_t len) { return pte_text_is(id, len, "EthosUBackend"); }

/* ---- the CPU part ---------------------------------------------------------------------------- */

/* ExecuTorch's quantized_decomposed:: operators, which the runtime has under its own namespace: the rows
 * named "cortex_m::" and the same name after it (operators.def), with the same overload. */
const trt_operator *trt_ethos_u_cpu_operator(const char *name, uint32_t name_len, const char *overload,
                                             uint32_t overload_len) {
    static const char NAMESPACE[] = "quantized_decomposed::";
    enum { SKIP = sizeof NAMESPACE - 1, ROW_SKIP = sizeof "cortex_m::" - 1 };
    const trt_operator *const rows[2] = {&trt_op_quantize_per_tensor, &trt_op_dequantize_per_tensor};
    if (name_len < SKIP || !pte_text_is(name, SKIP, NAMESPACE)) return NULL;
    for (int i = 0; i < 2; i++)
        if (pte_text_is(name + SKIP, name_len - SKIP, rows[i]->name + ROW_SKIP) &&
            pte_text_is(overload, overload_len, rows[i]->overload))
            return rows[i];
    return NULL;
}

trt_status trt_ethos_u_cpu_args(trt_program *prog, const trt_operator *op, int32_t *args, uint32_t *n_args) {
    enum { OUT_DTYPE = 6, WITH_OUT_DTYPE = 9 };
    if (op != &trt_op_dequantize_per_tensor || *n_args != WITH_OUT_DTYPE || prog->plan.delegates.count == 0)
        return TRT_OK;
    pte_value v;
    if (args[OUT_DTYPE] < 0 || pte_value_at(&prog->file, &prog->plan, (uint32_t)args[OUT_DTYPE], &v) != TRT_OK)
        return trt_fail(&prog->detail, TRT_ERR_MALFORMED, "bad out_dtype of dequantize_per_tensor");
    if (v.kind != PTE_VALUE_NULL && !(v.kind == PTE_VALUE_INT && v.int_val == TRT_FLOAT32))
        return trt_fail(&prog->detail, TRT_ERR_BAD_TENSOR, "dequantize_per_tensor to a dtype other than float32");
    for (uint32_t k = OUT_DTYPE; k + 1 < *n_args; k++) args[k] = args[k + 1];
    (*n_args)--;
    return TRT_OK;
}

/* ---- the blob -------------------------------------------------------------------------------- */

typedef struct {
    const uint8_t *data[7];
    uint32_t len[7];
} vela_blocks;

/* Each block's name field as the blob holds it: the name, NUL-padded to 16 bytes. */
static const char BLOCK_NAMES[7][16] = {"vela_bin_stream", "cmd_data", "weight_data", "scratch_size",
                                        "inputs", "outputs", "vela_end_stream"};
enum { CMD_DATA = 1, WEIGHT_DATA = 2, SCRATCH_SIZE = 3, INPUTS = 4, OUTPUTS = 5 };

/* The processed bytes of delegate `index`: inline data of the program. */
static trt_status delegate_blob(trt_program *prog, int32_t index, const uint8_t **blob, uint32_t *len) {
    const fb_buffer *fb = &prog->file.flat;
    fb_table delegate, reference, inline_data;
    fb_vector all, data;
    uint8_t location;
    uint32_t which;
    int present;
    if (index < 0 || fb_vector_table(fb, &prog->plan.delegates, (uint32_t)index, &delegate) != TRT_OK ||
        fb_table_field(fb, &delegate, 1, &reference, &present) != TRT_OK || !present ||
        fb_u8(fb, &reference, 0, 0, &location) != TRT_OK || fb_u32(fb, &reference, 1, 0, &which) != TRT_OK)
        return trt_fail(&prog->detail, TRT_ERR_MALFORMED, "bad delegate entry");
    if (location != 0) return trt_fail(&prog->detail, TRT_ERR_UNSUPPORTED_OP, "Ethos-U delegate data outside the program");
    if (fb_vector_field(fb, &prog->file.program, 3, 4, &all) != TRT_OK ||
        fb_vector_table(fb, &all, which, &inline_data) != TRT_OK ||
        fb_vector_field(fb, &inline_data, 0, 1, &data) != TRT_OK || data.count == 0)
        return trt_fail(&prog->detail, TRT_ERR_MALFORMED, "Ethos-U delegate data missing");
    *blob = fb->data + data.pos;
    *len = data.count;
    return TRT_OK;
}

static trt_status read_blocks(trt_program *prog, const uint8_t *blob, uint32_t len, vela_blocks *b) {
    size_t at = 0;
    for (int i = 0; i < 7; i++) {
        if (len - at < BLOCK_HEADER) return trt_fail(&prog->detail, TRT_ERR_TRUNCATED, "Ethos-U blob cut in a block header");
        for (int k = 0; k < 16; k++)   /* the name, then NULs only */
            if (blob[at + k] != (uint8_t)BLOCK_NAMES[i][k])
                return trt_fail_text(&prog->detail, TRT_ERR_MALFORMED, "Ethos-U blob lacks block", BLOCK_NAMES[i]);
        uint32_t block_len = read_u32(blob + at + 16);
        if (block_len > len || align16(block_len) > len - at - BLOCK_HEADER)
            return trt_fail_text(&prog->detail, TRT_ERR_TRUNCATED, "Ethos-U blob block runs past its end:", BLOCK_NAMES[i]);
        b->data[i] = blob + at + BLOCK_HEADER;
        b->len[i] = block_len;
        at += BLOCK_HEADER + align16(block_len);
    }
    return TRT_OK;
}

/* The delegate's tensors of one IO block, each checked against the scratch and the call's argument. */
static trt_status read_io(trt_program *prog, const vela_blocks *b, int block, uint32_t scratch, uint32_t first_arg,
                          uint32_t count_limit, ethos_u_io *io, uint8_t *count) {
    const uint8_t *d = b->data[block];
    if (b->len[block] < 4) return trt_fail(&prog->detail, TRT_ERR_TRUNCATED, "Ethos-U blob IO block too short");
    uint32_t n = read_u32(d);
    if (n == 0 || n > count_limit || b->len[block] != 4 + n * IO_RECORD_WORDS * 4)
        return trt_fail_number(&prog->detail, TRT_ERR_MALFORMED, "Ethos-U blob IO count does not match the call:", n);
    for (uint32_t i = 0; i < n; i++) {
        const uint8_t *r = d + 4 + i * IO_RECORD_WORDS * 4;
        uint64_t bytes = 1;
        for (int k = 0; k < 6; k++) {
            int32_t dim = (int32_t)read_u32(r + 4 * k);
            if (dim < 1 || dim > (1 << 24)) return trt_fail(&prog->detail, TRT_ERR_MALFORMED, "Ethos-U blob tensor shape out of range");
            bytes *= (uint64_t)dim;
            if (bytes > MAX_REGION_BYTES) return trt_fail(&prog->detail, TRT_ERR_MALFORMED, "Ethos-U blob tensor too large");
        }
        int32_t elem = (int32_t)read_u32(r + 24), offset = (int32_t)read_u32(r + 28);
        bytes *= (uint64_t)(elem > 0 ? elem : 0);
        if ((elem != 1 && elem != 2 && elem != 4) || offset < 0 || bytes > scratch || (uint64_t)offset > scratch - bytes)
            return trt_fail(&prog->detail, TRT_ERR_MALFORMED, "Ethos-U blob tensor outside its scratch");
        const trt_tensor *t = &prog->call_tensors[first_arg + i];
        if (prog->call_args[first_arg + i].kind != PTE_VALUE_TENSOR || !t->in_arena || t->nbytes != bytes ||
            t->elem_size != elem)
            return trt_fail(&prog->detail, TRT_ERR_BAD_TENSOR, "Ethos-U delegate argument differs from its blob tensor");
        io[i].arena_data = t->mutable_data;
        io[i].offset = (uint32_t)offset;
        io[i].bytes = (uint32_t)bytes;
    }
    *count = (uint8_t)n;
    return TRT_OK;
}

/* ---- the fast scratch's size from the command stream ------------------------------------------ */

enum {   /* the opcodes read here (cmd0: a 16-bit parameter; cmd1: a 32-bit payload word) */
    OP_CONV = 0x002, OP_DEPTHWISE = 0x003, OP_POOL = 0x005, OP_ELEMENTWISE = 0x006, OP_DMA_START = 0x010,
    OFM_WIDTH_M1 = 0x111, OFM_HEIGHT_M1 = 0x112, OFM_DEPTH_M1 = 0x113, OFM_PRECISION = 0x114,
    OFM_WIDTH0_M1 = 0x11A, OFM_HEIGHT0_M1 = 0x11B, OFM_HEIGHT1_M1 = 0x11C, OFM_REGION = 0x11F,
    WEIGHT_REGION = 0x128, SCALE_REGION = 0x129, DMA0_DST_REGION = 0x131,
    OFM_BASE0 = 0x010, OFM_STRIDE_X = 0x014, OFM_STRIDE_Y = 0x015, OFM_STRIDE_C = 0x016,
    WEIGHT_BASE = 0x020, WEIGHT_LENGTH = 0x021, SCALE_BASE = 0x022, SCALE_LENGTH = 0x023,
    DMA0_DST = 0x031, DMA0_LEN = 0x032,
};

typedef struct {
    uint16_t cmd0[0x140];   /* parameters of the cmd0 opcodes below 0x140 */
    uint64_t cmd1[0x40];    /* values of the cmd1 opcodes below 0x40 (40-bit addresses) */
} stream_registers;

static uint64_t max64(uint64_t a, uint64_t b) { return a > b ? a : b; }

/* The end of the OFM's last byte: over its (up to four) tiles, the farthest element. The sizes are 16-bit
 * register fields plus one, so their sums and products here stay far below 2^32; the addresses and strides
 * (40 bits) take 64. */
static uint64_t ofm_end(const stream_registers *r) {
    const uint32_t height = r->cmd0[OFM_HEIGHT_M1] + 1u, width = r->cmd0[OFM_WIDTH_M1] + 1u,
                   depth = r->cmd0[OFM_DEPTH_M1] + 1u, size = 1u << ((r->cmd0[OFM_PRECISION] >> 1) & 3),
                   brick = ((r->cmd0[OFM_PRECISION] >> 6) & 3) == 1;
    const uint32_t w0 = r->cmd0[OFM_WIDTH0_M1] + 1u, h[2] = {r->cmd0[OFM_HEIGHT0_M1] + 1u, r->cmd0[OFM_HEIGHT1_M1] + 1u};
    uint64_t end = 0;
    for (int t = 0; t < 4; t++) {
        const int right = t & 1, bottom = t >> 1;
        const uint32_t left_cols = width < w0 ? width : w0, top_rows = height < h[right] ? height : h[right];
        const uint32_t cols = right ? width - left_cols : left_cols, rows = bottom ? height - top_rows : top_rows;
        if (!cols || !rows) continue;
        uint64_t last = r->cmd1[OFM_BASE0 + t] + (uint64_t)(rows - 1) * r->cmd1[OFM_STRIDE_Y];
        if (brick)
            last += (uint64_t)((depth - 1) / 16) * r->cmd1[OFM_STRIDE_C] +
                    (16 * (cols - 1) + (depth - 1 < 15 ? depth - 1 : 15)) * size;
        else
            last += (uint64_t)(cols - 1) * r->cmd1[OFM_STRIDE_X] + (depth - 1) * size;
        end = max64(end, last + size);
    }
    return end;
}

static uint64_t operation_end(const stream_registers *r, int opcode) {
    uint64_t end = 0;
    if (opcode == OP_DMA_START)
        return (r->cmd0[DMA0_DST_REGION] & 7) == 2 ? r->cmd1[DMA0_DST] + r->cmd1[DMA0_LEN] : 0;
    if ((r->cmd0[OFM_REGION] & 7) == 2) end = ofm_end(r);
    if (opcode == OP_CONV || opcode == OP_DEPTHWISE) {
        if ((r->cmd0[WEIGHT_REGION] & 7) == 2) end = max64(end, r->cmd1[WEIGHT_BASE] + r->cmd1[WEIGHT_LENGTH]);
        if ((r->cmd0[SCALE_REGION] & 7) == 2) end = max64(end, r->cmd1[SCALE_BASE] + r->cmd1[SCALE_LENGTH]);
    }
    return end;
}

/* The COP1 payload: "COP1", then driver actions (a config tag of three words, NOP tags) up to the
 * command stream's tag, whose length covers the rest. Returns the stream's first word and count. */
static trt_status command_stream(trt_program *prog, const uint8_t *cmd, uint32_t bytes, const uint8_t **words,
                                 uint32_t *count) {
    uint32_t n = bytes / 4, at = 1;
    if (bytes % 4 || n < 4 || read_u32(cmd) != COP1)
        return trt_fail(&prog->detail, TRT_ERR_MALFORMED, "Ethos-U command data is not a COP1 payload");
    while (at < n) {
        uint32_t w = read_u32(cmd + 4 * at), tag = w & 0xFF;
        if (tag == 0x01) at += 3;
        else if (tag == 0x05) at += 1;
        else if (tag == 0x02 && ((((w >> 8) & 0xFF) << 16) | (w >> 16)) == n - at - 1) {
            *words = cmd + 4 * (at + 1);
            *count = n - at - 1;
            return TRT_OK;
        } else break;
    }
    return trt_fail(&prog->detail, TRT_ERR_MALFORMED, "Ethos-U COP1 payload has no whole command stream");
}

static trt_status fast_scratch_bytes(trt_program *prog, const uint8_t *cmd, uint32_t cmd_bytes, uint32_t *fast) {
    static stream_registers r;   /* load-time only: off the stack */
    const uint8_t *words = NULL;
    uint32_t count = 0;
    uint64_t end = 0;
    trt_status s = command_stream(prog, cmd, cmd_bytes, &words, &count);
    if (s != TRT_OK) return s;
    memset(&r, 0, sizeof r);
    for (uint32_t at = 0; at < count; at++) {
        const uint32_t w = read_u32(words + 4 * at), opcode = w & 0x3FF, kind = (w >> 14) & 3, param = w >> 16;
        if (kind == 1) {
            if (++at >= count) return trt_fail(&prog->detail, TRT_ERR_MALFORMED, "Ethos-U command stream cut short");
            if (opcode < 0x40) r.cmd1[opcode] = read_u32(words + 4 * at) | (uint64_t)(param & 0xFF) << 32;
        } else if (kind != 0) {
            return trt_fail(&prog->detail, TRT_ERR_MALFORMED, "Ethos-U command stream has a bad command word");
        } else if (opcode >= 0x100 && opcode < 0x140) {
            r.cmd0[opcode] = (uint16_t)param;
        } else if (opcode == OP_CONV || opcode == OP_DEPTHWISE || opcode == OP_POOL || opcode == OP_ELEMENTWISE ||
                   opcode == OP_DMA_START) {
            end = max64(end, operation_end(&r, (int)opcode));
        }
    }
    if (end > MAX_REGION_BYTES) return trt_fail(&prog->detail, TRT_ERR_MALFORMED, "Ethos-U fast scratch too large");
    *fast = (uint32_t)end;
    return TRT_OK;
}

/* ---- binding ------------------------------------------------------------------------------- */

trt_status trt_ethos_u_bind(trt_program *prog, int32_t delegate, trt_chain_call *kc, uint32_t n_args) {
    const uint8_t *blob = NULL;
    uint32_t len = 0;
    vela_blocks b;
    ethos_u_params *p = (ethos_u_params *)(void *)&kc->p;
    trt_status s;
    if ((s = delegate_blob(prog, delegate, &blob, &len)) != TRT_OK || (s = read_blocks(prog, blob, len, &b)) != TRT_OK)
        return s;
    memset(p, 0, sizeof *p);
    if (b.len[SCRATCH_SIZE] != 4 || b.len[CMD_DATA] == 0)
        return trt_fail(&prog->detail, TRT_ERR_MALFORMED, "Ethos-U blob scratch_size or cmd_data malformed");
    p->scratch_bytes = read_u32(b.data[SCRATCH_SIZE]);
    if (p->scratch_bytes > MAX_REGION_BYTES) return trt_fail(&prog->detail, TRT_ERR_MALFORMED, "Ethos-U scratch too large");
    if ((uintptr_t)b.data[CMD_DATA] % 16 || (uintptr_t)b.data[WEIGHT_DATA] % 16)
        return trt_fail(&prog->detail, TRT_ERR_BAD_TENSOR, "Ethos-U command stream or weights not 16-byte aligned");
    if (n_args < 2 || n_args > ETHOS_U_MAX_IO)
        return trt_fail_number(&prog->detail, TRT_ERR_LIMIT, "Ethos-U delegate arguments (at most 4):", n_args);
    if ((s = read_io(prog, &b, INPUTS, p->scratch_bytes, 0, n_args - 1, p->io, &p->n_inputs)) != TRT_OK) return s;
    if (p->n_inputs != n_args - 1)   /* the loader tracks one output per call */
        return trt_fail_number(&prog->detail, TRT_ERR_UNSUPPORTED_OP, "Ethos-U delegate outputs (one is supported):",
                               n_args - p->n_inputs);
    if ((s = read_io(prog, &b, OUTPUTS, p->scratch_bytes, p->n_inputs, 1, p->io + p->n_inputs, &p->n_outputs)) != TRT_OK)
        return s;
    p->cmd = b.data[CMD_DATA];
    p->cmd_bytes = b.len[CMD_DATA];
    p->weights = b.data[WEIGHT_DATA];
    p->weight_bytes = b.len[WEIGHT_DATA];
    if ((s = fast_scratch_bytes(prog, p->cmd, p->cmd_bytes, &p->fast_bytes)) != TRT_OK) return s;
    /* last: a program's own faults are told before what the build lacks */
    if (!trt_npu_reserve || !trt_npu_invoke || !trt_npu_release)
        return trt_fail(&prog->detail, TRT_ERR_UNSUPPORTED_OP, "Ethos-U delegate: no NPU driver linked (trt_npu_invoke)");
    kc->op = &ETHOS_U_DELEGATE;
    kc->kernel = &ETHOS_U_VARIANT;
    return TRT_OK;
}

TRT_LOAD_CODE_END
