"""The manylinux wheel (scripts/wheel.sh): built from this tree, installed into
an empty folder and run there, with every library it needs but glibc,
libstdc++ and libgcc resolved from inside the wheel, not from this machine."""
import os
import subprocess
import sys
import zipfile

from conftest import ROOT, model_path

# What a manylinux wheel may take from the system (the libraries the policy
# lists that Kestrel links: zlib comes in through protobuf), and
# what it must carry itself.
SYSTEM = ("linux-vdso", "libc.so", "libm.so", "libpthread", "libdl.so", "librt.so", "ld-linux", "libstdc++",
          "libgcc_s", "libz.so")
CARRIED = ("libdnnl", "libonnx", "libonnx_proto", "libprotobuf", "libvulkan")


def test_the_wheel_runs_a_real_model_on_its_own_libraries(tmp_path):
    dist, target = tmp_path / "dist", tmp_path / "site"
    # build/: scripts/build.sh's folder, which ctest runs from; only the module relinks.
    subprocess.run(["bash", os.path.join(ROOT, "scripts", "wheel.sh"), "--out", str(dist), "--build-dir",
                    os.path.join(ROOT, "build")], check=True)
    wheels = list(dist.glob("kestrel-*-manylinux_2_34_x86_64.whl"))
    assert len(wheels) == 1, os.listdir(dist)
    names = zipfile.ZipFile(wheels[0]).namelist()
    for lib in CARRIED:
        assert any(n.startswith("kestrel.libs/" + lib + "-") for n in names), f"{lib} is not in the wheel: {names}"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-deps",
                    "--target", str(target), str(wheels[0])], check=True)

    # Every library the module and the engine load, as the loader resolves them.
    pkg = target / "kestrel"
    for so in [p for p in pkg.iterdir() if ".so" in p.name]:
        ldd = subprocess.run(["ldd", str(so)], capture_output=True, text=True, check=True).stdout
        for line in ldd.splitlines():
            name = line.split()[0]
            if "=>" not in line or name.startswith(SYSTEM):
                continue
            path = line.split("=>")[1].split()[0]
            assert path.startswith(str(target)), f"{so.name} loads {name} from {path}, outside the wheel"

    # A real model through the installed copy, held to ONNX Runtime.
    script = f"""
import numpy as np, onnxruntime as ort, kestrel
assert kestrel.__file__.startswith({str(target)!r}), kestrel.__file__
path = {model_path("blazeface_front_128.onnx")!r}
so = ort.SessionOptions()
so.log_severity_level = 3
o = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
name, shape = o.get_inputs()[0].name, o.get_inputs()[0].shape
x = np.random.default_rng(0).random(shape, dtype=np.float32)
ref = o.run(None, {{name: x}})
got = kestrel.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {{name: x}})
for r, g in zip(ref, got):
    scale = float(np.abs(r).max()) or 1.0
    assert float(np.abs(r - g).max()) <= 1e-4 * scale, (float(np.abs(r - g).max()), scale)
print("ok", len(got))
"""
    env = dict(os.environ, PYTHONPATH=str(target))
    run = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, cwd=str(tmp_path))
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "ok 4", run.stdout  # its four outputs: boxes and scores at two strides
