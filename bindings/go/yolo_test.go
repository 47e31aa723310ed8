package onnxstream

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const yoloThreads = 2

func runYolo(t *testing.T, shared string, p WeightsProvider) []float32 {
	dir := filepath.Join(shared, "models", "yolov8n")
	m, err := NewModel(Options{Threads: yoloThreads})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.SetWeightsProvider(p); err != nil {
		t.Fatal(err)
	}
	// Only model.txt comes from disk: every weight comes from the provider.
	text, err := os.ReadFile(filepath.Join(dir, "model.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.LoadString(string(text), ""); err != nil {
		t.Fatal(err)
	}
	input := readF32(t, filepath.Join(shared, "data", "yolov8n", "input_images_1x3x640x640_f32.bin"))
	if err := m.Push("images", []int64{1, 3, 640, 640}, input); err != nil {
		t.Fatal(err)
	}
	if err := m.Run(); err != nil {
		t.Fatal(err)
	}
	out, err := m.OutputByName("output0")
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Shape) != 3 || out.Shape[0] != 1 || out.Shape[1] != 84 || out.Shape[2] != 8400 {
		t.Fatalf("output0 shape %v", out.Shape)
	}
	y, err := out.Float32()
	if err != nil {
		t.Fatal(err)
	}
	return y
}

// readNpyF32 reads a little-endian float32 .npy file (onnxstream-run --output-dir).
func readNpyF32(t *testing.T, path string) []float32 {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(b[:6]) != "\x93NUMPY" {
		t.Fatalf("%s is not .npy", path)
	}
	start, n := 10, int(binary.LittleEndian.Uint16(b[8:]))
	if b[6] != 1 {
		start, n = 12, int(binary.LittleEndian.Uint32(b[8:]))
	}
	if header := string(b[start : start+n]); !strings.Contains(header, "'<f4'") {
		t.Fatalf("%s: not float32: %s", path, header)
	}
	data := b[start+n:]
	out := make([]float32, len(data)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
	}
	return out
}

func TestYolov8nMatchesReferenceAndCLI(t *testing.T) {
	shared := sharedDir(t)
	c := &counters{}
	y := runYolo(t, shared, &mapProvider{weights: loadWeightDir(t, filepath.Join(shared, "models", "yolov8n")), c: c})
	if c.closes.Load() != 1 || c.reads.Load() == 0 {
		t.Fatalf("closes %d reads %d", c.closes.Load(), c.reads.Load())
	}
	expected := readF32(t, filepath.Join(shared, "data", "yolov8n", "expected_output0_1x84x8400_f32.bin"))
	if e := relL2(y, expected); e > 1e-4 {
		t.Fatalf("rel L2 vs ONNX Runtime %.3e > 1e-4", e)
	} else {
		t.Logf("rel L2 vs ONNX Runtime %.3e", e)
	}

	cli := os.Getenv("ONNXSTREAM_RUN")
	if cli == "" {
		t.Log("ONNXSTREAM_RUN is not set: skipping the comparison with the C CLI")
		return
	}
	outDir := t.TempDir()
	cmd := exec.Command(cli, filepath.Join(shared, "models", "yolov8n"),
		"--input", "images="+filepath.Join(shared, "data", "yolov8n", "input_images_1x3x640x640_f32.bin"),
		"--threads", strconv.Itoa(yoloThreads), "--provider", "nocache", "--output-dir", outDir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", cli, err, out)
	}
	ref := readNpyF32(t, filepath.Join(outDir, "output0.npy"))
	if len(ref) != len(y) {
		t.Fatalf("CLI output has %d values, Go %d", len(ref), len(y))
	}
	maxDiff := 0.0
	for i := range y {
		maxDiff = math.Max(maxDiff, math.Abs(float64(y[i])-float64(ref[i])))
	}
	t.Logf("max |diff| vs onnxstream-run: %g", maxDiff)
	if maxDiff != 0 {
		t.Fatalf("the Go provider changed the result: max |diff| %g, rel L2 %.3e", maxDiff, relL2(y, ref))
	}
}

// balanced keeps the prepared convolutions it chose after the first run; the later runs reuse them and must
// still match ONNX Runtime.
func TestYolov8nBalancedKeepsKernels(t *testing.T) {
	shared := sharedDir(t)
	m, err := NewModel(Options{Threads: yoloThreads})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if err := m.Load(filepath.Join(shared, "models", "yolov8n")); err != nil {
		t.Fatal(err)
	}
	input := readF32(t, filepath.Join(shared, "data", "yolov8n", "input_images_1x3x640x640_f32.bin"))
	expected := readF32(t, filepath.Join(shared, "data", "yolov8n", "expected_output0_1x84x8400_f32.bin"))
	if err := m.Push("images", []int64{1, 3, 640, 640}, input); err != nil {
		t.Fatal(err)
	}
	for run := 1; run <= 3; run++ {
		if err := m.Run(); err != nil {
			t.Fatal(err)
		}
		if e := relL2(outputF32(t, m, "output0"), expected); e > 1e-4 {
			t.Fatalf("run %d: rel L2 vs ONNX Runtime %.3e > 1e-4", run, e)
		}
	}
	s, err := m.RunStats()
	if err != nil || s.KeptKernels == 0 || s.KeptKernelBytes == 0 || s.KeptKernelBytes > 24<<20 {
		t.Fatalf("RunStats() = %+v, %v", s, err)
	}
}

func TestYolov8nZeroCopyLender(t *testing.T) {
	shared := sharedDir(t)
	c := &counters{}
	y := runYolo(t, shared, newMmapLender(t, loadWeightDir(t, filepath.Join(shared, "models", "yolov8n")), c))
	expected := readF32(t, filepath.Join(shared, "data", "yolov8n", "expected_output0_1x84x8400_f32.bin"))
	if e := relL2(y, expected); e > 1e-4 {
		t.Fatalf("rel L2 %.3e", e)
	}
	if c.reads.Load() != 0 || c.lends.Load() == 0 || c.releases.Load() != c.lends.Load() || c.closes.Load() != 1 {
		t.Fatalf("reads %d lends %d releases %d closes %d", c.reads.Load(), c.lends.Load(), c.releases.Load(), c.closes.Load())
	}
}

// runYoloFolder loads YOLOv8n from dir with a built-in provider and returns output0.
func runYoloFolder(t *testing.T, shared, dir string, p BuiltinProvider) []float32 {
	t.Helper()
	m, err := Open(dir, Options{Threads: yoloThreads, Provider: p})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	input := readF32(t, filepath.Join(shared, "data", "yolov8n", "input_images_1x3x640x640_f32.bin"))
	if err := m.Push("images", []int64{1, 3, 640, 640}, input); err != nil {
		t.Fatal(err)
	}
	if err := m.Run(); err != nil {
		t.Fatal(err)
	}
	out, err := m.OutputByName("output0")
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Shape) != 3 || out.Shape[0] != 1 || out.Shape[1] != 84 || out.Shape[2] != 8400 {
		t.Fatalf("output0 shape %v", out.Shape)
	}
	y, err := out.Float32()
	if err != nil {
		t.Fatal(err)
	}
	return y
}

// bitEqual fails the test unless a and b hold the same float32 bits.
func bitEqual(t *testing.T, a, b []float32, what string) {
	t.Helper()
	if len(a) != len(b) {
		t.Fatalf("%s: %d vs %d values", what, len(a), len(b))
	}
	differ := 0
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			differ++
		}
	}
	if differ != 0 {
		t.Fatalf("%s: %d of %d values differ (rel L2 %.3e)", what, differ, len(a), relL2(a, b))
	}
}

func TestYolov8nPackedWeights(t *testing.T) {
	shared := sharedDir(t)
	original := filepath.Join(shared, "models", "yolov8n")
	files := binFiles(t, original)
	if len(files) < 100 {
		t.Fatalf("%d weight files", len(files))
	}
	tmp := t.TempDir()

	// The loose .bin files: the reference's output, and the Go provider's bit for bit.
	bins := filepath.Join(tmp, "bins")
	copyFolder(t, original, bins)
	fromFiles := runYoloFolder(t, shared, bins, ProviderNoCache)
	expected := readF32(t, filepath.Join(shared, "data", "yolov8n", "expected_output0_1x84x8400_f32.bin"))
	if e := relL2(fromFiles, expected); e > 1e-4 {
		t.Fatalf("rel L2 vs ONNX Runtime %.3e > 1e-4", e)
	}
	fromGo := runYolo(t, shared, &mapProvider{weights: loadWeightDir(t, original), c: &counters{}})
	bitEqual(t, fromFiles, fromGo, ".bin files vs Go provider")

	// Packed, the .bin files removed: the same output with every way of reading the store.
	packed := filepath.Join(tmp, "packed")
	copyFolder(t, original, packed)
	if err := PackWeights(packed, true); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(filepath.Join(packed, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(packed, "model.txt")); err != nil {
		t.Fatal(err)
	}
	if left := binFiles(t, packed); len(left) != 0 {
		t.Fatalf("%d .bin files left, e.g. %s", len(left), left[0])
	}
	weightBytes := int64(0)
	for _, f := range files {
		fi, err := os.Stat(filepath.Join(original, f))
		if err != nil {
			t.Fatal(err)
		}
		weightBytes += fi.Size()
	}
	if st.Size() <= weightBytes {
		t.Fatalf("model.safetensors is %d bytes, the weights %d", st.Size(), weightBytes)
	}
	for _, p := range []BuiltinProvider{ProviderNoCache, ProviderMmap, ProviderRAM} {
		bitEqual(t, runYoloFolder(t, shared, packed, p), fromFiles, fmt.Sprintf("model.safetensors (provider %d) vs .bin files", p))
	}

	// Packed, the .bin files kept; packing it again is refused with the library's message.
	kept := filepath.Join(tmp, "kept")
	copyFolder(t, original, kept)
	if err := PackWeights(kept, false); err != nil {
		t.Fatal(err)
	}
	if got := binFiles(t, kept); !equalStrings(got, files) {
		t.Fatalf("%d .bin files kept of %d", len(got), len(files))
	}
	store, err := os.ReadFile(filepath.Join(kept, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(packed, "model.safetensors")); string(b) != string(store) {
		t.Fatal("the kept and the packed folder's stores differ")
	}
	err = PackWeights(kept, true)
	var e *Error
	if !errors.As(err, &e) || e.Status != ErrInvalidArgument ||
		!strings.Contains(e.Message, kept) || !strings.Contains(e.Message, "model.safetensors") {
		t.Fatalf("packing twice: %v", err)
	}
	if got := binFiles(t, kept); !equalStrings(got, files) {
		t.Fatalf("packing twice removed files: %d left", len(got))
	}
	if b, _ := os.ReadFile(filepath.Join(kept, "model.safetensors")); string(b) != string(store) {
		t.Fatal("packing twice changed the store")
	}
	bitEqual(t, runYoloFolder(t, shared, kept, ProviderNoCache), fromFiles, "kept vs .bin files")
}

// fileReader is the Go counterpart of the built-in nocache provider: it reads each weight file when
// asked.
type fileReader string

func (dir fileReader) ReadWeights(req *WeightRequest, dst []byte) error {
	f, err := os.Open(filepath.Join(string(dir), req.File))
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.ReadFull(f, dst)
	return err
}

// benchmarkYolo times Run on YOLOv8n with 2 threads; provider nil means the built-in nocache one.
//
//	go test -run '^$' -bench Yolo -benchtime 20x
func benchmarkYolo(b *testing.B, provider func(dir string) WeightsProvider) {
	shared := sharedDir(b)
	dir := filepath.Join(shared, "models", "yolov8n")
	m, err := NewModel(Options{Threads: yoloThreads, Provider: ProviderNoCache})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	if provider != nil {
		if err := m.SetWeightsProvider(provider(dir)); err != nil {
			b.Fatal(err)
		}
	}
	if err := m.Load(dir); err != nil {
		b.Fatal(err)
	}
	input := readF32(b, filepath.Join(shared, "data", "yolov8n", "input_images_1x3x640x640_f32.bin"))
	if err := m.Push("images", []int64{1, 3, 640, 640}, input); err != nil {
		b.Fatal(err)
	}
	if err := m.Run(); err != nil { // warm-up: plans, page cache
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := m.Run(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkYoloBuiltinNoCache(b *testing.B) { benchmarkYolo(b, nil) }

func BenchmarkYoloGoFileReader(b *testing.B) {
	benchmarkYolo(b, func(dir string) WeightsProvider { return fileReader(dir) })
}

func BenchmarkYoloGoMemory(b *testing.B) {
	benchmarkYolo(b, func(dir string) WeightsProvider {
		return &mapProvider{weights: loadWeightDir(b, dir), c: &counters{}}
	})
}

func BenchmarkYoloGoMmapLender(b *testing.B) {
	benchmarkYolo(b, func(dir string) WeightsProvider { return newMmapLender(b, loadWeightDir(b, dir), &counters{}) })
}
