/*
 * The program @program_file@ (sha256 @sha256@), used in place by @name@_init.
 *
 * It must be 16-byte aligned (its constants are read in place as int32 and wider). It goes in
 * the section @MACRO@_PROGRAM_SECTION (default ".rodata.@name@_program", which a linker script's
 * `*(.rodata.*)` already takes), so a linker script may put it anywhere readable, e.g.
 *     .model : { KEEP(*(.rodata.@name@_program)) } > EXTERNAL_FLASH
 * For a compiler without GCC's attributes, define @MACRO@_PROGRAM_PLACEMENT to what aligns it.
 */
#include "../include/@name@.h"

#ifndef @MACRO@_PROGRAM_SECTION
#define @MACRO@_PROGRAM_SECTION ".rodata.@name@_program"
#endif

#ifndef @MACRO@_PROGRAM_PLACEMENT
#if defined(__GNUC__) && defined(__ELF__)
#define @MACRO@_PROGRAM_PLACEMENT __attribute__((section(@MACRO@_PROGRAM_SECTION), aligned(16)))
#elif defined(__GNUC__)
#define @MACRO@_PROGRAM_PLACEMENT __attribute__((aligned(16)))
#else
#define @MACRO@_PROGRAM_PLACEMENT
#endif
#endif

const uint8_t @name@_program[@MACRO@_PROGRAM_BYTES] @MACRO@_PROGRAM_PLACEMENT = {
@program_rows@
};
