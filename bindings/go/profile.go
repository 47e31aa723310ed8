package onnxstream

/*
#include "shim.h"
*/
import "C"

import (
	"runtime"
	"time"
	"unsafe"
)

// OpProfile is one op of a profiled run (a model created with Options.Profile). Everything is copied
// out of the library, so it stays valid after later runs and after Close.
type OpProfile struct {
	OpIndex int    // position of the op in the run (0-based)
	Line    int    // its model.txt line (1-based)
	OpName  string // as written in model.txt
	OpType  string
	// Logical dtypes and shapes of its inputs, e.g. "float32[1,3,640,640], w:float16[16,3,3,3]"
	// (w: marks a weight, - an absent optional input).
	Inputs        string
	Outputs       string        // the same for its outputs
	Start         time.Duration // from the start of the run
	Duration      time.Duration // including its weight fetches and kernel preparation
	WeightWait    time.Duration // fetching its weights and reading streamed weight rows (run thread)
	KernelPrepare time.Duration // XNNPACK operator creation (weight packing) and setup
	// 2 per multiply-add of matrix ops (Conv, ConvTranspose, MatMul, Gemm, Einsum, fused attention and
	// feed-forward); 0 for the others.
	FLOPs           uint64
	WeightBytes     uint64 // stored bytes of its weights
	ActivationBytes uint64 // bytes of its activation inputs and outputs
	MemoryBytes     uint64 // tracked tensor bytes alive after it
}

// ProfileFormat selects how RenderProfile renders a profile.
type ProfileFormat int

const (
	ProfileTraceJSON ProfileFormat = C.ONNXSTREAM_PROFILE_TRACE_JSON // Chrome trace events: Perfetto, chrome://tracing
	ProfileSummary   ProfileFormat = C.ONNXSTREAM_PROFILE_SUMMARY    // a text table per op type, sorted by time
)

// Roofline holds a machine's measured ceilings; passed to RenderProfile, they add the summary's
// "% peak" column.
type Roofline struct {
	FLOPsPerSecond float64 // float32 matrix multiplication (XNNPACK's GEMM)
	BytesPerSecond float64 // memory bandwidth (bytes read + written by a copy much bigger than the caches)
}

// Profile returns the per-op profile of the last successful run, in execution order. It is empty
// unless the model was created with Options.Profile and has run.
func (m *Model) Profile() ([]OpProfile, error) {
	if m.p == nil {
		return nil, errClosed()
	}
	n := int(C.onnxstream_model_profile_op_count(m.p))
	out := make([]OpProfile, 0, n)
	for i := 0; i < n; i++ {
		var p C.onnxstream_op_profile_t
		p.struct_size = C.uint32_t(unsafe.Sizeof(p))
		if err := m.check(C.onnxstream_model_get_op_profile(m.p, C.size_t(i), &p)); err != nil {
			return nil, err
		}
		// The strings live until the next run, load or destroy: copied here.
		out = append(out, OpProfile{
			OpIndex:         int(p.op_index),
			Line:            int(p.line),
			OpName:          C.GoString(p.op_name),
			OpType:          C.GoString(p.op_type),
			Inputs:          C.GoString(p.inputs),
			Outputs:         C.GoString(p.outputs),
			Start:           time.Duration(p.start_ns),
			Duration:        time.Duration(p.duration_ns),
			WeightWait:      time.Duration(p.weight_wait_ns),
			KernelPrepare:   time.Duration(p.kernel_prepare_ns),
			FLOPs:           uint64(p.flops),
			WeightBytes:     uint64(p.weight_bytes),
			ActivationBytes: uint64(p.activation_bytes),
			MemoryBytes:     uint64(p.memory_bytes),
		})
	}
	runtime.KeepAlive(m)
	return out, nil
}

// RenderProfile renders the last successful run's profile as Chrome trace JSON or a per-type summary
// table. peak (nil for none; see MeasureRoofline) adds the summary's "% peak" column. It fails with
// ErrBadState when the model was created without Options.Profile or has not run successfully yet.
func (m *Model) RenderProfile(format ProfileFormat, peak *Roofline) (string, error) {
	if m.p == nil {
		return "", errClosed()
	}
	var cpeak *C.onnxstream_roofline_t
	if peak != nil {
		var r C.onnxstream_roofline_t
		r.struct_size = C.uint32_t(unsafe.Sizeof(r))
		r.flops_per_s = C.double(peak.FLOPsPerSecond)
		r.bytes_per_s = C.double(peak.BytesPerSecond)
		cpeak = &r
	}
	var text *C.char
	var length C.size_t
	if err := m.check(C.onnxstream_model_render_profile(m.p, C.onnxstream_profile_format_t(format), cpeak, &text, &length)); err != nil {
		return "", err
	}
	if text == nil || length == 0 {
		return "", nil
	}
	// Valid until the next render, run, load or destroy: copied here.
	s := string(unsafe.Slice((*byte)(unsafe.Pointer(text)), int(length)))
	runtime.KeepAlive(m)
	return s, nil
}

// MeasureRoofline measures this machine's roofline with threads worker threads (0 = one per core):
// XNNPACK's float32 GEMM on a cache-friendly problem and a copy much bigger than the caches. It takes
// about a second.
func MeasureRoofline(threads int) (Roofline, error) {
	var r C.onnxstream_roofline_t
	r.struct_size = C.uint32_t(unsafe.Sizeof(r))
	n := C.int32_t(threads)
	if threads > 1<<30 || threads < 0 {
		n = -1 // rejected by the library with a message naming the value range
	}
	// The failure message is thread-local in C: stay on this thread until it is read.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := errorFrom(C.onnxstream_measure_roofline(n, &r), nil); err != nil {
		return Roofline{}, err
	}
	return Roofline{FLOPsPerSecond: float64(r.flops_per_s), BytesPerSecond: float64(r.bytes_per_s)}, nil
}
