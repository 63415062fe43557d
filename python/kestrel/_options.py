"""SessionOptions and RunOptions, with ONNX Runtime's field names where ONNX
Runtime has the idea and Kestrel's own beside them. Assigning a field that
does not exist raises AttributeError instead of being silently ignored."""
import enum
import operator

from ._errors import InvalidArgument
from . import _kestrel


class GraphOptimizationLevel(enum.IntEnum):
    """ONNX Runtime's levels, accepted for compatibility: Kestrel always optimizes fully."""
    ORT_DISABLE_ALL = 0
    ORT_ENABLE_BASIC = 1
    ORT_ENABLE_EXTENDED = 2
    ORT_ENABLE_LAYOUT = 3
    ORT_ENABLE_ALL = 99


class ExecutionMode(enum.IntEnum):
    """ONNX Runtime's modes, accepted for compatibility: Kestrel schedules the graph itself."""
    ORT_SEQUENTIAL = 0
    ORT_PARALLEL = 1


def _whole(name, value, low, high):
    try:
        value = operator.index(value)
    except TypeError:
        raise InvalidArgument(f"{name} must be a whole number, got {value!r}") from None
    if not low <= value <= high:
        raise InvalidArgument(f"{name} must be {low} to {high}, got {value}")
    return value


def _switch(name, value):
    if not isinstance(value, bool):
        raise InvalidArgument(f"{name} must be True or False, got {value!r}")
    return value


def _choice(name, value, allowed):
    if value not in allowed:
        raise InvalidArgument(f"{name} must be one of {', '.join(allowed)}, got {value!r}")
    return value


class _Checked:
    """A SessionOptions field whose every assignment passes check(name, value),
    kept in the slot "_" + its name."""

    def __init__(self, check):
        self.check = check

    def __set_name__(self, owner, name):
        self.name, self.slot = name, "_" + name

    def __get__(self, obj, owner=None):
        return self if obj is None else getattr(obj, self.slot)

    def __set__(self, obj, value):
        setattr(obj, self.slot, self.check(self.name, value))


_PRECISIONS = ("auto", "fp32", "fp16")


class SessionOptions:
    """How a session is made.

    intra_op_num_threads: CPU threads (0: every hardware thread).
    enable_profiling / profile_file_prefix: each run's wall time is recorded and
      end_profiling() writes them as a Chrome trace (chrome://tracing, Perfetto).
    precision (Kestrel): "auto", "fp32" or "fp16", the GPU's storage precision.
    max_loop_iterations (Kestrel): iterations one Loop or Scan node may run per run
      (None: 1,000,000; 0: no cap).
    device_memory_mb (Kestrel): GPU memory the session may hold (0: no limit).
    device_wait_s (Kestrel): the longest wait for one submit of GPU work (0: 120 s).
    device (Kestrel): the Vulkan device, by index ("1") or part of its name ("h200"); "": the
      best. (providers=[("VulkanExecutionProvider", {"device_id": 1})] sets it too.)
    Tuning and diagnosis (Kestrel; each also an environment variable, which counts where
    the field keeps its default):
      families: fuse the transformer encoders Kestrel recognizes (False: op by op).
      trace: 1: each node's op, placement, time and shapes on stderr; 2: also output ranges.
      encoder_heads: a vision encoder's head count where its graph does not show it (0: unknown).
      attention_chunk: at most this many query rows per fused attention chunk (0: automatic).
      cpu_kernels: "fast", or "reference" (the plain reference kernels alone, slower).
      gemm_tiles: the GPU GEMM's output tile: "auto", "tiny", "small", "wide" or "large".
      replay: replay recorded GPU work at a known input signature (False: record every run).
      exact_buffers: a buffer of exactly its size per tensor, for the validation layer.
      tensor_cores: float16 GEMMs on the GPU's tensor cores where it has them.
      attention: the fused encoders' attention: "auto", "flash" (one pass, no scores in memory)
        or "chunked" (the scores through memory).
      padding_free: a fused text encoder (ModernBERT) given a right-padding attention mask
        computes its live tokens only; its outputs read zero at padded tokens, where ONNX
        Runtime computes values (False: every token, as the graph says).
    """
    __slots__ = ("_threads", "enable_profiling", "profile_file_prefix", "_precision", "_loops",
                 "_memory_mb", "_wait_s", "device", "inter_op_num_threads", "graph_optimization_level", "execution_mode",
                 "log_severity_level", "log_verbosity_level", "logid", "enable_cpu_mem_arena", "enable_mem_pattern",
                 "_config", "_families", "_trace", "_encoder_heads", "_attention_chunk", "_cpu_kernels", "_gemm_tiles",
                 "_replay", "_exact_buffers", "_tensor_cores", "_attention", "_padding_free")

    def __init__(self):
        self._threads = 0
        self.enable_profiling = False
        self.profile_file_prefix = "kestrel_profile"
        self._precision = "auto"
        self._loops = None
        self._memory_mb = 0
        self._wait_s = 0.0
        self.device = ""
        # ONNX Runtime's own tuning, kept so scripts that set it still run.
        self.inter_op_num_threads = 0
        self.graph_optimization_level = GraphOptimizationLevel.ORT_ENABLE_ALL
        self.execution_mode = ExecutionMode.ORT_SEQUENTIAL
        self.log_severity_level = 2
        self.log_verbosity_level = 0
        self.logid = ""
        self.enable_cpu_mem_arena = True
        self.enable_mem_pattern = True
        self._config = {}
        self.families, self.trace, self.encoder_heads, self.attention_chunk = True, 0, 0, 0
        self.cpu_kernels, self.gemm_tiles = "fast", "auto"
        self.replay, self.exact_buffers, self.tensor_cores = True, False, True
        self.attention = "auto"
        self.padding_free = False

    @property
    def intra_op_num_threads(self):
        return self._threads

    @intra_op_num_threads.setter
    def intra_op_num_threads(self, n):
        self._threads = _whole("intra_op_num_threads", n, 0, 1024)

    @property
    def precision(self):
        return self._precision

    @precision.setter
    def precision(self, p):
        if p not in _PRECISIONS:
            raise InvalidArgument(f"precision must be one of {', '.join(_PRECISIONS)}, got {p!r}")
        self._precision = p

    @property
    def max_loop_iterations(self):
        return self._loops

    @max_loop_iterations.setter
    def max_loop_iterations(self, n):
        self._loops = None if n is None else _whole("max_loop_iterations", n, 0, (1 << 63) - 1)

    @property
    def device_memory_mb(self):
        return self._memory_mb

    @device_memory_mb.setter
    def device_memory_mb(self, mb):
        self._memory_mb = _whole("device_memory_mb", mb, 0, (1 << 63) - 1)

    @property
    def device_wait_s(self):
        return self._wait_s

    @device_wait_s.setter
    def device_wait_s(self, s):
        if not isinstance(s, (int, float)) or not s >= 0:
            raise InvalidArgument(f"device_wait_s must be 0 (default) or more seconds, got {s!r}")
        self._wait_s = float(s)

    # Kestrel's tuning and diagnosis, each assignment checked.
    families = _Checked(_switch)
    trace = _Checked(lambda name, v: _whole(name, v, 0, 2))
    encoder_heads = _Checked(lambda name, v: _whole(name, v, 0, (1 << 63) - 1))
    attention_chunk = _Checked(lambda name, v: _whole(name, v, 0, (1 << 63) - 1))
    cpu_kernels = _Checked(lambda name, v: _choice(name, v, ("fast", "reference")))
    gemm_tiles = _Checked(lambda name, v: _choice(name, v, ("auto", "tiny", "small", "wide", "large")))
    replay = _Checked(_switch)
    exact_buffers = _Checked(_switch)
    tensor_cores = _Checked(_switch)
    attention = _Checked(lambda name, v: _choice(name, v, ("auto", "flash", "chunked")))
    padding_free = _Checked(_switch)

    # ONNX Runtime's string-keyed entries; "kestrel.<field>" sets a Kestrel field.
    def add_session_config_entry(self, key, value):
        if key.startswith("kestrel."):
            field = key[len("kestrel."):]
            flag = lambda v: str(v).lower() in ("1", "true", "on", "yes")  # noqa: E731 (entries are strings)
            kinds = {"precision": str, "device": str, "max_loop_iterations": int, "device_memory_mb": int,
                     "device_wait_s": float, "families": flag, "trace": int, "encoder_heads": int,
                     "attention_chunk": int, "cpu_kernels": str, "gemm_tiles": str, "replay": flag,
                     "exact_buffers": flag, "tensor_cores": flag, "attention": str, "padding_free": flag}
            if field not in kinds:
                raise InvalidArgument(f"unknown Kestrel session config entry {key!r}; Kestrel's are "
                                      + ", ".join("kestrel." + k for k in kinds))
            setattr(self, field, kinds[field](value))
        self._config[key] = str(value)

    def get_session_config_entry(self, key):
        if key not in self._config:
            raise InvalidArgument(f"session config entry {key!r} is not set")
        return self._config[key]

    def _native(self, backend, device):
        """The options of _kestrel.Session.load for this backend and device (None: this.device)."""
        n = _kestrel.Options()
        n.backend, n.precision, n.threads = backend, self._precision, self._threads
        n.max_loop_iterations = 0 if self._loops is None else (-1 if self._loops == 0 else self._loops)
        n.device_memory_mb, n.device_wait_s = self._memory_mb, self._wait_s
        n.device = str(self.device if device is None else device)
        for field in ("families", "trace", "encoder_heads", "attention_chunk", "cpu_kernels", "gemm_tiles", "replay",
                      "exact_buffers", "tensor_cores", "attention", "padding_free"):
            setattr(n, field, getattr(self, field))
        return n


class RunOptions:
    """How one run goes. Setting terminate = True (from any thread) stops every
    run using these options, which raise kestrel.Cancelled; runs started while
    it stays True fail at once, as in ONNX Runtime. timeout_ms (Kestrel): a run
    fails with Cancelled once this many milliseconds have passed (0: none)."""
    __slots__ = ("_flag", "_terminate", "_timeout_ms", "log_severity_level", "log_verbosity_level", "logid",
                 "run_tag")

    def __init__(self):
        self._flag = None
        self._terminate = False
        self._timeout_ms = 0.0
        self.log_severity_level = 2
        self.log_verbosity_level = 0
        self.logid = ""
        self.run_tag = ""

    @property
    def terminate(self):
        return self._terminate

    @terminate.setter
    def terminate(self, value):
        value = bool(value)
        if value and not self._terminate:
            self._cancel_flag().request()
        elif not value and self._terminate:
            self._flag = None  # a set flag stays set: later runs take a fresh one
        self._terminate = value

    @property
    def timeout_ms(self):
        return self._timeout_ms

    @timeout_ms.setter
    def timeout_ms(self, ms):
        if not isinstance(ms, (int, float)) or not ms >= 0:
            raise InvalidArgument(f"timeout_ms must be 0 (none) or more, got {ms!r}")
        self._timeout_ms = float(ms)

    def _cancel_flag(self):
        if self._flag is None:
            self._flag = _kestrel.CancelFlag()
        return self._flag


def set_process_options(pool_mb=None, cpu_isa=None, poison_outputs=False):
    """Settings of the process rather than of one session (one tensor pool, one
    CPU kernel dispatch): set them before the first session, which applies
    them as it is made. None keeps the environment's value, else the default.

      pool_mb: the most idle tensor memory the pool keeps, in MiB (KESTREL_POOL_MB; 4096).
      cpu_isa: cap the CPU kernels at "baseline", "avx2" or "avx512" (KESTREL_CPU_ISA).
      poison_outputs: kernel outputs start as NaN bytes, to find kernels that read them.
    """
    pool = 0 if pool_mb is None else (-1 if _whole("pool_mb", pool_mb, 0, 1 << 30) == 0 else pool_mb)
    isa = "" if cpu_isa is None else _choice("cpu_isa", cpu_isa, ("baseline", "avx2", "avx512"))
    _kestrel.set_process_options(pool, isa, _switch("poison_outputs", poison_outputs))
