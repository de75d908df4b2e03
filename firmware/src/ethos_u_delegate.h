/*
 * Ethos-U delegates (ethos_u_delegate.c): what the loader (runtime.c) asks of them, in builds
 * with TRT_ETHOS_U=1 (the firmware and native builds: firmware/CMakeLists.txt). A build without
 * it (a deploy library of a Cortex-M program) refuses a delegate as before, with its code and
 * figures unchanged.
 */
#ifndef TINYRPS_ETHOS_U_DELEGATE_H
#define TINYRPS_ETHOS_U_DELEGATE_H

#include <stdint.h>

#include "runtime_internal.h"

/* Whether the delegate of backend `id` is one this file runs ("EthosUBackend"). */
int trt_ethos_u_backend(const char *id, uint32_t len);

/* The CPU operators an Ethos-U program keeps outside its delegate under their portable names
 * (quantized_decomposed::quantize_per_tensor.out, ::dequantize_per_tensor.out): the runtime's row
 * of the same arithmetic, or NULL. */
const trt_operator *trt_ethos_u_cpu_operator(const char *name, uint32_t name_len,
                                              const char *overload, uint32_t overload_len);

/* quantized_decomposed::dequantize_per_tensor has an out_dtype argument (6) the runtime's row has
 * not: it must be None or float32, and is dropped from args (*n_args one less). */
trt_status trt_ethos_u_cpu_args(trt_program *prog, const trt_operator *op, int32_t *args, uint32_t *n_args);

/* Bind a DelegateCall: its arguments (the delegate's inputs, then its one output) are resolved in
 * prog->call_args / call_tensors; checks the delegate's blob and fills kc (op, kernel, p). */
trt_status trt_ethos_u_bind(trt_program *prog, int32_t delegate, trt_chain_call *kc, uint32_t n_args);

/* TRT_OK, or TRT_ERR_NPU when a delegate's last invoke failed. */
trt_status trt_ethos_u_status(const trt_program *prog);

#endif
