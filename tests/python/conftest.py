"""Shared by the Python package's tests: the real models (scripts/fetch_models.sh
downloads them into models/) and their inputs. The tests import the installed
package (pip install .), never the source folder."""
import os

import numpy as np
import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MODELS = os.path.join(ROOT, "models")


def assert_every_node_on_the_gpu(model, x, tmp_path):
    """`kestrel run MODEL --backend vulkan` with input x (the model's one input, named "x") places every node on
    the device: the placement summary counts them all and lists none on the CPU."""
    import re
    import subprocess
    np.save(tmp_path / "x.npy", x)
    run = subprocess.run([os.path.join(ROOT, "build", "kestrel"), "run", str(model), "--backend", "vulkan",
                          "--input", f"x={tmp_path / 'x.npy'}"], capture_output=True, text=True, check=True)
    placed = re.search(r"(\d+) of (\d+) nodes and [0-9.]+% of FLOPs on the GPU", run.stdout)
    assert placed and placed[1] == placed[2] and "on the CPU" not in run.stdout, run.stdout


def profiled_ops(path, backend="cpu"):
    """The op types `kestrel bench MODEL --profile` lists: what the prepared graph runs after its rewrites."""
    import re
    import subprocess
    run = subprocess.run([os.path.join(ROOT, "build", "kestrel"), "bench", str(path), "--backend", backend, "--runs",
                          "1", "--profile"], capture_output=True, text=True, check=True)
    return set(re.findall(r"^(\w+)\s+[0-9.]+\s+[0-9.]+%", run.stdout, re.M))


def ort_u8s8_saturates():
    """Whether ONNX Runtime's u8 x s8 integer products saturate on this CPU: on x86-64 without VNNI its kernels
    add pairs of byte products (AVX2's vpmaddubsw) into 16 bits, and 255 * 127 * 2 > 32767, so its answer is
    not the exact one ONNX defines (its quantization guide advises reduce_range there). Kestrel's products are
    exact on every CPU; the tests that hold Kestrel to ONNX Runtime's bits give such a CPU signed 8-bit weights
    within [-64, 64] (INT8_WEIGHTS), whose products cannot saturate."""
    import platform
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return False
    with open("/proc/cpuinfo") as f:
        flags = f.read().split()
    return "avx512_vnni" not in flags and "avx_vnni" not in flags


# Signed 8-bit weights' range [lo, hi) for rng.integers: the full one where ONNX Runtime's products are exact.
INT8_WEIGHTS = (-64, 65) if ort_u8s8_saturates() else (-128, 128)


def model_path(name):
    path = os.path.join(MODELS, name)
    assert os.path.exists(path), f"{path} is missing: run scripts/fetch_models.sh"
    return path


def silero_feeds():
    i = np.arange(576, dtype=np.float32)
    return {"input": (0.3 * np.sin(2 * np.pi * 180 * i / 16000))[None, :].astype(np.float32),
            "state": np.zeros((2, 1, 128), np.float32), "sr": np.array(16000, np.int64)}


@pytest.fixture(scope="session", autouse=True)
def installed_package():
    import kestrel
    here = os.path.dirname(kestrel.__file__)
    assert not here.startswith(os.path.join(ROOT, "python")), \
        f"kestrel was imported from the source folder ({here}); the tests are for the installed package"
    return kestrel
