package onnxstream

/*
#include "shim.h"
*/
import "C"

import (
	"runtime"
	"runtime/cgo"
	"strings"
	"time"
	"unsafe"
)

// BuiltinProvider selects the built-in weights source used when no Go provider is installed.
type BuiltinProvider int

const (
	ProviderDefault  BuiltinProvider = iota // chosen by the memory mode (min: NoCache, balanced: Prefetch, max-speed: RAM)
	ProviderNoCache                         // read each weight file when its op runs, free it after
	ProviderPrefetch                        // like NoCache, with a background thread reading ahead
	ProviderMmap                            // map weight files; pages are file-backed and shared
	ProviderRAM                             // read once, keep every weight in memory for later runs
)

// MemoryMode trades memory for speed (docs/benchmarks.md in the repository has measured figures).
type MemoryMode int

const (
	MemoryBalanced MemoryMode = iota // default: streamed weights read per op, bounded chunks and attention
	MemoryMin                        // smallest working set: no read-ahead, small weight chunks, flash attention
	MemoryMaxSpeed                   // keep prepared weights in RAM between runs
)

// Attention selects how attention ops are computed.
type Attention int

const (
	AttentionAuto   Attention = iota // the fastest kind within the memory mode's budget
	AttentionFull                    // whole score matrix per head
	AttentionSliced                  // OnnxStream's attention slicing (Q in row parts)
	AttentionFlash                   // online softmax over key blocks
)

// Options configure NewModel. The zero value means the library's defaults.
type Options struct {
	Threads         int             // worker threads; 0 = one per core
	Provider        BuiltinProvider // built-in weights source
	PrefetchBytes   uint64          // read-ahead budget of the prefetch provider; 0 = from the memory mode
	Memory          MemoryMode      // memory/speed trade-off
	Attention       Attention       // attention algorithm
	AttentionSlices int             // AttentionSliced: number of Q parts; 0 = from the memory mode
	// Weights bigger than this are streamed in chunks; 0 = from the memory mode, NoChunking = never.
	WeightChunkBytes uint64
	CachePath        string // persistent prepared-weights cache file; "" = none
	// Budget of the model's tracked tensor memory in bytes; 0 = no limit. A run that would pass it fails
	// with ErrOutOfMemory and the model stays usable (what counts: max_bytes in include/onnxstream.h).
	MaxBytes uint64
	// Record a per-op profile of every run (Model.Profile, Model.RenderProfile). It costs two clock
	// reads per op and no memory; off, the engine records nothing.
	Profile bool
	// Keep the thread pool's workers spinning between parallel sections instead of sleeping: a little
	// faster when the model's threads have the cores to themselves, much slower under load.
	SpinWorkers bool
	// Compute 8-bit weights in float32 (dequantized) even where the build has int8 arithmetic for them
	// (XNNPACK's 2024 API).
	DequantizeWeights bool
	// Memory for prepared kernels kept between runs; 0 = from the memory mode (balanced 24 MiB),
	// KeepNoKernels = none (kept_kernel_bytes in include/onnxstream.h).
	KeptKernelBytes uint64
}

// KeepNoKernels as Options.KeptKernelBytes keeps no prepared kernels between runs.
const KeepNoKernels = ^uint64(0)

// NoChunking as Options.WeightChunkBytes never splits weights.
const NoChunking = ^uint64(0)

// Progress reports a finished op during Run.
type Progress struct {
	OpIndex      int // index of the op that just finished (0-based)
	OpCount      int
	OpName       string // as written in model.txt
	OpType       string
	Elapsed      time.Duration // time spent in this op, weight fetch included
	CurrentBytes uint64        // tensor bytes alive after the op
	PeakBytes    uint64        // tensor high-water mark of this run so far
}

// ProgressFunc is called after every op; returning false cancels the run (Run returns ErrCancelled).
// A panic also cancels the run, and Run returns ErrCallback with the panic value.
type ProgressFunc func(p *Progress) bool

// LogLevel is the severity of a diagnostic.
type LogLevel int

const (
	LogDebug   LogLevel = C.ONNXSTREAM_LOG_DEBUG
	LogInfo    LogLevel = C.ONNXSTREAM_LOG_INFO
	LogWarning LogLevel = C.ONNXSTREAM_LOG_WARNING
	LogError   LogLevel = C.ONNXSTREAM_LOG_ERROR
)

// LogFunc receives the library's diagnostics.
type LogFunc func(level LogLevel, message string)

type progressState struct {
	fn       ProgressFunc
	panicked string
}

// MemoryStats are the figures of the model's tensor allocator.
type MemoryStats struct {
	CurrentBytes uint64 // tensor bytes alive now (outputs of the last run, pushed inputs, caches)
	PeakBytes    uint64 // high-water mark since the last reset
}

// RunStats are the figures of the last successful run.
type RunStats struct {
	RunTime         time.Duration
	WeightBytesRead uint64
	WeightReadTime  time.Duration // time spent reading weights, on any thread
	WeightWaitTime  time.Duration // time the run waited for weights
	// Bytes written turning weights into kernel input (layout changes, widening, dequantization, copies).
	WeightBytesCopied uint64
	// Ops that computed an 8-bit weight in int8 arithmetic (builds against XNNPACK's 2024 API).
	Int8Ops uint64
	// Since 0.15: operators whose packed weights were mapped from the packed-weights file
	// ("<cache_path>.xnnpack") instead of being packed (builds against XNNPACK's 2024 API).
	PackedWeightsMapped uint64
	// Since 0.15: operators whose packed weights this run wrote to that file (the first complete
	// run of a model builds it).
	PackedWeightsStored uint64
	// Since 0.20: ops keeping their prepared kernels between runs within the memory mode's budget
	// (balanced; 0 in min, and in max-speed, which keeps every op's), and the memory they hold.
	KeptKernels, KeptKernelBytes uint64
}

// Model owns a C model. It is not safe for concurrent use.
type Model struct {
	p        *C.onnxstream_model_t
	progress cgo.Handle // 0 when no progress callback is installed
	log      cgo.Handle // 0 when no log callback is installed
}

func errClosed() *Error { return &Error{Status: ErrBadState, Message: "the model is closed"} }

// NewModel creates an empty model; load one with Load or LoadString.
func NewModel(opts Options) (*Model, error) {
	var o C.onnxstream_model_options_t
	C.onnxstream_model_options_init(&o)
	o.threads = C.int32_t(opts.Threads)
	if opts.Threads > 1<<30 || opts.Threads < 0 {
		o.threads = -1 // rejected by the library with a message naming the value range
	}
	switch opts.Provider {
	case ProviderDefault:
	case ProviderNoCache:
		o.provider = C.ONNXSTREAM_PROVIDER_NOCACHE
	case ProviderPrefetch:
		o.provider = C.ONNXSTREAM_PROVIDER_PREFETCH
	case ProviderMmap:
		o.provider = C.ONNXSTREAM_PROVIDER_MMAP
	case ProviderRAM:
		o.provider = C.ONNXSTREAM_PROVIDER_RAM
	default:
		o.provider = 99 // rejected by the library with a message naming the value
	}
	o.prefetch_bytes = C.uint64_t(opts.PrefetchBytes)
	o.memory_mode = C.int32_t(opts.Memory)
	o.attention = C.int32_t(opts.Attention)
	o.attention_slices = C.int32_t(opts.AttentionSlices)
	if opts.AttentionSlices < 0 || opts.AttentionSlices > 1<<30 {
		o.attention_slices = -1 // rejected by the library with the valid range
	}
	o.weight_chunk_bytes = C.uint64_t(opts.WeightChunkBytes)
	o.max_bytes = C.uint64_t(opts.MaxBytes)
	o.kept_kernel_bytes = C.uint64_t(opts.KeptKernelBytes)
	if opts.Profile {
		o.flags |= C.ONNXSTREAM_FLAG_PROFILE
	}
	if opts.SpinWorkers {
		o.flags |= C.ONNXSTREAM_FLAG_SPIN_WORKERS
	}
	if opts.DequantizeWeights {
		o.flags |= C.ONNXSTREAM_FLAG_DEQUANTIZE_WEIGHTS
	}
	if opts.CachePath != "" {
		cpath := C.CString(opts.CachePath)
		defer C.free(unsafe.Pointer(cpath))
		o.cache_path = cpath
	}
	// The failure message is thread-local in C: stay on this thread until it is read.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var p *C.onnxstream_model_t
	if err := errorFrom(C.onnxstream_model_create(&o, &p), nil); err != nil {
		return nil, err
	}
	m := &Model{p: p}
	runtime.SetFinalizer(m, (*Model).Close)
	return m, nil
}

// Open creates a model with opts and loads path (a folder containing model.txt, or a model.txt file).
func Open(path string, opts Options) (*Model, error) {
	m, err := NewModel(opts)
	if err != nil {
		return nil, err
	}
	if err := m.Load(path); err != nil {
		m.Close()
		return nil, err
	}
	return m, nil
}

// Close destroys the model, which releases a Go weights provider (its handle is deleted exactly
// once). Close is idempotent; a finalizer calls it for models that were never closed.
func (m *Model) Close() error {
	if m == nil || m.p == nil {
		return nil
	}
	C.onnxstream_model_destroy(m.p)
	m.p = nil
	runtime.SetFinalizer(m, nil)
	if m.progress != 0 {
		m.progress.Delete()
		m.progress = 0
	}
	if m.log != 0 {
		m.log.Delete()
		m.log = 0
	}
	return nil
}

func (m *Model) check(status C.onnxstream_status_t) error {
	err := errorFrom(status, m.p)
	runtime.KeepAlive(m)
	return err
}

func cstring(s string) (*C.char, error) {
	if strings.IndexByte(s, 0) >= 0 {
		return nil, &Error{Status: ErrInvalidArgument, Message: "string " + quote(s) + " contains a NUL byte"}
	}
	return C.CString(s), nil
}

func quote(s string) string { return "\"" + strings.ReplaceAll(s, "\x00", "\\x00") + "\"" }

// Load loads a folder containing model.txt, or a model.txt file (weights next to it).
func (m *Model) Load(path string) error {
	if m.p == nil {
		return errClosed()
	}
	cpath, err := cstring(path)
	if err != nil {
		return err
	}
	defer C.free(unsafe.Pointer(cpath))
	return m.check(C.onnxstream_model_load(m.p, cpath))
}

// LoadString loads model.txt text; weight files are resolved against weightsDir ("" when a Go
// weights provider serves every weight).
func (m *Model) LoadString(modelTxt, weightsDir string) error {
	if m.p == nil {
		return errClosed()
	}
	text, err := cstring(modelTxt)
	if err != nil {
		return err
	}
	defer C.free(unsafe.Pointer(text))
	var dir *C.char
	if weightsDir != "" {
		if dir, err = cstring(weightsDir); err != nil {
			return err
		}
		defer C.free(unsafe.Pointer(dir))
	}
	return m.check(C.onnxstream_model_load_string(m.p, text, dir))
}

// AddOutput keeps a tensor as an output even though later ops consume it.
func (m *Model) AddOutput(name string) error {
	if m.p == nil {
		return errClosed()
	}
	cname, err := cstring(name)
	if err != nil {
		return err
	}
	defer C.free(unsafe.Pointer(cname))
	return m.check(C.onnxstream_model_add_output(m.p, cname))
}

// AddLora applies a LoRA (safetensors up/down pairs) while the weights stream, from the next run on: each
// weight W it names is used as W + scale * (alpha / rank) * up . down. It takes the modules whose keys start
// with keyPrefix ("" for all) and returns how many it took (docs/lora.md).
func (m *Model) AddLora(path string, scale float32, keyPrefix string) (int, error) {
	if m.p == nil {
		return 0, errClosed()
	}
	cpath, err := cstring(path)
	if err != nil {
		return 0, err
	}
	defer C.free(unsafe.Pointer(cpath))
	cprefix, err := cstring(keyPrefix)
	if err != nil {
		return 0, err
	}
	defer C.free(unsafe.Pointer(cprefix))
	var taken C.size_t
	if err := m.check(C.onnxstream_model_add_lora(m.p, cpath, C.float(scale), cprefix, &taken)); err != nil {
		return 0, err
	}
	return int(taken), nil
}

// ReadRangeData reads activation ranges (OnnxStream's range_data.txt) for static W8A8; a model folder's
// own range_data.txt is read at load.
func (m *Model) ReadRangeData(path string) error {
	return m.withPath(path, func(c *C.char) C.onnxstream_status_t { return C.onnxstream_model_read_range_data(m.p, c) })
}

// WriteRangeData writes the activation ranges (while calibrating, the recorded ones) atomically.
func (m *Model) WriteRangeData(path string) error {
	return m.withPath(path, func(c *C.char) C.onnxstream_status_t { return C.onnxstream_model_write_range_data(m.p, c) })
}

// SetCalibrate turns calibration on or off: while on, runs compute in float and record activation ranges.
func (m *Model) SetCalibrate(on bool) error {
	if m.p == nil {
		return errClosed()
	}
	v := C.int32_t(0)
	if on {
		v = 1
	}
	return m.check(C.onnxstream_model_set_calibrate(m.p, v))
}

func (m *Model) withPath(path string, call func(*C.char) C.onnxstream_status_t) error {
	if m.p == nil {
		return errClosed()
	}
	cpath, err := cstring(path)
	if err != nil {
		return err
	}
	defer C.free(unsafe.Pointer(cpath))
	return m.check(call(cpath))
}

// SetWeightsProvider serves every weight from p (see WeightsProvider, Prefetcher and Lender). The
// model keeps p until it is closed or another provider replaces it.
func (m *Model) SetWeightsProvider(p WeightsProvider) error {
	if m.p == nil {
		return errClosed()
	}
	if p == nil {
		return &Error{Status: ErrInvalidArgument, Message: "SetWeightsProvider: provider is nil"}
	}
	_, lends := p.(Lender)
	_, prefetches := p.(Prefetcher)
	h := cgo.NewHandle(p)
	status := C.onnxstream_go_set_provider(m.p, C.uintptr_t(h), cbool(lends), cbool(prefetches))
	if status != C.ONNXSTREAM_OK {
		h.Delete() // not taken: the library's destroy callback will never run for it
	}
	return m.check(status)
}

func cbool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// SetProgressFunc installs fn (nil removes it); see ProgressFunc.
func (m *Model) SetProgressFunc(fn ProgressFunc) error {
	if m.p == nil {
		return errClosed()
	}
	var h cgo.Handle
	if fn != nil {
		h = cgo.NewHandle(&progressState{fn: fn})
	}
	if err := m.check(C.onnxstream_go_set_progress(m.p, C.uintptr_t(h))); err != nil {
		if h != 0 {
			h.Delete()
		}
		return err
	}
	if m.progress != 0 {
		m.progress.Delete()
	}
	m.progress = h
	return nil
}

// SetLogFunc routes diagnostics at minLevel and above to fn (nil silences the model, the default).
func (m *Model) SetLogFunc(minLevel LogLevel, fn LogFunc) error {
	if m.p == nil {
		return errClosed()
	}
	var h cgo.Handle
	if fn != nil {
		h = cgo.NewHandle(fn)
	}
	if err := m.check(C.onnxstream_go_set_log(m.p, C.uintptr_t(h), C.int(minLevel))); err != nil {
		if h != 0 {
			h.Delete()
		}
		return err
	}
	if m.log != 0 {
		m.log.Delete()
	}
	m.log = h
	return nil
}

// Push sets a float32 graph input; the data is copied. shape must match model.txt's declaration.
func (m *Model) Push(name string, shape []int64, data []float32) error {
	var p unsafe.Pointer
	if len(data) > 0 {
		p = unsafe.Pointer(&data[0])
	}
	err := m.push(name, Float32, shape, p, len(data)*4)
	runtime.KeepAlive(data)
	return err
}

// PushInt64 sets an int64 graph input; the data is copied.
func (m *Model) PushInt64(name string, shape []int64, data []int64) error {
	var p unsafe.Pointer
	if len(data) > 0 {
		p = unsafe.Pointer(&data[0])
	}
	err := m.push(name, Int64, shape, p, len(data)*8)
	runtime.KeepAlive(data)
	return err
}

// PushBytes sets a graph input of any dtype from little-endian bytes; the data is copied.
func (m *Model) PushBytes(name string, dtype DType, shape []int64, data []byte) error {
	var p unsafe.Pointer
	if len(data) > 0 {
		p = unsafe.Pointer(&data[0])
	}
	err := m.push(name, dtype, shape, p, len(data))
	runtime.KeepAlive(data)
	return err
}

func (m *Model) push(name string, dtype DType, shape []int64, data unsafe.Pointer, n int) error {
	if m.p == nil {
		return errClosed()
	}
	cname, err := cstring(name)
	if err != nil {
		return err
	}
	defer C.free(unsafe.Pointer(cname))
	var shapePtr *C.int64_t
	if len(shape) > 0 {
		shapePtr = (*C.int64_t)(unsafe.Pointer(&shape[0]))
	}
	// The library copies during the call and keeps no Go pointer.
	status := C.onnxstream_model_push_tensor(m.p, cname, C.onnxstream_dtype_t(dtype), C.size_t(len(shape)), shapePtr, data, C.size_t(n))
	runtime.KeepAlive(shape)
	return m.check(status)
}

// Run runs the model on the pushed inputs. On failure the model stays usable.
func (m *Model) Run() error {
	if m.p == nil {
		return errClosed()
	}
	var ps *progressState
	if m.progress != 0 {
		ps = m.progress.Value().(*progressState)
		ps.panicked = ""
	}
	status := C.onnxstream_model_run(m.p)
	if ps != nil && ps.panicked != "" {
		runtime.KeepAlive(m)
		return &Error{Status: ErrCallback, Message: "progress callback " + ps.panicked}
	}
	return m.check(status)
}

// Inputs describes the graph inputs (tensors no op produces).
func (m *Model) Inputs() ([]InputInfo, error) {
	if m.p == nil {
		return nil, errClosed()
	}
	n := int(C.onnxstream_model_input_count(m.p))
	out := make([]InputInfo, 0, n)
	for i := 0; i < n; i++ {
		var v C.onnxstream_tensor_view_t
		v.struct_size = C.uint32_t(unsafe.Sizeof(v))
		if err := m.check(C.onnxstream_model_get_input(m.p, C.size_t(i), &v)); err != nil {
			return nil, err
		}
		out = append(out, InputInfo{Name: C.GoString(v.name), Shape: int64s(v.shape, v.rank), DType: DType(v.dtype)})
	}
	runtime.KeepAlive(m)
	return out, nil
}

// OutputCount returns the number of outputs of the last successful run (0 before one).
func (m *Model) OutputCount() int {
	if m.p == nil {
		return 0
	}
	n := int(C.onnxstream_model_output_count(m.p))
	runtime.KeepAlive(m)
	return n
}

// Output returns a copy of output number index of the last successful run.
func (m *Model) Output(index int) (Tensor, error) {
	if m.p == nil {
		return Tensor{}, errClosed()
	}
	if index < 0 {
		return Tensor{}, &Error{Status: ErrInvalidArgument, Message: "Output: negative index"}
	}
	var v C.onnxstream_tensor_view_t
	v.struct_size = C.uint32_t(unsafe.Sizeof(v))
	if err := m.check(C.onnxstream_model_get_output(m.p, C.size_t(index), &v)); err != nil {
		return Tensor{}, err
	}
	t := tensorFromView(&v)
	runtime.KeepAlive(m)
	return t, nil
}

// OutputByName returns a copy of the output called name (escaped or original spelling).
func (m *Model) OutputByName(name string) (Tensor, error) {
	if m.p == nil {
		return Tensor{}, errClosed()
	}
	cname, err := cstring(name)
	if err != nil {
		return Tensor{}, err
	}
	defer C.free(unsafe.Pointer(cname))
	var v C.onnxstream_tensor_view_t
	v.struct_size = C.uint32_t(unsafe.Sizeof(v))
	if err := m.check(C.onnxstream_model_get_output_by_name(m.p, cname, &v)); err != nil {
		return Tensor{}, err
	}
	t := tensorFromView(&v)
	runtime.KeepAlive(m)
	return t, nil
}

// Outputs returns copies of every output of the last successful run, in model.txt order.
func (m *Model) Outputs() ([]Tensor, error) {
	n := m.OutputCount()
	out := make([]Tensor, 0, n)
	for i := 0; i < n; i++ {
		t, err := m.Output(i)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// MemoryStats reads the allocator figures; resetPeak restarts the high-water mark from the current bytes.
func (m *Model) MemoryStats(resetPeak bool) (MemoryStats, error) {
	if m.p == nil {
		return MemoryStats{}, errClosed()
	}
	var s C.onnxstream_memory_stats_t
	s.struct_size = C.uint32_t(unsafe.Sizeof(s))
	if err := m.check(C.onnxstream_model_memory_stats(m.p, &s, cbool(resetPeak))); err != nil {
		return MemoryStats{}, err
	}
	return MemoryStats{CurrentBytes: uint64(s.current_bytes), PeakBytes: uint64(s.peak_bytes)}, nil
}

// RunStats returns the figures of the last successful run (zeros before one).
func (m *Model) RunStats() (RunStats, error) {
	if m.p == nil {
		return RunStats{}, errClosed()
	}
	var s C.onnxstream_run_stats_t
	s.struct_size = C.uint32_t(unsafe.Sizeof(s))
	if err := m.check(C.onnxstream_model_run_stats(m.p, &s)); err != nil {
		return RunStats{}, err
	}
	us := time.Microsecond
	return RunStats{
		RunTime:             time.Duration(s.run_us) * us,
		WeightBytesRead:     uint64(s.weight_bytes_read),
		WeightReadTime:      time.Duration(s.weight_read_us) * us,
		WeightWaitTime:      time.Duration(s.weight_wait_us) * us,
		WeightBytesCopied:   uint64(s.weight_bytes_copied),
		Int8Ops:             uint64(s.int8_ops),
		PackedWeightsMapped: uint64(s.packed_weights_mapped),
		PackedWeightsStored: uint64(s.packed_weights_stored),
		KeptKernels:         uint64(s.kept_kernels),
		KeptKernelBytes:     uint64(s.kept_kernel_bytes),
	}, nil
}
