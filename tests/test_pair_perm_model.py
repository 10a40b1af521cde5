"""A model, in Python, of the lane mapping of the row-owning kernel's kPairPerm
prototype (ptx/kbit_rows.cuh: stage_mma_pair_perm, k = 4): for one K-tile
of 16 weight rows and 16 activation rows, the index words of fields
2 (t % 2) + w of block t / 2, their bytes as the A fragment registers of MMA
step s, the scale applied per row and block, and the B fragment as elements
32 b + 8 s + 4 (t % 2) .. + 3 of the activation row, multiplied with the
mma.m16n8k16 fragment layout, must give W * scale @ X^T. It checks the
mapping's arithmetic, not the CUDA code (swizzled addresses, the table's
replicas): tc_bench's check does that on a GPU."""
import random


def rotr(x, r):
    r &= 31
    return ((x >> r) | (x << (32 - r))) & 0xFFFFFFFF


def index_word(p, f):
    """index_word / pair_word without lane permutation, for lane quarter f."""
    w = rotr(p[0], 2 * f)
    for b in range(1, 4):
        m = 0x03030303 << (2 * b)
        w = (rotr(p[b], 2 * f - 2 * b) & m) | (w & ~m & 0xFFFFFFFF)
    return w


def test_pair_perm_mapping():
    rnd = random.Random(0)
    cb = [rnd.uniform(-1, 1) for _ in range(16)]
    W = [[rnd.randrange(16) for _ in range(64)] for _ in range(16)]
    S = [[rnd.uniform(0.5, 1.5) for _ in range(2)] for _ in range(16)]
    X = [[rnd.uniform(-1, 1) for _ in range(64)] for _ in range(16)]

    def planes(row, blk):
        return [sum(((W[row][32 * blk + j] >> b) & 1) << j for j in range(32)) for b in range(4)]

    def pair_value(idx):   # build_decode_lut's pair_value: bits 2b / 2b + 1 = bit b of each index
        i0 = sum(((idx >> (2 * b)) & 1) << b for b in range(4))
        i1 = sum(((idx >> (2 * b + 1)) & 1) << b for b in range(4))
        return cb[i0], cb[i1]

    D = [[0.0] * 16 for _ in range(16)]
    for h in range(2):            # n8 parts of the 16 activation rows
        for s in range(4):        # MMA steps of the K-tile
            A = [[0.0] * 16 for _ in range(16)]
            B = [[0.0] * 8 for _ in range(16)]
            for g in range(8):
                for t in range(4):
                    b = t >> 1
                    xa = [index_word(planes(g, b), 2 * (t & 1) + w) for w in range(2)]
                    xb = [index_word(planes(g + 8, b), 2 * (t & 1) + w) for w in range(2)]
                    for w, col in ((0, 2 * t), (1, 2 * t + 8)):   # a0 / a1, then a2 / a3
                        for q, v in enumerate(pair_value((xa[w] >> (8 * s)) & 255)):
                            A[g][col + q] = v * S[g][b]
                        for q, v in enumerate(pair_value((xb[w] >> (8 * s)) & 255)):
                            A[g + 8][col + q] = v * S[g + 8][b]
                    e = 32 * b + 8 * s + 4 * (t & 1)   # the lane's 64-bit load: b0, b1
                    for q in range(2):
                        B[2 * t + q][g] = X[8 * h + g][e + q]
                        B[2 * t + 8 + q][g] = X[8 * h + g][e + 2 + q]
            for r in range(16):
                for n in range(8):
                    D[r][8 * h + n] += sum(A[r][k] * B[k][n] for k in range(16))
    for r in range(16):
        for n in range(16):
            ref = sum(cb[W[r][k]] * S[r][k // 32] * X[n][k] for k in range(64))
            assert abs(D[r][n] - ref) < 1e-9, (r, n, D[r][n], ref)
