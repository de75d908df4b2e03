/* @rel@ of the tinyrps runtime, compiled with the library's names and limits. A bind step: run
 * once per program, at load, so compiled for size whatever the build's optimisation (load_code.h). */
#include "../@name@_build.h"
#include "../runtime/load_code.h"
TRT_LOAD_CODE_BEGIN
#include "../runtime/@rel@"
TRT_LOAD_CODE_END
