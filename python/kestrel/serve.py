"""Kestrel behind Ray Serve: a model served by one replica per GPU, each
holding one Kestrel session, with concurrent requests batched.

    from ray import serve
    import kestrel.serve
    app = kestrel.serve.app("model.onnx", max_batch_size=8)
    handle = serve.run(app)
    outputs = handle.remote({"images": pixels}).result()   # [numpy arrays]

HTTP clients POST {"inputs": {"images": nested lists}} to the route and get
{"outputs": {name: nested lists}}. Needs Ray Serve (pip install "kestrel[serve]").

Batching (serve.batch): requests that arrive within batch_wait_timeout_s of
each other are stacked along their first axis into one run, when every input
and output of the model has an open first dim; otherwise the batch's requests
run one after another on the replica. Replicas: one per GPU Ray sees, each
opening the Vulkan device of the GPU Ray gave it (by its index: Vulkan lists
a machine's GPUs in PCI order, as CUDA does by default); with no GPU in the
cluster, one replica on Vulkan's best device (lavapipe on a CPU machine).
"""
import numpy as np
from ray import serve

from ._options import SessionOptions
from ._session import InferenceSession


def _open_first_dim(args):
    return all(a.shape is not None and len(a.shape) > 0 and not isinstance(a.shape[0], int) for a in args)


@serve.deployment
class KestrelDeployment:
    """One replica: one session on the GPU Ray assigned it."""

    def __init__(self, model_path, providers, sess_options, max_batch_size, batch_wait_timeout_s):
        import ray
        options = sess_options if sess_options is not None else SessionOptions()
        gpus = ray.get_gpu_ids()
        provider_options = None
        if providers is None:
            providers = ["VulkanExecutionProvider", "CPUExecutionProvider"]
        if gpus:
            provider_options = [{"device_id": int(gpus[0])} if p == "VulkanExecutionProvider" else {}
                                for p in providers]
        self.session = InferenceSession(model_path, options, providers=providers, provider_options=provider_options)
        self.names = [o.name for o in self.session.get_outputs()]
        self.stackable = _open_first_dim(self.session.get_inputs()) and _open_first_dim(self.session.get_outputs())
        self.infer.set_max_batch_size(max_batch_size)
        self.infer.set_batch_wait_timeout_s(batch_wait_timeout_s)
        self.batches = []  # the size of each batch run, for callers checking that batching happens

    @serve.batch(max_batch_size=8, batch_wait_timeout_s=0.01)
    async def infer(self, feeds_list):
        self.batches.append(len(feeds_list))
        if not self.stackable or len(feeds_list) == 1:
            return [self.session.run(None, feeds) for feeds in feeds_list]
        sizes = [len(next(iter(f.values()))) for f in feeds_list]
        stacked = {name: np.concatenate([np.asarray(f[name]) for f in feeds_list]) for name in feeds_list[0]}
        outputs = self.session.run(None, stacked)
        ends = np.cumsum(sizes)[:-1]
        split = [np.split(o, ends) for o in outputs]
        return [[part[i] for part in split] for i in range(len(feeds_list))]

    async def __call__(self, request):
        if isinstance(request, dict):  # a DeploymentHandle call with numpy feeds
            return await self.infer(request)
        body = await request.json()  # an HTTP request
        types = {i.name: i.type for i in self.session.get_inputs()}
        feeds = {name: np.asarray(value, dtype=_numpy_of(types.get(name))) for name, value in body["inputs"].items()}
        outputs = await self.infer(feeds)
        return {"outputs": {n: o.tolist() for n, o in zip(self.names, outputs)}}

    def batch_sizes(self):
        return list(self.batches)


def _numpy_of(type_name):
    from ._session import _CODE, _TYPE_NAME
    for dtype, code in _CODE.items():
        if type_name == f"tensor({_TYPE_NAME[code]})":
            return dtype
    return None


def app(model_path, providers=None, sess_options=None, max_batch_size=8, batch_wait_timeout_s=0.01,
        num_replicas=None):
    """A Serve application for `model_path` (serve.run(app(...)) starts it).
    num_replicas: None, one per GPU in the Ray cluster (one if it has none)."""
    import ray
    gpus = int(ray.cluster_resources().get("GPU", 0)) if ray.is_initialized() else 0
    replicas = num_replicas if num_replicas is not None else max(gpus, 1)
    deployment = KestrelDeployment.options(num_replicas=replicas,
                                           ray_actor_options={"num_gpus": 1 if gpus else 0})
    return deployment.bind(str(model_path), providers, sess_options, max_batch_size, batch_wait_timeout_s)
