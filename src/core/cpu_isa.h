// The x86-64 instruction-set levels Kestrel's CPU kernels come in. The
// library is compiled for the baseline (CMake's KESTREL_CPU_BASELINE); the
// kernels that gain from wider vectors are also compiled for AVX2 and
// AVX-512 and pick a level at run time: the highest this CPU reports, capped
// for the whole process by cap_cpu_isa (runtime::Config sets the cap from
// KESTREL_CPU_ISA, a process setting; tests force each level).
#pragma once

// Whether this build targets x86-64: the only one with the levels below. On
// other CPUs (arm64) every kernel runs at the baseline, portable C++ the
// compiler vectorizes for the target (NEON on arm64).
#if defined(__x86_64__) || defined(_M_X64)
#define KESTREL_X86 1
#else
#define KESTREL_X86 0
#endif

namespace kestrel {

enum class CpuIsa {
  Baseline,  // x86-64: SSE2
  Avx2,      // x86-64-v3: AVX2, FMA, F16C (Haswell and Zen on)
  Avx512,    // AVX-512F on top (Skylake-SP, Zen 4 on)
};

// What this CPU has.
CpuIsa cpu_isa_detected();
// What the kernels use: the detected level, at most the cap.
CpuIsa cpu_isa();
// Caps the level for the whole process (Avx512: no cap). Kernels read it on
// every call, so a change applies to the next call.
void cap_cpu_isa(CpuIsa cap);

// AVX-512 VNNI (8-bit dot products into int32) at the level the kernels
// use: false below Avx512, whatever the CPU has.
bool cpu_avx512_vnni();

// arm64's 8-bit dot product (SDOT: ARMv8.2's dotprod, as the kernel's
// hardware capabilities report it); false on other CPUs.
bool cpu_arm_dotprod();

// "baseline", "avx2", "avx512".
const char* cpu_isa_name(CpuIsa isa);

}  // namespace kestrel
