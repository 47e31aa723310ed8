#!/usr/bin/python3
"""Make the graph data onnxstream-sd-import needs: model.txt graphs of the SD 1.5 models with, for every weight
file they use, the checkpoint tensor it comes from.

The models of tests/sd/gen_sd.py (the SD 1.5 architecture in PyTorch, with diffusers' module structure) get
a distinct seeded random value in every parameter, are exported to ONNX and converted by onnxstream-convert
exactly as examples/sd/make_models.py --resizable converts them (text encoder float32; UNet --fp16 and VAE
decoder float32 for any image size; the VAE decoder also at half and quarter the latent size for tiles). Then every weight file the converter wrote is found again among
the parameters by value: the parameter, and the transform that turns it into the file (`as_is`, `transpose`
for a Linear served as a MatMul weight, `ohwi` for the channels-last twin of a Conv kernel) and the file's
dtype. A file that is no parameter is a constant of the graph (a causal mask, position ids, timestep
frequencies) and is kept as hex. Each model folder of OUT gets model.txt (and any other text file the
converter wrote) and weights.tsv:

    <file>\\t<component>:<diffusers key>\\t<transform>\\t<dtype>\\t<shape>
    <file>\\t=\\t<hex>

The component is text_encoder, unet or vae, the key the parameter's name in the diffusers layout of that
component (text_model.encoder.layers.0.mlp.fc1.weight, down_blocks.0.resnets.0.conv1.weight,
decoder.mid_block.attentions.0.to_q.weight, ...).

--size full writes the data shipped in examples/sd/graphs/sd15 (the export and conversion of the full-size
models take about 40 minutes and 15 GB of temporary disk); --size small the graphs of the small test models
(tests/sd/sd_import_test.py, seconds).

usage: examples/sd/graphs/make_graphs.py --build BUILD | --convert PROGRAM --out DIR [--size small|full] [--work DIR] [--seed N]
"""
import argparse
import os
import re
import shutil
import sys
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(ROOT, "tests", "sd"))
sys.path.insert(0, os.path.join(ROOT, "examples", "sd"))
import gen_sd  # noqa: E402
from make_models import FAMILIES, make_models  # noqa: E402

# gen_sd's model -> the component of the checkpoint its weights come from.
COMPONENTS = {"text_encoder": "text_encoder", "unet": "unet", "vae_decoder": "vae", "vae_decoder_tile": "vae",
              "vae_decoder_tile_small": "vae"}
# Constants bigger than this are surely weights that failed to match (a transform this script does not know).
MAX_CONSTANT_BYTES = 1 << 16
FINGERPRINT = 16  # leading elements compared before a whole tensor is


def log(msg):
    print(f"make_graphs.py: {msg}", file=sys.stderr, flush=True)


def diffusers_key(component, name):
    """The diffusers name of a gen_sd parameter. gen_sd's UNet already uses diffusers' names; its text encoder
    and VAE decoder are flatter than transformers' CLIPTextModel and diffusers' AutoencoderKL."""
    if component == "text_encoder":
        for old, new in (("token_embedding.", "embeddings.token_embedding."),
                         ("position_embedding.", "embeddings.position_embedding."),
                         ("final_layer_norm.", "final_layer_norm.")):
            if name.startswith(old):
                return "text_model." + new + name[len(old):]
        name = re.sub(r"^layers\.(\d+)\.fc([12])\.", r"layers.\1.mlp.fc\2.", name)
        return "text_model.encoder." + name
    if component == "vae":
        if name.startswith("post_quant_conv."):
            return name
        name = re.sub(r"^mid_resnet_(\d)\.", r"mid_block.resnets.\1.", name)
        name = name.replace("mid_attention.", "mid_block.attentions.0.")
        return "decoder." + name
    return name


def unique_parameters(module, seed):
    """Gives every parameter distinct seeded values (gen_sd's initialisation leaves norms at ones and biases
    at zeros, which could not be told apart), small enough for float16."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape, generator=gen) * 0.05)


REF = re.compile(r"([A-Za-z0-9_]+\.bin)\((float32|float16|int64|int32|int8|uint8|bool)(\[[^\]]*\])?:([0-9,]*)\)")


def weight_refs(model_txt):
    """{file: (dtype, shape)} of every weight model.txt references."""
    refs = {}
    with open(model_txt) as f:
        for m in REF.finditer(f.read()):
            refs[m.group(1)] = (m.group(2), tuple(int(d) for d in m.group(4).split(",") if d))
    return refs


def transformed(value, transform):
    if transform == "transpose":
        return value.T
    if transform == "ohwi":
        return value.transpose(0, 2, 3, 1)
    return value


def candidates(params):
    """{(dtype, fingerprint bytes): [(key, transform)]} over every parameter, transform and float dtype."""
    index = {}
    for key, value in params.items():
        transforms = ["as_is"] + (["transpose"] if value.ndim == 2 else []) + (["ohwi"] if value.ndim == 4 else [])
        for transform in transforms:
            head = np.ascontiguousarray(transformed(value, transform)).reshape(-1)[:FINGERPRINT]
            for dtype in ("float32", "float16"):
                index.setdefault((dtype, head.astype(dtype).tobytes()), []).append((key, transform))
    return index


def match_folder(folder, params, index):
    """weights.tsv lines for the converted model folder; every parameter file matched and checked in full."""
    refs = weight_refs(os.path.join(folder, "model.txt"))
    for name, (dtype, shape) in list(refs.items()):  # the channels-last twins the converter also writes
        twin = name[:-len("_nchw.bin")] + "_nhwc.bin" if name.endswith("_nchw.bin") else None
        if twin and os.path.exists(os.path.join(folder, twin)) and len(shape) == 4:
            refs[twin] = (dtype, (shape[0], shape[2], shape[3], shape[1]))
    files = sorted(f for f in os.listdir(folder) if f.endswith(".bin"))
    unknown = [f for f in files if f not in refs]
    if unknown:
        raise SystemExit(f"make_graphs.py: {folder}: files model.txt does not reference: {unknown[:5]}")
    lines, used, constants = [], set(), 0
    for name in files:
        dtype, shape = refs[name]
        data = np.fromfile(os.path.join(folder, name), dtype=np.dtype(dtype if dtype != "bool" else "bool"))
        hits = []
        if dtype in ("float32", "float16"):
            hits = index.get((dtype, data[:FINGERPRINT].tobytes()), [])
        found = None
        for key, transform in hits:
            value = transformed(params[key], transform)
            if value.size == data.size and np.array_equal(np.ascontiguousarray(value).reshape(-1).astype(dtype), data):
                found = (key, transform)
                break
        if found is None:
            raw = open(os.path.join(folder, name), "rb").read()
            if len(raw) > MAX_CONSTANT_BYTES:
                raise SystemExit(f"make_graphs.py: {folder}/{name} ({dtype} {shape}) is no parameter of the model "
                                 f"under any known transform and too big for a constant")
            lines.append(f"{name}\t=\t{raw.hex()}")
            constants += 1
            continue
        used.add(found[0])
        lines.append(f"{name}\t{found[0]}\t{found[1]}\t{dtype}\t{','.join(map(str, shape))}")
    return lines, used, constants


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", help="build folder holding src/tools/onnxstream-convert")
    ap.add_argument("--convert", help="the onnxstream-convert program (instead of --build)")
    ap.add_argument("--out", required=True, help="output folder (replaced)")
    ap.add_argument("--size", choices=["small", "full"], default="small")
    ap.add_argument("--work", help="folder for the ONNX exports and conversions (default OUT.work, removed after)")
    ap.add_argument("--seed", type=int, default=20240)
    args = ap.parse_args()
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    out = os.path.abspath(args.out)
    work = os.path.abspath(args.work or out + ".work")
    shutil.rmtree(work, ignore_errors=True)
    onnx_dir, converted = os.path.join(work, "onnx"), os.path.join(work, "converted")
    t0 = time.time()

    params, exported = {}, {}
    for name, module, inputs, output in gen_sd.make_models(args.size, args.seed):
        if name not in COMPONENTS:
            continue
        component = COMPONENTS[name]
        if id(module) not in exported:  # the tile decoders share the decoder's module
            unique_parameters(module, args.seed + len(exported))
            exported[id(module)] = component
            for pname, p in module.named_parameters():
                params[f"{component}:{diffusers_key(component, pname)}"] = p.detach().numpy().copy()
        log(f"exporting {name} ({time.time() - t0:.0f} s)")
        gen_sd.export(name, module, inputs, output, os.path.join(onnx_dir, "sd", name), gen_sd.RESIZABLE_AXES.get(name))
    log(f"converting ({time.time() - t0:.0f} s)")
    if not args.build and not args.convert:
        ap.error("--build or --convert is required")
    make_models(args.build, converted, args.size, onnx_dir, work=os.path.join(work, "unused"), convert=args.convert,
                resizable=True)

    index = candidates(params)
    tmp = out + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    used_all = set()
    for model, (folder, flags) in FAMILIES["sd15"][1].items():
        src, dst = os.path.join(converted, folder), os.path.join(tmp, folder)
        lines, used, constants = match_folder(src, params, index)
        component = COMPONENTS[model]
        missing = sorted(k for k in params if k.startswith(component + ":") and k not in used)
        if missing:  # every parameter of the model must feed the graph, else a mapping went wrong
            raise SystemExit(f"make_graphs.py: {folder}: parameters no weight file came from: {missing[:5]}")
        used_all |= used
        os.makedirs(dst)
        for f in os.listdir(src):
            if not f.endswith(".bin"):
                shutil.copy(os.path.join(src, f), dst)
        with open(os.path.join(dst, "weights.tsv"), "w") as f:
            f.write(f"# {folder}: SD 1.5 ({args.size}), made by examples/sd/graphs/make_graphs.py; converted with "
                    f"onnxstream-convert {' '.join(flags)}\n".replace(" \n", "\n"))
            f.write("# file\tcomponent:key\ttransform\tdtype\tshape   (or: file\t=\thex bytes of a constant)\n")
            f.write("\n".join(lines) + "\n")
        log(f"{folder}: {len(lines) - constants} weights from {len(used)} parameters, {constants} constants")
    shutil.rmtree(out, ignore_errors=True)
    os.rename(tmp, out)
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)
    log(f"graphs in {out} ({time.time() - t0:.0f} s)")


if __name__ == "__main__":
    main()
