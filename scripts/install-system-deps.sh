#!/usr/bin/env bash
# Installs the system packages the firmware needs, where missing: the Arm cross
# toolchain with newlib, QEMU's Arm system emulator, CMake, a host C compiler, and
# clang with libFuzzer for the fuzz targets (firmware/fuzz/), and Chromium with its
# WebDriver for the browser test of `tinyrps serve` (tests/test_serve.py), and the PostgreSQL
# server, whose throw-away cluster holds the study two tune workers share (tests/test_tune_storage.py).
set -euo pipefail

need=()
command -v arm-none-eabi-gcc >/dev/null || need+=(gcc-arm-none-eabi)
[ -f /usr/lib/arm-none-eabi/newlib/libc.a ] || [ -d /usr/lib/arm-none-eabi/newlib ] || need+=(libnewlib-arm-none-eabi)
command -v qemu-system-arm >/dev/null || need+=(qemu-system-arm)
command -v cmake >/dev/null || need+=(cmake)
command -v gcc >/dev/null || need+=(gcc)
command -v make >/dev/null || need+=(make)
command -v clang-16 >/dev/null || need+=(clang-16)
command -v chromium >/dev/null || need+=(chromium)
command -v chromedriver >/dev/null || need+=(chromium-driver)
# Debian keeps initdb and pg_ctl in /usr/lib/postgresql/VERSION/bin, off PATH
command -v initdb >/dev/null || compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || need+=(postgresql)
dpkg-query -W -f='${Status}' libclang-rt-16-dev 2>/dev/null | grep -q "install ok installed" || need+=(libclang-rt-16-dev)

[ ${#need[@]} -eq 0 ] && exit 0

echo "installing system packages: ${need[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null; then sudo="sudo"; else
        echo "error: need root to run: apt-get install --no-install-recommends ${need[*]}" >&2
        exit 1
    fi
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
