#!/usr/bin/env bash
# Installs what axl needs to build and test on Debian/Ubuntu. Idempotent.
set -euo pipefail
pkgs=(cmake g++ make binutils pkgconf libspdlog-dev catch2 libbenchmark-dev)
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
