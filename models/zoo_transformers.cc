// Transformer presets: BERT (post-LN encoder, pre-training heads), GPT-2 and
// a few GPT-3 sizes (pre-LN decoders via BuildTransformer).
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
  };
}

}  // namespace dtsim::models
