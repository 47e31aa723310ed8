package onnxstream

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
)

// tinyModel is y = (x + w) * v with x: (1,4) input and 4-element weights w and v.
const tinyModel = "add:Add*input:x(1,4);w.bin(float32:4)*output:a(1,4)\n" +
	"mul:Mul*input:a(1,4);v.bin(float32:4)*output:y(1,4)\n"

var (
	tinyX = []float32{1, 2, 3, 4}
	tinyW = []float32{10, 20, 30, 40}
	tinyV = []float32{2, 2, 2, 2}
	tinyY = []float32{22, 44, 66, 88}
)

func f32Bytes(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

func tinyWeights() map[string][]byte {
	return map[string][]byte{"w.bin": f32Bytes(tinyW), "v.bin": f32Bytes(tinyV)}
}

type counters struct {
	reads, prefetches, closes, lends, releases atomic.Int64
}

// mapProvider serves weights from memory; failOn makes one file fail, panicOn one panic.
type mapProvider struct {
	weights map[string][]byte
	c       *counters
	failOn  string
	panicOn string
}

func (p *mapProvider) ReadWeights(req *WeightRequest, dst []byte) error {
	p.c.reads.Add(1)
	switch req.File {
	case p.failOn:
		return fmt.Errorf("disk on fire while reading %s", req.File)
	case p.panicOn:
		panic("provider exploded on " + req.File)
	}
	b, ok := p.weights[req.File]
	if !ok {
		return fmt.Errorf("no weight %s", req.File)
	}
	copy(dst, b)
	return nil
}

func (p *mapProvider) Prefetch(req *WeightRequest) { p.c.prefetches.Add(1) }

func (p *mapProvider) Close() error {
	p.c.closes.Add(1)
	return nil
}

// mmapLender lends weights from an anonymous memory map (outside the Go heap, as cgo requires).
type mmapLender struct {
	region  []byte
	offsets map[string][2]int
	c       *counters
	shortBy int
}

func newMmapLender(t testing.TB, weights map[string][]byte, c *counters) *mmapLender {
	total := 0
	for _, b := range weights {
		total += (len(b) + 63) &^ 63
	}
	region, err := syscall.Mmap(-1, 0, total+64, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatalf("mmap: %v", err)
	}
	l := &mmapLender{region: region, offsets: map[string][2]int{}, c: c}
	off := 0
	for name, b := range weights {
		copy(region[off:], b)
		l.offsets[name] = [2]int{off, len(b)}
		off += (len(b) + 63) &^ 63
	}
	return l
}

func (l *mmapLender) ReadWeights(req *WeightRequest, dst []byte) error {
	return errors.New("ReadWeights must not be called on a Lender")
}

func (l *mmapLender) LendWeights(req *WeightRequest) ([]byte, func(), error) {
	o, ok := l.offsets[req.File]
	if !ok {
		return nil, nil, fmt.Errorf("no weight %s", req.File)
	}
	l.c.lends.Add(1)
	return l.region[o[0]+l.shortBy : o[0]+o[1]], func() { l.c.releases.Add(1) }, nil
}

// Close unmaps the region: safe only because the model has released every lease by then.
func (l *mmapLender) Close() error {
	l.c.closes.Add(1)
	return syscall.Munmap(l.region)
}

func newTiny(t testing.TB, p WeightsProvider) *Model {
	t.Helper()
	m, err := NewModel(Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.SetWeightsProvider(p); err != nil {
		t.Fatal(err)
	}
	if err := m.LoadString(tinyModel, ""); err != nil {
		t.Fatal(err)
	}
	if err := m.Push("x", []int64{1, 4}, tinyX); err != nil {
		t.Fatal(err)
	}
	return m
}

func outputY(t testing.TB, m *Model) []float32 {
	t.Helper()
	return outputF32(t, m, "y")
}

// outputF32 is the float32 data of the output named name.
func outputF32(t testing.TB, m *Model, name string) []float32 {
	t.Helper()
	out, err := m.OutputByName(name)
	if err != nil {
		t.Fatal(err)
	}
	y, err := out.Float32()
	if err != nil {
		t.Fatal(err)
	}
	return y
}

func equalF32(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// sharedDir is ../shared next to the repository (override: ONNXSTREAM_SHARED_DIR). It skips the test
// when absent, unless ONNXSTREAM_REQUIRE_SHARED is set (meson sets it).
func sharedDir(t testing.TB) string {
	dir := os.Getenv("ONNXSTREAM_SHARED_DIR")
	if dir == "" {
		dir = filepath.Join("..", "..", "..", "shared")
	}
	if _, err := os.Stat(filepath.Join(dir, "models", "yolov8n", "model.txt")); err != nil {
		if os.Getenv("ONNXSTREAM_REQUIRE_SHARED") != "" {
			t.Fatalf("%s has no models/yolov8n (ONNXSTREAM_REQUIRE_SHARED is set)", dir)
		}
		t.Skipf("%s has no models/yolov8n (set ONNXSTREAM_SHARED_DIR)", dir)
	}
	return dir
}

func readF32(t testing.TB, path string) []float32 {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

func relL2(a, b []float32) float64 {
	var num, den float64
	for i := range a {
		d := float64(a[i]) - float64(b[i])
		num += d * d
		den += float64(b[i]) * float64(b[i])
	}
	return math.Sqrt(num / math.Max(den, 1e-30))
}

// loadWeightDir reads every .bin file of dir.
func loadWeightDir(t testing.TB, dir string) map[string][]byte {
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string][]byte{}
	for _, e := range entries {
		if filepath.Ext(e.Name()) == ".bin" {
			b, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			m[e.Name()] = b
		}
	}
	return m
}

// lockedLog collects log lines from any thread.
type lockedLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *lockedLog) add(s string) {
	l.mu.Lock()
	l.lines = append(l.lines, s)
	l.mu.Unlock()
}

// writeTinyFolder writes tinyModel and its two weight files into dir (created).
func writeTinyFolder(t testing.TB, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	files := tinyWeights()
	files["model.txt"] = []byte(tinyModel)
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// copyFolder copies every file of from into to (created), e.g. a model folder.
func copyFolder(t testing.TB, from, to string) {
	t.Helper()
	entries, err := os.ReadDir(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(to, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(from, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(to, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// binFiles lists the .bin files of dir, sorted.
func binFiles(t testing.TB, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	names := []string{}
	for _, e := range entries { // os.ReadDir sorts by name
		if filepath.Ext(e.Name()) == ".bin" {
			names = append(names, e.Name())
		}
	}
	return names
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// runTinyFolder loads the tiny model from dir with a built-in provider and returns y.
func runTinyFolder(t testing.TB, dir string, p BuiltinProvider) []float32 {
	t.Helper()
	m, err := Open(dir, Options{Threads: 1, Provider: p})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.Push("x", []int64{1, 4}, tinyX); err != nil {
		t.Fatal(err)
	}
	if err := m.Run(); err != nil {
		t.Fatalf("provider %d: %v", p, err)
	}
	return outputY(t, m)
}
