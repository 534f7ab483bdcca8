"""MXFP4 as K3 stores its routed experts (K3-SPEC.md section 1, compressed-tensors mxfp4-pack-quantized).

weight_packed U8 [out, in/2]: two E2M1 codes per byte, low nibble = even input column.
weight_scale  U8 [out, in/32]: E8M0, multiplier 2^(s-127).
"""
import torch

E2M1 = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)


def quantize(w):
    """w [out, in] (in a multiple of 32) -> (packed U8 [out, in/2], scale U8 [out, in/32]).

    Each 32-wide group takes the smallest power of two that brings its largest magnitude to at
    most 6 (nothing clips), then every value rounds to the nearest E2M1 magnitude (ties to the
    smaller one, so the result does not depend on the platform).
    """
    out, cols = w.shape
    if cols % 32:
        raise ValueError(f"MXFP4 needs an input width that is a multiple of 32, not {cols}")
    g = w.detach().to(torch.float64).reshape(out, cols // 32, 32)
    amax = g.abs().amax(-1)
    e = torch.ceil(torch.log2(torch.clamp(amax, min=1e-30) / 6.0))
    e = torch.where(amax > 0, e, torch.zeros_like(e)).clamp(-127, 127)
    s = (e + 127).to(torch.int64)
    x = g / torch.pow(2.0, e).unsqueeze(-1)
    grid = torch.tensor(E2M1, dtype=torch.float64, device=g.device)
    mag = torch.argmin((x.abs().unsqueeze(-1) - grid).abs(), dim=-1)  # first minimum: ties to smaller
    code = mag + 8 * ((x < 0) & (mag > 0)).to(torch.int64)
    code = code.reshape(out, cols)
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
    flat = w.reshape(-1, shape[-1])
    q = dequantize(*quantize(flat), dtype=w.dtype).reshape(shape)
    return w + (q - w).detach()
