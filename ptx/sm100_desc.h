// sm100_desc.h — descriptor builders for tcgen05 (Blackwell, sm_100a), plain
// constexpr C++ so the host compiler can check them (tests/test_sm100_desc.py).
// Field layouts: shared/notes/ptx-reference.md sections B4 and B5 (PTX ISA
// "Shared Memory Descriptor" and "Instruction descriptor" tables, checked there
// against CUTLASS UMMA::SmemDescriptor / make_instr_desc*).
#pragma once

#include <cstdint>

namespace kbit {
namespace sm100 {

// ---- shared-memory matrix descriptor (64 bit) --------------------------------
//  0-13 enc(start)  16-29 enc(LBO)  32-45 enc(SBO)  46-48 = 0b001 (version)
//  49-51 base offset  52 LBO mode  61-63 swizzle (0 none, 2 = 128B, 4 = 64B, 6 = 32B)
// enc(x) = (x & 0x3FFFF) >> 4.
enum class Swizzle : uint32_t { kNone = 0, k128B = 2, k64B = 4, k32B = 6 };

constexpr uint64_t desc_enc(uint32_t x) { return uint64_t((x & 0x3FFFFu) >> 4); }

constexpr uint64_t smem_desc(uint32_t start_addr, uint32_t lbo, uint32_t sbo, Swizzle sw,
                             uint32_t base_offset = 0) {
  return desc_enc(start_addr) | (desc_enc(lbo) << 16) | (desc_enc(sbo) << 32) | (uint64_t(1) << 46) |
         (uint64_t(base_offset & 7u) << 49) | (uint64_t(uint32_t(sw)) << 61);
}

// Canonical K-major SW128 tile (rows of 128 bytes, 1024-byte aligned base):
// SBO = 1024 (8 rows x 128 B), LBO ignored (16 by convention). Advancing K by
// 32 bytes (16 bf16 / 64 fp4) adds 2 to the start field.
constexpr uint64_t smem_desc_kmajor_sw128(uint32_t start_addr) {
  return smem_desc(start_addr, 16, 1024, Swizzle::k128B);
}

// Scale factors for tcgen05.cp .32x128b.warpx4 from the 128x4 blocked layout:
// no swizzle, LBO 0, SBO 128 (DeepGEMM make_sf_desc).
constexpr uint64_t smem_desc_scales(uint32_t start_addr) {
  return smem_desc(start_addr, 0, 128, Swizzle::kNone);
}

// ---- instruction descriptor, kind::f16 (32 bit) ------------------------------
//  4-5 D type (F32 = 1)  7-9 A type  10-12 B type (f16 = 0, bf16 = 1)
//  15/16 transpose A/B (1 = MN-major)  17-22 N >> 3  24-28 M >> 4
constexpr uint32_t idesc_f16(bool bf16, int m, int n, bool a_mn_major = false, bool b_mn_major = false) {
  const uint32_t t = bf16 ? 1u : 0u;
  return (1u << 4) | (t << 7) | (t << 10) | (uint32_t(a_mn_major) << 15) | (uint32_t(b_mn_major) << 16) |
         (uint32_t(n >> 3) << 17) | (uint32_t(m >> 4) << 24);
}

// ---- instruction descriptor, kind::mxf4nvf4 block-scaled (32 bit) ------------
//  4-5 scale-factor ID of B  7-9 A type  10-11 B type (E2M1 = 1)  17-22 N >> 3
//  23 scale type (UE4M3 = 0, UE8M0 = 1)  27-28 M >> 7  29-30 scale-factor ID of A
constexpr uint32_t idesc_nvf4(int m, int n, uint32_t sfa_id = 0, uint32_t sfb_id = 0) {
  return ((sfb_id & 3u) << 4) | (1u << 7) | (1u << 10) | (uint32_t(n >> 3) << 17) | (0u << 23) |
         (uint32_t(m >> 7) << 27) | ((sfa_id & 3u) << 29);
}

// Values checked in shared/notes/ptx-reference.md (CUTLASS agrees).
static_assert(idesc_f16(true, 128, 256) == 0x08400490u, "bf16 M128 N256");
static_assert(idesc_f16(false, 128, 256) == 0x08400010u, "f16 M128 N256");
static_assert(idesc_f16(true, 128, 128) == 0x08200490u, "bf16 M128 N128");
static_assert(idesc_f16(true, 128, 128, false, true) == 0x08210490u, "bf16 M128 N128, B MN-major");
static_assert(idesc_f16(true, 64, 64) == 0x04100490u, "bf16 M64 N64");
static_assert(idesc_nvf4(128, 128) == 0x08200480u, "nvfp4 M128 N128");
static_assert(idesc_nvf4(128, 256) == 0x08400480u, "nvfp4 M128 N256");
static_assert(smem_desc(0x400, 16, 1024, Swizzle::k128B) == 0x4000404000010040ull, "SW128 K-major");

}  // namespace sm100
}  // namespace kbit
