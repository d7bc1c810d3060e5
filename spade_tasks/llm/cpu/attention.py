"""SDPA attention that shares each key/value head among its query heads, registered
with transformers as ``SHARED_KV_SDPA`` (the backend sets it on the models it decodes
with the engine)."""

from __future__ import annotations

import torch
from transformers import AttentionInterface
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

from spade_tasks.llm.cpu.decode import decode_attention, decode_fast_path


SHARED_KV_SDPA = "sdpa_shared_kv"


def sdpa_shared_kv(module, query, key, value, attention_mask, dropout=0.0, scaling=None,
                   is_causal=None, **kwargs):
    """transformers' SDPA attention, except that torch shares each key/value head among
    its query heads (``enable_gqa``) instead of transformers copying it per query head.

    transformers copies (``repeat_kv``) whenever a mask is passed, as it always is for
    a left-padded batch: a copy of the whole KV cache per layer and decode step, which
    dominates at long contexts (docs/cpu-inference.md); the output is the same.
    """
    groups = getattr(module, "num_key_value_groups", 1)
    if groups == 1 or kwargs.get("position_bias") is not None or kwargs.get("cache") is not None:
        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout,
                                      scaling=scaling, is_causal=is_causal, **kwargs)
    if dropout == 0.0 and decode_fast_path(query, attention_mask):
        return decode_attention(query, key, value, attention_mask, scaling), None
    causal = is_causal if is_causal is not None else getattr(module, "is_causal", True)
    causal = query.shape[2] > 1 and attention_mask is None and causal
    out = torch.nn.functional.scaled_dot_product_attention(
        query, key, value, attn_mask=attention_mask, dropout_p=dropout, scale=scaling,
        is_causal=causal, enable_gqa=True)
    return out.transpose(1, 2).contiguous(), None


AttentionInterface.register(SHARED_KV_SDPA, sdpa_shared_kv)
AttentionMaskInterface.register(SHARED_KV_SDPA, sdpa_mask)  # the masks SDPA takes
