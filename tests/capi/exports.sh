#!/bin/sh
# libonnxstream.so exports only onnxstream_* symbols, and every function declared in the public header.
# Usage: exports.sh NM LIBRARY HEADER
set -u
nm_tool=$1 lib=$2 header=$3
symbols=$("$nm_tool" -D --defined-only "$lib" | awk 'NF >= 3 { print $3 }' | sed 's/@.*//' | sort -u)
if [ -z "$symbols" ]; then
    echo "FAIL: no dynamic symbols found in $lib"
    exit 1
fi
status=0
foreign=$(printf '%s\n' "$symbols" | grep -v '^onnxstream_')
if [ -n "$foreign" ]; then
    echo "FAIL: $lib exports symbols outside the onnxstream_ prefix:"
    printf '  %s\n' $foreign
    status=1
fi
declared=$(grep -o 'onnxstream_[a-z0-9_]*(' "$header" | tr -d '(' | sort -u)
for fn in $declared; do
    if ! printf '%s\n' "$symbols" | grep -qx "$fn"; then
        echo "FAIL: $fn is declared in $(basename "$header") but not exported"
        status=1
    fi
done
if [ $status -eq 0 ]; then
    echo "OK: $(printf '%s\n' "$symbols" | wc -l) symbols, all onnxstream_*, every declared function exported"
fi
exit $status
