// Compiles the functions between KESTREL_ISA_AVX2_BEGIN and KESTREL_ISA_END
// for AVX2, FMA and F16C (x86-64-v3), between KESTREL_ISA_AVX512_BEGIN and
// KESTREL_ISA_END for AVX-512F besides, while the rest of the library keeps the
// baseline: a kernel file includes its kernels' body (a .inc of functions,
// no headers) once at the baseline and once between these, each in a
// namespace of its own, and picks one by cpu_isa() (core/cpu_isa.h). Only
// functions defined in the region get the wider instructions; templates
// from headers included before it (std::vector, std::min) keep the baseline,
// so no out-of-line copy the linker might share with baseline code holds an
// instruction a baseline CPU lacks. GCC and clang spell the region apart.
#pragma once

#include "core/cpu_isa.h"

#if !KESTREL_X86
// No levels off x86-64: the region compiles at the baseline, and cpu_isa()
// never picks it.
#define KESTREL_ISA_AVX2_BEGIN
#define KESTREL_ISA_AVX512_BEGIN
#define KESTREL_ISA_END
#elif defined(__clang__)
#define KESTREL_ISA_AVX2_BEGIN \
  _Pragma("clang attribute push(__attribute__((target(\"avx2,fma,f16c\"))), apply_to = function)")
#define KESTREL_ISA_AVX512_BEGIN \
  _Pragma("clang attribute push(__attribute__((target(\"avx2,fma,f16c,avx512f\"))), apply_to = function)")
#define KESTREL_ISA_END _Pragma("clang attribute pop")
#else
#define KESTREL_ISA_AVX2_BEGIN _Pragma("GCC push_options") _Pragma("GCC target(\"avx2,fma,f16c\")")
#define KESTREL_ISA_AVX512_BEGIN _Pragma("GCC push_options") _Pragma("GCC target(\"avx2,fma,f16c,avx512f\")")
#define KESTREL_ISA_END _Pragma("GCC pop_options")
#endif
