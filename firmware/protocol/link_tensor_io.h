/*
 * The device link's tensor requests (link_protocol.h: TENSOR, WRITE, READ), decoded and
 * checked against the program's inputs and outputs. Portable C with no board calls: the
 * firmware's link loop and the host's fuzz target (firmware/fuzz/) link the same code.
 * Each function either fills a reply or refuses the request with an error code, value and
 * text for an error frame; nothing is written or read outside the tensor named.
 */
#ifndef TINYRPS_LINK_TENSOR_IO_H
#define TINYRPS_LINK_TENSOR_IO_H

#include <stddef.h>
#include <stdint.h>

#include "link_protocol.h"
#include "tinyrps_runtime.h"

/* Where the tensors are: the loaded program, or the fuzz target's stand-in. Each returns 0 and
 * fills *t (and *int8: the raw int8 values, NULL when the output has none), or -1 when there
 * is no such tensor. */
typedef struct {
    void *context;
    int (*input)(void *context, int index, trt_tensor_info *t);
    int (*output)(void *context, int index, trt_tensor_info *t, const int8_t **int8);
} link_tensors;

typedef struct {
    uint8_t code;        /* LINK_ERR_*, 0 when the request was answered */
    int32_t value;
    const char *text;
} link_refusal;

/* TENSOR: the description of one input or output (tensor_desc.h) into reply; returns its length. */
size_t link_describe_tensor(const link_tensors *tensors, const uint8_t *payload, size_t len, uint8_t *reply,
                            link_refusal *refusal);

/* WRITE: copies (or, for the image encoding, converts) the elements into the input; the reply
 * says which (LINK_WRITE_REPLY_BYTES). Returns the reply's length. */
size_t link_write_input(const link_tensors *tensors, const uint8_t *payload, size_t len, uint8_t *reply,
                        link_refusal *refusal);

/* RUN's reply after the run: appends to reply[0 .. at) every output in full (values, then raw int8
 * values), in order, while the next one fits LINK_MAX_PAYLOAD; sets *included to how many. Returns
 * the reply's length. */
size_t link_append_outputs(const link_tensors *tensors, uint8_t *reply, size_t at, uint16_t *included);

/* READ: as many elements as fit one frame, from the one the request names (reply holds
 * LINK_MAX_PAYLOAD bytes). Returns the reply's length. */
size_t link_read_output(const link_tensors *tensors, const uint8_t *payload, size_t len, uint8_t *reply,
                        link_refusal *refusal);

#endif
