"""Records the gradient-ready order of tiny replicas of zoo families with the recorder, as
fixtures for zerosim's derived order (tests/unit/grad_order_fixture_test.cc).

    /usr/bin/python3 tests/recorder/zoo_replicas.py tests/data/recordings/grad_order

Each replica has the module tree, parameter names and forward op order of transformers'
modeling_<type>.py (GPT-2: Conv1D is addmm(bias, x, W), pytorch_utils.py; Llama: RMSNorm in fp32,
rotary on q and k, repeat_kv, eager attention, SwiGLU MLP), random weights, tiny widths; the
config each matches is written beside the order (`hf_config`), so the C++ test builds the same
model from it. The order is the AccumulateGrad hooks' (what DeepSpeed hooks) on the torch that
runs this script; it depends on the PyTorch version (the fixture names it).
"""

import json
import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
import zerosim_record  # noqa: E402


class Conv1D(nn.Module):
    def __init__(self, nf, nx):
        super().__init__()
        self.nf = nf
        self.weight = nn.Parameter(torch.randn(nx, nf) * 0.02)
        self.bias = nn.Parameter(torch.zeros(nf))

    def forward(self, x):
        size_out = x.size()[:-1] + (self.nf,)
        x = torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
        return x.view(size_out)


class NewGELUActivation(nn.Module):  # activations.py, ACT2FN["gelu_new"]
    def forward(self, x):
        return F.gelu(x, approximate="tanh")


class GPT2Attention(nn.Module):
    def __init__(self, h, heads):
        super().__init__()
        self.c_attn, self.c_proj, self.h, self.heads = Conv1D(3 * h, h), Conv1D(h, h), h, heads
        self.resid_dropout = nn.Dropout(0.1)

    def forward(self, x):
        q, k, v = self.c_attn(x).split(self.h, dim=2)
        split = lambda t: t.view(t.size()[:-1] + (self.heads, -1)).permute(0, 2, 1, 3)  # noqa
        q, k, v = split(q), split(k), split(v)
        w = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(v.size(-1))
        n = x.size(1)
        mask = torch.tril(torch.ones(n, n, dtype=torch.bool))
        w = torch.where(mask, w, torch.full([], torch.finfo(w.dtype).min))
        w = F.softmax(w, dim=-1)
        a = torch.matmul(w, v).permute(0, 2, 1, 3).contiguous()
        return self.resid_dropout(self.c_proj(a.view(a.size()[:-2] + (self.h,))))


class GPT2MLP(nn.Module):
    def __init__(self, h):
        super().__init__()
        self.c_fc, self.c_proj = Conv1D(4 * h, h), Conv1D(h, 4 * h)
        self.act = NewGELUActivation()
        self.dropout = nn.Dropout(0.1)

    def forward(self, x):
        return self.dropout(self.c_proj(self.act(self.c_fc(x))))


class GPT2Block(nn.Module):
    def __init__(self, h, heads):
        super().__init__()
        self.ln_1, self.attn = nn.LayerNorm(h), GPT2Attention(h, heads)
        self.ln_2, self.mlp = nn.LayerNorm(h), GPT2MLP(h)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT2Model(nn.Module):
    def __init__(self, c):
        super().__init__()
        h = c["n_embd"]
        self.wte, self.wpe = nn.Embedding(c["vocab_size"], h), nn.Embedding(c["n_positions"], h)
        self.drop = nn.Dropout(0.1)
        self.h = nn.ModuleList([GPT2Block(h, c["n_head"]) for _ in range(c["n_layer"])])
        self.ln_f = nn.LayerNorm(h)

    def forward(self, ids):
        x = self.drop(self.wte(ids) + self.wpe(torch.arange(ids.size(1)).unsqueeze(0)))
        for b in self.h:
            x = b(x)
        return self.ln_f(x)


class GPT2LMHeadModel(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.transformer = GPT2Model(c)
        self.lm_head = nn.Linear(c["n_embd"], c["vocab_size"], bias=False)
        self.lm_head.weight = self.transformer.wte.weight  # tied

    def forward(self, ids):
        return self.lm_head(self.transformer(ids))


class LlamaRMSNorm(nn.Module):
    def __init__(self, h):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(h))

    def forward(self, x):
        dt = x.dtype
        x = x.to(torch.float32)
        x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
        return self.weight * x.to(dt)


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


class LlamaAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        h, self.nh, self.nkv = c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"]
        self.hd = h // self.nh
        self.q_proj = nn.Linear(h, self.nh * self.hd, bias=False)
        self.k_proj = nn.Linear(h, self.nkv * self.hd, bias=False)
        self.v_proj = nn.Linear(h, self.nkv * self.hd, bias=False)
        self.o_proj = nn.Linear(self.nh * self.hd, h, bias=False)

    def forward(self, x, cos, sin):
        b, n, _ = x.shape
        q = self.q_proj(x).view(b, n, -1, self.hd).transpose(1, 2)
        k = self.k_proj(x).view(b, n, -1, self.hd).transpose(1, 2)
        v = self.v_proj(x).view(b, n, -1, self.hd).transpose(1, 2)
        q = (q * cos) + (rotate_half(q) * sin)
        k = (k * cos) + (rotate_half(k) * sin)
        rep = self.nh // self.nkv
        k = k[:, :, None].expand(b, self.nkv, rep, n, self.hd).reshape(b, self.nh, n, self.hd)
        v = v[:, :, None].expand(b, self.nkv, rep, n, self.hd).reshape(b, self.nh, n, self.hd)
        w = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.hd)
        w = w + torch.triu(torch.full((n, n), float("-inf")), 1)
        w = F.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype)
        a = torch.matmul(w, v).transpose(1, 2).contiguous().reshape(b, n, -1).contiguous()
        return self.o_proj(a)


class LlamaMLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        h, f = c["hidden_size"], c["intermediate_size"]
        self.gate_proj = nn.Linear(h, f, bias=False)
        self.up_proj = nn.Linear(h, f, bias=False)
        self.down_proj = nn.Linear(f, h, bias=False)
        self.act_fn = nn.SiLU()  # ACT2FN["silu"]

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class LlamaDecoderLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.self_attn, self.mlp = LlamaAttention(c), LlamaMLP(c)
        self.input_layernorm = LlamaRMSNorm(c["hidden_size"])
        self.post_attention_layernorm = LlamaRMSNorm(c["hidden_size"])

    def forward(self, x, cos, sin):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin)
        return x + self.mlp(self.post_attention_layernorm(x))


class LlamaModel(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embed_tokens = nn.Embedding(c["vocab_size"], c["hidden_size"])
        self.layers = nn.ModuleList([LlamaDecoderLayer(c) for _ in range(c["num_hidden_layers"])])
        self.norm = LlamaRMSNorm(c["hidden_size"])
        self.hd = c["hidden_size"] // c["num_attention_heads"]

    def forward(self, ids):
        x = self.embed_tokens(ids)
        with torch.no_grad():  # LlamaRotaryEmbedding: no parameters, computed without grad
            inv = 1.0 / (10000 ** (torch.arange(0, self.hd, 2).float() / self.hd))
            f = torch.outer(torch.arange(ids.size(1)).float(), inv)
            emb = torch.cat((f, f), dim=-1)
            cos, sin = emb.cos()[None, None], emb.sin()[None, None]
        for layer in self.layers:
            x = layer(x, cos, sin)
        return self.norm(x)


class LlamaForCausalLM(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.model = LlamaModel(c)
        self.lm_head = nn.Linear(c["hidden_size"], c["vocab_size"], bias=False)

    def forward(self, ids):
        return self.lm_head(self.model(ids))


REPLICAS = {
    "gpt2": (GPT2LMHeadModel, {"model_type": "gpt2", "n_embd": 16, "n_head": 2, "n_layer": 2,
                               "n_positions": 32, "vocab_size": 64, "n_inner": None,
                               "tie_word_embeddings": True}),
    "llama": (LlamaForCausalLM, {"model_type": "llama", "hidden_size": 16,
                                 "intermediate_size": 40, "num_attention_heads": 4,
                                 "num_key_value_heads": 2, "num_hidden_layers": 2,
                                 "vocab_size": 64, "max_position_embeddings": 32,
                                 "tie_word_embeddings": False}),
}


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, (cls, cfg) in REPLICAS.items():
        torch.manual_seed(0)
        model = cls(cfg)
        rec_dir = os.path.join(out, "_rec_" + name)
        rec = zerosim_record.Recorder(rec_dir, model=model).start()
        model(torch.randint(0, cfg["vocab_size"], (2, 8))).float().pow(2).mean().backward()
        rec.stop()
        with open(os.path.join(rec_dir, "params.rank0.json")) as f:
            order = json.load(f)["grad_order"]
        with open(os.path.join(rec_dir, "modules.rank0.json")) as f:
            backward = json.load(f)["backward"]
        # backward: the recorder's interleaving of module pre-backward hooks and gradient hooks,
        # one "pre_backward MODULE" or "grad PARAM" per event, in the order autograd ran them.
        interleaving = ["pre_backward " + e["pre_backward"] if "pre_backward" in e
                        else "grad " + e["grad"] for e in backward]
        fixture = {"family": name, "torch": torch.__version__, "hook": "AccumulateGrad node",
                   "hf_config": cfg, "grad_order": order, "backward": interleaving}
        with open(os.path.join(out, name + ".json"), "w") as f:
            json.dump(fixture, f, indent=1)
            f.write("\n")
        for fn in os.listdir(rec_dir):
            os.remove(os.path.join(rec_dir, fn))
        os.rmdir(rec_dir)
        print("%s: %d params in grad order (torch %s)" % (name, len(order), torch.__version__))


if __name__ == "__main__":
    main()
