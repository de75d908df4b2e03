/*
 * libFuzzer target: the device link's tensor requests (firmware/protocol/link_tensor_io.c:
 * TENSOR, WRITE, RUN's piece and outputs, READ) on a stand-in program, under AddressSanitizer
 * and UBSan.
 *
 * The stand-in has two inputs (float32 [1, 3, 4, 4] stored channels-last, int8 [5]) and
 * two outputs (float32 [7] with raw int8 values, int32 [2, 3] without), each in a heap
 * buffer of exactly its size, so a byte written or read outside a tensor is caught.
 * Input: a sequence of requests, each a command byte (TENSOR, WRITE, RUN or READ; others are
 * skipped), a length byte and that many payload bytes (RUN: a piece of an input, or none). Beyond memory safety the code must
 * keep its promises, checked here: a reply fits one frame and has the size its command
 * gives; a refusal has a code; a WRITE changes exactly the elements its reply names, to
 * the request's bytes (or their image conversion); a READ returns exactly the elements
 * it names, from the tensor's own bytes.
 */
#include <stdlib.h>
#include <string.h>

#include "link_frame.h"
#include "link_tensor_io.h"
#include "tensor_desc.h"

typedef struct {
    trt_tensor_info t;
    uint8_t *int8;
} fake_tensor;

static fake_tensor inputs[2], outputs[2];

static void make(fake_tensor *f, int dtype, size_t elem, int rank, const int32_t *sizes, const uint8_t *order,
                 int with_int8)
{
    memset(f, 0, sizeof *f);
    f->t.dtype = dtype;
    f->t.rank = rank;
    f->t.elem_size = elem;
    f->t.numel = 1;
    for (int d = 0; d < rank; d++) {
        f->t.sizes[d] = sizes[d];
        f->t.dim_order[d] = order[d];
        f->t.numel *= (size_t)sizes[d];
    }
    f->t.nbytes = f->t.numel * elem;
    f->t.data = malloc(f->t.nbytes);
    for (size_t b = 0; b < f->t.nbytes; b++)
        f->t.data[b] = (uint8_t)(b * 13 + 1);
    f->t.has_int8 = with_int8;
    if (with_int8) {
        f->int8 = malloc(f->t.numel);
        for (size_t b = 0; b < f->t.numel; b++)
            f->int8[b] = (uint8_t)(b * 7);
    }
}

static void make_all(void)
{
    static const int32_t s0[] = {1, 3, 4, 4}, s1[] = {5}, s2[] = {7}, s3[] = {2, 3};
    static const uint8_t nhwc[] = {0, 2, 3, 1}, one[] = {0}, two[] = {0, 1};
    make(&inputs[0], TRT_FLOAT32, 4, 4, s0, nhwc, 0);
    make(&inputs[1], TRT_INT8, 1, 1, s1, one, 0);
    make(&outputs[0], TRT_FLOAT32, 4, 1, s2, one, 1);
    make(&outputs[1], TRT_INT32, 4, 2, s3, two, 0);
}

static void free_all(void)
{
    for (int i = 0; i < 2; i++) {
        free(inputs[i].t.data);
        free(outputs[i].t.data);
        free(outputs[i].int8);
    }
}

static int get_input(void *context, int index, trt_tensor_info *t)
{
    (void)context;
    if (index < 0 || index >= 2)
        return -1;
    *t = inputs[index].t;
    return 0;
}

static int get_output(void *context, int index, trt_tensor_info *t, const int8_t **int8)
{
    (void)context;
    if (index < 0 || index >= 2)
        return -1;
    *t = outputs[index].t;
    *int8 = (const int8_t *)outputs[index].int8;
    return 0;
}

static const link_tensors tensors = {NULL, get_input, get_output};

/* The inputs' bytes before the request: a refused WRITE changes nothing, an answered one only
 * the elements its reply names. */
static uint8_t before[2][256];

static void snapshot_inputs(void)
{
    for (int i = 0; i < 2; i++)
        memcpy(before[i], inputs[i].t.data, inputs[i].t.nbytes);
}

static void check_write(const uint8_t *payload, const uint8_t *reply, size_t reply_len, const link_refusal *refusal)
{
    uint32_t first = 0, count = 0;
    int index = -1;
    if (refusal->code) {
        if (reply_len != 0)
            abort();
    } else {
        if (reply_len != LINK_WRITE_REPLY_BYTES)
            abort();
        index = payload[LINK_WRITE_INDEX];
        first = link_get_u32(reply + LINK_WRITE_REPLY_FIRST);
        count = link_get_u32(reply + LINK_WRITE_REPLY_COUNT);
        if (index > 1 || first != link_get_u32(payload + LINK_WRITE_FIRST) || first + (size_t)count > inputs[index].t.numel)
            abort();
    }
    for (int i = 0; i < 2; i++) {
        const fake_tensor *f = &inputs[i];
        for (size_t e = 0; e < f->t.numel; e++) {
            const uint8_t *at = f->t.data + e * f->t.elem_size;
            if (i != index || e < first || e >= first + (size_t)count) {
                if (memcmp(at, before[i] + e * f->t.elem_size, f->t.elem_size) != 0)
                    abort(); /* an element the request did not name changed */
                continue;
            }
            size_t step = payload[LINK_WRITE_ENCODING] == LINK_ENCODING_RAW ? f->t.elem_size : 1;
            const uint8_t *data = payload + LINK_WRITE_HEADER_BYTES + (e - first) * step;
            if (payload[LINK_WRITE_ENCODING] == LINK_ENCODING_RAW) {
                if (memcmp(at, data, f->t.elem_size) != 0)
                    abort();
            } else {
                float want = (float)data[0] / 255.0f;
                if (memcmp(at, &want, 4) != 0)
                    abort();
            }
        }
    }
}

static void check_read(const uint8_t *payload, const uint8_t *reply, size_t reply_len, const link_refusal *refusal)
{
    if (refusal->code) {
        if (reply_len != 0)
            abort();
        return;
    }
    if (reply_len < LINK_READ_REPLY_HEADER_BYTES || reply_len > LINK_MAX_PAYLOAD)
        abort();
    const fake_tensor *f = &outputs[payload[LINK_READ_INDEX]];
    int int8 = payload[LINK_READ_PART] == LINK_PART_INT8;
    size_t elem = int8 ? 1 : f->t.elem_size;
    const uint8_t *source = int8 ? f->int8 : f->t.data;
    uint32_t first = link_get_u32(reply + LINK_READ_REPLY_FIRST), total = link_get_u32(reply + LINK_READ_REPLY_TOTAL);
    size_t data_len = reply_len - LINK_READ_REPLY_HEADER_BYTES;
    if (total != f->t.numel || data_len % elem != 0 || first + data_len / elem > total)
        abort();
    /* as many as fit: either all that remain, or a full frame */
    if (first + data_len / elem < total && data_len + elem <= LINK_MAX_PAYLOAD - LINK_READ_REPLY_HEADER_BYTES)
        abort();
    if (memcmp(reply + LINK_READ_REPLY_HEADER_BYTES, source + (size_t)first * elem, data_len) != 0)
        abort();
}

/* RUN's reply: the outputs in full, in order, while they fit one frame. */
static void check_run_reply(uint8_t *reply)
{
    uint16_t included = 0xFFFF;
    size_t length = link_append_outputs(&tensors, reply, LINK_RUN_REPLY_BYTES, &included);
    size_t at = LINK_RUN_REPLY_BYTES;
    for (int i = 0; i < included; i++) {
        const fake_tensor *f = &outputs[i];
        if (included > 2 || memcmp(reply + at, f->t.data, f->t.nbytes) != 0)
            abort();
        at += f->t.nbytes;
        if (f->int8) {
            if (memcmp(reply + at, f->int8, f->t.numel) != 0)
                abort();
            at += f->t.numel;
        }
    }
    if (length != at || length > LINK_MAX_PAYLOAD || included != 2) /* both stand-in outputs are small */
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static uint8_t reply[LINK_MAX_PAYLOAD];
    make_all();
    size_t pos = 0;
    while (pos + 2 <= size) {
        uint8_t command = data[pos], len = data[pos + 1];
        pos += 2;
        if (len > size - pos)
            len = (uint8_t)(size - pos);
        /* an exact-size copy: a read past the payload is caught */
        uint8_t *payload = malloc(len ? len : 1);
        memcpy(payload, data + pos, len);
        pos += len;
        link_refusal refusal = {0xEE, 0, NULL};
        size_t reply_len;
        switch (command) {
        case LINK_CMD_TENSOR:
            reply_len = link_describe_tensor(&tensors, payload, len, reply, &refusal);
            if (refusal.code ? reply_len != 0 : reply_len != TENSOR_DESC_BYTES)
                abort();
            break;
        case LINK_CMD_WRITE:
            snapshot_inputs();
            reply_len = link_write_input(&tensors, payload, len, reply, &refusal);
            check_write(payload, reply, reply_len, &refusal);
            break;
        case LINK_CMD_READ:
            reply_len = link_read_output(&tensors, payload, len, reply, &refusal);
            check_read(payload, reply, reply_len, &refusal);
            break;
        case LINK_CMD_RUN:
            /* the link loop's RUN: the piece first (when there is one), then the outputs that fit */
            if (len) {
                snapshot_inputs();
                reply_len = link_write_input(&tensors, payload, len, reply, &refusal);
                check_write(payload, reply, reply_len, &refusal);
            } else {
                refusal.code = 0;
            }
            if (!refusal.code)
                check_run_reply(reply);
            break;
        default:
            refusal.code = 0;
            break;
        }
        if (refusal.code == 0xEE || (refusal.code && !refusal.text))
            abort(); /* every call says whether it answered, and a refusal says why */
        free(payload);
    }
    free_all();
    return 0;
}
