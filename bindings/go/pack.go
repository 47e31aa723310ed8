package onnxstream

/*
#include "shim.h"
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// PackWeights packs the weight files of the model folder folder (OnnxStream's or onnxstream-convert's)
// into one folder/model.safetensors: every .bin file model.txt references and every per-channel scales
// file, each stored under its file name without ".bin". Models load from such a folder with every
// built-in provider; a weight is looked up in model.safetensors first, then as a file. The store is
// written under a temporary name and renamed into place; only then, with removeFiles, are the packed
// files deleted. model.txt is not changed. It runs in the calling goroutine.
//
// Errors: ErrInvalidArgument when the folder already has a model.safetensors (or the path contains a
// NUL byte), ErrInvalidModel when model.txt does not parse, ErrIO when model.txt or a weight file is
// missing, a weight file's size does not match model.txt, or the store cannot be written.
func PackWeights(folder string, removeFiles bool) error {
	cfolder, err := cstring(folder)
	if err != nil {
		return err
	}
	defer C.free(unsafe.Pointer(cfolder))
	remove := C.int32_t(0)
	if removeFiles {
		remove = 1
	}
	// The failure message is thread-local in C: stay on this thread until it is read.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return errorFrom(C.onnxstream_pack_weights(cfolder, remove), nil)
}
