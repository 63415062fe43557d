"""Kestrel from Python, shaped like ONNX Runtime's API so that code written
for ``onnxruntime`` runs on Kestrel by changing its import:

    import kestrel
    s = kestrel.InferenceSession("model.onnx", providers=["VulkanExecutionProvider", "CPUExecutionProvider"])
    print([(i.name, i.type, i.shape) for i in s.get_inputs()])
    (logits,) = s.run(None, {"images": pixels})

Inputs are read where numpy keeps them and outputs are numpy arrays over the
memory Kestrel returned them in: a run copies no tensor. A session may run on
several threads at once (runs release the GIL).

What differs from ONNX Runtime: the providers are Kestrel's two backends,
VulkanExecutionProvider (any Vulkan GPU, Mali and Adreno to datacenter
GPUs, or Mesa's lavapipe on the CPU) and CPUExecutionProvider;
SessionOptions has Kestrel's own fields (precision, max_loop_iterations,
device_memory_mb, device_wait_s) beside ONNX Runtime's; RunOptions has
timeout_ms. ONNX Runtime options that tune ONNX Runtime's own machinery
(inter_op_num_threads, graph_optimization_level, execution_mode) are
accepted and have no effect: Kestrel optimizes every graph fully.

Beside it, the pipelines of `kestrel detect` and `kestrel ocr`: Detector,
TextReader, detect() and ocr(), photos (paths or RGB arrays) to dicts.
"""
from ._errors import (Cancelled, Fail, InvalidArgument, InvalidModel, KestrelError, NoSuchFile,
                      NotImplementedByKestrel, OutOfMemory)
from ._options import RunOptions, SessionOptions, GraphOptimizationLevel, ExecutionMode, set_process_options
from ._session import InferenceSession, IOBinding, NodeArg, get_available_providers, get_device
from ._vision import Detector, TextReader, detect, ocr

from . import _kestrel

__version__ = _kestrel.version()

__all__ = [
    "InferenceSession", "SessionOptions", "RunOptions", "IOBinding", "NodeArg", "GraphOptimizationLevel",
    "ExecutionMode", "get_available_providers", "get_device", "KestrelError", "Fail", "InvalidArgument",
    "NoSuchFile", "InvalidModel", "NotImplementedByKestrel", "Cancelled", "OutOfMemory", "__version__",
    "set_process_options", "Detector", "TextReader", "detect", "ocr",
]
