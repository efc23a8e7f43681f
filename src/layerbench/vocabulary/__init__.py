"""The campaign file's vocabulary: the pieces every model of the file is made of, each defined once here.

- `base.py`: the strict base model and the name patterns (a name of the file, a Kubernetes name, an image).
- `limits.py`: the bounds of docs/campaign.md, "Limits".
- `sizes.py`: the size grammars (each field's own, and why they differ), the one reader of a size in bytes,
  Kubernetes quantities, and the one formatter of bytes for people.
- `cpus.py`: the CPU-list grammar and its reader, and the QoS presets with their rule.

The bottom layer: it imports pydantic, the standard library and layerbench.errors only, so the campaign
models, the backends' variant models, the neighbours' and the inventory's all build on it without importing
each other for these pieces.
"""
