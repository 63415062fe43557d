"""InferenceSession, NodeArg and IOBinding, as ONNX Runtime's Python API has them."""
import json
import os
import threading
import time
import warnings

import numpy as np

from ._errors import InvalidArgument, KestrelError
from ._options import RunOptions, SessionOptions
from . import _kestrel

# ONNX TensorProto.DataType codes <-> numpy and ONNX Runtime's type strings.
_NUMPY = {1: np.float32, 2: np.uint8, 3: np.int8, 4: np.uint16, 5: np.int16, 6: np.int32, 7: np.int64, 9: np.bool_,
          10: np.float16, 11: np.float64, 12: np.uint32, 13: np.uint64}
_CODE = {np.dtype(t): c for c, t in _NUMPY.items()}
_TYPE_NAME = {1: "float", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32", 7: "int64", 8: "string",
              9: "bool", 10: "float16", 11: "double", 12: "uint32", 13: "uint64", 16: "bfloat16"}
_BFLOAT16 = 16

try:  # numpy has no bfloat16; ml_dtypes (JAX's, TensorFlow's) adds one
    import ml_dtypes
    _BFLOAT16_DTYPE = np.dtype(ml_dtypes.bfloat16)
    _CODE[_BFLOAT16_DTYPE] = _BFLOAT16
except ImportError:
    _BFLOAT16_DTYPE = None

_PROVIDERS = {"VulkanExecutionProvider": "vulkan", "CPUExecutionProvider": "cpu"}


def get_available_providers():
    """Kestrel's backends in its order of preference."""
    return list(_PROVIDERS)


def get_device():
    return "GPU"


class NodeArg:
    """A model input or output: name, type ("tensor(float)") and shape, whose
    entries are ints, symbolic names ("batch") or None for an unnamed open dim;
    the shape is None where the model declares no rank."""
    __slots__ = ("name", "type", "shape")

    def __init__(self, name, type, shape):
        self.name, self.type, self.shape = name, type, shape

    def __repr__(self):
        return f"NodeArg(name={self.name!r}, type={self.type!r}, shape={self.shape!r})"


def _node_arg(info):
    name, code, dims, symbols, has_shape = info
    shape = [d if d >= 0 else (s or None) for d, s in zip(dims, symbols)] if has_shape else None
    return NodeArg(name, f"tensor({_TYPE_NAME.get(code, 'undefined')})", shape)


def _backend_of(providers, provider_options):
    """(backend, device or None) for a provider list, as names or (name, options)
    pairs, with provider_options beside it as ONNX Runtime takes them. Names
    Kestrel does not have are left out with a warning (ONNX Runtime does the same)."""
    if providers is None:
        return "auto", None
    if provider_options is not None and len(provider_options) != len(providers):
        raise InvalidArgument("provider_options must have one dict per provider")
    names, device = [], None
    for i, p in enumerate(providers):
        name, options = p if isinstance(p, tuple) else (p, provider_options[i] if provider_options else {})
        if name not in _PROVIDERS:
            warnings.warn(f"Kestrel has no {name!r}; its providers are {', '.join(_PROVIDERS)}", stacklevel=3)
            continue
        names.append(name)
        if name == "VulkanExecutionProvider" and "device_id" in options:
            device = str(int(options["device_id"]))
    if not names:
        return "auto", None
    if names[0] == "CPUExecutionProvider":
        return "cpu", None
    # Vulkan first: the GPU, with the CPU for what it does not run when the list allows it.
    return ("auto" if "CPUExecutionProvider" in names else "vulkan"), device


def _feed(name, value):
    """(code, shape, address, array) for one input; the array is kept referenced through the run."""
    a = np.asarray(value)  # (not ascontiguousarray: it makes a 0-d array 1-d)
    if not a.flags.c_contiguous:
        a = np.array(a, order="C")
    code = _CODE.get(a.dtype)
    if code is None:
        raise InvalidArgument(f"input '{name}' has numpy type {a.dtype}, which Kestrel does not take")
    return code, list(a.shape), a.ctypes.data, a


class InferenceSession:
    """A loaded model. path_or_bytes: a path (str or os.PathLike) or the model's bytes."""

    def __init__(self, path_or_bytes, sess_options=None, providers=None, provider_options=None, **kwargs):
        if kwargs:
            raise TypeError(f"InferenceSession got unexpected arguments: {', '.join(kwargs)}")
        self._options = sess_options if sess_options is not None else SessionOptions()
        if not isinstance(self._options, SessionOptions):
            raise InvalidArgument(f"sess_options must be a kestrel.SessionOptions, got {type(sess_options).__name__}")
        native = self._options._native(*_backend_of(providers, provider_options))
        started = self._origin = time.perf_counter()
        if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
            self._native = _kestrel.Session.from_bytes(bytes(path_or_bytes), native)
            self._model_path = None
        elif isinstance(path_or_bytes, (str, os.PathLike)):
            self._model_path = os.fspath(path_or_bytes)
            self._native = _kestrel.Session.load(self._model_path, native)
        else:
            raise InvalidArgument(f"path_or_bytes must be a path or bytes, got {type(path_or_bytes).__name__}")
        self._load_us = (time.perf_counter() - started) * 1e6
        self._inputs = [_node_arg(i) for i in self._native.inputs()]
        self._outputs = [_node_arg(o) for o in self._native.outputs()]
        self._output_index = {o.name: i for i, o in enumerate(self._outputs)}
        self._backend = self._native.backend()
        self._profile = [] if self._options.enable_profiling else None
        self._profile_start = time.time()
        self._lock = threading.Lock()

    # --- metadata ---------------------------------------------------------
    def get_inputs(self):
        return list(self._inputs)

    def get_outputs(self):
        return list(self._outputs)

    def get_overridable_initializers(self):
        return []

    def get_providers(self):
        return ["CPUExecutionProvider"] if self._backend == "cpu" else list(_PROVIDERS)

    def get_provider_options(self):
        return {p: {} for p in self.get_providers()}

    def get_session_options(self):
        return self._options

    @property
    def backend(self):
        """Where the session runs, in Kestrel's words ("vulkan on <device>: ..." or "cpu")."""
        return self._backend

    # --- running ------------------------------------------------------------
    def run(self, output_names, input_feed, run_options=None):
        """Runs the model; returns the outputs named (None: all), as numpy arrays."""
        if not isinstance(input_feed, dict):
            raise InvalidArgument(f"input_feed must be a dict of input name to array, got {type(input_feed).__name__}")
        wanted = self._wanted(output_names)
        names, codes, shapes, datas, keep = [], [], [], [], []
        for name, value in input_feed.items():
            code, shape, address, array = _feed(name, value)
            names.append(name), codes.append(code), shapes.append(shape), datas.append(address), keep.append(array)
        cancel, timeout = None, 0.0
        if run_options is not None:
            if not isinstance(run_options, RunOptions):
                raise InvalidArgument(f"run_options must be a kestrel.RunOptions, got {type(run_options).__name__}")
            cancel, timeout = run_options._cancel_flag(), run_options.timeout_ms
        started = time.perf_counter()
        outputs = self._native.run(names, codes, shapes, datas, cancel, timeout)
        if self._profile is not None:
            self._record("model_run", started)
        del keep  # (the inputs were read in place until here)
        return [self._as_numpy(i, outputs[i]) for i in wanted]

    def _wanted(self, output_names):
        if output_names is None:
            return range(len(self._outputs))
        wanted = []
        for n in output_names:
            if n not in self._output_index:
                raise InvalidArgument(f"invalid output name '{n}'; the model's outputs are: "
                                      + ", ".join(o.name for o in self._outputs))
            wanted.append(self._output_index[n])
        return wanted

    def _as_numpy(self, index, array):
        # bfloat16 arrives as its uint16 bits: the bfloat16 type where ml_dtypes provides one.
        if _BFLOAT16_DTYPE is not None and self._outputs[index].type == "tensor(bfloat16)":
            return array.view(_BFLOAT16_DTYPE)
        return array

    def io_binding(self):
        return IOBinding(self)

    def run_with_iobinding(self, iobinding, run_options=None):
        iobinding._outputs = self.run(iobinding._output_names or None, iobinding._inputs, run_options)

    # --- profiling ------------------------------------------------------------
    def _record(self, name, started):
        ended = time.perf_counter()
        with self._lock:
            self._profile.append({"cat": "Session", "name": name, "ph": "X", "pid": os.getpid(),
                                  "tid": threading.get_ident() % (1 << 31),
                                  "ts": (started - self._origin) * 1e6, "dur": (ended - started) * 1e6})

    def end_profiling(self):
        """Writes the runs recorded since the session loaded as a Chrome trace; returns its file name."""
        if self._profile is None:
            return ""
        stamp = time.strftime("%Y-%m-%d_%H-%M-%S", time.localtime(self._profile_start))
        path = f"{self._options.profile_file_prefix}_{stamp}.json"
        with self._lock:
            events = [{"cat": "Session", "name": "model_loading", "ph": "X", "pid": os.getpid(), "tid": 0,
                       "ts": 0, "dur": self._load_us}] + self._profile
            self._profile = []
        with open(path, "w") as f:
            json.dump(events, f)
        return path

    # --- lifetime ---------------------------------------------------------------
    def close(self):
        """Frees the session now (runs under way on other threads finish first)."""
        self._native = _Closed()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class _Closed:
    """What a closed session's runs reach."""

    def run(self, *args):
        raise InvalidArgument("the session is closed")


class IOBinding:
    """ONNX Runtime's IO binding: inputs bound once and run many times. Kestrel
    reads bound numpy arrays in place and returns outputs without copying, so
    binding saves only the dict of the feed."""

    def __init__(self, session):
        self._session = session
        self._inputs = {}
        self._output_names = []
        self._outputs = []

    def bind_cpu_input(self, name, arr_on_cpu):
        self._inputs[name] = arr_on_cpu

    def bind_output(self, name, device_type="cpu", device_id=0, element_type=None, shape=None, buffer_ptr=None):
        if device_type != "cpu" or buffer_ptr is not None:
            raise InvalidArgument("Kestrel binds outputs to host memory only (device_type='cpu', no buffer_ptr)")
        self._output_names.append(name)

    def clear_binding_inputs(self):
        self._inputs = {}

    def clear_binding_outputs(self):
        self._output_names = []
        self._outputs = []

    def get_outputs(self):
        return list(self._outputs)

    def copy_outputs_to_cpu(self):
        return [np.array(o) for o in self._outputs]
