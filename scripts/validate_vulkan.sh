#!/usr/bin/env bash
# Runs the Vulkan tests under the Khronos validation layer (Debian 12:
# vulkan-validationlayers): synchronization validation (missing or wrong
# barriers, within and across submits) and the layer's core checks on every
# step, and GPU-assisted validation (shader accesses outside their buffers)
# on the `shaders` step: the backend parity harness (kestrel_backend_ops),
# the transformer family fixtures on Vulkan, and the smaller real models on
# Vulkan in float32 and float16 storage. Any message of warning or error
# severity fails the step, as does a test failure. The layer writes to the
# test's own stdout, so each message sits under the test that caused it in
# build/validate_vulkan/<step>.log.
#
# Why GPU-assisted validation runs on one step: it instruments every shader,
# and lavapipe compiles each instrumented pipeline for many times longer
# (LLVM's coroutine lowering of the workgroup barriers over the added bounds
# checks: 82% of the time in libLLVM). Measured on two cores with empty
# caches, the int8 MatMulInteger cases alone took 112 s instead of 1, and the
# whole script about 55 minutes with every step instrumented. Synchronization
# validation costs little (the same cases: 1 s). So the `shaders` step runs
# every float32 parity case instrumented, which covers each kernel's index
# arithmetic (the float16 build of a shader is the same source and indices),
# and the other steps run the rest uninstrumented.
#
# Covered real models: ppocrv4_det, ppocrv4_rec, ppocr_mobile_v2_cls,
# blazeface_front_128, blazeface_back_256, mlsd_tiny_320, silero_vad. Not
# covered: isnet_medium, isnet_small, mlsd_large_320 (lavapipe minutes each).
#
# Those steps give every tensor a buffer of its own (below), which turns the
# static memory plan off; the `arenas` step runs planned runs as users get
# them, tensors as ranges of one arena, so that synchronization validation
# sees the plan reuse memory: the Vulkan arena tests (a planned run of
# BlazeFace and M-LSD tiny among them), the replay tests, and the family
# fixtures, whose second run is planned, third kept and fourth replayed
# (backends/vulkan/replay.h: the same command buffers submitted again).
#
# Usage: scripts/validate_vulkan.sh [step...]   steps: shaders (or its halves shaders_a and
# shaders_b) ops families models arenas (default: all, in two lanes side by side)
# Needs a build (scripts/build.sh) and the models (scripts/fetch_models.sh).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

layer_json=/usr/share/vulkan/explicit_layer.d/VkLayer_khronos_validation.json
if [ ! -f "$layer_json" ]; then
  echo "validate_vulkan: the Khronos validation layer is missing ($layer_json); run scripts/setup.sh" >&2
  exit 1
fi
for bin in build/tests/kestrel_backend_ops build/tests/kestrel_tests; do
  [ -x "$bin" ] || { echo "validate_vulkan: $bin is missing; run scripts/build.sh" >&2; exit 1; }
done

out="$top/build/validate_vulkan"
mkdir -p "$out"
# The layer's settings (1.3.239 reads them from VK_LAYER_SETTINGS_PATH): one
# folder for synchronization validation, one adding GPU-assisted validation.
# Information messages are kept so the log shows the layer was active with
# these features; only warnings and errors fail a step.
# (Written aside and renamed: the two lanes of a full run each write them.)
write_settings() {  # FOLDER ENABLES: the layer's settings file under $out/FOLDER
  mkdir -p "$out/$1"
  cat > "$out/$1/vk_layer_settings.txt.$$" <<EOF
khronos_validation.debug_action = VK_DBG_LAYER_ACTION_LOG_MSG
khronos_validation.log_filename = stdout
khronos_validation.report_flags = error,warn,perf,info
khronos_validation.enables = $2
khronos_validation.gpuav_buffer_oob = true
EOF
  mv "$out/$1/vk_layer_settings.txt.$$" "$out/$1/vk_layer_settings.txt"
}
sync_enables=VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT,VALIDATION_CHECK_ENABLE_SYNCHRONIZATION_VALIDATION_QUEUE_SUBMIT
write_settings sync "$sync_enables"
write_settings gpu_assisted "VK_VALIDATION_FEATURE_ENABLE_GPU_ASSISTED_EXT,$sync_enables"
export VK_INSTANCE_LAYERS=VK_LAYER_KHRONOS_validation
export VK_LAYER_SETTINGS_PATH="$out/sync"
# GPU-assisted validation bounds an access by the buffer bound, and Kestrel's
# tensors are ranges of 64 MiB blocks: in this mode every tensor also gets a
# buffer of exactly its bytes, so a dispatch that strays past its tensor is
# reported.
export KESTREL_VK_EXACT_BUFFERS=1

# Float32 storage for each model, float16 for PP-OCRv4 rec alone: a float16
# session's first run calibrates (a float32 run, then mixed ones) and runs the
# same kernels in their float16 build, so the other models' float16 sessions
# (~110 s under the layer) would repeat what rec and the fp16 parity cases
# (ops step) validate; the conversions between precisions are validated by
# the MixedPrecision tests in the families step.
models="ppocrv4_det ppocrv4_rec ppocr_mobile_v2_cls blazeface_front_128 blazeface_back_256 mlsd_tiny_320 silero_vad"
model_filter=""
for m in $models; do model_filter+="Real/RealModelTest.AgreesWithOnnxRuntime/${m}_vulkan_fp32:"; done
model_filter+="Real/RealModelTest.AgreesWithOnnxRuntime/ppocrv4_rec_vulkan_fp16:"

failed=()
run_step() {
  local name=$1; shift
  local log="$out/$name.log"
  echo "validate_vulkan: $name: $*" >&2
  local start=$SECONDS rc=0
  "$@" > "$log" 2>&1 || rc=$?
  # Each message the layer reports starts "<id>(<SEVERITY> / <TYPE>): msgNum: ".
  local active bad
  active=$(grep -c "Khronos Validation Layer Active" "$log" || true)
  bad=$(grep -E '\): msgNum: ' "$log" | grep -vc 'Validation Information: ' || true)
  echo "validate_vulkan: $name: exit $rc, $bad validation message(s), $((SECONDS - start)) s; log $log" >&2
  if [ "$active" = 0 ]; then
    echo "validate_vulkan: $name: the validation layer did not load" >&2
    failed+=("$name")
  elif [ "$rc" != 0 ] || [ "$bad" != 0 ]; then
    grep -E '\): msgNum: ' "$log" | grep -v 'Validation Information: ' | sort | uniq -c | sort -rn | head -20 >&2 || true
    grep -E '^\[  FAILED  \]' "$log" >&2 || true
    failed+=("$name")
  fi
}

steps=("$@")
if [ ${#steps[@]} -eq 0 ]; then
  # All steps, in two lanes of about equal time on two cores, each with half
  # of the instrumented cases. A step keeps about one core busy (the layer,
  # lavapipe's compiles and its small dispatches are mostly single-threaded),
  # so two lanes take the time of the longer one.
  bash "$0" shaders_a ops families &
  first_lane=$!
  rc=0
  bash "$0" shaders_b models arenas || rc=$?
  wait "$first_lane" || rc=$?
  [ "$rc" = 0 ] && echo "validate_vulkan: every step ran clean under the validation layer" >&2
  exit "$rc"
fi
for step in "${steps[@]}"; do
  case "$step" in
    # Every float32 parity case with instrumented shaders (shaders_a and
    # shaders_b: the even and the odd cases).
    shaders|shaders_a|shaders_b)
      shard=""
      [ "$step" = shaders_a ] && shard=0/2
      [ "$step" = shaders_b ] && shard=1/2
      KESTREL_OPS_SHARD=$shard VK_LAYER_SETTINGS_PATH="$out/gpu_assisted" run_step "$step" \
        build/tests/kestrel_backend_ops --gtest_filter='BackendOps.VulkanFp32MatchesCpu' ;;
    # The MatMul/Gemm cases forced onto each GEMM tile run in ctest, not here:
    # the small tile is what lavapipe takes by itself (validated in the
    # precision runs), and the tiles share their barriers and descriptor
    # sets; together they are about 160 s of lavapipe.
    ops) run_step ops build/tests/kestrel_backend_ops --gtest_filter='-*TinyGemmTilesMatchCpu:*SmallGemmTilesMatchCpu:*WideGemmTilesMatchCpu:*LargeGemmTilesMatchCpu' ;;
    # The fused encoders' Vulkan sessions, in either storage, are validated
    # once, in the arenas step, where their later runs are planned and
    # replayed. Flash attention is validated there too, by the test that runs
    # each attention kernel on three fixtures (the one that holds it to ONNX
    # Runtime on five fixtures in both storages runs in ctest alone).
    families) run_step families build/tests/kestrel_tests \
                --gtest_filter='Families.*:SamFamily.*:TorchStack.*:MixedPrecision.*:-Families.FusedEncodersMatchOnnxRuntimeInFloat16Storage:Families.FusedEncodersMatchOnnxRuntimeInVulkanSessions:Families.FlashAttentionMatchesOnnxRuntimeInVulkanSessions:Families.TheAttentionKernelIsTheSessionsChoice' ;;
    models) run_step models build/tests/kestrel_tests --gtest_filter="${model_filter%:}" ;;
    arenas) KESTREL_VK_EXACT_BUFFERS=0 run_step arenas build/tests/kestrel_tests \
              --gtest_filter='VulkanArena.*:VulkanReplay.*:Families.FusedEncodersMatchOnnxRuntimeInVulkanSessions:Families.FusedEncodersMatchOnnxRuntimeInFloat16Storage:Families.TheAttentionKernelIsTheSessionsChoice:Families.AModernBertMaskThatIsNotRightPaddingIsRefused' ;;
    *) echo "validate_vulkan: unknown step '$step' (shaders, shaders_a, shaders_b, ops, families, models, arenas)" >&2; exit 2 ;;
  esac
done

if [ ${#failed[@]} -gt 0 ]; then
  echo "validate_vulkan: FAILED: ${failed[*]}" >&2
  exit 1
fi
echo "validate_vulkan: every step ran clean under the validation layer" >&2
