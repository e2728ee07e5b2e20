"""Shapes of public models, as the step, memory and MoE models take them.

Sources: Meta Llama 3.1 model cards / Hugging Face configs (8B, 70B, 405B); NVIDIA
Nemotron-4 15B (arXiv 2402.16819) and 340B (arXiv 2406.11704) technical reports; GPT-3
175B (Brown et al. 2020, Table 2.1, as NeMo's gpt3_175b config); Mixtral 8x7B and 8x22B
(Mistral AI, arXiv 2401.04088 and model cards); Grok-1 314B (xAI open release config);
DeepSeek-V3 (arXiv 2412.19437).  ``ffn_hidden`` is the inner size of one MLP (of one
expert for MoE models); ``gated_mlp`` marks SwiGLU-type MLPs with three matrices.
"""

from __future__ import annotations

MODEL_SHAPES: dict[str, dict] = {
    "llama31_8b": dict(layers=32, hidden=4096, ffn_hidden=14336, heads=32, kv_heads=8,
                       vocab=128256, seq_len=8192),
    "llama31_70b": dict(layers=80, hidden=8192, ffn_hidden=28672, heads=64, kv_heads=8,
                        vocab=128256, seq_len=8192),
    "llama31_405b": dict(layers=126, hidden=16384, ffn_hidden=53248, heads=128, kv_heads=8,
                         vocab=128256, seq_len=8192),
    "nemotron4_15b": dict(layers=32, hidden=6144, ffn_hidden=24576, heads=48, kv_heads=8,
                          vocab=256000, seq_len=4096, gated_mlp=False),
    "nemotron4_340b": dict(layers=96, hidden=18432, ffn_hidden=73728, heads=96, kv_heads=8,
                           vocab=256000, seq_len=4096, gated_mlp=False),
    "gpt3_175b": dict(layers=96, hidden=12288, ffn_hidden=49152, heads=96, kv_heads=96,
                      vocab=51200, seq_len=2048, gated_mlp=False),
}

#: Mixture-of-experts models: the dense shape plus experts and routing.
MOE_SHAPES: dict[str, dict] = {
    "mixtral_8x7b": dict(layers=32, hidden=4096, ffn_hidden=14336, heads=32, kv_heads=8,
                         vocab=32000, seq_len=4096, experts=8, top_k=2),
    "mixtral_8x22b": dict(layers=56, hidden=6144, ffn_hidden=16384, heads=48, kv_heads=8,
                          vocab=32768, seq_len=4096, experts=8, top_k=2),
    "grok1_314b": dict(layers=64, hidden=6144, ffn_hidden=32768, heads=48, kv_heads=8,
                       vocab=131072, seq_len=8192, experts=8, top_k=2),
}
