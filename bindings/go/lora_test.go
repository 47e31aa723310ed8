package onnxstream

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// loraModel is y = x · W (2x3 · 3x4); the LoRA changes W by scale · (up · down)ᵀ (rank 1, no alpha).
const loraModel = "/mm/MatMul:MatMul*input:x(2,3);w.bin(float32:3,4)*output:y(2,4)\n"

var (
	loraX    = []float32{1, 2, 3, -1, 0.5, 2}
	loraW    = []float32{1, 0, -1, 2, 0.5, 1, 0, -2, 1, 1, 1, 1}
	loraUp   = []float32{1, 2, 3, 4} // [out 4, rank 1]
	loraDown = []float32{1, 0, -1}   // [rank 1, in 3]
)

type loraTensor struct {
	name   string
	shape  []int
	values []float32
}

// writeLora writes a safetensors file of float32 tensors.
func writeLora(t *testing.T, path string, tensors []loraTensor) {
	t.Helper()
	var header strings.Builder
	var data []byte
	header.WriteString("{")
	for i, tensor := range tensors {
		dims := make([]string, len(tensor.shape))
		for k, d := range tensor.shape {
			dims[k] = fmt.Sprint(d)
		}
		if i > 0 {
			header.WriteString(",")
		}
		raw := f32Bytes(tensor.values)
		fmt.Fprintf(&header, `"%s":{"dtype":"F32","shape":[%s],"data_offsets":[%d,%d]}`, tensor.name,
			strings.Join(dims, ","), len(data), len(data)+len(raw))
		data = append(data, raw...)
	}
	header.WriteString("}")
	file := binary.LittleEndian.AppendUint64(nil, uint64(header.Len()))
	file = append(append(file, header.String()...), data...)
	if err := os.WriteFile(path, file, 0o644); err != nil {
		t.Fatal(err)
	}
}

func newLoraModel(t *testing.T) (*Model, string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "w.bin"), f32Bytes(loraW), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := NewModel(Options{Threads: 1, Provider: ProviderNoCache})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	if err := m.LoadString(loraModel, dir); err != nil {
		t.Fatal(err)
	}
	if err := m.Push("x", []int64{2, 3}, loraX); err != nil {
		t.Fatal(err)
	}
	return m, dir
}

func loraExpected(scale float32) []float32 {
	y := make([]float32, 8)
	for r := 0; r < 2; r++ {
		for o := 0; o < 4; o++ {
			for i := 0; i < 3; i++ {
				y[r*4+o] += loraX[r*3+i] * (loraW[i*4+o] + scale*loraUp[o]*loraDown[i])
			}
		}
	}
	return y
}

func checkLoraOutput(t *testing.T, m *Model, scale float32) {
	t.Helper()
	if err := m.Run(); err != nil {
		t.Fatal(err)
	}
	got := outputY(t, m)
	for i, want := range loraExpected(scale) {
		if math.Abs(float64(got[i]-want)) > 1e-5*math.Max(1, math.Abs(float64(want))) {
			t.Fatalf("scale %g: y[%d] = %g, want %g", scale, i, got[i], want)
		}
	}
}

func TestAddLoraChangesTheWeightFromTheNextRun(t *testing.T) {
	m, dir := newLoraModel(t)
	lora := filepath.Join(dir, "lora.safetensors")
	writeLora(t, lora, []loraTensor{{"lora_unet_mm.lora_up.weight", []int{4, 1}, loraUp},
		{"lora_unet_mm.lora_down.weight", []int{1, 3}, loraDown}})
	checkLoraOutput(t, m, 0)
	if n, err := m.AddLora(lora, 0.5, "lora_unet_"); err != nil || n != 1 {
		t.Fatalf("AddLora: %d modules, %v", n, err)
	}
	checkLoraOutput(t, m, 0.5)
	if n, err := m.AddLora(lora, 1, "other_"); err != nil || n != 0 {
		t.Fatalf("AddLora with a prefix no key has: %d modules, %v", n, err)
	}
}

func TestAddLoraErrors(t *testing.T) {
	m, dir := newLoraModel(t)
	_, err := m.AddLora(filepath.Join(dir, "missing.safetensors"), 1, "")
	var e *Error
	if !errors.As(err, &e) || e.Status != ErrIO {
		t.Fatalf("missing file: %v", err)
	}
	bad := filepath.Join(dir, "bad.safetensors")
	writeLora(t, bad, []loraTensor{{"lora_unet_mm.lora_up.weight", []int{4, 1}, loraUp},
		{"lora_unet_mm.lora_down.weight", []int{1, 2}, loraDown[:2]}})
	_, err = m.AddLora(bad, 1, "")
	if !errors.As(err, &e) || e.Status != ErrInvalidArgument || !strings.Contains(e.Error(), "lora_unet_mm") {
		t.Fatalf("mis-shaped LoRA: %v", err)
	}
}
