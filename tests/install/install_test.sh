#!/bin/sh
# `meson install` into a temporary folder, then what a user of the installed library does: pkg-config finds
# it, a C program compiles and links against the installed header and library and runs a model, the
# installed tools run, and the man pages are there when help2man made them.
#   install_test.sh BUILD_DIR SHARED_DIR MAN_PAGES(yes|no) CC
set -eu
build=$1 shared=$2 man=$3 cc=$4 # cc: the compiler command, with its wrapper (ccache) if any
dest=$(mktemp -d)
trap 'rm -rf "$dest"' EXIT

meson install -C "$build" --no-rebuild --quiet --destdir "$dest"
pc=$(find "$dest" -name onnxstream.pc | head -n 1)
[ -n "$pc" ] || { echo "install_test: no onnxstream.pc installed" >&2; exit 1; }
# The .pc file names the final prefix; pkg-config's sysroot puts the staging folder in front of it.
export PKG_CONFIG_PATH=$(dirname "$pc") PKG_CONFIG_SYSROOT_DIR=$dest
# pkgconf puts the sysroot in front of variables too; some pkg-config versions do not.
in_dest() { case $1 in "$dest"/*) echo "$1" ;; *) echo "$dest$1" ;; esac; }
libdir=$(in_dest "$(pkg-config --variable=libdir onnxstream)")
prefix=$(in_dest "$(pkg-config --variable=prefix onnxstream)")
echo "install_test: onnxstream $(pkg-config --modversion onnxstream) in $prefix"

cat > "$dest/user.c" <<'C'
#include <onnxstream.h>
#include <stdio.h>
#include <string.h>
/* Loads the model folder given as argument through the installed library. */
int main(int argc, char **argv) {
    onnxstream_model_t *model = NULL;
    if (onnxstream_model_create(NULL, &model) != ONNXSTREAM_OK) return 1;
    onnxstream_status_t st = onnxstream_model_load(model, argv[1]);
    printf("version %s, load status %d %s\n", onnxstream_version_string(), (int)st,
           st == ONNXSTREAM_OK ? "" : onnxstream_model_last_error(model));
    int ok = st == ONNXSTREAM_OK && argc == 2;
    onnxstream_model_destroy(model);
    return ok ? 0 : 1;
}
C
# shellcheck disable=SC2046
$cc -std=c99 -Wall -Werror -o "$dest/user" "$dest/user.c" $(pkg-config --cflags --libs onnxstream)
LD_LIBRARY_PATH=$libdir "$dest/user" "$shared/models/yolov8n"
LD_LIBRARY_PATH=$libdir "$prefix/bin/onnxstream-run" --version

if [ "$man" = yes ]; then
    for page in onnxstream-run onnxstream-convert onnxstream-sd-import sd; do
        [ -x "$prefix/bin/$page" ] || continue
        f=$prefix/share/man/man1/$page.1
        [ -s "$f" ] || { echo "install_test: $f missing" >&2; exit 1; }
        grep -q '^\.TH' "$f" || { echo "install_test: $f is not a man page" >&2; exit 1; }
    done
    echo "install_test: man pages installed"
fi
echo "install_test: passed"
