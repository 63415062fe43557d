"""The Python binding (python/kestrel.py) against the C++ CLI on a real model:
the same outputs to the bit as `kestrel run`, and errors raised with Kestrel's
message.   python3 tests/python_binding_test.py BUILD_DIR MODELS_DIR"""
import gc
import os
import subprocess
import sys
import tempfile

import numpy as np

build, models = sys.argv[1], sys.argv[2]
os.environ["KESTREL_LIB"] = os.path.join(build, "libkestrel.so")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
import kestrel  # noqa: E402

model = os.path.join(models, "silero_vad.onnx")
assert os.path.exists(model), f"{model} is missing: run scripts/fetch_models.sh"
i = np.arange(576, dtype=np.float32)
feeds = {"input": (0.3 * np.sin(2 * np.pi * 180 * i / 16000))[None, :].astype(np.float32),
         "state": np.zeros((2, 1, 128), np.float32), "sr": np.array(16000, np.int64)}

s = kestrel.Session(model, backend="cpu", threads=1)
assert s.inputs == ["input", "state", "sr"], s.inputs
assert s.outputs == ["output", "stateN"], s.outputs
assert s.backend == "cpu", s.backend
ours = s.run(feeds)
again = s.prepare(feeds)
assert all(np.array_equal(a, b) for a, b in zip(ours, again())), "a prepared run differs from run()"
# A prepared callable keeps its session alive after the caller drops the Session.
orphan = kestrel.Session(model, backend="cpu", threads=1).prepare(feeds)
gc.collect()
assert all(np.array_equal(a, b) for a, b in zip(ours, orphan())), "a prepared run outliving its Session differs"

with tempfile.TemporaryDirectory() as d:
    flags = []
    for k, v in feeds.items():
        np.save(os.path.join(d, k + ".npy"), v)
        flags += ["--input", f"{k}={os.path.join(d, k + '.npy')}"]
    subprocess.check_call([os.path.join(build, "kestrel"), "run", model, "--backend", "cpu", "--threads", "1",
                           "--output-dir", d] + flags, stdout=subprocess.DEVNULL)
    for n, ours_n in enumerate(ours):
        cli = np.load(os.path.join(d, f"{n}.npy"))
        assert cli.dtype == ours_n.dtype and cli.shape == ours_n.shape, (n, cli.shape, ours_n.shape)
        assert np.array_equal(cli, ours_n), f"output {n} differs from kestrel run"
print(f"outputs {[o.shape for o in ours]} equal kestrel run's; speech probability {float(ours[0].ravel()[0]):.4f}")


def expect_error(fn, text):
    try:
        fn()
    except kestrel.KestrelError as e:
        assert text in str(e), f"expected '{text}' in: {e}"
        print(f"raised as expected: {e}")
        return
    raise AssertionError(f"no error; expected '{text}'")


expect_error(lambda: kestrel.Session("/nonexistent/model.onnx"), "/nonexistent/model.onnx")
expect_error(lambda: s.run({**feeds, "input": feeds["input"].astype(np.float64)}),
             "input 'input' must be float32, got float64")
expect_error(lambda: s.run({"input": feeds["input"]}), "missing input 'state'")
expect_error(lambda: s.run({**feeds, "input": np.array(["a"])}), "numpy dtype <U1 has no Kestrel element type")
s.close()

# A KESTREL_LIB that does not exist is named, not silently replaced by another library.
check = subprocess.run([sys.executable, "-c", "import kestrel; kestrel.Session('x.onnx')"],
                       env={**os.environ, "KESTREL_LIB": "/nonexistent/libkestrel.so",
                            "PYTHONPATH": os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python")},
                       capture_output=True, text=True)
assert check.returncode != 0 and "KESTREL_LIB is /nonexistent/libkestrel.so" in check.stderr, check.stderr
print("python binding: pass")
