"""Shapes of public models, as the step, memory and MoE models take them.

Sources: Meta Llama 3.1 model cards / Hugging Face configs (8B, 70B, 405B); NVIDIA
Nemotron-4 15B (arXiv 2402.16819) and 340B (arXiv 2406.11704) technical reports; GPT-3
175B (Brown et al. 2020, Table 2.1, as NeMo's gpt3_175b config); Mixtral 8x7B and 8x22B
(Mistral AI, arXiv 2401.04088 and model cards); Grok-1 314B (xAI open release config);
DeepSeek-V3 (arXiv 2412.19437).  ``ffn_hidden`` is the inner size of one MLP (of one
expert for MoE models); ``gated_mlp`` marks SwiGLU-type MLPs with three matrices.

DeepSeek-style MoE entries carry, under :func:`twin.compute.step_estimate`'s keyword
names, the expert inner size ``moe_ffn_hidden`` (their ``ffn_hidden`` is then the dense
MLP of the first ``moe_dense_layers`` layers), the always-active shared experts
``moe_shared_experts`` (each of the expert inner size) and multi-head latent attention
(``mla_*``: q_lora_rank, kv_lora_rank, qk_nope_head_dim, qk_rope_head_dim, v_head_dim;
``kv_heads`` = ``heads``, as their configs give).  Values from the published config.json
of deepseek-ai/DeepSeek-V3 (hidden_size 7168, intermediate_size 18432,
moe_intermediate_size 2048, num_hidden_layers 61, first_k_dense_replace 3, 128 heads,
n_routed_experts 256, num_experts_per_tok 8, n_shared_experts 1, q_lora_rank 1536,
kv_lora_rank 512, qk_nope/rope 128/64, v_head_dim 128, vocab_size 129280; the report,
arXiv 2412.19437 sec. 4.2: 4K-token pre-training sequences), DeepSeek-V2 (arXiv
2405.04434 sec. 3.1.2 and its config.json: 60 layers, hidden 5120, dense MLP 12288, 160
routed experts of 1536, top-6, 2 shared, first layer dense, the same MLA ranks, vocab
102400) and DeepSeek-V2-Lite (the same paper's appendix and config.json: 27 layers, hidden
2048, dense MLP 10944, 64 routed experts of 1408, top-6, 2 shared, first layer dense, 16
heads, no query compression).  The multi-token-prediction module of V3 is not part of the
shape (the twin does not model it).
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
    "deepseek_v3": dict(layers=61, hidden=7168, ffn_hidden=18432, heads=128, kv_heads=128,
                        vocab=129280, seq_len=4096, experts=256, top_k=8,
                        moe_ffn_hidden=2048, moe_shared_experts=1, moe_dense_layers=3,
                        mla_q_lora_rank=1536, mla_kv_lora_rank=512, mla_qk_nope_head_dim=128,
                        mla_qk_rope_head_dim=64, mla_v_head_dim=128),
    "deepseek_v2": dict(layers=60, hidden=5120, ffn_hidden=12288, heads=128, kv_heads=128,
                        vocab=102400, seq_len=4096, experts=160, top_k=6,
                        moe_ffn_hidden=1536, moe_shared_experts=2, moe_dense_layers=1,
                        mla_q_lora_rank=1536, mla_kv_lora_rank=512, mla_qk_nope_head_dim=128,
                        mla_qk_rope_head_dim=64, mla_v_head_dim=128),
    "deepseek_v2_lite": dict(layers=27, hidden=2048, ffn_hidden=10944, heads=16, kv_heads=16,
                             vocab=102400, seq_len=4096, experts=64, top_k=6,
                             moe_ffn_hidden=1408, moe_shared_experts=2, moe_dense_layers=1,
                             mla_q_lora_rank=0, mla_kv_lora_rank=512, mla_qk_nope_head_dim=128,
                             mla_qk_rope_head_dim=64, mla_v_head_dim=128),
}
