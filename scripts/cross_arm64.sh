#!/usr/bin/env bash
# Cross-builds Kestrel for arm64 (aarch64) into build-arm64/ with Debian 12's cross toolchain,
# then runs its tests under emulation (scripts/test_arm64.sh) unless --build-only.
# On an arm64 machine the usual scripts/setup.sh and scripts/build.sh build natively instead.
#
# The :arm64 libraries come from Debian through multiarch, except the two development
# packages that cannot be installed beside their amd64 twins (libonnx-dev pulls libonnxifi,
# whose /usr/lib/libonnxifi.so differs per architecture; libdnnl-dev's dnnl_config.h does):
# those are unpacked under .deps/arm64 (cmake/aarch64-linux-gnu.cmake looks there first).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo

if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  echo "cross_arm64: adding the arm64 architecture to apt" >&2
  $SUDO dpkg --add-architecture arm64
  $SUDO apt-get update -qq
fi
pkgs=(crossbuild-essential-arm64 qemu-user
      libprotobuf-dev:arm64 libonnx1:arm64 libdnnl2:arm64 libgomp1:arm64
      libvulkan-dev:arm64 mesa-vulkan-drivers:arm64   # lavapipe for arm64, run under qemu
      libzip-dev:arm64 libstb-dev:arm64 libgtest-dev:arm64 libgmock-dev:arm64)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "cross_arm64: installing ${missing[*]}" >&2
  [ -n "$(ls /var/lib/apt/lists/*arm64_Packages 2>/dev/null)" ] || $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
prefix="$top/.deps/arm64"
if [ ! -f "$prefix/usr/lib/aarch64-linux-gnu/cmake/ONNX/ONNXConfig.cmake" ] || [ ! -f "$prefix/usr/include/dnnl_config.h" ]; then
  echo "cross_arm64: unpacking libonnx-dev:arm64 and libdnnl-dev:arm64 into .deps/arm64" >&2
  tmp=$(mktemp -d); chmod 777 "$tmp"
  (cd "$tmp" && apt-get download -qq libonnx-dev:arm64 libonnxifi:arm64 libonnx1:arm64 libdnnl-dev:arm64 libdnnl2:arm64 2>/dev/null)
  rm -rf "$prefix"
  for deb in "$tmp"/*.deb; do dpkg -x "$deb" "$prefix"; done
  rm -rf "$tmp"
fi

cmake -S "$top" -B "$top/build-arm64" -DCMAKE_TOOLCHAIN_FILE="$top/cmake/aarch64-linux-gnu.cmake" \
  -DCMAKE_BUILD_TYPE=Release -DKESTREL_ORT_EP=OFF >/dev/null
cmake --build "$top/build-arm64" -j"$(nproc)" --target kestrel_cli kestrel_isa_tests kestrel_backend_ops
readelf -h "$top/build-arm64/kestrel" | grep -q AArch64  # what was built is arm64
[ "${1:-}" = --build-only ] || bash "$top/scripts/test_arm64.sh"
