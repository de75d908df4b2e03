# CMake toolchain file: bare-metal Arm Cortex-M with the GNU Arm Embedded toolchain
# (arm-none-eabi-gcc + newlib). Use with
#   cmake -DCMAKE_TOOLCHAIN_FILE=firmware/cmake/arm-none-eabi.cmake [-DTINYRPS_CPU=...] ...
#
# TINYRPS_CPU is the -mcpu value (default cortex-m55), with GCC's feature modifiers:
#   cortex-m55              Armv8.1-M, Helium (MVE, integer and float), DSP, FPU
#   cortex-m55+nomve        the same core's DSP path        cortex-m55+nomve+nodsp  its plain-C path
#   cortex-m33, cortex-m4   DSP extension and FPU
#   cortex-m85              GCC 12 does not know it by name: built as the Armv8.1-M
#                           architecture with the same extensions (MVE with float, double FPU)
#   cortex-m7               DSP extension, double-precision FPU
#   cortex-m3, cortex-m0, cortex-m0plus, cortex-m23   no DSP, no FPU: TINYRPS_FLOAT_ABI=soft
# The cores with an FPU have hard-float newlib libraries (check with
# `arm-none-eabi-gcc -mcpu=... -mfloat-abi=hard -print-multi-directory`), so the default
# float ABI is hard; the host's build passes soft for the others (tinyrps.hardware.cores: fpu).

set(CMAKE_SYSTEM_NAME Generic)
set(CMAKE_SYSTEM_PROCESSOR arm)

set(TINYRPS_CPU "cortex-m55" CACHE STRING "value of -mcpu for the firmware")
set(TINYRPS_FLOAT_ABI "hard" CACHE STRING "value of -mfloat-abi for the firmware")

find_program(ARM_NONE_EABI_GCC arm-none-eabi-gcc)
if(NOT ARM_NONE_EABI_GCC)
  message(FATAL_ERROR "arm-none-eabi-gcc not found: apt-get install --no-install-recommends "
                      "gcc-arm-none-eabi libnewlib-arm-none-eabi")
endif()
get_filename_component(_arm_bin "${ARM_NONE_EABI_GCC}" DIRECTORY)

set(CMAKE_C_COMPILER "${_arm_bin}/arm-none-eabi-gcc")
set(CMAKE_ASM_COMPILER "${_arm_bin}/arm-none-eabi-gcc")
set(CMAKE_OBJCOPY "${_arm_bin}/arm-none-eabi-objcopy" CACHE FILEPATH "objcopy")
set(CMAKE_SIZE "${_arm_bin}/arm-none-eabi-size" CACHE FILEPATH "size")

# There is no OS to run a test executable on: let try_compile build a library.
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)

if(TINYRPS_CPU STREQUAL "cortex-m85")
  set(_cpu_flag "-march=armv8.1-m.main+mve.fp+fp.dp")
else()
  set(_cpu_flag "-mcpu=${TINYRPS_CPU}")
endif()
set(_arch_flags "${_cpu_flag} -mthumb -mfloat-abi=${TINYRPS_FLOAT_ABI}")
set(CMAKE_C_FLAGS_INIT "${_arch_flags} -ffunction-sections -fdata-sections")
set(CMAKE_ASM_FLAGS_INIT "${_arch_flags}")
set(CMAKE_EXE_LINKER_FLAGS_INIT "${_arch_flags} -Wl,--gc-sections")

set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
