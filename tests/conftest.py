import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parent.parent
for p in (ROOT, ROOT / "eval"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

requires_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
requires_sm80 = pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.get_device_capability() < (8, 0),
                                   reason="needs a CUDA GPU of compute capability >= 8.0")
requires_sm90 = pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.get_device_capability() < (9, 0),
                                   reason="needs a CUDA GPU of compute capability >= 9.0 (the sm90 family)")
