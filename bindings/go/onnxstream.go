// Package onnxstream is a Go binding of libonnxstream, which runs OnnxStream model.txt models op by op,
// fetching each op's weights just before it runs so that peak memory stays near one op's weights plus
// the live activations.
//
// Weights can be served from Go: implement WeightsProvider (and optionally Prefetcher or Lender) and
// install it with Model.SetWeightsProvider. Callbacks never let a panic unwind into C: a panic becomes
// an ErrCallback error carrying the panic value.
//
// A Model is not safe for concurrent use; use one Model from one goroutine at a time. Different
// models are independent. Release a Model with Close; a finalizer only guards against leaks.
//
// The package links libonnxstream through pkg-config (`#cgo pkg-config: onnxstream`). For an
// uninstalled meson build, PKG_CONFIG_PATH=<build>/meson-uninstalled works with pkgconf, which picks
// up onnxstream-uninstalled.pc by itself.
package onnxstream

/*
#cgo pkg-config: onnxstream
#include "shim.h"
*/
import "C"

// Version returns the runtime library version as major, minor, patch.
func Version() (major, minor, patch int) {
	v := int(C.onnxstream_version())
	return v / 10000, v / 100 % 100, v % 100
}

// VersionString returns the runtime library version as "MAJOR.MINOR.PATCH".
func VersionString() string {
	return C.GoString(C.onnxstream_version_string())
}
