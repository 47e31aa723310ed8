package onnxstream

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// profileModel is y = x · W (2x3 · 3x4), z = relu(y), s = z + z.
const profileModel = "mm:MatMul*input:x(2,3);w.bin(float32:3,4)*output:y(2,4)\n" +
	"act:Relu*input:y(2,4)*output:z(2,4)\n" +
	"sum:Add*input:z(2,4);z(2,4)*output:s(2,4)\n"

var (
	profileX = []float32{1, 2, 3, -1, 0.5, 2}
	profileW = []float32{1, 0, -1, 2, 0.5, 1, 0, -2, 1, 1, 1, 1}
)

func newProfileModel(t *testing.T, profile bool) *Model {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "w.bin"), f32Bytes(profileW), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := NewModel(Options{Threads: 1, Provider: ProviderNoCache, Profile: profile})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	if err := m.LoadString(profileModel, dir); err != nil {
		t.Fatal(err)
	}
	if err := m.Push("x", []int64{2, 3}, profileX); err != nil {
		t.Fatal(err)
	}
	return m
}

// expectedS is 2 * relu(x · W), computed here.
func expectedS() []float32 {
	s := make([]float32, 8)
	for i := 0; i < 2; i++ {
		for j := 0; j < 4; j++ {
			var y float32
			for k := 0; k < 3; k++ {
				y += profileX[i*3+k] * profileW[k*4+j]
			}
			s[i*4+j] = 2 * float32(math.Max(float64(y), 0))
		}
	}
	return s
}

func TestProfileRecordsEveryOp(t *testing.T) {
	m := newProfileModel(t, true)
	if ops, err := m.Profile(); err != nil || len(ops) != 0 {
		t.Fatalf("before the first run: Profile() = %+v, %v", ops, err)
	}
	if err := m.Run(); err != nil {
		t.Fatal(err)
	}
	out, err := m.OutputByName("s")
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := out.Float32(); !equalF32(s, expectedS()) {
		t.Fatalf("s = %v, want %v", s, expectedS())
	}
	ops, err := m.Profile()
	if err != nil {
		t.Fatal(err)
	}
	if len(ops) != 3 {
		t.Fatalf("%d ops profiled: %+v", len(ops), ops)
	}
	names := [][2]string{{"mm", "MatMul"}, {"act", "Relu"}, {"sum", "Add"}}
	var previousEnd int64
	for i, op := range ops {
		if op.OpIndex != i || op.Line != i+1 || op.OpName != names[i][0] || op.OpType != names[i][1] {
			t.Errorf("op %d: %+v", i, op)
		}
		if int64(op.Start) < previousEnd {
			t.Errorf("op %d starts at %v, before the previous op ends (%v)", i, op.Start, previousEnd)
		}
		previousEnd = int64(op.Start + op.Duration)
		if op.WeightWait > op.Duration || op.KernelPrepare > op.Duration || op.MemoryBytes == 0 {
			t.Errorf("op %d: %+v", i, op)
		}
	}

	const rows, cols, inner, f32 = 2, 4, 3, 4
	mm := ops[0]
	if mm.Inputs != "float32[2,3], w:float32[3,4]" || mm.Outputs != "float32[2,4]" {
		t.Errorf("MatMul shapes %q -> %q", mm.Inputs, mm.Outputs)
	}
	if mm.FLOPs != 2*rows*cols*inner { // 2 per multiply-add
		t.Errorf("MatMul FLOPs %d", mm.FLOPs)
	}
	if mm.WeightBytes != inner*cols*f32 || mm.ActivationBytes != (rows*inner+rows*cols)*f32 {
		t.Errorf("MatMul bytes: weight %d, activation %d", mm.WeightBytes, mm.ActivationBytes)
	}
	relu := ops[1]
	if relu.Inputs != "float32[2,4]" || relu.FLOPs != 0 || relu.WeightBytes != 0 || relu.ActivationBytes != 2*rows*cols*f32 {
		t.Errorf("Relu: %+v", relu)
	}
	add := ops[2]
	if add.FLOPs != 0 || add.WeightBytes != 0 || add.ActivationBytes != 3*rows*cols*f32 { // z twice in, s out
		t.Errorf("Add: %+v", add)
	}

	// The records are Go copies: a later run and Close leave them intact.
	if err := m.Run(); err != nil {
		t.Fatal(err)
	}
	m.Close()
	if ops[0].OpName != "mm" || ops[0].Inputs != "float32[2,3], w:float32[3,4]" {
		t.Errorf("op 0 after Close: %+v", ops[0])
	}
	if _, err := m.Profile(); !errors.Is(err, ErrBadState) {
		t.Errorf("Profile on a closed model: %v", err)
	}
}

func TestRenderProfile(t *testing.T) {
	m := newProfileModel(t, true)
	if _, err := m.RenderProfile(ProfileTraceJSON, nil); !errors.Is(err, ErrBadState) {
		t.Errorf("before the first run: %v", err)
	}
	if err := m.Run(); err != nil {
		t.Fatal(err)
	}
	trace, err := m.RenderProfile(ProfileTraceJSON, nil)
	if err != nil {
		t.Fatal(err)
	}
	var parsed struct {
		TraceEvents []struct {
			Ph   string                 `json:"ph"`
			Cat  string                 `json:"cat"`
			Name string                 `json:"name"`
			Args map[string]interface{} `json:"args"`
		} `json:"traceEvents"`
	}
	if err := json.Unmarshal([]byte(trace), &parsed); err != nil {
		t.Fatalf("trace is not JSON: %v\n%s", err, trace)
	}
	var opEvents []string
	for _, e := range parsed.TraceEvents {
		if e.Cat != "op" {
			continue
		}
		op, _ := e.Args["op"].(string)
		opEvents = append(opEvents, e.Name+":"+op)
		if op == "mm" && e.Args["flops"] != float64(2*2*4*3) {
			t.Errorf("MatMul event: %+v", e)
		}
	}
	if strings.Join(opEvents, " ") != "MatMul:mm Relu:act Add:sum" {
		t.Errorf("op events %v", opEvents)
	}

	summary, err := m.RenderProfile(ProfileSummary, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(summary, "MatMul") || !strings.Contains(summary, "total") || strings.Contains(summary, "% peak") {
		t.Errorf("summary:\n%s", summary)
	}
	withPeak, err := m.RenderProfile(ProfileSummary, &Roofline{FLOPsPerSecond: 1e9, BytesPerSecond: 1e9})
	if err != nil || !strings.Contains(withPeak, "% peak") {
		t.Errorf("summary with a peak: %v\n%s", err, withPeak)
	}
	if _, err := m.RenderProfile(ProfileFormat(7), nil); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("unknown format: %v", err)
	}
}

func TestNoProfileWithoutTheOption(t *testing.T) {
	m := newProfileModel(t, false)
	if err := m.Run(); err != nil {
		t.Fatal(err)
	}
	if ops, err := m.Profile(); err != nil || len(ops) != 0 {
		t.Errorf("Profile() = %+v, %v", ops, err)
	}
	for _, f := range []ProfileFormat{ProfileTraceJSON, ProfileSummary} {
		_, err := m.RenderProfile(f, nil)
		if !errors.Is(err, ErrBadState) || !strings.Contains(err.Error(), "ONNXSTREAM_FLAG_PROFILE") {
			t.Errorf("RenderProfile(%d): %v", f, err)
		}
	}
}

func TestMeasureRoofline(t *testing.T) {
	r, err := MeasureRoofline(1)
	if err != nil {
		t.Fatal(err)
	}
	if !(r.FLOPsPerSecond > 0 && r.BytesPerSecond > 0) || math.IsInf(r.FLOPsPerSecond, 0) || math.IsInf(r.BytesPerSecond, 0) {
		t.Errorf("MeasureRoofline(1) = %+v", r)
	}
	if _, err := MeasureRoofline(-1); !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), "threads") {
		t.Errorf("MeasureRoofline(-1): %v", err)
	}
}
