/* @rel@ of the tinyrps runtime, compiled with the library's names and limits. */
#include "../@name@_build.h"
#include "../runtime/@rel@"
