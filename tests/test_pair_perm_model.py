"""A model, in Python, of the lane mapping of the row-owning kernel's kPairPerm
(ptx/kbit_rows.cuh: dequant_pairs, stage_mma_pair_perm) for every k: for one
K-tile of 16 weight rows and 16 activation rows, the index words of fields
f0 = 2 (t % 2) and f0 + 1 of block t / 2 (per k as the kernel forms them:
k = 2 rows g and g + 8 in one word, k = 3 a masked fourth field, k = 5 a
fifth plane in its own word), their bytes as the A fragment registers of MMA
step s, the scale applied per row and block, and the B fragment as elements
32 b + 8 s + 4 (t % 2) .. + 3 of the activation row, multiplied with the
mma.m16n8k16 fragment layout, must give W * scale @ X^T. It checks the
mapping's arithmetic, not the CUDA code (swizzled addresses, the table's
replicas): tc_bench's check does that on a GPU."""
import random

import pytest


def rotr(x, r):
    r &= 31
    return ((x >> r) | (x << (32 - r))) & 0xFFFFFFFF


def index_word(p, f):
    """index_word / pair_word without lane permutation, for field f: plane b's
    pair bits from 8 i + 2 f to 8 i + 2 b (b < 4)."""
    w = rotr(p[0], 2 * f)   # (k = 3: field 3 keeps plane 0's stale bits)
    for b in range(1, min(len(p), 4)):
        m = 0x03030303 << (2 * b)
        w = (rotr(p[b], 2 * f - 2 * b) & m) | (w & ~m & 0xFFFFFFFF)
    return w


def split(idx, planes):
    """The two weights' indices of a pair whose plane b bits sit at 2b, 2b + 1."""
    return (sum(((idx >> (2 * b)) & 1) << b for b in range(planes)),
            sum(((idx >> (2 * b + 1)) & 1) << b for b in range(planes)))


def pairs(bits, pa, pb, f, s):
    """(row g pair, row g + 8 pair) of field f, index byte s: the indices of the
    two weights of each, as the table entry the kernel looks up holds them."""
    if bits == 2:
        q = (index_word([pa[0], pa[1], pb[0], pb[1]], f) >> (8 * s)) & 255
        return split(q & 15, 2), split(q >> 4, 2)
    out = []
    for p in (pa, pb):
        lo = (index_word(p[:4], f) >> (8 * s)) & 255
        if bits == 3:
            lo &= 0x3F   # kClean: the fourth field's stale bits masked off
        assert lo < 1 << (2 * min(bits, 4))   # a row of the table (64 rows at k = 3)
        i0, i1 = split(lo, min(bits, 4))
        if bits == 5:   # plane 4's pair bits: rotr(p[4], 2 f) & 0x03030303, byte s
            hi = (rotr(p[4], 2 * f) >> (8 * s)) & 3
            i0, i1 = i0 | (hi & 1) << 4, i1 | (hi >> 1) << 4
        out.append((i0, i1))
    return tuple(out)


@pytest.mark.parametrize("bits", [2, 3, 4, 5])
def test_pair_perm_mapping(bits):
    rnd = random.Random(bits)
    cb = [rnd.uniform(-1, 1) for _ in range(1 << bits)]
    W = [[rnd.randrange(1 << bits) for _ in range(64)] for _ in range(16)]
    S = [[rnd.uniform(0.5, 1.5) for _ in range(2)] for _ in range(16)]
    X = [[rnd.uniform(-1, 1) for _ in range(64)] for _ in range(16)]

    def planes(row, blk):
        return [sum(((W[row][32 * blk + j] >> b) & 1) << j for j in range(32)) for b in range(bits)]

    D = [[0.0] * 16 for _ in range(16)]
    for h in range(2):            # n8 parts of the 16 activation rows
        for s in range(4):        # MMA steps of the K-tile
            A = [[0.0] * 16 for _ in range(16)]
            B = [[0.0] * 8 for _ in range(16)]
            for g in range(8):
                for t in range(4):
                    b = t >> 1
                    pa, pb = planes(g, b), planes(g + 8, b)
                    for w, col in ((0, 2 * t), (1, 2 * t + 8)):   # a0 / a1, then a2 / a3
                        (ga, gb), (ha, hb) = pairs(bits, pa, pb, 2 * (t & 1) + w, s)
                        A[g][col], A[g][col + 1] = cb[ga] * S[g][b], cb[gb] * S[g][b]
                        A[g + 8][col], A[g + 8][col + 1] = cb[ha] * S[g + 8][b], cb[hb] * S[g + 8][b]
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
