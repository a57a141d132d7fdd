"""GPT-2 family models: a tiny config trained here, or a local checkout (never a hub download)."""

from __future__ import annotations

import copy
import ctypes
import inspect
import os
import platform
from collections.abc import Sequence
from pathlib import Path

import torch
from transformers import DynamicCache, GPT2Config, GPT2LMHeadModel, GPT2Model

from core.config import ModelConfig, check_device, device_setting, thread_setting
from core.tokenizer import ModelLoadError

REPO_ROOT = Path(__file__).resolve().parent.parent


def cache_root() -> Path:
    """Trained artefacts (tokenizer, base model, pseudo data) live here, keyed by config hash; git-ignored."""
    return Path(os.environ.get("SEQPATE_CACHE", REPO_ROOT / ".cache"))


def set_threads() -> int:
    """Compute set-up of this process: torch threads (SEQPATE_THREADS, default all cores) and the allocator.

    Returns the thread count, which runs record: it changes the order of float sums, and training amplifies that.
    """
    threads = thread_setting()
    torch.set_num_threads(threads)
    keep_freed_memory()
    return threads


def cpu_info() -> dict[str, str]:
    """The CPU a run computed on, which runs record beside their thread count: torch and MKL choose kernels by its
    instruction set (torch's dispatch level is `capability`), so another CPU can sum floats in another order."""
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:  # Linux names the model; platform only the family
            model = next((line.split(":", 1)[1].strip() for line in info if line.startswith("model name")), model)
    except OSError:
        pass
    return {"model": model, "capability": torch.backends.cpu.get_cpu_capability()}


def compute_device() -> torch.device:
    """The device SEQPATE_DEVICE names (core.config.device_setting); refuses cuda where torch sees no GPU."""
    check_device()
    return torch.device(device_setting())


def keep_freed_memory() -> None:
    """Let glibc reuse freed blocks of up to 32 MiB instead of handing them back to the OS.

    torch's CPU allocator does not cache: every training step allocates its activations, logits and gradients
    (MiBs each) afresh, and once glibc has returned that memory (mmap threshold, heap trimming) its pages fault in
    again. Keeping it makes training the tiny model 5-25% faster (most for the 2-sentence batches of 1,000 small
    teachers) at about the same peak memory (benchmarks/teacher_memory.py; 64 MiB / 256 MiB grew the peak at
    M=1000 by 9% through fragmentation). A no-op where glibc is not the C library.
    """
    try:
        libc = ctypes.CDLL("libc.so.6")
    except OSError:
        return
    m_trim_threshold, m_mmap_threshold = -1, -3  # mallopt parameters from glibc's malloc.h
    libc.mallopt(m_mmap_threshold, 32 << 20)  # glibc's own ceiling for its dynamic threshold
    libc.mallopt(m_trim_threshold, 128 << 20)


def build_tiny_gpt2(cfg: ModelConfig, vocab_size: int) -> GPT2LMHeadModel:
    # Untied embeddings: opacus ghost clipping refuses tied weights, and every method must start from the
    # same base model for a fair comparison.
    config = GPT2Config(
        vocab_size=vocab_size,
        n_positions=cfg.n_positions,
        n_embd=cfg.n_embd,
        n_layer=cfg.n_layer,
        n_head=cfg.n_head,
        tie_word_embeddings=False,
        bos_token_id=0,
        eos_token_id=0,
    )
    return GPT2LMHeadModel(config)


def load_local_model(path: str | Path) -> GPT2LMHeadModel:
    path = Path(path)
    if not path.is_dir() or not (path / "config.json").exists():
        raise ModelLoadError(f"not a model directory (no config.json): {path}")
    try:
        # float32 whatever the checkout was saved in: transformers 5 keeps a float16 checkpoint in float16, where
        # training overflows to NaN
        model = GPT2LMHeadModel.from_pretrained(str(path), local_files_only=True, dtype=torch.float32)
    except Exception as exc:
        # the whole message on one line: a validation error's first line ends before its reason
        raise ModelLoadError(f"cannot load a GPT-2 model from {path}: {type(exc).__name__}: {' '.join(str(exc).split())}") from None
    return untie(model)


def untie(model: GPT2LMHeadModel) -> GPT2LMHeadModel:
    """Give the LM head its own copy of the embedding matrix (needed by ghost clipping)."""
    if model.lm_head.weight.data_ptr() == model.transformer.wte.weight.data_ptr():
        model.lm_head.weight = torch.nn.Parameter(model.transformer.wte.weight.detach().clone())
        model.config.tie_word_embeddings = False
    return model


def clone(model: GPT2LMHeadModel) -> GPT2LMHeadModel:
    return copy.deepcopy(model)


# ------------------------------------------------------------------------------------------------------------
# The key/value cache, across transformers versions
# ------------------------------------------------------------------------------------------------------------

# transformers 5.24 renamed forward's `past_key_values` argument and output field to `cache` (the old name warns and
# goes in 5.40); 4.56 to 5.23 know only `past_key_values`. Completions, PPLM and canary exposure pass a cache.
CACHE_NAME = "cache" if "cache" in inspect.signature(GPT2Model.forward).parameters else "past_key_values"


def with_cache(cache: DynamicCache) -> dict:
    """The keyword argument that hands `cache` to a GPT-2 forward pass: model(input_ids=..., **with_cache(c))."""
    return {CACHE_NAME: cache}


def output_cache(out) -> DynamicCache:
    """The cache a forward pass with use_cache=True returned."""
    return getattr(out, CACHE_NAME)


def cache_tensors(cache: DynamicCache) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """[(keys, values)] per layer, each (B, heads, T, head_dim)."""
    return [(layer.keys, layer.values) for layer in cache.layers]


def make_cache(kv: Sequence[tuple[torch.Tensor, torch.Tensor]]) -> DynamicCache:
    """A fresh cache holding these tensors (a forward pass appends to its cache in place, so never reuse one)."""
    return DynamicCache(ddp_cache_data=[(k, v) for k, v in kv])
