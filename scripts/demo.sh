#!/bin/sh
# From a fresh Debian 12 or 13 machine to a picture: installs what the library, the tools and the Stable
# Diffusion example need (apt only), builds into build/, makes small SD 1.5-architecture models with random
# weights (PyTorch from Debian; no downloads) and runs `sd` to write demo.png. Each step is skipped when its
# result is already there, so running it again only re-runs `sd`.
#
#   scripts/demo.sh [--prompt TEXT] [--steps N] [--seed N] [--output FILE]
#
# With OnnxStream's published SD 1.5 weights folder, run build/examples/sd/sd --models-path FOLDER instead
# (docs/stable-diffusion.md).
set -eu
cd "$(dirname "$0")/.."
. scripts/common.sh

prompt="an astronaut riding a horse"
steps=10
seed=42
output=demo.png
while [ $# -gt 0 ]; do
    case $1 in
        --prompt) prompt=$2; shift 2 ;;
        --steps) steps=$2; shift 2 ;;
        --seed) seed=$2; shift 2 ;;
        --output) output=$2; shift 2 ;;
        -h|--help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "demo.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
    esac
done
start=$(date +%s)

step "installing the build dependencies and PyTorch (Debian packages)"
# shellcheck disable=SC2086
apt_install $BUILD_PACKAGES python3 python3-numpy python3-onnx python3-torch
step_done

step "building into build/"
[ -f build/build.ninja ] || meson setup build --buildtype=release >/dev/null
ninja -C build
step_done

models=build/demo-models
step "making small SD 1.5-architecture models with random weights in $models"
/usr/bin/python3 examples/sd/make_models.py --build build --out "$models"
step_done

# CLIP's BPE vocabulary (OpenAI's bpe_simple_vocab_16e6.txt.gz, or a tokenizer/ folder with vocab.txt +
# merges.txt from an SD 1.5 model): ONNXSTREAM_TOKENIZER, else the copy beside the checkout.
tokenizer=${ONNXSTREAM_TOKENIZER:-../shared/data/clip/bpe_simple_vocab_16e6.txt.gz}
[ -e "$tokenizer" ] || { echo "demo.sh: no CLIP vocabulary at $tokenizer: set ONNXSTREAM_TOKENIZER" >&2; exit 1; }
step "sd: \"$prompt\", $steps steps, seed $seed"
build/examples/sd/sd --models-path "$models" --tokenizer "$tokenizer" \
    --prompt "$prompt" --steps "$steps" --seed "$seed" --output "$output"
step_done
echo "demo.sh: wrote $output in $(( $(date +%s) - start )) s (random weights: the picture is coloured noise)"
