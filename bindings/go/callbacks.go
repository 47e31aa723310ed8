package onnxstream

/*
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"io"
	"runtime/cgo"
	"time"
	"unicode/utf8"
	"unsafe"
)

// The functions exported here are called by shim.c from C, possibly on a thread the engine created.
// Each one recovers panics: a Go panic must never unwind through C frames.

func requestFrom(req *C.onnxstream_weight_request_t) *WeightRequest {
	return &WeightRequest{
		File:     C.GoString(req.file),
		DType:    DType(req.dtype),
		Shape:    int64s(req.shape, req.rank),
		ByteSize: int(req.byte_size),
	}
}

// fail writes message into the request's error buffer (truncated on a UTF-8 boundary) and returns
// ONNXSTREAM_ERR_CALLBACK.
func fail(req *C.onnxstream_weight_request_t, message string) C.onnxstream_status_t {
	if req.error_message != nil && req.error_message_capacity > 0 {
		n := len(message)
		if max := int(req.error_message_capacity) - 1; n > max {
			n = max
			for n > 0 && !utf8.RuneStart(message[n]) {
				n--
			}
		}
		buf := unsafe.Slice((*byte)(unsafe.Pointer(req.error_message)), n+1)
		copy(buf, message[:n])
		buf[n] = 0
	}
	return C.ONNXSTREAM_ERR_CALLBACK
}

func panicMessage(r interface{}) string { return fmt.Sprintf("panicked: %v", r) }

//export onnxstreamGoRead
func onnxstreamGoRead(h C.uintptr_t, req *C.onnxstream_weight_request_t, dst unsafe.Pointer) (status C.onnxstream_status_t) {
	defer func() {
		if r := recover(); r != nil {
			status = fail(req, panicMessage(r))
		}
	}()
	p := cgo.Handle(h).Value().(WeightsProvider)
	n := int(req.byte_size)
	buf := []byte{}
	if n > 0 && dst != nil {
		buf = unsafe.Slice((*byte)(dst), n)
	}
	if err := p.ReadWeights(requestFrom(req), buf); err != nil {
		return fail(req, err.Error())
	}
	return C.ONNXSTREAM_OK
}

//export onnxstreamGoAcquire
func onnxstreamGoAcquire(h C.uintptr_t, req *C.onnxstream_weight_request_t, data *C.uintptr_t, token *C.uintptr_t) (status C.onnxstream_status_t) {
	defer func() {
		if r := recover(); r != nil {
			status = fail(req, panicMessage(r))
		}
	}()
	l := cgo.Handle(h).Value().(Lender)
	r := requestFrom(req)
	bytes, release, err := l.LendWeights(r)
	if err != nil {
		return fail(req, err.Error())
	}
	if len(bytes) != r.ByteSize {
		if release != nil {
			release()
		}
		return fail(req, fmt.Sprintf("lent %d bytes but the weight needs %d", len(bytes), r.ByteSize))
	}
	var addr uintptr
	if len(bytes) > 0 {
		addr = uintptr(unsafe.Pointer(&bytes[0]))
		if align := uintptr(r.DType.Size()); align > 1 && addr%align != 0 {
			if release != nil {
				release()
			}
			return fail(req, fmt.Sprintf("lent bytes at %#x are not aligned to %d bytes for %v", addr, align, r.DType))
		}
	} else {
		// Any non-NULL address will do for an empty weight; C never reads it.
		addr = uintptr(unsafe.Pointer(req))
	}
	if release == nil {
		release = func() {}
	}
	*data = C.uintptr_t(addr)
	*token = C.uintptr_t(cgo.NewHandle(release))
	return C.ONNXSTREAM_OK
}

//export onnxstreamGoRelease
func onnxstreamGoRelease(token C.uintptr_t) {
	if token == 0 {
		return
	}
	defer func() { _ = recover() }()
	h := cgo.Handle(token)
	release := h.Value().(func())
	h.Delete()
	release()
}

//export onnxstreamGoPrefetch
func onnxstreamGoPrefetch(h C.uintptr_t, req *C.onnxstream_weight_request_t) {
	defer func() { _ = recover() }()
	if p, ok := cgo.Handle(h).Value().(Prefetcher); ok {
		p.Prefetch(requestFrom(req))
	}
}

// onnxstreamGoDestroy runs exactly once per installed provider, when the model no longer needs it.
//
//export onnxstreamGoDestroy
func onnxstreamGoDestroy(h C.uintptr_t) {
	defer func() { _ = recover() }()
	handle := cgo.Handle(h)
	p := handle.Value()
	handle.Delete()
	if c, ok := p.(io.Closer); ok {
		_ = c.Close()
	}
}

//export onnxstreamGoProgress
func onnxstreamGoProgress(h C.uintptr_t, p *C.onnxstream_progress_t) (cancel C.int) {
	var s *progressState
	defer func() {
		if r := recover(); r != nil {
			if s != nil {
				s.panicked = panicMessage(r)
			}
			cancel = 1
		}
	}()
	s = cgo.Handle(h).Value().(*progressState)
	ok := s.fn(&Progress{
		OpIndex:      int(p.op_index),
		OpCount:      int(p.op_count),
		OpName:       C.GoString(p.op_name),
		OpType:       C.GoString(p.op_type),
		Elapsed:      time.Duration(p.elapsed_us) * time.Microsecond,
		CurrentBytes: uint64(p.current_bytes),
		PeakBytes:    uint64(p.peak_bytes),
	})
	if ok {
		return 0
	}
	return 1
}

//export onnxstreamGoLog
func onnxstreamGoLog(h C.uintptr_t, level C.int, message *C.char) {
	defer func() { _ = recover() }()
	cgo.Handle(h).Value().(LogFunc)(LogLevel(level), C.GoString(message))
}
