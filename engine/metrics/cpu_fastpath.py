"""Fast mode on CPU: linear layers through oneDNN with prepacked weights (and fused GELU).

PyTorch's eager `nn.Linear` on CPU spends a share of its time copying the broadcast bias into
the output before the matmul (and a separate pass for the GELU); oneDNN's fused linear (the
kernel torch.compile itself uses on CPU) with a weight reordered once for the AMX/AVX-512 units
avoids both. In bfloat16 and in float32 (measured on a 2-core AVX-512 Xeon, one thread, CPU
seconds: MiniLM fast float32 over 300 pairs 1.74 s stock, 1.55 s prepacked). Numbers change
only by the rounding order of another kernel, so this is used in `mode: fast` only; `mode:
compat` keeps the stock modules (bert_score's own kernels, bit for bit). Compat would gain
nothing from it: with the prepacked layers compat stays within 4.2e-7 of bert_score and within
2.4e-7 across part sizes, but runs at 0.94-0.98x the stock speed (MiniLM, 500 and 1,000 pairs,
one thread, CPU seconds, interleaved blocks), because the stock float32 layers, three quarters
of compat's time, already run at about 120 GFLOP/s of this CPU's 146-162.
"""
from __future__ import annotations

import logging
from typing import Any

logger = logging.getLogger(__name__)

# Rows (tokens) the weight reorder is tuned for; any batch size works.
_PACK_ROWS = 4096


def _fused_dtypes() -> dict:
    import torch

    # dtype -> how far the probe's fused output may be from nn.Linear + GELU (its rounding).
    return {torch.bfloat16: 5e-2, torch.float32: 1e-4}


def fused_linear_available() -> bool:
    """Whether this torch build has oneDNN's fused linear and its weight reorder."""
    import torch

    return (
        torch.backends.mkldnn.is_available()
        and hasattr(torch.ops.mkldnn, "_linear_pointwise")
        and hasattr(torch.ops.mkldnn, "_reorder_linear_weight")
    )


def _make_linear_class():
    import torch

    class PackedLinear(torch.nn.Module):
        """nn.Linear replacement: oneDNN linear with a prepacked weight and an optional fused GELU."""

        def __init__(self, linear: torch.nn.Linear, activation: str):
            super().__init__()
            self.in_features, self.out_features = linear.in_features, linear.out_features
            self.activation = activation  # "none" or "gelu" (exact, erf)
            self.register_buffer("packed", torch.ops.mkldnn._reorder_linear_weight(linear.weight.detach(), _PACK_ROWS), persistent=False)
            bias = linear.bias.detach() if linear.bias is not None else None
            self.register_buffer("bias", bias, persistent=False)

        def forward(self, x: torch.Tensor) -> torch.Tensor:  # (..., in) -> (..., out)
            algorithm = "none" if self.activation == "gelu" else ""
            return torch.ops.mkldnn._linear_pointwise(x, self.packed, self.bias, self.activation, [], algorithm)

    return PackedLinear


def _is_exact_gelu(module: Any) -> bool:
    from transformers.activations import GELUActivation

    return isinstance(module, GELUActivation) and getattr(module, "act", None) is not None and getattr(module.act, "__name__", "") == "gelu"


def apply_cpu_fastpath(model: Any, dtype: Any) -> bool:
    """Swap the model's nn.Linear layers for prepacked oneDNN ones (bfloat16 or float32, CPU only).

    Feed-forward blocks shaped like BERT's (`dense` then an exact-GELU `intermediate_act_fn`)
    get the GELU fused. Checked on a small input first; returns False (model untouched) when
    the ops are missing or disagree.
    """
    import torch

    tolerances = _fused_dtypes()
    if dtype not in tolerances or not fused_linear_available():
        return False
    tolerance = tolerances[dtype]
    packed_linear = _make_linear_class()
    try:
        probe = torch.nn.Linear(64, 48).to(dtype)
        x = torch.randn(3, 5, 64).to(dtype)
        with torch.inference_mode():
            want = torch.nn.functional.gelu(probe(x).float())
            got = packed_linear(probe, "gelu")(x).float()
        if not torch.allclose(want, got, atol=tolerance, rtol=tolerance):
            logger.warning("oneDNN fused linear disagrees with nn.Linear; keeping the stock layers")
            return False
    except Exception as exc:  # an op present but unsupported on this CPU
        logger.warning("oneDNN fused linear unavailable (%s); keeping the stock layers", exc)
        return False

    identity = torch.nn.Identity
    fused = 0
    for module in list(model.modules()):
        dense = getattr(module, "dense", None)
        act = getattr(module, "intermediate_act_fn", None)
        if isinstance(dense, torch.nn.Linear) and act is not None and _is_exact_gelu(act):
            module.dense = packed_linear(dense, "gelu")
            module.intermediate_act_fn = identity()
            fused += 1
    replaced = 0
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if type(child) is torch.nn.Linear:
                setattr(parent, name, packed_linear(child, "none"))
                replaced += 1
    logger.info("cpu fast path: %d linear layers prepacked, %d GELUs fused", replaced + fused, fused)
    return replaced + fused > 0
