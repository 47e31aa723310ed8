package onnxstream

import (
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestVersion(t *testing.T) {
	if major, minor, patch := Version(); major != 0 || minor != 26 || patch != 0 {
		t.Fatalf("Version() = %d.%d.%d", major, minor, patch)
	}
	if VersionString() != "0.26.0" {
		t.Fatalf("VersionString() = %q", VersionString())
	}
}

func TestEveryStatusIsMapped(t *testing.T) {
	want := map[Status]string{
		OK:                 "ONNXSTREAM_OK",
		ErrInvalidArgument: "ONNXSTREAM_ERR_INVALID_ARGUMENT",
		ErrInvalidModel:    "ONNXSTREAM_ERR_INVALID_MODEL",
		ErrIO:              "ONNXSTREAM_ERR_IO",
		ErrUnsupported:     "ONNXSTREAM_ERR_UNSUPPORTED",
		ErrOutOfMemory:     "ONNXSTREAM_ERR_OUT_OF_MEMORY",
		ErrCallback:        "ONNXSTREAM_ERR_CALLBACK",
		ErrCancelled:       "ONNXSTREAM_ERR_CANCELLED",
		ErrBadState:        "ONNXSTREAM_ERR_BAD_STATE",
		ErrInternal:        "ONNXSTREAM_ERR_INTERNAL",
	}
	for code := 0; code <= 9; code++ {
		s := Status(code)
		if s.Name() != want[s] {
			t.Errorf("Status(%d).Name() = %q, want %q", code, s.Name(), want[s])
		}
		err := error(&Error{Status: s, Message: "m"})
		if !errors.Is(err, s) {
			t.Errorf("errors.Is(*Error{%v}, %v) is false", s, s)
		}
		if errors.Is(err, Status((code+1)%10)) {
			t.Errorf("errors.Is matched a different status for %v", s)
		}
		if !errors.Is(err, &Error{Status: s}) || errors.Is(err, &Error{Status: s, Message: "other"}) {
			t.Errorf("errors.Is with an *Error target is wrong for %v", s)
		}
	}
	if Status(42).Name() != "ONNXSTREAM_UNKNOWN_STATUS" {
		t.Errorf("unknown status name %q", Status(42).Name())
	}
	var target *Error
	if !errors.As(error(&Error{Status: ErrIO, Message: "x"}), &target) || target.Status != ErrIO {
		t.Error("errors.As failed")
	}
}

func TestRangeDataAndCalibration(t *testing.T) {
	m := newTiny(t, &mapProvider{weights: tinyWeights(), c: &counters{}})
	defer m.Close()
	file := filepath.Join(t.TempDir(), "range_data.txt")
	write := func(text string) {
		if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("nosuchop,0,1\n")
	if err := m.ReadRangeData(file); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("unknown name: %v", err)
	}
	write("x,2,1\n")
	if err := m.ReadRangeData(file); !errors.Is(err, ErrInvalidModel) {
		t.Errorf("min > max: %v", err)
	}
	write("x,-1,1\n")
	if err := m.ReadRangeData(file); err != nil {
		t.Fatal(err)
	}
	if err := m.SetCalibrate(true); err != nil {
		t.Fatal(err)
	}
	if err := m.WriteRangeData(file); err != nil {
		t.Fatal(err)
	}
	if err := m.SetCalibrate(false); err != nil {
		t.Fatal(err)
	}
}

func TestRealCallsProduceEachStatus(t *testing.T) {
	expect := func(err error, s Status) {
		t.Helper()
		if !errors.Is(err, s) {
			t.Errorf("got %v, want %v", err, s)
		}
	}
	_, err := NewModel(Options{Threads: 5000})
	expect(err, ErrInvalidArgument)
	c := &counters{}
	m := newTiny(t, &mapProvider{weights: tinyWeights(), c: c})
	defer m.Close()
	expect(m.Push("nope", []int64{1, 4}, tinyX), ErrInvalidArgument)
	expect(m.Push("x", []int64{4}, tinyX), ErrInvalidArgument)
	expect(m.Push("x\x00y", []int64{1, 4}, tinyX), ErrInvalidArgument)
	_, err = m.OutputByName("y")
	expect(err, ErrInvalidArgument)
	expect(m.LoadString(tinyModel, ""), ErrBadState)

	empty, _ := NewModel(Options{})
	defer empty.Close()
	expect(empty.Run(), ErrBadState)
	m2, _ := NewModel(Options{})
	defer m2.Close()
	expect(m2.LoadString("this is not model.txt\n", ""), ErrInvalidModel)
	m3, _ := NewModel(Options{})
	defer m3.Close()
	expect(m3.LoadString("n:NoSuchOperator*input:x(1)*output:y(1)\n", ""), ErrUnsupported)
	_, err = Open("/nonexistent/onnxstream/model", Options{})
	expect(err, ErrIO)
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/onnxstream/model") {
		t.Errorf("message does not name the path: %v", err)
	}
}

func TestProviderServesWeights(t *testing.T) {
	c := &counters{}
	m := newTiny(t, &mapProvider{weights: tinyWeights(), c: c})
	inputs, err := m.Inputs()
	if err != nil || len(inputs) != 1 || inputs[0].Name != "x" || len(inputs[0].Shape) != 2 || inputs[0].DType != Float32 {
		t.Fatalf("Inputs() = %+v, %v", inputs, err)
	}
	if err := m.Run(); err != nil {
		t.Fatal(err)
	}
	if m.OutputCount() != 1 {
		t.Fatalf("OutputCount() = %d", m.OutputCount())
	}
	out, err := m.Output(0)
	if err != nil || out.Name != "y" || out.DType != Float32 || len(out.Shape) != 2 || out.Shape[1] != 4 {
		t.Fatalf("Output(0) = %+v, %v", out, err)
	}
	if y := outputY(t, m); !equalF32(y, tinyY) {
		t.Fatalf("y = %v, want %v", y, tinyY)
	}
	if _, err := out.Int64(); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("Int64() on float32: %v", err)
	}
	reads := c.reads.Load()
	if reads < 2 || c.prefetches.Load() < 2 {
		t.Fatalf("reads %d prefetches %d", reads, c.prefetches.Load())
	}
	if err := m.Push("x", []int64{1, 4}, []float32{0, 0, 0, 0}); err != nil {
		t.Fatal(err)
	}
	if err := m.Run(); err != nil {
		t.Fatal(err)
	}
	if y := outputY(t, m); !equalF32(y, []float32{20, 40, 60, 80}) {
		t.Fatalf("second run y = %v", y)
	}
	if c.reads.Load() != reads+2 {
		t.Errorf("second run read %d weights, want 2", c.reads.Load()-reads)
	}
	// No CachePath: nothing is mapped from or stored to a packed-weights file.
	if s, err := m.RunStats(); err != nil || s.WeightBytesRead != 32 ||
		s.PackedWeightsMapped != 0 || s.PackedWeightsStored != 0 || s.KeptKernels != 0 {
		t.Errorf("RunStats() = %+v, %v", s, err)
	}
	if s, err := m.MemoryStats(false); err != nil || s.PeakBytes == 0 {
		t.Errorf("MemoryStats() = %+v, %v", s, err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if c.closes.Load() != 1 {
		t.Fatalf("provider closed %d times", c.closes.Load())
	}
}

func TestProviderFunc(t *testing.T) {
	w := tinyWeights()
	m := newTiny(t, ProviderFunc(func(req *WeightRequest, dst []byte) error {
		if req.DType != Float32 || len(req.Shape) != 1 || req.Shape[0] != 4 || req.ByteSize != 16 || len(dst) != 16 {
			t.Errorf("request %+v, len(dst) %d", req, len(dst))
		}
		copy(dst, w[req.File])
		return nil
	}))
	defer m.Close()
	if err := m.Run(); err != nil {
		t.Fatal(err)
	}
	if y := outputY(t, m); !equalF32(y, tinyY) {
		t.Fatalf("y = %v", y)
	}
}

func TestFailingProviderKeepsModelUsable(t *testing.T) {
	bad := &counters{}
	m := newTiny(t, &mapProvider{weights: tinyWeights(), c: bad, failOn: "v.bin"})
	err := m.Run()
	if !errors.Is(err, ErrCallback) || !strings.Contains(err.Error(), "disk on fire while reading v.bin") {
		t.Fatalf("Run() = %v", err)
	}
	if m.OutputCount() != 0 {
		t.Fatal("outputs after a failed run")
	}
	good := &counters{}
	if err := m.SetWeightsProvider(&mapProvider{weights: tinyWeights(), c: good}); err != nil {
		t.Fatal(err)
	}
	if bad.closes.Load() != 1 {
		t.Fatalf("replaced provider closed %d times", bad.closes.Load())
	}
	if err := m.Run(); err != nil {
		t.Fatal(err)
	}
	m.Close()
	m.Close() // idempotent
	if bad.closes.Load() != 1 || good.closes.Load() != 1 {
		t.Fatalf("closes: replaced %d, current %d", bad.closes.Load(), good.closes.Load())
	}
}

func TestPanickingProviderBecomesCallbackError(t *testing.T) {
	c := &counters{}
	m := newTiny(t, &mapProvider{weights: tinyWeights(), c: c, panicOn: "w.bin"})
	for i := 0; i < 2; i++ {
		err := m.Run()
		if !errors.Is(err, ErrCallback) || !strings.Contains(err.Error(), "panicked: provider exploded on w.bin") {
			t.Fatalf("Run() = %v", err)
		}
	}
	m.Close()
	if c.closes.Load() != 1 {
		t.Fatalf("closed %d times", c.closes.Load())
	}
}

func TestLongErrorTruncatedOnRuneBoundary(t *testing.T) {
	m := newTiny(t, ProviderFunc(func(*WeightRequest, []byte) error {
		return errors.New(strings.Repeat("é", 1000))
	}))
	defer m.Close()
	err := m.Run()
	if !errors.Is(err, ErrCallback) || !strings.Contains(err.Error(), "éé") || strings.ContainsRune(err.Error(), '\uFFFD') {
		t.Fatalf("Run() = %v", err)
	}
}

func TestLenderReleasesEveryLease(t *testing.T) {
	c := &counters{}
	m := newTiny(t, newMmapLender(t, tinyWeights(), c))
	for run := int64(1); run <= 3; run++ {
		if err := m.Run(); err != nil {
			t.Fatal(err)
		}
		if y := outputY(t, m); !equalF32(y, tinyY) {
			t.Fatalf("y = %v", y)
		}
		if c.lends.Load() < 2*run || c.releases.Load() != c.lends.Load() {
			t.Fatalf("run %d: lends %d releases %d", run, c.lends.Load(), c.releases.Load())
		}
	}
	m.Close()
	if c.closes.Load() != 1 || c.releases.Load() != c.lends.Load() {
		t.Fatalf("closes %d lends %d releases %d", c.closes.Load(), c.lends.Load(), c.releases.Load())
	}
}

func TestLenderOfWrongSizeIsRejected(t *testing.T) {
	c := &counters{}
	l := newMmapLender(t, tinyWeights(), c)
	l.shortBy = 4
	m := newTiny(t, l)
	defer m.Close()
	err := m.Run()
	if !errors.Is(err, ErrCallback) || !strings.Contains(err.Error(), "lent 12 bytes but the weight needs 16") {
		t.Fatalf("Run() = %v", err)
	}
	if c.releases.Load() != c.lends.Load() {
		t.Fatalf("rejected lease not released: lends %d releases %d", c.lends.Load(), c.releases.Load())
	}
}

func TestProgressAndCancel(t *testing.T) {
	m := newTiny(t, &mapProvider{weights: tinyWeights(), c: &counters{}})
	defer m.Close()
	var seen []string
	if err := m.SetProgressFunc(func(p *Progress) bool {
		seen = append(seen, p.OpName+":"+p.OpType)
		if p.OpCount != 2 {
			t.Errorf("OpCount %d", p.OpCount)
		}
		return true
	}); err != nil {
		t.Fatal(err)
	}
	if err := m.Run(); err != nil {
		t.Fatal(err)
	}
	if strings.Join(seen, ",") != "add:Add,mul:Mul" {
		t.Fatalf("progress saw %v", seen)
	}
	calls := 0
	if err := m.SetProgressFunc(func(p *Progress) bool { calls++; return p.OpIndex != 0 }); err != nil {
		t.Fatal(err)
	}
	if err := m.Run(); !errors.Is(err, ErrCancelled) || calls != 1 || m.OutputCount() != 0 {
		t.Fatalf("Run() = %v after %d calls", err, calls)
	}
	if err := m.SetProgressFunc(nil); err != nil {
		t.Fatal(err)
	}
	if err := m.Run(); err != nil {
		t.Fatal(err)
	}
}

func TestPanickingProgressCancelsWithMessage(t *testing.T) {
	m := newTiny(t, &mapProvider{weights: tinyWeights(), c: &counters{}})
	defer m.Close()
	if err := m.SetProgressFunc(func(*Progress) bool { panic("progress went wrong") }); err != nil {
		t.Fatal(err)
	}
	err := m.Run()
	if !errors.Is(err, ErrCallback) || !strings.Contains(err.Error(), "progress callback panicked: progress went wrong") {
		t.Fatalf("Run() = %v", err)
	}
	m.SetProgressFunc(nil)
	if err := m.Run(); err != nil {
		t.Fatal(err)
	}
}

func TestClosingMidwayReleasesProviderOnce(t *testing.T) {
	// Cancelled half way with a lender; Close releases everything exactly once.
	c := &counters{}
	m := newTiny(t, newMmapLender(t, tinyWeights(), c))
	m.SetProgressFunc(func(*Progress) bool { return false })
	if err := m.Run(); !errors.Is(err, ErrCancelled) {
		t.Fatalf("Run() = %v", err)
	}
	if c.closes.Load() != 0 {
		t.Fatal("provider closed before the model")
	}
	m.Close()
	if c.closes.Load() != 1 || c.releases.Load() != c.lends.Load() {
		t.Fatalf("closes %d lends %d releases %d", c.closes.Load(), c.lends.Load(), c.releases.Load())
	}
	// Never loaded.
	c = &counters{}
	m, _ = NewModel(Options{})
	m.SetWeightsProvider(&mapProvider{weights: tinyWeights(), c: c})
	m.Close()
	if c.closes.Load() != 1 {
		t.Fatalf("closes %d", c.closes.Load())
	}
	// A closed model refuses work instead of crashing.
	if err := m.Run(); !errors.Is(err, ErrBadState) {
		t.Fatalf("Run() after Close = %v", err)
	}
}

func TestFinalizerReleasesForgottenModel(t *testing.T) {
	c := &counters{}
	func() {
		m := newTiny(t, &mapProvider{weights: tinyWeights(), c: c})
		if err := m.Run(); err != nil {
			t.Fatal(err)
		}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for c.closes.Load() == 0 && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if c.closes.Load() != 1 {
		t.Fatalf("provider closed %d times after the model became unreachable", c.closes.Load())
	}
}

func TestModelsRunConcurrently(t *testing.T) {
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := 0; g < 4; g++ {
		m := newTiny(t, &mapProvider{weights: tinyWeights(), c: &counters{}})
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer m.Close()
			for i := 0; i < 20; i++ {
				if err := m.Run(); err != nil {
					errs <- err
					return
				}
				out, _ := m.OutputByName("y")
				y, _ := out.Float32()
				if !equalF32(y, tinyY) {
					errs <- errors.New("wrong output")
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func TestLogFunc(t *testing.T) {
	var log lockedLog
	m, err := NewModel(Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.SetLogFunc(LogInfo, func(level LogLevel, msg string) { log.add(msg) }); err != nil {
		t.Fatal(err)
	}
	m.SetWeightsProvider(&mapProvider{weights: tinyWeights(), c: &counters{}})
	if err := m.LoadString(tinyModel, ""); err != nil {
		t.Fatal(err)
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	if !strings.Contains(strings.Join(log.lines, "\n"), "2 ops") {
		t.Fatalf("log: %q", log.lines)
	}
}

func TestBuiltinProviders(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "model.txt"), []byte(tinyModel), 0o644)
	for name, b := range tinyWeights() {
		os.WriteFile(filepath.Join(dir, name), b, 0o644)
	}
	for _, p := range []BuiltinProvider{ProviderDefault, ProviderNoCache, ProviderPrefetch, ProviderMmap, ProviderRAM} {
		m, err := Open(dir, Options{Threads: 1, Provider: p})
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Push("x", []int64{1, 4}, tinyX); err != nil {
			t.Fatal(err)
		}
		if err := m.Run(); err != nil {
			t.Fatalf("provider %d: %v", p, err)
		}
		if y := outputY(t, m); !equalF32(y, tinyY) {
			t.Fatalf("provider %d: y = %v", p, y)
		}
		m.Close()
	}
}

func TestHalfToFloat32(t *testing.T) {
	cases := map[uint16]float32{0x3c00: 1, 0xc000: -2, 0x7bff: 65504, 0x0001: 5.9604645e-8, 0x0000: 0}
	for h, want := range cases {
		if got := HalfToFloat32(h); got != want {
			t.Errorf("HalfToFloat32(%#x) = %v, want %v", h, got, want)
		}
	}
}

func TestMaxBytesGivesOutOfMemory(t *testing.T) {
	// 16 bytes: the pushed input (1x4 float32) fits exactly, the first weight or activation does not.
	c := &counters{}
	m, err := NewModel(Options{Threads: 1, MaxBytes: 16})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.SetWeightsProvider(&mapProvider{weights: tinyWeights(), c: c}); err != nil {
		t.Fatal(err)
	}
	if err := m.LoadString(tinyModel, ""); err != nil {
		t.Fatal(err)
	}
	if err := m.Push("x", []int64{1, 4}, tinyX); err != nil {
		t.Fatal(err)
	}
	err = m.Run()
	if !errors.Is(err, ErrOutOfMemory) || !strings.Contains(err.Error(), "max_bytes") {
		t.Fatalf("Run() = %v, want ErrOutOfMemory naming max_bytes", err)
	}
	// The same graph in a model without a budget runs correctly.
	roomy := newTiny(t, &mapProvider{weights: tinyWeights(), c: &counters{}})
	defer roomy.Close()
	if err := roomy.Run(); err != nil {
		t.Fatal(err)
	}
	if y := outputY(t, roomy); !equalF32(y, tinyY) {
		t.Fatalf("y = %v", y)
	}
}

func TestPackWeights(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "packed")
	writeTinyFolder(t, dir)
	if err := PackWeights(dir, true); err != nil {
		t.Fatal(err)
	}
	store, err := os.ReadFile(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	if left := binFiles(t, dir); len(left) != 0 {
		t.Fatalf("left behind: %v", left)
	}
	if text, err := os.ReadFile(filepath.Join(dir, "model.txt")); err != nil || string(text) != tinyModel {
		t.Fatalf("model.txt changed: %q %v", text, err)
	}
	// 8-byte header length, the JSON header naming both tensors, then their 32 bytes of data.
	n := int(binary.LittleEndian.Uint64(store))
	header := string(store[8 : 8+n])
	if !strings.Contains(header, `"w"`) || !strings.Contains(header, `"v"`) || !strings.Contains(header, "F32") {
		t.Fatalf("header %s", header)
	}
	if len(store) != 8+n+32 {
		t.Fatalf("model.safetensors is %d bytes, header %d", len(store), n)
	}
	for _, p := range []BuiltinProvider{ProviderNoCache, ProviderPrefetch, ProviderMmap, ProviderRAM} {
		if y := runTinyFolder(t, dir, p); !equalF32(y, tinyY) {
			t.Fatalf("provider %d: y = %v", p, y)
		}
	}

	// A folder that already has its store is refused with the library's message, and left as it was.
	err = PackWeights(dir, true)
	var e *Error
	if !errors.As(err, &e) || e.Status != ErrInvalidArgument ||
		!strings.Contains(e.Message, dir) || !strings.Contains(e.Message, "model.safetensors") {
		t.Fatalf("packing twice: %v", err)
	}
	if again, _ := os.ReadFile(filepath.Join(dir, "model.safetensors")); string(again) != string(store) {
		t.Fatal("the store changed")
	}

	// Without removeFiles the .bin files stay next to the store.
	kept := filepath.Join(t.TempDir(), "kept")
	writeTinyFolder(t, kept)
	if err := PackWeights(kept, false); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(kept, "model.safetensors")); err != nil || string(b) != string(store) {
		t.Fatalf("kept store differs: %v", err)
	}
	if files := binFiles(t, kept); !equalStrings(files, []string{"v.bin", "w.bin"}) {
		t.Fatalf(".bin files %v", files)
	}
	if y := runTinyFolder(t, kept, ProviderDefault); !equalF32(y, tinyY) {
		t.Fatalf("y = %v", y)
	}
	if err := PackWeights(kept, false); !errors.Is(err, ErrInvalidArgument) {
		t.Fatalf("packing twice: %v", err)
	}
}

func TestPackWeightsErrors(t *testing.T) {
	dir := t.TempDir()
	// No model.txt.
	err := PackWeights(filepath.Join(dir, "missing"), true)
	if !errors.Is(err, ErrIO) || !strings.Contains(err.Error(), "missing") {
		t.Errorf("no model.txt: %v", err)
	}
	// model.txt does not parse.
	os.WriteFile(filepath.Join(dir, "model.txt"), []byte("this is not model.txt\n"), 0o644)
	if err := PackWeights(dir, true); !errors.Is(err, ErrInvalidModel) {
		t.Errorf("bad model.txt: %v", err)
	}
	// A weight file is missing: nothing is written.
	os.WriteFile(filepath.Join(dir, "model.txt"), []byte(tinyModel), 0o644)
	os.WriteFile(filepath.Join(dir, "w.bin"), f32Bytes(tinyW), 0o644)
	if err := PackWeights(dir, true); !errors.Is(err, ErrIO) || !strings.Contains(err.Error(), "v.bin") {
		t.Errorf("missing weight: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "model.safetensors")); !os.IsNotExist(err) {
		t.Errorf("a store was written: %v", err)
	}
	if files := binFiles(t, dir); !equalStrings(files, []string{"w.bin"}) {
		t.Errorf(".bin files %v", files)
	}
	// A path with a NUL byte never reaches the library.
	if err := PackWeights("a\x00b", true); !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "NUL") {
		t.Errorf("NUL in path: %v", err)
	}
}

func TestFloat64AndUint64KeepTheirTypes(t *testing.T) {
	m, err := NewModel(Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.LoadString("t:Add*input:x(2);y(2)*output:t(2)\nm:Max*input:a(2);b(2)*output:m(2)\n", ""); err != nil {
		t.Fatal(err)
	}
	f64 := func(v ...float64) []byte {
		b := make([]byte, 8*len(v))
		for i, x := range v {
			binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(x))
		}
		return b
	}
	u64 := func(v ...uint64) []byte {
		b := make([]byte, 8*len(v))
		for i, x := range v {
			binary.LittleEndian.PutUint64(b[8*i:], x)
		}
		return b
	}
	// 2^40 + 0.5 needs float64's mantissa; 2^63 + 1 is beyond int64.
	for _, in := range []struct {
		name  string
		dtype DType
		data  []byte
	}{
		{"x", Float64, f64(1099511627776.5, -3)}, {"y", Float64, f64(1, 0.25)},
		{"a", Uint64, u64(1<<63+1, 7)}, {"b", Uint64, u64(5, math.MaxUint64)},
	} {
		if err := m.PushBytes(in.name, in.dtype, []int64{2}, in.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.Run(); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]struct {
		dtype DType
		data  []byte
	}{"t": {Float64, f64(1099511627777.5, -2.75)}, "m": {Uint64, u64(1<<63+1, math.MaxUint64)}} {
		out, err := m.OutputByName(name)
		if err != nil {
			t.Fatal(err)
		}
		if out.DType != want.dtype || string(out.Data) != string(want.data) {
			t.Errorf("%s: %v %x, want %v %x", name, out.DType, out.Data, want.dtype, want.data)
		}
	}
}
