"""MXFP4 as K3 stores its routed experts (K3-SPEC.md section 1, compressed-tensors mxfp4-pack-quantized).

weight_packed U8 [out, in/2]: two E2M1 codes per byte, low nibble = even input column.
weight_scale  U8 [out, in/32]: E8M0, multiplier 2^(s-127).
"""
import torch

E2M1 = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)


def _codes(w):
    """w [rows, cols] -> (E2M1 codes [rows, cols] int64, E8M0 scale bytes [rows, cols/32] int64), in w's dtype."""
    out, cols = w.shape
    if cols % 32:
        raise ValueError(f"MXFP4 needs an input width that is a multiple of 32, not {cols}")
    g = w.detach().reshape(out, cols // 32, 32)
    amax = g.abs().amax(-1)
    e = torch.ceil(torch.log2(torch.clamp(amax, min=1e-30) / 6.0))
    e = torch.where(amax > 0, e, torch.zeros_like(e)).clamp(-127, 127)
    a = (g / torch.pow(2.0, e).unsqueeze(-1)).abs()  # exact: a power-of-two division, at most 6
    # Nearest E2M1 magnitude, ties to the smaller: steps of 0.5 up to 2, of 1 up to 4, then 4 or 6.
    step = torch.where(a <= 2, torch.full_like(a, 0.5), torch.where(a <= 4, torch.ones_like(a), torch.full_like(a, 2.0)))
    v = (torch.ceil(a / step - 0.5) * step).clamp(max=6.0)
    mag = torch.where(v <= 2, v * 2, torch.where(v <= 4, v + 2, torch.full_like(v, 7.0))).to(torch.int64)
    code = mag + 8 * ((g < 0) & (mag > 0)).to(torch.int64)
    return code.reshape(out, cols), (e + 127).to(torch.int64)


def quantize(w):
    """w [out, in] (in a multiple of 32) -> (packed U8 [out, in/2], scale U8 [out, in/32]).

    Each 32-wide group takes the smallest power of two that brings its largest magnitude to at
    most 6 (nothing clips), then every value rounds to the nearest E2M1 magnitude (ties to the
    smaller one, so the result does not depend on the platform).
    """
    code, s = _codes(w)
    packed = (code[:, 0::2] | (code[:, 1::2] << 4)).to(torch.uint8)
    return packed, s.to(torch.uint8)


def dequantize(packed, scale, dtype=torch.float32):
    """The exact values the engine decodes (every one is representable in fp32 and bf16)."""
    p = packed.to(torch.int64)
    out, half = p.shape
    code = torch.stack([p & 15, p >> 4], dim=-1).reshape(out, half * 2)
    if (scale == 255).any():
        raise ValueError("an MXFP4 scale byte is 255 (NaN)")
    grid = torch.tensor(E2M1, dtype=torch.float64, device=p.device)
    v = grid[code & 7] * (1.0 - 2.0 * (code >= 8).to(torch.float64))
    mult = torch.pow(2.0, scale.to(torch.float64) - 127.0).repeat_interleave(32, dim=1)
    return (v * mult).to(dtype)


def fake_quantize(w):
    """Quantize-dequantize in the forward, identity gradient (straight-through), for training that
    sees the MXFP4 weights it will be exported with. w may be [E, out, in]."""
    shape = w.shape
    code, s = _codes(w.reshape(-1, shape[-1]))
    grid = torch.tensor(E2M1, dtype=w.dtype, device=w.device)
    v = grid[code & 7] * (1 - 2 * (code >= 8).to(w.dtype))
    q = (v.reshape(code.shape[0], -1, 32) * torch.pow(2.0, (s - 127).to(w.dtype)).unsqueeze(-1)).reshape(shape)
    return w + (q - w).detach()
