"""The wgmma kernel's pair tables (ptx/kbit_wgmma.cuh: WgmmaConfig,
wgmma_k5_copies, wgmma_stages), run on the host: every configuration
kbit_wgmma_dispatch can select, for k = 2..5, fits its CTAs per SM in an
H100's shared memory with the slot table of 1024 experts, and the k = 5
table has the replicas docs/results.md v48 measured: 32 (128 KB, bank-conflict
free) where one CTA holds the SM and they leave the ring enough stages, 16 for
the 128-row tiles of 12 warps, 8 (32 KB, static) where two CTAs share an SM."""
import subprocess

from conftest import build_host_program

PROGRAM = r"""
#define KBIT_LAUNCH_NO_API
#include "api.h"
#include "sm90_wgmma.cuh"
#include "kbit_gemm.cuh"
#include "kbit_decode.cuh"
#include "kbit_wgmma.cuh"
#include "kbit_gemv.cuh"
#include "launch.cuh"
#include <cstdio>
// Prints one configuration's table and shared memory; launches nothing.
struct Describe {
  template <class Cfg> const char* operator()() const {
    // (the kernel's static shared memory: the static table, e4m4, codebook,
    // scratch and the stage barriers)
    const size_t statics = size_t(Cfg::kStaticLutWords) * 4 + 1024 + 128 + 128 + 16 * Cfg::kStages;
    std::printf("%d %d %d %d %d %d %d %d %zu %zu %zu\n", Cfg::kBits, Cfg::BLOCK_M, Cfg::kWarps, Cfg::kNT, Cfg::kMinBlocks,
                Cfg::kCopies, Cfg::kStages, int(Cfg::kDynLut), Cfg::smem_bytes(1), Cfg::smem_bytes(1024), statics);
    return nullptr;
  }
};
int main() {
  const int cfgs[] = {1, 2, 3, kbit::kWgmmaWhole};
  for (int bits = 2; bits <= 5; ++bits)
    for (int mtiles : {1, 2, 4, 8, 16})
      for (int cfg : cfgs) {
        const bool valid = cfg == 1 || (cfg == 2 && mtiles >= 2 && mtiles <= KBIT_WGMMA_NT2_MAX_MTILES) ||
                           (cfg == 3 && mtiles >= 4 && mtiles <= 8) || (cfg == kbit::kWgmmaWhole && mtiles == 16);
        if (!valid) continue;
        if (const char* err = kbit::kbit_wgmma_dispatch(bits, 0, mtiles, cfg, Describe{}))
          std::printf("error %s\n", err);
      }
  return 0;
}
"""


def test_wgmma_tables_fit_and_replicas(tmp_path_factory):
    exe = build_host_program(tmp_path_factory, "wgmma_table", PROGRAM)
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.split("\n")
    assert not any(line.startswith("error") for line in out), out
    rows = [tuple(int(x) for x in line.split()) for line in out if line]
    assert len(rows) >= 4 * 8, rows
    k5 = {}
    for bits, block_m, warps, nt, blocks, copies, stages, dyn, smem1, smem1024, statics in rows:
        c = (bits, block_m, warps, nt, blocks, copies, stages, dyn, smem1, smem1024, statics)
        # Dynamic and static shared memory and the 1 KB the driver reserves
        # per CTA: `blocks` CTAs of a dense layer share the H100's 228 KB, and
        # one CTA with the slot table of 1024 experts fits its 227 KB.
        assert blocks * (smem1 + statics + 1024) <= 228 * 1024, c
        assert smem1024 + statics <= 227 * 1024, c
        assert stages >= 3, c
        if bits == 5:
            k5[(block_m, warps, nt, blocks)] = (copies, stages)
            assert dyn == (copies > 8), c
        else:
            assert copies == 32, c
    assert k5[(64, 8, 3, 1)] == (32, 3)      # Llama-3-70B M = 64
    assert k5[(64, 8, 2, 1)] == (32, 4)      # Llama-3-8B gate/up M = 64
    assert k5[(32, 8, 3, 1)][0] == 32        # Llama-3-70B M = 32
    assert k5[(128, 12, 1, 1)] == (16, 6)    # 128-row tiles, stream-K (M = 128)
    assert k5[(128, 8, 1, 1)][0] == 32       # 128-row tiles, one per CTA
    assert all(c == (8, c[1]) for (_, _, _, blocks), c in k5.items() if blocks == 2)
    assert len(k5) >= 8, rows
