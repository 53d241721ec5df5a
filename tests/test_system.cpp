// What relpos says about the machine (core/util/system.h): the x86-64 psABI level. Checked against
// what can be known without the kernel's flag list (a hypervisor may trim /proc/cpuinfo's flags
// while the processor has the instructions; issue 53): the processor's own CPUID bits, read here
// from the bit positions of Intel's and AMD's manuals, with the operating system's XCR0 for the
// vector state; and the instructions themselves, executed by a forked child for every level up to
// the reported one (a missing instruction kills the child with SIGILL, not the test).
#include <doctest/doctest.h>

#include <string>

#if defined(__x86_64__)
#include <cpuid.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#endif

#include "core/util/system.h"

using namespace relpos;

#if defined(__x86_64__)
namespace {

struct CpuidRegs {
  unsigned a = 0, b = 0, c = 0, d = 0;
};

CpuidRegs isa_cpuid_leaf(unsigned leaf, unsigned sub = 0) {
  CpuidRegs r;
  if (__get_cpuid_max(leaf & 0x80000000u, nullptr) < leaf) return r;  // leaf absent: all zero
  __cpuid_count(leaf, sub, r.a, r.b, r.c, r.d);
  return r;
}

bool isa_bit(unsigned reg, int n) { return (reg >> n) & 1u; }

// The level from CPUID: the feature bits each psABI level lists, and for AVX / AVX-512 the
// operating system's consent (OSXSAVE, then XCR0's SSE|AVX bits, and opmask|ZMM bits).
std::string isa_level_from_cpuid() {
  const CpuidRegs l1 = isa_cpuid_leaf(1), l7 = isa_cpuid_leaf(7), ext = isa_cpuid_leaf(0x80000001u);
  const bool v2 = isa_bit(l1.c, 0) /*sse3*/ && isa_bit(l1.c, 9) /*ssse3*/ &&
                  isa_bit(l1.c, 13) /*cx16*/ && isa_bit(l1.c, 19) /*sse4.1*/ &&
                  isa_bit(l1.c, 20) /*sse4.2*/ && isa_bit(l1.c, 23) /*popcnt*/ &&
                  isa_bit(ext.c, 0) /*lahf/sahf in 64-bit mode*/;
  unsigned long long xcr0 = 0;
  if (isa_bit(l1.c, 27) /*osxsave*/) {
    unsigned lo = 0, hi = 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    xcr0 = (static_cast<unsigned long long>(hi) << 32) | lo;
  }
  const bool avx_state = (xcr0 & 0x6) == 0x6;                    // XMM and YMM state enabled
  const bool avx512_state = avx_state && (xcr0 & 0xe0) == 0xe0;  // opmask, ZMM0-15, ZMM16-31
  const bool v3 = v2 && avx_state && isa_bit(l1.c, 28) /*avx*/ && isa_bit(l7.b, 5) /*avx2*/ &&
                  isa_bit(l7.b, 3) /*bmi1*/ && isa_bit(l7.b, 8) /*bmi2*/ &&
                  isa_bit(l1.c, 29) /*f16c*/ && isa_bit(l1.c, 12) /*fma*/ &&
                  isa_bit(ext.c, 5) /*lzcnt*/ && isa_bit(l1.c, 22) /*movbe*/ &&
                  isa_bit(l1.c, 26) /*xsave*/;
  const bool v4 = v3 && avx512_state && isa_bit(l7.b, 16) /*avx512f*/ && isa_bit(l7.b, 17) /*dq*/ &&
                  isa_bit(l7.b, 28) /*cd*/ && isa_bit(l7.b, 30) /*bw*/ && isa_bit(l7.b, 31) /*vl*/;
  return v4 ? "x86-64-v4" : v3 ? "x86-64-v3" : v2 ? "x86-64-v2" : "x86-64";
}

// Instructions of each level's extensions, assembled whatever the compiler's -march.
void isa_execute_level(int level) {
  unsigned long long word = 0x0123456789abcdefULL;
  if (level >= 2)
    __asm__ volatile(
        "popcnt %0, %%rax\n\t"
        "crc32q %0, %%rax\n\t"       // SSE4.2
        "pshufb %%xmm0, %%xmm0\n\t"  // SSSE3
        "pmulld %%xmm0, %%xmm0\n\t"  // SSE4.1
        "lahf\n\t"
        :
        : "m"(word)
        : "rax", "xmm0", "cc");
  if (level >= 3)
    __asm__ volatile(
        "vpbroadcastd %%xmm0, %%ymm0\n\t"         // AVX2
        "vfmadd231ps %%ymm0, %%ymm0, %%ymm0\n\t"  // FMA
        "vcvtph2ps %%xmm0, %%ymm0\n\t"            // F16C
        "andn %%rax, %%rax, %%rax\n\t"            // BMI1
        "pdep %%rax, %%rax, %%rax\n\t"            // BMI2
        "lzcnt %%rax, %%rax\n\t"
        "movbe %0, %%rax\n\t"
        "vzeroupper\n\t"
        :
        : "m"(word)
        : "rax", "xmm0", "cc");
  if (level >= 4)
    __asm__ volatile(
        "vpaddq %%zmm0, %%zmm0, %%zmm0\n\t"   // AVX512F
        "vpaddw %%zmm0, %%zmm0, %%zmm0\n\t"   // AVX512BW
        "vplzcntd %%zmm0, %%zmm0\n\t"         // AVX512CD
        "vpmullq %%zmm0, %%zmm0, %%zmm0\n\t"  // AVX512DQ
        "vpabsq %%ymm0, %%ymm0\n\t"           // AVX512VL
        "vzeroupper\n\t"
        :
        :
        : "xmm0");
}

// No core file from a child killed on purpose.
void isa_no_core_dump() {
  const rlimit none{0, 0};
  setrlimit(RLIMIT_CORE, &none);
}

// Runs `body(level)` in a forked child; "" when it exited 0, else what stopped it.
std::string isa_in_child(void (*body)(int), int level) {
  const pid_t pid = fork();
  if (pid < 0) return "fork failed";
  if (pid == 0) {
    isa_no_core_dump();
    body(level);
    _exit(0);
  }
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return "waitpid failed";
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return "";
  if (WIFSIGNALED(status))
    return std::string("killed by signal ") + std::to_string(WTERMSIG(status)) +
           (WTERMSIG(status) == SIGILL ? " (SIGILL: an instruction of the level is missing)" : "");
  return "exit status " + std::to_string(WEXITSTATUS(status));
}

// The instructions of levels 2..level, in a child.
std::string isa_probe_level(int level) { return isa_in_child(isa_execute_level, level); }

// ud2 raises SIGILL on every x86-64 processor.
void isa_execute_ud2(int) { __asm__ volatile("ud2"); }

int isa_level_number(const std::string& name) {
  if (name == "x86-64") return 1;
  if (name == "x86-64-v2") return 2;
  if (name == "x86-64-v3") return 3;
  if (name == "x86-64-v4") return 4;
  return 0;
}

}  // namespace
#endif

TEST_CASE(
    "system: the x86-64 level is the processor's (CPUID), its instructions run, and the summary "
    "names it") {
#if !defined(__x86_64__)
  CHECK(cpu_isa_level().empty());
  CHECK(machine_summary().find(" cores") != std::string::npos);
#else
  const std::string level = cpu_isa_level();
  const int n = isa_level_number(level);
  REQUIRE_MESSAGE(n > 0, "cpu_isa_level() is not a psABI level: '" << level << "'");
  CHECK(level == isa_level_from_cpuid());
  for (int l = 2; l <= n; ++l) {
    INFO("executing instructions of x86-64-v" << l << " (reported level " << level << ")");
    CHECK(isa_probe_level(l) == "");
  }
  CHECK(machine_summary().find(" cores (" + level + ")") != std::string::npos);
#endif
}

#if defined(__x86_64__)
TEST_CASE(
    "system: the level probe can fail: a child that executes an invalid instruction is reported") {
  // The check above would see a missing level the same way.
  const std::string why = isa_in_child(isa_execute_ud2, 0);
  CHECK(why.find("killed by signal " + std::to_string(SIGILL)) == 0);
  CHECK(why.find("SIGILL") != std::string::npos);
}
#endif
