/*
 * What the C compiler sees in the firmware's headers, and what the runtime's own functions
 * return, one fact per line, for tests/firmware/test_shared_facts.py to compare with what the
 * host reads from the same headers (src/tinyrps/firmware/c_facts.py):
 *
 *   define NAME VALUE | text NAME TEXT | row LIST NAME VALUE TEXT | field LAYOUT NAME OFFSET TYPE
 *   status VALUE TEXT | dtype CODE NAME BYTES | limit NAME VALUE | port NAME SYSTICK_HZ
 *
 * Built with -I for include/, src/, protocol/, board/common/ and one port's folder (port.h),
 * linked with the runtime library.
 */
#include <stdio.h>
#include <string.h>

#include "batch_format.h"
#include "link_protocol.h"
#include "model_slot.h"
#include "native_profile.h"
#include "ops/operator_table.h"
#include "port.h"
#include "tensor_desc.h"
#include "tinyrps_runtime.h"

#define DEFINE(name) printf("define %s %lld\n", #name, (long long)(name));
#define TEXT(name) printf("text %s %s\n", #name, name);
#define ROW(list) printf("row %s %s %lld %s\n", list, name, (long long)(value), text);
#define FIELD(layout) printf("field %s %s %d %s\n", layout, f, (int)(o), t);

#define LIST_ROW(n, v, x) { const char *name = #n; long long value = (v); const char *text = x; ROW(current) }
#define LAYOUT_FIELD(fname, off, type) { const char *f = #fname; int o = (off); const char *t = #type; FIELD(current) }

int main(void)
{
    const char *current;
    DEFINE(LINK_PROTOCOL_VERSION) DEFINE(LINK_SYNC0) DEFINE(LINK_SYNC1) DEFINE(LINK_HEADER_BYTES)
    DEFINE(LINK_CRC_BYTES) DEFINE(LINK_MAX_PAYLOAD) DEFINE(LINK_REPLY) DEFINE(LINK_ERROR)
    DEFINE(LINK_INFER_IMAGE_BYTES) DEFINE(LINK_INFO_BYTES) DEFINE(LINK_ERROR_HEADER_BYTES)
    DEFINE(LINK_INFER_HEADER_BYTES) DEFINE(LINK_TENSOR_REQUEST_BYTES) DEFINE(LINK_WRITE_HEADER_BYTES)
    DEFINE(LINK_WRITE_REPLY_BYTES) DEFINE(LINK_RUN_REPLY_BYTES) DEFINE(LINK_READ_REQUEST_BYTES)
    DEFINE(LINK_READ_REPLY_HEADER_BYTES) DEFINE(TENSOR_DESC_BYTES) DEFINE(TENSOR_DESC_HAS_INT8)
    DEFINE(BATCH_VERSION) DEFINE(BATCH_HEADER_FIXED_BYTES) DEFINE(BATCH_RECORD_HEADER_BYTES)
    DEFINE(BATCH_PROFILE_HEADER_BYTES) DEFINE(BATCH_LAYER_BYTES) DEFINE(BATCH_TRAILER_BYTES)
    DEFINE(BOOT_DESCRIPTOR_MAGIC) DEFINE(BOOT_DESCRIPTOR_VERSION) DEFINE(BOOT_DESCRIPTOR_BYTES)
    DEFINE(BOOT_MODE_LINK) DEFINE(BOOT_MODE_BATCH) DEFINE(BOOT_FLAG_SHA256) DEFINE(BOOT_FLAGS_KNOWN)
    TEXT(BATCH_HEADER_ID) TEXT(BATCH_PROFILE_ID) TEXT(BATCH_TRAILER_ID) TEXT(TRT_KERNEL_VARIANT_NAMES)
    DEFINE(NATIVE_PROFILE_VERSION) DEFINE(NATIVE_PROFILE_HEADER_BYTES) DEFINE(NATIVE_PROFILE_COUNT_BYTES)
    TEXT(NATIVE_PROFILE_ID) TEXT(NATIVE_PROFILE_COUNTER)

    current = "LINK_COMMAND_LIST"; LINK_COMMAND_LIST(LIST_ROW)
    current = "LINK_ERROR_LIST"; LINK_ERROR_LIST(LIST_ROW)
    current = "LINK_MODEL_SOURCE_LIST"; LINK_MODEL_SOURCE_LIST(LIST_ROW)
    current = "LINK_TENSOR_KIND_LIST"; LINK_TENSOR_KIND_LIST(LIST_ROW)
    current = "LINK_ENCODING_LIST"; LINK_ENCODING_LIST(LIST_ROW)
    current = "LINK_PART_LIST"; LINK_PART_LIST(LIST_ROW)
    current = "BATCH_EXIT_LIST"; BATCH_EXIT_LIST(LIST_ROW)

    current = "LINK_ERROR_FIELDS"; LINK_ERROR_FIELDS(LAYOUT_FIELD)
    current = "LINK_INFO_FIELDS"; LINK_INFO_FIELDS(LAYOUT_FIELD)
    current = "LINK_INFER_FIELDS"; LINK_INFER_FIELDS(LAYOUT_FIELD)
    current = "LINK_TENSOR_FIELDS"; LINK_TENSOR_FIELDS(LAYOUT_FIELD)
    current = "LINK_WRITE_FIELDS"; LINK_WRITE_FIELDS(LAYOUT_FIELD)
    current = "LINK_WRITE_REPLY_FIELDS"; LINK_WRITE_REPLY_FIELDS(LAYOUT_FIELD)
    current = "LINK_RUN_FIELDS"; LINK_RUN_FIELDS(LAYOUT_FIELD)
    current = "LINK_READ_FIELDS"; LINK_READ_FIELDS(LAYOUT_FIELD)
    current = "LINK_READ_REPLY_FIELDS"; LINK_READ_REPLY_FIELDS(LAYOUT_FIELD)
    current = "TENSOR_DESC_FIELDS"; TENSOR_DESC_FIELDS(LAYOUT_FIELD)
    current = "BATCH_HEADER_FIELDS"; BATCH_HEADER_FIELDS(LAYOUT_FIELD)
    current = "BATCH_RECORD_FIELDS"; BATCH_RECORD_FIELDS(LAYOUT_FIELD)
    current = "BATCH_PROFILE_FIELDS"; BATCH_PROFILE_FIELDS(LAYOUT_FIELD)
    current = "BATCH_LAYER_FIELDS"; BATCH_LAYER_FIELDS(LAYOUT_FIELD)
    current = "BATCH_TRAILER_FIELDS"; BATCH_TRAILER_FIELDS(LAYOUT_FIELD)
    current = "NATIVE_PROFILE_FIELDS"; NATIVE_PROFILE_FIELDS(LAYOUT_FIELD)
    current = "BOOT_DESCRIPTOR_FIELDS"; BOOT_DESCRIPTOR_FIELDS(LAYOUT_FIELD)

    /* what the runtime's functions return */
    const char *unknown = trt_status_name((trt_status)-99);
    for (int s = -64; s <= 0; s++)
        if (strcmp(trt_status_name((trt_status)s), unknown) != 0)
            printf("status %d %s\n", s, trt_status_name((trt_status)s));
#define DTYPE_ROW(n, code, text, bytes) printf("dtype %d %s %d\n", code, trt_dtype_name(code), bytes);
    TRT_DTYPE_LIST(DTYPE_ROW)
    for (int code = 0; code < 64; code++)
        if (trt_dtype_name(code))
            printf("dtype-named %d\n", code);
    const char *limit;
    for (int i = 0; trt_limit(i, &limit) || limit; i++)
        printf("limit %s %lu\n", limit, (unsigned long)trt_limit(i, NULL));
    printf("port %s %lu\n", PORT_BOARD_NAME, (unsigned long)PORT_SYSTICK_HZ);
    return 0;
}
