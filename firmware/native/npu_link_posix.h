/*
 * tinyrps-native-npu's NPU driver (npu_link_posix.c): the NPU link over the named pipes of the folder
 * TINYRPS_NPU_LINK names. The tool gives it the program it loaded, whose hash each job carries.
 */
#ifndef TINYRPS_NPU_LINK_POSIX_H
#define TINYRPS_NPU_LINK_POSIX_H

#include <stddef.h>
#include <stdint.h>

void npu_link_posix_program(const uint8_t *pte, size_t len);

#endif
