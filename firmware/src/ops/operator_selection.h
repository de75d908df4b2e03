/*
 * Which operators of operators.def and which kernel variants a build compiles (operator_table.h):
 * here, in the firmware, every one. A build for one program (a deploy library, a program's own
 * firmware image: tinyrps.deploy.selection) has its own copy of this file, which names them:
 *
 *   #define TRT_SELECTION 1
 *   #define TRT_WITH_<symbol> 1     an operator kept (its row of operators.def)
 *   #define TRT_USES_<run> 1        a kernel variant kept (the first argument of its row)
 *
 * The rest of the runtime's sources are the same in every build.
 */
#ifndef TINYRPS_OPERATOR_SELECTION_H
#define TINYRPS_OPERATOR_SELECTION_H

#endif
