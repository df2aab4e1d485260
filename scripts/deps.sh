#!/usr/bin/env bash
# Installs what axl needs to build and test on Debian/Ubuntu. Idempotent.
set -euo pipefail
# python3-venv/-dev: `pip install .` builds the extension in a fresh venv.
# libze-dev: the Level Zero headers the level_zero plugin builds against;
# libze1: the real loader its no-device tests run against (no GPU driver).
# clang + libclang-rt-dev: the libFuzzer build of tests/fuzz (scripts/test.sh).
# libamdhip64-dev: the HIP headers the hip plugin builds against;
# libamdhip64-5: the real HIP runtime its no-device tests run against.
# opencl-headers, ocl-icd-opencl-dev: the OpenCL headers the opencl plugin
# builds against; ocl-icd-libopencl1: the ICD loader it dlopen()s;
# pocl-opencl-icd: PoCL, the OpenCL driver for the CPU its tests run on.
# openmpi-bin: mpirun and libmpi for tests/python/test_mpi.py (mpi4py's
# wheel loads it); libopenmpi-dev: mpicc, should pip build mpi4py from source.
pkgs=(cmake g++ make binutils pkgconf libspdlog-dev catch2 libbenchmark-dev python3 python3-venv python3-dev
      libze-dev libze1 clang libclang-rt-dev libamdhip64-dev libamdhip64-5
      opencl-headers ocl-icd-opencl-dev ocl-icd-libopencl1 pocl-opencl-icd openmpi-bin libopenmpi-dev)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi
