#!/usr/bin/env bash
# Builds the ARM library tree the cross files in this folder point at: Debian's arm64/armhf packages of the
# libraries onnxstream links, unpacked (not installed) into /opt/onnxstream-cross/<triplet>.
#
# Why not `apt-get install libxnnpack-dev:arm64`: libxnnpack0, libxnnpack-dev, libpthreadpool0 and
# libpthreadpool-dev are not Multi-Arch: same, so the arm64 builds replace the amd64 ones (and everything
# built on them, python3-torch included); the Multi-Arch packages refuse to co-install whenever the amd64
# machine has a security update that the arm64/armhf index does not list yet. Unpacking sidesteps both.
# The same tree is the qemu -L prefix the cross files' exe_wrapper uses, so it carries the C library too.
#
# usage: cross/sysroot.sh arm64|armhf [dest]  (needs `dpkg --add-architecture <arch>` and `apt-get update`)
set -euo pipefail
arch=${1:?usage: $0 arm64|armhf [dest]}
case "$arch" in
  arm64) triplet=aarch64-linux-gnu ;;
  armhf) triplet=arm-linux-gnueabihf ;;
  *) echo "$0: unknown architecture $arch (arm64 or armhf)" >&2; exit 2 ;;
esac
dest=${2:-/opt/onnxstream-cross/$triplet}

# Library package names of the release this machine runs (Debian 13 renamed several for 64-bit time_t and
# versions XNNPACK's runtime package).
. /etc/os-release
case "${VERSION_CODENAME:-}" in
  trixie)
    packages=(
      libc6 libgcc-s1 libstdc++6
      zlib1g zlib1g-dev libpng16-16t64 libpng-dev
      libcpuinfo0 libcpuinfo-dev libpthreadpool0 libpthreadpool-dev libxnnpack0.20241108 libxnnpack-dev
      libxxhash0 libxxhash-dev
      libprotobuf32t64 libprotobuf-lite32t64 libprotobuf-dev libonnx1t64 libonnx-dev
      libgtest-dev
    ) ;;
  *)
    packages=(
      libc6 libgcc-s1 libstdc++6
      zlib1g zlib1g-dev libpng16-16 libpng-dev
      libcpuinfo0 libcpuinfo-dev libpthreadpool0 libpthreadpool-dev libxnnpack0 libxnnpack-dev
      libxxhash0 libxxhash-dev
      libprotobuf32 libprotobuf-lite32 libprotobuf-dev libonnx1 libonnxifi libonnx-dev
      libgtest-dev
    ) ;;
esac

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# apt's download method drops to the _apt user, which must be able to write the folder.
chmod 777 "$work"
(cd "$work" && apt-get download -q "${packages[@]/%/:$arch}" >/dev/null)
# Headers-only packages are built for every architecture at once (Architecture: all): no :$arch to ask for.
(cd "$work" && apt-get download -q nlohmann-json3-dev >/dev/null)

rm -rf "$dest.new"
mkdir -p "$dest.new"
for deb in "$work"/*.deb; do dpkg-deb -x "$deb" "$dest.new"; done
# Debian 13's packages are /usr-merged: the dynamic loader is in usr/lib, and the programs ask for /lib/....
for d in lib lib64; do
  if [ ! -e "$dest.new/$d" ] && [ -d "$dest.new/usr/$d" ]; then ln -s "usr/$d" "$dest.new/$d"; fi
done
# The .pc files and the libc linker scripts name /usr/...; the cross files set pkg-config's sysroot, and the
# compiler links its own cross C library, so only the shared objects and headers of this tree are used.
rm -rf "$dest"
mv "$dest.new" "$dest"
echo "$dest: $(ls "$work"/*.deb | wc -l) packages for $arch"
