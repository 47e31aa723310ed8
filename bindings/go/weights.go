package onnxstream

// WeightRequest describes one weight file of model.txt that the engine needs.
type WeightRequest struct {
	File     string // weight file name as written in model.txt (escaped form)
	DType    DType
	Shape    []int64
	ByteSize int // exact number of bytes expected
}

// WeightsProvider serves weights from Go instead of the built-in file readers.
//
// ReadWeights must fill dst (exactly req.ByteSize bytes of C memory, valid only during the call) with
// the weight's little-endian contents. A returned error, or a panic, fails the run with ErrCallback and
// a message naming the file and including the error text; the model stays usable.
//
// If the provider also implements io.Closer, Close is called exactly once when the model no longer
// needs it: on Model.Close (or its finalizer), or when another provider replaces it. Its error is
// ignored.
//
// Calls for one model never overlap, but they may come from a thread the engine created (the prefetch
// thread), so a provider shared with other goroutines must synchronise its own state.
type WeightsProvider interface {
	ReadWeights(req *WeightRequest, dst []byte) error
}

// Prefetcher is optionally implemented by a WeightsProvider that wants read-ahead hints: Prefetch is
// called, in execution order, for weights that will be requested soon.
type Prefetcher interface {
	Prefetch(req *WeightRequest)
}

// Lender is optionally implemented by a WeightsProvider that can serve weights without a copy. When a
// provider is a Lender, LendWeights is used instead of ReadWeights.
//
// LendWeights returns exactly req.ByteSize bytes, aligned to the dtype's size, that stay valid and
// unchanged until release is called (after the op that uses them; release may be nil). cgo forbids C
// from keeping pointers to Go-managed memory, so the bytes must live outside the Go heap: memory from
// syscall.Mmap, or allocated by C.
type Lender interface {
	LendWeights(req *WeightRequest) (data []byte, release func(), err error)
}

// ProviderFunc adapts a function to WeightsProvider.
type ProviderFunc func(req *WeightRequest, dst []byte) error

// ReadWeights calls f.
func (f ProviderFunc) ReadWeights(req *WeightRequest, dst []byte) error { return f(req, dst) }
