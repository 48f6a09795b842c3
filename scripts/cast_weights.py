"""Copy a sentence-transformers folder with its float weights cast to fp16 or fp32.

The GPU machine receives at most 64 MiB a call, so weights travel as fp16 (half the pieces) and are cast
back to fp32 there: training keeps fp32 master weights, and every model scored there, peers included,
starts from the same fp16-rounded values (scripts/gpu_train_base.sh).
"""

import shutil
import sys
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

DTYPES = {"fp16": torch.float16, "fp32": torch.float32}


def cast(source: Path, target: Path, dtype: torch.dtype) -> None:
    if not (source / "model.safetensors").is_file():
        sys.exit(f"error: {source}/model.safetensors is missing: give a sentence-transformers folder")
    shutil.rmtree(target, ignore_errors=True)
    skipped = shutil.ignore_patterns("model.safetensors", "*.bin", "*.onnx", "onnx", "openvino", ".git*")
    # the root's weights only: a PEARL export's module folders (2_CharFeatures, ...) keep theirs, as they are
    shutil.copytree(source, target,
                    ignore=lambda folder, names: skipped(folder, names) if Path(folder) == source else [])
    weights = {name: tensor.to(dtype) if tensor.is_floating_point() else tensor
               for name, tensor in load_file(source / "model.safetensors").items()}
    save_file(weights, target / "model.safetensors", metadata={"format": "pt"})


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] not in DTYPES:
        sys.exit("usage: python scripts/cast_weights.py fp16|fp32 SOURCE_DIR TARGET_DIR")
    cast(Path(sys.argv[2]), Path(sys.argv[3]), DTYPES[sys.argv[1]])
