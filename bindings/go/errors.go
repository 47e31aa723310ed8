package onnxstream

/*
#include "shim.h"
*/
import "C"

import "fmt"

// Status is a C API status code. The non-OK values are errors themselves, so that
// errors.Is(err, onnxstream.ErrCallback) tests the status of any error this package returns.
type Status int

// Status values; fixed by the C API and only ever appended to.
const (
	OK                 Status = C.ONNXSTREAM_OK
	ErrInvalidArgument Status = C.ONNXSTREAM_ERR_INVALID_ARGUMENT // a bad name, shape, size or option
	ErrInvalidModel    Status = C.ONNXSTREAM_ERR_INVALID_MODEL    // model.txt does not parse or check
	ErrIO              Status = C.ONNXSTREAM_ERR_IO               // a file is missing, unreadable or truncated
	ErrUnsupported     Status = C.ONNXSTREAM_ERR_UNSUPPORTED      // an operator or attribute the engine does not run
	ErrOutOfMemory     Status = C.ONNXSTREAM_ERR_OUT_OF_MEMORY
	ErrCallback        Status = C.ONNXSTREAM_ERR_CALLBACK  // a Go callback returned an error or panicked
	ErrCancelled       Status = C.ONNXSTREAM_ERR_CANCELLED // the progress callback asked to stop
	ErrBadState        Status = C.ONNXSTREAM_ERR_BAD_STATE // the call is not valid now (e.g. run before load)
	ErrInternal        Status = C.ONNXSTREAM_ERR_INTERNAL  // a bug in onnxstream or a kernel library
)

// Name returns the C name of the status ("ONNXSTREAM_ERR_IO"), as onnxstream_status_name spells it.
func (s Status) Name() string {
	return C.GoString(C.onnxstream_status_name(C.onnxstream_status_t(s)))
}

func (s Status) String() string { return s.Name() }

// Error makes a Status usable as an errors.Is target.
func (s Status) Error() string { return "onnxstream: " + s.Name() }

// Error is the error type of every failing call: the status and the library's message, which names the
// op, file or argument at fault.
type Error struct {
	Status  Status
	Message string
}

func (e *Error) Error() string {
	if e.Message == "" {
		return "onnxstream: " + e.Status.Name()
	}
	return fmt.Sprintf("onnxstream: %s: %s", e.Status.Name(), e.Message)
}

// Is reports whether target is this error's Status, or an *Error with the same Status (and, when the
// target has one, the same message).
func (e *Error) Is(target error) bool {
	switch t := target.(type) {
	case Status:
		return e.Status == t
	case *Error:
		return t != nil && e.Status == t.Status && (t.Message == "" || t.Message == e.Message)
	}
	return false
}

// errorFrom builds the error of a failed C call from the model's (or, with model nil, the thread's)
// last message.
func errorFrom(status C.onnxstream_status_t, model *C.onnxstream_model_t) error {
	if status == C.ONNXSTREAM_OK {
		return nil
	}
	var msg string
	if model != nil {
		msg = C.GoString(C.onnxstream_model_last_error(model))
	} else {
		msg = C.GoString(C.onnxstream_last_error())
	}
	return &Error{Status: Status(status), Message: msg}
}
