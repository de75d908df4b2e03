/*
 * Which kernel variants this build compiles, from the compiler's ISA feature macros and
 * the build option TINYRPS_KERNELS (firmware/CMakeLists.txt):
 *
 *   auto  TRT_HAVE_MVE on cores with Helium integer MVE (__ARM_FEATURE_MVE bit 0:
 *         Cortex-M55, M85), TRT_HAVE_DSP on cores with the DSP extension
 *         (__ARM_FEATURE_DSP: Cortex-M4, M7, M33, M55 ...); plain C always.
 *   c     plain C only (TRT_KERNELS_PORTABLE_ONLY): the baseline on any core.
 *   dsp   DSP and plain C, no MVE (TRT_KERNELS_FORCE_DSP); on a host without the DSP
 *         instructions the DSP kernels run on a portable C model of them
 *         (kernels/dsp/dsp_intrinsics.h), so that path is tested and sanitised too.
 */
#ifndef TINYRPS_ISA_H
#define TINYRPS_ISA_H

#if defined(TRT_KERNELS_PORTABLE_ONLY)
#define TRT_HAVE_MVE 0
#define TRT_HAVE_DSP 0
#elif defined(TRT_KERNELS_FORCE_DSP)
#define TRT_HAVE_MVE 0
#define TRT_HAVE_DSP 1
#else
#if defined(__ARM_FEATURE_MVE) && (__ARM_FEATURE_MVE & 1)
#define TRT_HAVE_MVE 1
#else
#define TRT_HAVE_MVE 0
#endif
#if defined(__ARM_FEATURE_DSP) && __ARM_FEATURE_DSP
#define TRT_HAVE_DSP 1
#else
#define TRT_HAVE_DSP 0
#endif
#endif

/* A deploy library carries one ISA's kernels beside plain C, and its build header says which
 * (TRT_LIBRARY_ISA_MVE or TRT_LIBRARY_ISA_DSP): the other one's are not compiled. */
#if defined(TRT_LIBRARY_ISA_MVE)
#undef TRT_HAVE_DSP
#define TRT_HAVE_DSP 0
#elif defined(TRT_LIBRARY_ISA_DSP)
#undef TRT_HAVE_MVE
#define TRT_HAVE_MVE 0
#endif

/* Helium's floating-point half (__ARM_FEATURE_MVE bit 1: the M55 and M85 with their FPU), for
 * the kernels that compute in float32 as the reference does. */
#if TRT_HAVE_MVE && (__ARM_FEATURE_MVE & 2)
#define TRT_HAVE_MVE_FLOAT 1
#else
#define TRT_HAVE_MVE_FLOAT 0
#endif

#endif
