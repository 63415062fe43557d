"""kestrel.serve on a local Ray instance on the loopback address: a real model
served through a DeploymentHandle and over HTTP, concurrent requests batched
into one run, every answer equal to ONNX Runtime's for that request alone."""
import json
import socket
import urllib.request
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import onnxruntime
import pytest

ray = pytest.importorskip("ray")  # (pinned in the test environment: absent, the suite's setup is wrong)
from ray import serve  # noqa: E402

import kestrel.serve  # noqa: E402
from conftest import model_path  # noqa: E402
from test_ort_api import compare  # noqa: E402


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def local_ray():
    ray.init(address="local", num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1",
             log_to_driver=False, configure_logging=False)
    port = free_port()
    serve.start(http_options={"host": "127.0.0.1", "port": port})
    yield port
    serve.shutdown()
    ray.shutdown()


def test_serves_a_real_model_with_batching(local_ray):
    path = model_path("ppocr_mobile_v2_cls.onnx")  # input x: [batch, 3, 48, 192]
    handle = serve.run(kestrel.serve.app(path, providers=["CPUExecutionProvider"], max_batch_size=4,
                                         batch_wait_timeout_s=0.2), name="ppocr_cls", route_prefix="/cls")
    rng = np.random.default_rng(7)
    requests = [{"x": rng.random((1 + i % 2, 3, 48, 192), dtype=np.float32)} for i in range(8)]
    reference = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda r: handle.remote(r).result(), requests))
    for request, answer in zip(requests, answers):
        compare(answer, reference.run(None, request))
    sizes = handle.batch_sizes.remote().result()
    assert sum(sizes) == len(requests) and max(sizes) > 1, f"requests were not batched: {sizes}"

    # Over HTTP, as JSON.
    one = requests[0]
    body = json.dumps({"inputs": {"x": one["x"].tolist()}}).encode()
    req = urllib.request.Request(f"http://127.0.0.1:{local_ray}/cls", data=body,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as r:
        outputs = json.loads(r.read())["outputs"]
    name = reference.get_outputs()[0].name
    compare([np.asarray(outputs[name], np.float32)], reference.run(None, one))
