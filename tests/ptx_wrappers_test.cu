// Wrapper-level checks of the sm80 family (built by tests/test_gpu_wrappers.py
// with the family header in front): one warp runs the instruction on known
// inputs and writes what each lane holds, so the fragment layouts documented in
// ptx/sm80.cuh are checked against torch. With KBIT_WRAPPERS_DEVICE_ONLY
// (tests/test_compile.py, no GPU) the file compiles without torch: the host
// functions are left out and the template kernels instantiated explicitly.

// One m16n8k16 MMA: A [16][16], B given as [8 n][16 k] (nn.Linear layout),
// fragments built by hand from the documented layout; D [16][8] fp32.
template <typename T>
__global__ void mma_fragment_kernel(const T* A, const T* Bnk, float* D) {
  const int lane = threadIdx.x, g = lane >> 2, t = lane & 3;
  auto pair = [](const T* p) { return *reinterpret_cast<const uint32_t*>(p); };
  uint32_t a[4] = {pair(A + g * 16 + 2 * t), pair(A + (g + 8) * 16 + 2 * t),
                   pair(A + g * 16 + 2 * t + 8), pair(A + (g + 8) * 16 + 2 * t + 8)};
  const uint32_t b0 = pair(Bnk + g * 16 + 2 * t), b1 = pair(Bnk + g * 16 + 2 * t + 8);
  const float zero[4] = {0.f, 0.f, 0.f, 0.f};
  float d[4];
  kbit::ptx::mma_m16n8k16<T>(d, a, b0, b1, zero);
  D[g * 8 + 2 * t] = d[0];
  D[g * 8 + 2 * t + 1] = d[1];
  D[(g + 8) * 8 + 2 * t] = d[2];
  D[(g + 8) * 8 + 2 * t + 1] = d[3];
}

// ldmatrix.x4 of a [32 rows][8] b16 tile in shared memory, lane l giving row l:
// out[lane][j] = register j.
__global__ void ldmatrix_kernel(const uint16_t* src, uint32_t* out) {
  __shared__ __align__(16) uint16_t tile[32 * 8];
  const int lane = threadIdx.x;
  for (int i = lane; i < 32 * 8; i += 32) tile[i] = src[i];
  __syncwarp();
  uint32_t r[4];
  kbit::ptx::ldmatrix_x4(r, kbit::ptx::smem_u32(tile + lane * 8));
  for (int j = 0; j < 4; ++j) out[lane * 4 + j] = r[j];
}

#ifdef KBIT_WRAPPERS_DEVICE_ONLY
template __global__ void mma_fragment_kernel<__half>(const __half*, const __half*, float*);
template __global__ void mma_fragment_kernel<__nv_bfloat16>(const __nv_bfloat16*, const __nv_bfloat16*, float*);
#else
void mma_fragment(torch::Tensor A, torch::Tensor B, torch::Tensor D) {
  if (A.scalar_type() == at::kHalf)
    mma_fragment_kernel<__half><<<1, 32>>>(reinterpret_cast<const __half*>(A.data_ptr()),
                                           reinterpret_cast<const __half*>(B.data_ptr()), D.data_ptr<float>());
  else
    mma_fragment_kernel<__nv_bfloat16><<<1, 32>>>(reinterpret_cast<const __nv_bfloat16*>(A.data_ptr()),
                                                  reinterpret_cast<const __nv_bfloat16*>(B.data_ptr()),
                                                  D.data_ptr<float>());
}

void ldmatrix(torch::Tensor src, torch::Tensor out) {
  ldmatrix_kernel<<<1, 32>>>(reinterpret_cast<const uint16_t*>(src.data_ptr()),
                             reinterpret_cast<uint32_t*>(out.data_ptr()));
}
#endif

// FastDiv::of on the device (ptx/fastdiv.h builds the multiplier there without
// a 64-bit integer division): out[i] = {mul, shift} for divisor d[i].
__global__ void fastdiv_of_kernel(const uint32_t* d, uint32_t* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const kbit::FastDiv f = kbit::FastDiv::of(d[i]);
  out[2 * i] = f.mul;
  out[2 * i + 1] = f.shift;
}

#ifndef KBIT_WRAPPERS_DEVICE_ONLY
void fastdiv_of(torch::Tensor d, torch::Tensor out) {
  const int n = int(d.numel());
  fastdiv_of_kernel<<<(n + 255) / 256, 256>>>(reinterpret_cast<const uint32_t*>(d.data_ptr()),
                                               reinterpret_cast<uint32_t*>(out.data_ptr()), n);
}
#endif

#if KBIT_HAS_E4M3_CVT
// cvt_f16x2_e4m3x2 (sm90 family) on every pair of codes: thread i converts
// code pair i (low byte, high byte) with junk above bit 15, which the wrapper
// must ignore; out[2i], out[2i + 1] = the two halves as floats.
__global__ void e4m3_cvt_kernel(float* out) {
  const uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  const uint32_t h = kbit::ptx::cvt_f16x2_e4m3x2(i | 0xABCD0000u);
  const float2 f = __half22float2(*reinterpret_cast<const __half2*>(&h));
  out[2 * i] = f.x;
  out[2 * i + 1] = f.y;
}

#ifndef KBIT_WRAPPERS_DEVICE_ONLY
void e4m3_cvt(torch::Tensor out) { e4m3_cvt_kernel<<<256, 256>>>(out.data_ptr<float>()); }
#endif
#endif
