/* Kestrel's C API: a stable C ABI over kestrel::Session for other languages
 * (Python, Node through an FFI, C programs; kestrel.hpp is a C++ API over it).
 *
 *   kestrel_session* s = kestrel_session_create("model.onnx", NULL);
 *   if (!s) { fprintf(stderr, "%s\n", kestrel_last_error()); ... }
 *   kestrel_tensor in = {KESTREL_FLOAT32, 4, shape, pixels};
 *   const char* names[] = {"images"};
 *   kestrel_outputs* out = kestrel_session_run(s, 1, names, &in);
 *   kestrel_tensor y; kestrel_outputs_get(out, 0, &y);   // y.data is valid until
 *   kestrel_outputs_free(out);                           // the outputs are freed
 *   kestrel_session_free(s);
 *
 * Every call that can fail returns NULL or a nonzero status and leaves the
 * reason (naming the input, node, op or shape) in kestrel_last_error() and its
 * kind in kestrel_last_error_code(), both kept per thread. A session may be
 * run from several threads at once.
 *
 * Compatibility: functions, enum values and struct fields are only ever
 * added; structs that may grow start with struct_size. */
#ifndef KESTREL_H
#define KESTREL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Element types, numbered as ONNX's TensorProto.DataType. */
enum {
  KESTREL_FLOAT32 = 1,
  KESTREL_UINT8 = 2,
  KESTREL_INT8 = 3,
  KESTREL_UINT16 = 4,
  KESTREL_INT16 = 5,
  KESTREL_INT32 = 6,
  KESTREL_INT64 = 7,
  KESTREL_BOOL = 9,
  KESTREL_FLOAT16 = 10,
  KESTREL_FLOAT64 = 11,
  KESTREL_UINT32 = 12,
  KESTREL_UINT64 = 13,
  KESTREL_BFLOAT16 = 16
};

/* A dense, row-major tensor. For inputs the caller owns shape and data and
 * keeps them unchanged until the run returns (Kestrel reads them in place, and
 * copies any output that would share an input's bytes); for outputs Kestrel
 * owns them. */
typedef struct kestrel_tensor {
  int32_t dtype;
  int32_t rank;
  const int64_t* shape;
  const void* data;
} kestrel_tensor;

/* The bytes t->data must hold for t's type and shape (kestrel_session_run
 * reads exactly that many from each input), or -1 when Kestrel does not take
 * the tensor: an unknown type, a rank above 64 or without a shape array, a
 * negative dim, an element count or byte size past int64 or above 2^48
 * bytes; the reason is in kestrel_last_error(). Check buffers against it. */
int64_t kestrel_tensor_nbytes(const kestrel_tensor* t);

typedef struct kestrel_session kestrel_session;
typedef struct kestrel_outputs kestrel_outputs;

/* What kind of failure the latest failing call was (kestrel_last_error_code). */
enum {
  KESTREL_OK = 0,
  KESTREL_FAIL = 1,             /* anything below: a kernel's or the device's failure */
  KESTREL_INVALID_ARGUMENT = 2, /* an unknown, missing or mistyped input, a bad option or pointer */
  KESTREL_NO_SUCH_FILE = 3,     /* a model or external-data file that does not exist */
  KESTREL_INVALID_MODEL = 4,    /* not a model Kestrel can read (protobuf, IR version, graph) */
  KESTREL_NOT_IMPLEMENTED = 5,  /* a valid model using an op, opset or type Kestrel does not run */
  KESTREL_CANCELLED = 6,        /* stopped by its caller: a cancel flag or a timeout */
  KESTREL_OUT_OF_MEMORY = 7     /* the host could not allocate */
};

/* How a session is made. Zero it, set struct_size = sizeof(kestrel_session_options),
 * then the fields you need; a zero field keeps its default. A program built
 * with an older header passes a smaller struct_size and gets the defaults of
 * the fields it does not know. */
typedef struct kestrel_session_options {
  size_t struct_size;
  const char* backend;         /* "auto" (NULL), "vulkan" or "cpu" */
  const char* precision;       /* Vulkan storage: "auto" (NULL), "fp32" or "fp16" */
  int32_t threads;             /* CPU threads; 0: every hardware thread; at most 1024 */
  /* Iterations one Loop or Scan node may run per run; 0: 1000000; -1: no cap. */
  int64_t max_loop_iterations;
  /* Vulkan memory (MiB) the session may hold; past it nodes run on the CPU. 0: no limit. */
  int64_t device_memory_mb;
  double device_wait_s; /* the longest wait (s) for one submit of GPU work; 0: 120 */
  /* The Vulkan device, by index ("1") or a case-insensitive part of its name
   * ("h200"); NULL or "": the best. The process opens one device, for its first
   * Vulkan session; later sessions share it. */
  const char* device;
  /* Tuning and diagnosis (each also an environment variable, README, which
   * counts where the field is left 0 or NULL). */
  int32_t families;        /* fuse the transformer encoders Kestrel recognizes: 0 yes, -1 no (op by op) */
  int32_t trace;           /* 1: each node's op, placement, time and shapes on stderr; 2: also output ranges */
  int64_t encoder_heads;   /* a vision encoder's head count where its graph does not show it; 0: unknown */
  int64_t attention_chunk; /* at most this many query rows per fused attention chunk; 0: automatic */
  const char* cpu_kernels; /* "fast" (NULL) or "reference" (the plain reference kernels alone, slower) */
  const char* gemm_tiles;  /* the GPU GEMM's output tile: "auto" (NULL), "tiny", "small", "wide" or "large" */
  int32_t replay;          /* 0: replay recorded GPU work at a known input signature; -1: record every run */
  int32_t exact_buffers;   /* 1: a buffer of exactly its size per tensor, for the validation layer */
  int32_t tensor_cores;    /* 0: float16 GEMMs on tensor cores where the device has them; -1: never */
  const char* attention;   /* fused attention: "auto" (NULL), "flash" (one pass, no scores in memory) or "chunked" */
  /* 1: a fused text encoder (ModernBERT) given a right-padding attention mask
   * computes its live tokens only; its outputs read zero at padded tokens,
   * where ONNX Runtime computes values. 0: every token, as the graph says. */
  int32_t padding_free;
} kestrel_session_options;

/* Loads a model file (options may be NULL: defaults). NULL on failure. */
kestrel_session* kestrel_session_create(const char* path, const kestrel_session_options* options);
/* Loads a model from its bytes (external data cannot be read: there is no
 * folder to read it from). NULL on failure. */
kestrel_session* kestrel_session_create_from_bytes(const void* data, size_t size,
                                                   const kestrel_session_options* options);

/* The older pair of option structs, kept for programs written against them. */
typedef struct kestrel_options {
  const char* backend;   /* "auto" (NULL), "vulkan" or "cpu" */
  const char* precision; /* Vulkan storage: "auto" (NULL), "fp32" or "fp16" */
  int32_t threads;       /* CPU threads; 0: every hardware thread; at most 1024 */
} kestrel_options;

/* The reason the latest failing call on this thread failed ("" if none). */
const char* kestrel_last_error(void);
/* Its kind: a KESTREL_* status (KESTREL_OK if none). */
int32_t kestrel_last_error_code(void);

/* The library's version, "MAJOR.MINOR.PATCH" (a static string). */
const char* kestrel_version(void);

/* Settings of the process rather than of one session (one tensor pool, one
 * CPU kernel dispatch, one way of handing out kernel outputs). Set them
 * before the first session: each session applies them as it is made. A zero
 * (or NULL) field keeps its environment variable's value, else the default. */
typedef struct kestrel_process_options {
  size_t struct_size;     /* sizeof(kestrel_process_options) */
  int64_t pool_mb;        /* the most idle tensor memory kept, MiB; 0: KESTREL_POOL_MB or 4096; -1: none */
  const char* cpu_isa;    /* cap the CPU kernels: "baseline", "avx2" or "avx512"; NULL: KESTREL_CPU_ISA or none */
  int32_t poison_outputs; /* 1: kernel outputs start as NaN bytes (finds kernels that read them); 0: KESTREL_POISON_OUTPUTS */
} kestrel_process_options;

/* Nonzero on a NULL or too short struct or a field out of range (the reason
 * is in kestrel_last_error()); the settings held before stay. */
int32_t kestrel_set_process_options(const kestrel_process_options* options);

/* Loads a model (options may be NULL: defaults). NULL on failure. */
kestrel_session* kestrel_session_load(const char* path, const kestrel_options* options);
/* Limits a session keeps. Zero it, set struct_size = sizeof(kestrel_limits),
 * then the fields you need; a zero field keeps its default. Fields are only
 * ever added at the end: a program built with an older header passes a
 * smaller struct_size and gets the defaults of the fields it does not know. */
typedef struct kestrel_limits {
  size_t struct_size;
  /* Iterations one Loop or Scan node may run per run; 0: 1000000; -1: no cap.
   * A run that would go past it fails naming the node. */
  int64_t max_loop_iterations;
  /* Vulkan memory (MiB) the session may hold: weights, tensors, staging. Past
   * it nodes run on the CPU (kestrel_session_backend reports the placement).
   * 0: KESTREL_VK_MEMORY_MB when set, else no limit. */
  int64_t device_memory_mb;
  /* The longest wait (s) for one submit of GPU work before a run fails; 0: 120. */
  double device_wait_s;
} kestrel_limits;

/* kestrel_session_load with limits (NULL: the defaults). NULL on failure. */
kestrel_session* kestrel_session_load_with_limits(const char* path, const kestrel_options* options,
                                                  const kestrel_limits* limits);
void kestrel_session_free(kestrel_session* session); /* after every run on it has returned */

/* The model's inputs and outputs, in the model's order; names live as long
 * as the session. -1 / NULL on a bad session or index. */
int32_t kestrel_session_input_count(const kestrel_session* session);
const char* kestrel_session_input_name(const kestrel_session* session, int32_t index);
int32_t kestrel_session_output_count(const kestrel_session* session);
const char* kestrel_session_output_name(const kestrel_session* session, int32_t index);
/* A model input's or output's declared element type and shape, as the model
 * gives them (ONNX Runtime's GetInputTypeInfo): dtype is a KESTREL_* type, 0
 * where the model declares none; rank is -1 where it declares no shape. dims[i]
 * is dim i's size, or -1 where the model leaves it open, and dim_names[i] then
 * its symbolic name ("batch"), "" for an unnamed one (dim_names[i] is "" too
 * for a fixed dim). Every pointer lives as long as the session. */
typedef struct kestrel_value_info {
  const char* name;
  int32_t dtype;
  int32_t rank;
  const int64_t* dims;
  const char* const* dim_names;
} kestrel_value_info;

/* Fills *info for input / output `index`. Nonzero on a bad session, index or
 * NULL info (the reason is in kestrel_last_error()). */
int32_t kestrel_session_input_info(const kestrel_session* session, int32_t index, kestrel_value_info* info);
int32_t kestrel_session_output_info(const kestrel_session* session, int32_t index, kestrel_value_info* info);

/* "vulkan on <device>: ..." or "cpu": where the session runs. */
const char* kestrel_session_backend(const kestrel_session* session);

/* Runs with every model input given by name. NULL on failure. */
kestrel_outputs* kestrel_session_run(kestrel_session* session, size_t input_count, const char* const* names,
                                     const kestrel_tensor* inputs);

/* A flag to cancel runs from another thread: pass it in kestrel_run_options,
 * then kestrel_cancel_request() makes every run using it stop before its next
 * node or loop iteration and return NULL ("run cancelled ..." in
 * kestrel_last_error()). A flag stays set; make a new one for new runs. Free
 * it only after the runs using it have returned. */
typedef struct kestrel_cancel kestrel_cancel;
kestrel_cancel* kestrel_cancel_new(void);
void kestrel_cancel_request(kestrel_cancel* cancel); /* safe from any thread */
void kestrel_cancel_free(kestrel_cancel* cancel);

typedef struct kestrel_run_options {
  kestrel_cancel* cancel; /* NULL: the run cannot be cancelled */
  double timeout_ms;      /* the run fails once this has passed; 0: no timeout */
} kestrel_run_options;

/* kestrel_session_run that can be cancelled or time out (options may be NULL). */
kestrel_outputs* kestrel_session_run_with(kestrel_session* session, size_t input_count, const char* const* names,
                                          const kestrel_tensor* inputs, const kestrel_run_options* options);

int32_t kestrel_outputs_count(const kestrel_outputs* outputs);
/* Fills *out with output `index`, whose shape and data stay valid until
 * kestrel_outputs_free. Nonzero on a bad index. */
int32_t kestrel_outputs_get(const kestrel_outputs* outputs, int32_t index, kestrel_tensor* out);
/* Fills views[0 .. min(count, capacity)) with every output at once (one
 * call from an FFI instead of one per output); returns the output count, or
 * -1 on a NULL argument. */
int32_t kestrel_outputs_get_all(const kestrel_outputs* outputs, kestrel_tensor* views, int32_t capacity);
void kestrel_outputs_free(kestrel_outputs* outputs);

/* Photos to boxes and to text: the pipelines of `kestrel detect` and `kestrel
 * ocr`. Each result is one JSON object per photo, the CLI's --json line
 * (README: detect, ocr), as a string the caller frees with
 * kestrel_string_free; NULL on failure. A photo is a file (JPEG, PNG, BMP,
 * ...) or 8-bit RGB pixels, row after row, `stride` bytes apart (0: width * 3);
 * `name` (may be NULL) is what the JSON's "image" says for pixels. */
void kestrel_string_free(char* s);

typedef struct kestrel_detector kestrel_detector;
/* arch: "auto" (NULL), "yolov8", "yolox", "yolov5", "scrfd", "yunet",
 * "ultraface" or "blazeface"; width and height: the input size of a model
 * that leaves it open (0, 0: 640 x 640). NULL on failure. */
kestrel_detector* kestrel_detector_create(const char* model_path, const char* arch, int32_t width, int32_t height,
                                          const kestrel_session_options* options);
/* conf: the lowest score kept; iou: NMS's overlap bound; both in [0, 1]. */
char* kestrel_detector_detect_file(kestrel_detector* detector, const char* image_path, float conf, float iou);
char* kestrel_detector_detect_rgb8(kestrel_detector* detector, const uint8_t* pixels, int32_t width, int32_t height,
                                   int64_t stride, const char* name, float conf, float iou);
void kestrel_detector_free(kestrel_detector* detector);

typedef struct kestrel_text_reader kestrel_text_reader;
/* PP-OCR's detector, recognizer and (may be NULL) direction classifier;
 * dictionary_path NULL: ppocr_keys_v1.txt beside the recognizer. */
kestrel_text_reader* kestrel_text_reader_create(const char* detector_path, const char* recognizer_path,
                                                const char* classifier_path, const char* dictionary_path,
                                                const kestrel_session_options* options);
/* min_score: lines read with a lower mean probability are dropped (PP-OCR: 0.5). */
char* kestrel_text_reader_read_file(kestrel_text_reader* reader, const char* image_path, float min_score);
char* kestrel_text_reader_read_rgb8(kestrel_text_reader* reader, const uint8_t* pixels, int32_t width, int32_t height,
                                    int64_t stride, const char* name, float min_score);
void kestrel_text_reader_free(kestrel_text_reader* reader);

#ifdef __cplusplus
}
#endif

#endif /* KESTREL_H */
