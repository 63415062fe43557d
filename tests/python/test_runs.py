"""The installed package against Kestrel's own CLI, and the runs ONNX Runtime's
API has no words for: a Loop that never ends, stopped by the iteration cap, a
timeout, or RunOptions.terminate from another thread."""
import os
import subprocess
import threading
import time

import numpy as np
import pytest
from onnx import TensorProto, helper

import kestrel
from conftest import ROOT, model_path, silero_feeds


def test_outputs_equal_the_clis_to_the_bit(tmp_path):
    cli = os.path.join(ROOT, "build", "kestrel")
    assert os.path.exists(cli), f"{cli} is missing: build Kestrel first (scripts/build.sh)"
    feeds = silero_feeds()
    s = kestrel.InferenceSession(model_path("silero_vad.onnx"), providers=["CPUExecutionProvider"])
    ours = s.run(None, feeds)
    flags = []
    for k, v in feeds.items():
        np.save(tmp_path / f"{k}.npy", v)
        flags += ["--input", f"{k}={tmp_path / (k + '.npy')}"]
    subprocess.check_call([cli, "run", model_path("silero_vad.onnx"), "--backend", "cpu", "--output-dir",
                           str(tmp_path)] + flags, stdout=subprocess.DEVNULL)
    for n, mine in enumerate(ours):
        theirs = np.load(tmp_path / f"{n}.npy")
        assert theirs.dtype == mine.dtype and np.array_equal(theirs, mine), f"output {n} differs from kestrel run"


def forever_model():
    """x[1] -> Loop 'forever' (no trip count, its condition stays true) -> y[1]."""
    body = helper.make_graph(
        [helper.make_node("Identity", ["c_in"], ["c_out"]), helper.make_node("Identity", ["v_in"], ["v_out"])],
        "body", [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                 helper.make_tensor_value_info("c_in", TensorProto.BOOL, []),
                 helper.make_tensor_value_info("v_in", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v_out", TensorProto.FLOAT, [1])])
    g = helper.make_graph([helper.make_node("Loop", ["", "cond", "x"], ["y"], name="forever", body=body)], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
                          [helper.make_tensor("cond", TensorProto.BOOL, [], [True])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)], ir_version=8).SerializeToString()


X = {"x": np.array([7.0], np.float32)}


def endless_session(cap):
    opts = kestrel.SessionOptions()
    opts.max_loop_iterations = cap
    opts.intra_op_num_threads = 1
    return kestrel.InferenceSession(forever_model(), opts, providers=["CPUExecutionProvider"])


def test_the_iteration_cap_ends_a_loop_naming_it():
    with pytest.raises(kestrel.Fail, match=r"node 'forever' \(Loop\): would run more than 1000000 iterations"):
        endless_session(None).run(None, X)
    with pytest.raises(kestrel.KestrelError, match="would run more than 50 iterations"):
        endless_session(50).run(None, X)


def test_a_timeout_ends_a_run():
    ro = kestrel.RunOptions()
    ro.timeout_ms = 100
    started = time.monotonic()
    with pytest.raises(kestrel.Cancelled, match="run cancelled: its 100 ms timeout passed"):
        endless_session(0).run(None, X, ro)
    assert time.monotonic() - started < 5


def test_terminate_stops_a_run_from_another_thread():
    s = endless_session(0)
    ro = kestrel.RunOptions()
    outcome = []

    def run():
        try:
            s.run(None, X, ro)
            outcome.append("returned")
        except kestrel.Cancelled as e:
            outcome.append(str(e))

    worker = threading.Thread(target=run)
    worker.start()
    time.sleep(0.3)
    assert worker.is_alive() and not outcome, outcome
    s.close()  # a run under way keeps the session until it returns
    assert worker.is_alive(), "close() stopped the run"
    ro.terminate = True
    worker.join(5)
    assert not worker.is_alive(), "the terminated run did not return"
    assert outcome and "run cancelled" in outcome[0], outcome
    # While terminate stays set, runs fail at once; cleared, they run again.
    s = endless_session(10)
    with pytest.raises(kestrel.Cancelled):
        s.run(None, X, ro)
    ro.terminate = False
    with pytest.raises(kestrel.Fail, match="would run more than 10 iterations"):
        s.run(None, X, ro)
