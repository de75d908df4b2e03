#include "link_tensor_io.h"

#include <string.h>

#include "link_frame.h"
#include "tensor_desc.h"

static size_t refuse(link_refusal *refusal, uint8_t code, int32_t value, const char *text)
{
    refusal->code = code;
    refusal->value = value;
    refusal->text = text;
    return 0;
}

static size_t wrong_size(link_refusal *refusal, size_t len)
{
    return refuse(refusal, LINK_ERR_BAD_PAYLOAD, (int32_t)len, "wrong payload size for this command");
}

size_t link_describe_tensor(const link_tensors *tensors, const uint8_t *payload, size_t len, uint8_t *reply,
                            link_refusal *refusal)
{
    trt_tensor_info t;
    const int8_t *int8 = NULL;
    refusal->code = 0;
    if (len != LINK_TENSOR_REQUEST_BYTES)
        return wrong_size(refusal, len);
    uint8_t kind = payload[LINK_TENSOR_KIND], index = payload[LINK_TENSOR_INDEX];
    int found = kind == LINK_TENSOR_INPUT    ? tensors->input(tensors->context, index, &t)
                : kind == LINK_TENSOR_OUTPUT ? tensors->output(tensors->context, index, &t, &int8)
                                             : -1;
    if (found != 0)
        return refuse(refusal, LINK_ERR_BAD_TENSOR, index, "no such input or output");
    tensor_desc_encode(&t, reply);
    return TENSOR_DESC_BYTES;
}

size_t link_write_input(const link_tensors *tensors, const uint8_t *payload, size_t len, uint8_t *reply,
                        link_refusal *refusal)
{
    trt_tensor_info t;
    refusal->code = 0;
    if (len < LINK_WRITE_HEADER_BYTES)
        return wrong_size(refusal, len);
    uint8_t index = payload[LINK_WRITE_INDEX], encoding = payload[LINK_WRITE_ENCODING];
    uint32_t first = link_get_u32(payload + LINK_WRITE_FIRST);
    const uint8_t *data = payload + LINK_WRITE_HEADER_BYTES;
    size_t data_len = len - LINK_WRITE_HEADER_BYTES, count;
    if (tensors->input(tensors->context, index, &t) != 0)
        return refuse(refusal, LINK_ERR_BAD_TENSOR, index, "no such input");
    if (encoding == LINK_ENCODING_RAW) {
        if (data_len % t.elem_size != 0)
            return refuse(refusal, LINK_ERR_BAD_PAYLOAD, (int32_t)data_len, "not a whole number of elements");
        count = data_len / t.elem_size;
    } else if (encoding == LINK_ENCODING_IMAGE) {
        if (t.dtype != TRT_FLOAT32)
            return refuse(refusal, LINK_ERR_BAD_TENSOR, index, "the image encoding needs a float32 input");
        count = data_len;
    } else {
        return refuse(refusal, LINK_ERR_BAD_TENSOR, encoding, "unknown encoding");
    }
    if (first > t.numel || count > t.numel - first)
        return refuse(refusal, LINK_ERR_BAD_TENSOR, (int32_t)first, "elements outside the input");
    uint8_t *at = t.data + (size_t)first * t.elem_size;
    if (encoding == LINK_ENCODING_RAW) {
        memcpy(at, data, data_len);
    } else {
        for (size_t k = 0; k < count; k++) {
            float x = (float)data[k] / 255.0f; /* as trt_infer converts an image */
            memcpy(at + 4 * k, &x, 4);
        }
    }
    link_put_u32(reply + LINK_WRITE_REPLY_FIRST, first);
    link_put_u32(reply + LINK_WRITE_REPLY_COUNT, (uint32_t)count);
    return LINK_WRITE_REPLY_BYTES;
}

size_t link_read_output(const link_tensors *tensors, const uint8_t *payload, size_t len, uint8_t *reply,
                        link_refusal *refusal)
{
    trt_tensor_info t;
    const int8_t *int8 = NULL;
    refusal->code = 0;
    if (len != LINK_READ_REQUEST_BYTES)
        return wrong_size(refusal, len);
    uint8_t index = payload[LINK_READ_INDEX], part = payload[LINK_READ_PART];
    uint32_t first = link_get_u32(payload + LINK_READ_FIRST);
    if (tensors->output(tensors->context, index, &t, &int8) != 0)
        return refuse(refusal, LINK_ERR_BAD_TENSOR, index, "no such output");
    const uint8_t *source;
    size_t elem;
    if (part == LINK_PART_VALUES) {
        source = t.data;
        elem = t.elem_size;
    } else if (part == LINK_PART_INT8 && int8) {
        source = (const uint8_t *)int8;
        elem = 1;
    } else {
        return refuse(refusal, LINK_ERR_BAD_TENSOR, part, "no such part of the output (int8: it has none)");
    }
    if (first > t.numel)
        return refuse(refusal, LINK_ERR_BAD_TENSOR, (int32_t)first, "elements outside the output");
    size_t count = t.numel - first, room = (LINK_MAX_PAYLOAD - LINK_READ_REPLY_HEADER_BYTES) / elem;
    if (count > room)
        count = room;
    link_put_u32(reply + LINK_READ_REPLY_FIRST, first);
    link_put_u32(reply + LINK_READ_REPLY_TOTAL, (uint32_t)t.numel);
    memcpy(reply + LINK_READ_REPLY_HEADER_BYTES, source + (size_t)first * elem, count * elem);
    return LINK_READ_REPLY_HEADER_BYTES + count * elem;
}

size_t link_append_outputs(const link_tensors *tensors, uint8_t *reply, size_t at, uint16_t *included)
{
    trt_tensor_info t;
    const int8_t *int8 = NULL;
    *included = 0;
    for (int i = 0; tensors->output(tensors->context, i, &t, &int8) == 0; i++) {
        size_t need = t.nbytes + (int8 ? t.numel : 0);
        if (at > LINK_MAX_PAYLOAD || need > LINK_MAX_PAYLOAD - at)
            break;
        memcpy(reply + at, t.data, t.nbytes);
        at += t.nbytes;
        if (int8) {
            memcpy(reply + at, int8, t.numel);
            at += t.numel;
        }
        (*included)++;
    }
    return at;
}
