package onnxstream

/*
#include "shim.h"
*/
import "C"

import (
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"
)

// DType is an element type; values are fixed by the C API.
type DType int

const (
	Float32 DType = C.ONNXSTREAM_DTYPE_FLOAT32
	Float16 DType = C.ONNXSTREAM_DTYPE_FLOAT16 // IEEE half, stored as uint16 bit patterns
	Int64   DType = C.ONNXSTREAM_DTYPE_INT64
	Uint8   DType = C.ONNXSTREAM_DTYPE_UINT8
	Int8    DType = C.ONNXSTREAM_DTYPE_INT8
	Int32   DType = C.ONNXSTREAM_DTYPE_INT32
	Bool    DType = C.ONNXSTREAM_DTYPE_BOOL    // one byte per element, 0 or 1
	Float64 DType = C.ONNXSTREAM_DTYPE_FLOAT64 // since 0.13
	Int16   DType = C.ONNXSTREAM_DTYPE_INT16   // since 0.13
	Uint16  DType = C.ONNXSTREAM_DTYPE_UINT16  // since 0.13
	Uint32  DType = C.ONNXSTREAM_DTYPE_UINT32  // since 0.13
	Uint64  DType = C.ONNXSTREAM_DTYPE_UINT64  // since 0.13
	// BFloat16 is the top 16 bits of a float32, stored as uint16 bit patterns (since 0.13).
	BFloat16 DType = C.ONNXSTREAM_DTYPE_BFLOAT16
	// The float8 types (since 0.14) are stored as uint8 bit patterns.
	Float8E4M3FN   DType = C.ONNXSTREAM_DTYPE_FLOAT8E4M3FN
	Float8E4M3FNUZ DType = C.ONNXSTREAM_DTYPE_FLOAT8E4M3FNUZ
	Float8E5M2     DType = C.ONNXSTREAM_DTYPE_FLOAT8E5M2
	Float8E5M2FNUZ DType = C.ONNXSTREAM_DTYPE_FLOAT8E5M2FNUZ
	// Int4 and Uint4 hold one value per byte (since 0.14).
	Int4  DType = C.ONNXSTREAM_DTYPE_INT4
	Uint4 DType = C.ONNXSTREAM_DTYPE_UINT4
)

// String returns the name used in model.txt ("float32"), or "unknown".
func (d DType) String() string { return C.GoString(C.onnxstream_dtype_name(C.onnxstream_dtype_t(d))) }

// Size returns the bytes per element, or 0 for an unknown dtype.
func (d DType) Size() int { return int(C.onnxstream_dtype_size(C.onnxstream_dtype_t(d))) }

// Tensor is a Go copy of an output: it stays valid after later runs and after Close.
type Tensor struct {
	Name  string // escaped model.txt spelling
	DType DType
	Shape []int64
	Data  []byte // little-endian
}

// Len returns the number of elements.
func (t *Tensor) Len() int {
	n := int64(1)
	for _, d := range t.Shape {
		n *= d
	}
	return int(n)
}

// Float32 decodes float32 or float16 data.
func (t *Tensor) Float32() ([]float32, error) {
	switch t.DType {
	case Float32:
		out := make([]float32, len(t.Data)/4)
		for i := range out {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(t.Data[4*i:]))
		}
		return out, nil
	case Float16:
		out := make([]float32, len(t.Data)/2)
		for i := range out {
			out[i] = HalfToFloat32(binary.LittleEndian.Uint16(t.Data[2*i:]))
		}
		return out, nil
	}
	return nil, &Error{Status: ErrInvalidArgument, Message: fmt.Sprintf("output %q is %v, not a floating-point tensor", t.Name, t.DType)}
}

// Int64 decodes int64 data.
func (t *Tensor) Int64() ([]int64, error) {
	if t.DType != Int64 {
		return nil, &Error{Status: ErrInvalidArgument, Message: fmt.Sprintf("output %q is %v, not int64", t.Name, t.DType)}
	}
	out := make([]int64, len(t.Data)/8)
	for i := range out {
		out[i] = int64(binary.LittleEndian.Uint64(t.Data[8*i:]))
	}
	return out, nil
}

// HalfToFloat32 converts IEEE half-precision bits to float32 exactly.
func HalfToFloat32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	var bits uint32
	switch {
	case exp == 0 && mant == 0:
		bits = sign
	case exp == 0: // subnormal: normalise
		shift := uint32(0)
		for mant&0x400 == 0 {
			mant <<= 1
			shift++
		}
		bits = sign | (113-shift)<<23 | (mant&0x3ff)<<13
	case exp == 0x1f:
		bits = sign | 0x7f800000 | mant<<13
	default:
		bits = sign | (exp+112)<<23 | mant<<13
	}
	return math.Float32frombits(bits)
}

// InputInfo describes a graph input as model.txt declares it.
type InputInfo struct {
	Name  string // escaped model.txt spelling
	Shape []int64
	DType DType // of the last pushed tensor; Float32 before one (model.txt does not record it)
}

// int64s copies n int64 values from C memory.
func int64s(p *C.int64_t, n C.size_t) []int64 {
	if p == nil || n == 0 {
		return []int64{}
	}
	out := make([]int64, int(n))
	copy(out, unsafe.Slice((*int64)(unsafe.Pointer(p)), int(n)))
	return out
}

func tensorFromView(v *C.onnxstream_tensor_view_t) Tensor {
	t := Tensor{
		Name:  C.GoString(v.name),
		DType: DType(v.dtype),
		Shape: int64s(v.shape, v.rank),
	}
	if v.data != nil && v.byte_size > 0 {
		t.Data = make([]byte, int(v.byte_size))
		copy(t.Data, unsafe.Slice((*byte)(v.data), int(v.byte_size)))
	} else {
		t.Data = []byte{}
	}
	return t
}
