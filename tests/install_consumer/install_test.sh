#!/bin/sh
# Installs the build into a temporary prefix (cmake --install), then builds a
# C program against the installed tree twice, through find_package(Kestrel)
# and through pkg-config, and a C++ one through the installed kestrel.hpp, and
# runs each on MODEL; the installed CLI reports its version. Usage: install_test.sh BUILD_DIR SOURCE_DIR MODEL
set -eu
build=$1 src=$2 model=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
cmake --install "$build" --prefix "$prefix" > "$tmp/install.log"
test -f "$prefix/include/kestrel/kestrel.h" && test -f "$prefix/include/kestrel/kestrel.hpp"
expect="kestrel $("$build/kestrel" --version | cut -d' ' -f2): 2 outputs [1,37,64] [1,64]"

cmake -S "$src/tests/install_consumer" -B "$tmp/cmake" -DCMAKE_PREFIX_PATH="$prefix" > "$tmp/configure.log"
cmake --build "$tmp/cmake" > "$tmp/build.log"
got=$("$tmp/cmake/consumer" "$model")
[ "$got" = "$expect" ] || { echo "find_package consumer printed '$got', expected '$expect'"; exit 1; }
got=$("$tmp/cmake/consumer_cpp" "$model")
[ "$got" = "$expect" ] || { echo "C++ consumer printed '$got', expected '$expect'"; exit 1; }

pc=$(dirname "$(find "$prefix" -name kestrel.pc)")
cc -o "$tmp/pc_consumer" "$src/tests/install_consumer/consumer.c" $(PKG_CONFIG_PATH=$pc pkg-config --cflags --libs kestrel)
got=$(LD_LIBRARY_PATH=$(PKG_CONFIG_PATH=$pc pkg-config --variable=libdir kestrel) "$tmp/pc_consumer" "$model")
[ "$got" = "$expect" ] || { echo "pkg-config consumer printed '$got', expected '$expect'"; exit 1; }

# The installed CLI runs (it holds the engine itself and needs no library).
"$prefix/bin/kestrel" --version | grep -qx "kestrel [0-9.]*"
echo "installed tree: $(cd "$prefix" && find . -type f | sort | tr '\n' ' ')"
