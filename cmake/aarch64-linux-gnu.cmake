# Cross-compiling for arm64 with Debian's cross toolchain (crossbuild-essential-arm64):
# scripts/cross_arm64.sh passes it as CMAKE_TOOLCHAIN_FILE. Libraries and CMake packages
# are the :arm64 ones under /usr/lib/aarch64-linux-gnu, plus the development packages
# that multiarch cannot install beside their amd64 twins (libonnx-dev, libdnnl-dev),
# unpacked under KESTREL_ARM64_PREFIX (.deps/arm64/usr).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(KESTREL_ARM64_PREFIX "${CMAKE_CURRENT_LIST_DIR}/../.deps/arm64/usr" CACHE PATH "unpacked :arm64 development packages")
# Those headers first: dnnl_config.h differs between the architectures.
include_directories(BEFORE SYSTEM "${KESTREL_ARM64_PREFIX}/include")
list(APPEND CMAKE_PREFIX_PATH "${KESTREL_ARM64_PREFIX}/lib/aarch64-linux-gnu/cmake" "${KESTREL_ARM64_PREFIX}")
list(APPEND CMAKE_LIBRARY_PATH "${KESTREL_ARM64_PREFIX}/lib/aarch64-linux-gnu" /usr/lib/aarch64-linux-gnu)
# The build's own tools (protoc, glslangValidator) are the host's.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")
# Link-time lookups of the libraries' own dependencies (libonnx -> libprotobuf).
set(CMAKE_EXE_LINKER_FLAGS_INIT "-Wl,-rpath-link,/usr/lib/aarch64-linux-gnu -Wl,-rpath-link,${KESTREL_ARM64_PREFIX}/lib/aarch64-linux-gnu")
set(CMAKE_SHARED_LINKER_FLAGS_INIT "${CMAKE_EXE_LINKER_FLAGS_INIT}")
# gtest_discover_tests runs the test binary to list its tests: under qemu.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L /)
