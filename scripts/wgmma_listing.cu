// wgmma_listing.cu — every wgmma kernel configuration the extension builds
// (every k, both dtypes: the dispatch takes them at run time, so all are
// instantiated), and nothing else: a cubin whose SASS listing covers the
// configurations tc_bench does not run (all activation tile counts of the
// one-, two- and three-tile forms and the whole-tile form), for
// `scripts/sass_loops.py --against` before a change to the shared
// dequantization reaches a GPU. ~3 minutes on one core.
//
//   SRC=scripts/wgmma_listing.cu bash scripts/sass_tools.sh listing OUT.sass.gz [flags]
#define KBIT_LAUNCH_NO_API 1
#include "api.h"
#include "sm90_wgmma.cuh"
#include "kbit_gemm.cuh"
#include "kbit_decode.cuh"
#include "kbit_wgmma.cuh"
#include "kbit_gemv.cuh"
#include "kbit_rows.cuh"
#include "launch.cuh"

namespace {
// Taking a kernel's address instantiates it (and nothing is launched).
struct Take {
  template <class Cfg>
  const char* operator()() const {
    static void* volatile sink;
    sink = reinterpret_cast<void*>(&kbit::kbit_wgmma_kernel<Cfg>);
    return nullptr;
  }
};
}  // namespace

int main() {
  const int cfgs[] = {1, 2, 3, kbit::kWgmmaWhole};
  for (int cfg : cfgs)
    for (int mtiles = 1; mtiles <= 16; mtiles *= 2) kbit::kbit_wgmma_dispatch(2, 0, mtiles, cfg, Take{});
  return 0;
}
