"""The Python binding (python/kestrel.py) against the C++ CLI on a real model:
the same outputs to the bit as `kestrel run`, and errors raised with Kestrel's
message.   python3 tests/python_binding_test.py BUILD_DIR MODELS_DIR"""
import gc
import os
import subprocess
import sys
import tempfile
import threading
import time

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

# After close(), runs and prepared callables raise instead of touching a freed session.
prepared = s.prepare(feeds)
s.close()
expect_error(prepared, "session is closed")
expect_error(lambda: s.run(feeds), "session is closed")
s.close()  # (closing twice is fine)

# Thread counts out of range are refused with Kestrel's message, never wrapped
# into range by ctypes or passed to OpenMP (which aborts on 100000).
expect_error(lambda: kestrel.Session(model, backend="cpu", threads=100000), "threads must be 0")
expect_error(lambda: kestrel.Session(model, backend="cpu", threads=-1), "threads must be 0")
expect_error(lambda: kestrel.Session(model, backend="cpu", threads=2**32 + 1), "threads is out of range")


# A Loop that never ends (its condition stays true, no trip count), encoded
# by hand in ONNX's protobuf wire format: x[1] -> Loop 'forever' -> y[1].
def _varint(n):
    out = bytearray()
    while True:
        b, n = n & 0x7F, n >> 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _int(field, n):
    return _varint(field << 3) + _varint(n)


def _msg(field, payload):
    payload = payload.encode() if isinstance(payload, str) else payload
    return _varint(field << 3 | 2) + _varint(len(payload)) + payload


def _value(name, elem, dims):  # ValueInfoProto with a tensor type
    shape = b"".join(_msg(1, _int(1, d)) for d in dims)
    return _msg(1, name) + _msg(2, _msg(1, _int(1, elem) + _msg(2, shape)))


def _node(op, ins, outs, name, attrs=b""):
    return b"".join(_msg(1, i) for i in ins) + b"".join(_msg(2, o) for o in outs) + _msg(3, name) + _msg(4, op) + attrs


FLOAT, INT64, BOOL = 1, 7, 9
body = (_msg(1, _node("Identity", ["c_in"], ["c_out"], "keep_going")) + _msg(1, _node("Identity", ["v_in"], ["v_out"], "carry"))
        + _msg(2, "body") + _msg(11, _value("i", INT64, [])) + _msg(11, _value("c_in", BOOL, []))
        + _msg(11, _value("v_in", FLOAT, [1])) + _msg(12, _value("c_out", BOOL, [])) + _msg(12, _value("v_out", FLOAT, [1])))
loop_attr = _msg(5, _msg(1, "body") + _msg(6, body) + _int(20, 5))  # AttributeProto type GRAPH
cond = _int(2, BOOL) + _msg(5, _varint(1)) + _msg(8, "cond")  # TensorProto: a true bool scalar
graph = (_msg(1, _node("Loop", ["", "cond", "x"], ["y"], "forever", loop_attr)) + _msg(2, "g") + _msg(5, cond)
         + _msg(11, _value("x", FLOAT, [1])) + _msg(12, _value("y", FLOAT, [1])))
loop_model = _int(1, 8) + _msg(7, graph) + _msg(8, _int(2, 13))  # IR version 8, opset 13
x = {"x": np.array([7.0], np.float32)}

with tempfile.TemporaryDirectory() as d:
    path = os.path.join(d, "forever.onnx")
    with open(path, "wb") as f:
        f.write(loop_model)
    # The default cap ends it, naming the node and the cap.
    expect_error(lambda: kestrel.Session(path, backend="cpu", threads=1).run(x),
                 "node 'forever' (Loop): would run more than 1000000 iterations")
    expect_error(lambda: kestrel.Session(path, backend="cpu", threads=1, max_loop_iterations=50).run(x),
                 "would run more than 50 iterations")
    endless = kestrel.Session(path, backend="cpu", threads=1, max_loop_iterations=0)
    started = time.monotonic()
    expect_error(lambda: endless.run(x, timeout_ms=100), "run cancelled: its 100 ms timeout passed")
    assert time.monotonic() - started < 5, "the timeout did not end the run"

    # Cancelled from another thread; and close() while that run is under way
    # waits for it to return before freeing the session.
    token = kestrel.CancelToken()
    forever = endless.prepare(x)
    outcome = []

    def run_until_cancelled():
        try:
            forever(cancel=token)
            outcome.append("returned")
        except kestrel.KestrelError as e:
            outcome.append(str(e))

    worker = threading.Thread(target=run_until_cancelled)
    worker.start()
    time.sleep(0.3)
    assert worker.is_alive() and not outcome, outcome
    endless.close()  # returns at once; the run in flight keeps the session
    expect_error(forever, "session is closed")
    assert worker.is_alive(), "close() stopped the run"
    token.cancel()
    worker.join(5)
    assert not worker.is_alive(), "the cancelled run did not return"
    assert outcome and "run cancelled" in outcome[0], outcome
    print(f"cancelled from another thread: {outcome[0]}")
    expect_error(forever, "session is closed")

# A KESTREL_LIB that does not exist is named, not silently replaced by another library.
check = subprocess.run([sys.executable, "-c", "import kestrel; kestrel.Session('x.onnx')"],
                       env={**os.environ, "KESTREL_LIB": "/nonexistent/libkestrel.so",
                            "PYTHONPATH": os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python")},
                       capture_output=True, text=True)
assert check.returncode != 0 and "KESTREL_LIB is /nonexistent/libkestrel.so" in check.stderr, check.stderr
print("python binding: pass")
