// Transformer presets: BERT (post-LN encoder, pre-training heads), GPT-2, a
// few GPT-3 sizes, Llama 2, Llama 3, Llama 3.1 405B, Mistral 7B and the
// mixture-of-experts Mixtral 8x7B and DeepSeekMoE 16B (pre-norm decoders via
// BuildTransformer).
#include <string>

#include "models/zoo_builders.h"

namespace dtsim::models {
namespace {

// A GPT-style preset: positions = sequence, vocab 50257 (GPT-2 BPE), tied head.
TransformerConfig Gpt(int layers, int hidden, int heads, int sequence) {
  TransformerConfig c;
  c.layers = layers;
  c.hidden = hidden;
  c.heads = heads;
  c.sequence = sequence;
  c.vocab = 50257;
  return c;
}

// A BERT preset: WordPiece vocab 30522, 512 positions, sequence 512.
TransformerConfig Bert(int layers, int hidden, int heads) {
  TransformerConfig c;
  c.layers = layers;
  c.hidden = hidden;
  c.heads = heads;
  c.sequence = 512;
  c.max_positions = 512;
  c.vocab = 30522;
  c.causal = false;
  return c;
}

// A Llama-style preset (also Mistral): SwiGLU MLP of width `ffn`, RMSNorm,
// rotary positions, grouped-query attention with `kv_heads`, no biases, no
// dropout, untied LM head (the released config.json: hidden_act "silu",
// rms_norm_eps, rope_theta, attention_bias false, attention_dropout 0.0,
// tie_word_embeddings false), and fused attention (FlashAttention, as
// Megatron-LM and the Hugging Face trainers run them).
TransformerConfig Llama(int layers, int hidden, int heads, int kv_heads, int ffn, int vocab,
                        int sequence) {
  TransformerConfig c;
  c.layers = layers;
  c.hidden = hidden;
  c.heads = heads;
  c.kv_heads = kv_heads;
  c.ffn_hidden = ffn;
  c.vocab = vocab;
  c.sequence = sequence;
  c.tied_embeddings = false;
  c.mlp = MlpKind::kSwiglu;
  c.norm = NormKind::kRmsNorm;
  c.positions = PositionKind::kRotary;
  c.bias = false;
  c.dropout = false;
  c.attention = AttentionKind::kFlash;
  return c;
}

// A Llama-style decoder whose MLPs after the first `dense_layers` are
// `experts` routed SwiGLU experts of width `expert_ffn`, `top_k` per token,
// plus `shared` shared experts (models/transformer_moe.cc).
TransformerConfig Moe(TransformerConfig c, int experts, int top_k, int expert_ffn, int shared,
                      int dense_layers) {
  c.experts = experts;
  c.top_k = top_k;
  c.expert_ffn_hidden = expert_ffn;
  c.shared_experts = shared;
  c.dense_layers = dense_layers;
  return c;
}

ZooRecipe GptRecipe(ZooEntry entry, const TransformerConfig& config) {
  return {std::move(entry), [config](const ZooEntry& e) {
            ModelGraph g = BuildTransformer(config, e.name);
            g.set_description(e.description);
            return g;
          }};
}

ZooRecipe BertRecipe(ZooEntry entry, const TransformerConfig& config) {
  return {std::move(entry), [config](const ZooEntry& e) { return BuildBert(config, e); }};
}

}  // namespace

std::vector<ZooRecipe> TransformerZoo() {
  return {
      BertRecipe({"bert-base", "BERT-base pre-training with MLM and NSP heads (Devlin et al. "
                               "2019; HF BertForPreTraining), sequence 512"},
                 Bert(12, 768, 12)),
      BertRecipe({"bert-large", "BERT-large pre-training with MLM and NSP heads (Devlin et al. "
                                "2019; HF BertForPreTraining), sequence 512"},
                 Bert(24, 1024, 16)),
      GptRecipe({"gpt2", "GPT-2 124M (Radford et al. 2019; HF 'gpt2'), sequence 1024"},
                Gpt(12, 768, 12, 1024)),
      GptRecipe({"gpt2-medium",
                 "GPT-2 medium 355M (Radford et al. 2019; HF 'gpt2-medium'), sequence 1024"},
                Gpt(24, 1024, 16, 1024)),
      GptRecipe({"gpt2-large",
                 "GPT-2 large 774M (Radford et al. 2019; HF 'gpt2-large'), sequence 1024"},
                Gpt(36, 1280, 20, 1024)),
      GptRecipe({"gpt2-xl", "GPT-2 XL 1.5B (Radford et al. 2019; HF 'gpt2-xl'), sequence 1024"},
                Gpt(48, 1600, 25, 1024)),
      GptRecipe({"gpt3-2.7b", "GPT-3 2.7B (Brown et al. 2020, Table 2.1): 32 layers, hidden "
                              "2560, 32 heads, sequence 2048"},
                Gpt(32, 2560, 32, 2048)),
      GptRecipe({"gpt3-6.7b", "GPT-3 6.7B (Brown et al. 2020, Table 2.1): 32 layers, hidden "
                              "4096, 32 heads, sequence 2048"},
                Gpt(32, 4096, 32, 2048)),
      // Table 2.1 prints d_model 5140 for 13B; 40 heads x 128 = 5120 is the
      // size that was trained.
      GptRecipe({"gpt3-13b", "GPT-3 13B (Brown et al. 2020, Table 2.1): 40 layers, hidden "
                             "5120, 40 heads, sequence 2048"},
                Gpt(40, 5120, 40, 2048)),
      GptRecipe({"gpt3-175b", "GPT-3 175B (Brown et al. 2020, Table 2.1): 96 layers, hidden "
                              "12288, 96 heads, sequence 2048"},
                Gpt(96, 12288, 96, 2048)),
      // Configs: the Hugging Face config.json of each repository named
      // (num_hidden_layers, hidden_size, num_attention_heads,
      // num_key_value_heads, intermediate_size, vocab_size). Sequences:
      // Llama 2's 4096-token context (Touvron et al. 2023, §2.2), Llama 3's
      // 8192-token pre-training sequences (Llama Team 2024, "The Llama 3 Herd
      // of Models", §3.4.1: 405B pre-trained on 8K sequences before its
      // long-context stage), Mistral 7B at 4096, the length of its sliding
      // window (Jiang et al. 2023): the window is not modelled, and at 4096
      // tokens every query sees every earlier key anyway.
      GptRecipe({"llama2-7b", "Llama 2 7B (Touvron et al. 2023; HF meta-llama/Llama-2-7b-hf): "
                              "32 layers, hidden 4096, 32 heads, MLP 11008, sequence 4096"},
                Llama(32, 4096, 32, 32, 11008, 32000, 4096)),
      GptRecipe({"llama2-13b",
                 "Llama 2 13B (Touvron et al. 2023; HF meta-llama/Llama-2-13b-hf): 40 layers, "
                 "hidden 5120, 40 heads, MLP 13824, sequence 4096"},
                Llama(40, 5120, 40, 40, 13824, 32000, 4096)),
      GptRecipe({"llama2-70b",
                 "Llama 2 70B (Touvron et al. 2023; HF meta-llama/Llama-2-70b-hf): 80 layers, "
                 "hidden 8192, 64 heads, 8 kv heads, MLP 28672, sequence 4096"},
                Llama(80, 8192, 64, 8, 28672, 32000, 4096)),
      GptRecipe({"llama3-8b", "Llama 3 8B (Llama Team 2024; HF meta-llama/Meta-Llama-3-8B): 32 "
                              "layers, hidden 4096, 32 heads, 8 kv heads, MLP 14336, vocab "
                              "128256, sequence 8192"},
                Llama(32, 4096, 32, 8, 14336, 128256, 8192)),
      GptRecipe({"llama3-70b",
                 "Llama 3 70B (Llama Team 2024; HF meta-llama/Meta-Llama-3-70B): 80 layers, "
                 "hidden 8192, 64 heads, 8 kv heads, MLP 28672, vocab 128256, sequence 8192"},
                Llama(80, 8192, 64, 8, 28672, 128256, 8192)),
      GptRecipe({"llama3.1-405b",
                 "Llama 3.1 405B (Llama Team 2024; HF meta-llama/Llama-3.1-405B): 126 layers, "
                 "hidden 16384, 128 heads, 8 kv heads, MLP 53248, vocab 128256, sequence 8192"},
                Llama(126, 16384, 128, 8, 53248, 128256, 8192)),
      GptRecipe({"mistral-7b",
                 "Mistral 7B (Jiang et al. 2023; HF mistralai/Mistral-7B-v0.1): 32 layers, hidden "
                 "4096, 32 heads, 8 kv heads, MLP 14336, sequence 4096 (sliding window not "
                 "modelled)"},
                Llama(32, 4096, 32, 8, 14336, 32000, 4096)),
      // Mixtral 8x7B (Jiang et al. 2024, "Mixtral of Experts"; HF
      // mistralai/Mixtral-8x7B-v0.1 config.json: num_local_experts 8,
      // num_experts_per_tok 2, intermediate_size 14336): Mistral 7B's
      // blocks with 8 experts in every MLP; 46.7 B parameters, 12.9 B
      // active per token (Mistral AI's announcement).
      GptRecipe({"mixtral-8x7b",
                 "Mixtral 8x7B (Jiang et al. 2024; HF mistralai/Mixtral-8x7B-v0.1): 32 layers, "
                 "hidden 4096, 32 heads, 8 kv heads, 8 experts of MLP 14336, top-2, sequence "
                 "4096"},
                Moe(Llama(32, 4096, 32, 8, 14336, 32000, 4096), 8, 2, 14336, 0, 0)),
      // DeepSeekMoE 16B (Dai et al. 2024; HF deepseek-ai/deepseek-moe-16b-base
      // config.json: hidden_size 2048, num_hidden_layers 28, 16 heads,
      // intermediate_size 10944, moe_intermediate_size 1408,
      // n_routed_experts 64, n_shared_experts 2, num_experts_per_tok 6,
      // first_k_dense_replace 1, vocab_size 102400, max_position_embeddings
      // 4096): fine-grained experts; 16.4 B parameters, 2.8 B active.
      GptRecipe({"deepseek-moe-16b",
                 "DeepSeekMoE 16B (Dai et al. 2024; HF deepseek-ai/deepseek-moe-16b-base): 28 "
                 "layers, hidden 2048, 16 heads, first layer dense MLP 10944, then 64 experts of "
                 "MLP 1408 top-6 + 2 shared, vocab 102400, sequence 4096"},
                Moe(Llama(28, 2048, 16, 16, 10944, 102400, 4096), 64, 6, 1408, 2, 1)),
  };
}

}  // namespace dtsim::models
