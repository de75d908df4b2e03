/*
 * The load's code (the program's reader, the memory plan, the bind steps: run once per program,
 * never per inference) compiled for size where the compiler allows it per function (GCC), whatever
 * the build's optimisation: TRT_LOAD_CODE_BEGIN ... TRT_LOAD_CODE_END around it. The firmware's
 * build compiles the bind steps (src/ops/) at -Os itself; a deploy library, built with the
 * integrator's flags, marks them so too.
 */
#ifndef TINYRPS_LOAD_CODE_H
#define TINYRPS_LOAD_CODE_H

#if defined(__GNUC__) && !defined(__clang__)
#define TRT_LOAD_CODE_BEGIN _Pragma("GCC push_options") _Pragma("GCC optimize(\"Os\")")
#define TRT_LOAD_CODE_END _Pragma("GCC pop_options")
#else
#define TRT_LOAD_CODE_BEGIN
#define TRT_LOAD_CODE_END
#endif

#endif
