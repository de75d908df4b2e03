# CMake toolchain file: bare-metal Arm Cortex-M55 with the GNU Arm Embedded
# toolchain (arm-none-eabi-gcc + newlib). Use with
#   cmake -DCMAKE_TOOLCHAIN_FILE=firmware/cmake/arm-none-eabi.cmake ...
# Override TINYRPS_CPU for another Armv8-M/Armv7-M core (e.g. cortex-m33, cortex-m4).

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

set(_arch_flags "-mcpu=${TINYRPS_CPU} -mthumb -mfloat-abi=${TINYRPS_FLOAT_ABI}")
set(CMAKE_C_FLAGS_INIT "${_arch_flags} -ffunction-sections -fdata-sections")
set(CMAKE_ASM_FLAGS_INIT "${_arch_flags}")
set(CMAKE_EXE_LINKER_FLAGS_INIT "${_arch_flags} -Wl,--gc-sections")

set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
