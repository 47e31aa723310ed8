package onnxstream

import (
	"encoding/binary"
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
