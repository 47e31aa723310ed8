// Command yolo runs YOLOv8n object detection with every weight served from a Go in-memory map.
//
//	go run ./examples/yolo [-threads N] [MODEL_DIR [INPUT_1x3x640x640_f32.bin]]
//
// Defaults to ../shared/models/yolov8n and its reference input (../shared/data/yolov8n), found from the
// bindings/go folder. Prints one line per detection: class, score, and the box [x1, y1, x2, y2] in
// input (640x640) pixels.
package main

import (
	"encoding/binary"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"time"

	onnxstream "github.com/onnxstream/onnxstream/bindings/go"
)

var coco = [80]string{
	"person", "bicycle", "car", "motorcycle", "airplane", "bus", "train", "truck", "boat", "traffic light",
	"fire hydrant", "stop sign", "parking meter", "bench", "bird", "cat", "dog", "horse", "sheep", "cow",
	"elephant", "bear", "zebra", "giraffe", "backpack", "umbrella", "handbag", "tie", "suitcase", "frisbee",
	"skis", "snowboard", "sports ball", "kite", "baseball bat", "baseball glove", "skateboard", "surfboard",
	"tennis racket", "bottle", "wine glass", "cup", "fork", "knife", "spoon", "bowl", "banana", "apple",
	"sandwich", "orange", "broccoli", "carrot", "hot dog", "pizza", "donut", "cake", "chair", "couch",
	"potted plant", "bed", "dining table", "toilet", "tv", "laptop", "mouse", "remote", "keyboard", "cell phone",
	"microwave", "oven", "toaster", "sink", "refrigerator", "book", "clock", "vase", "scissors", "teddy bear",
	"hair drier", "toothbrush",
}

const (
	scoreThreshold = 0.25
	iouThreshold   = 0.45
)

// inMemory serves weights from a map: the model never touches the weight files.
type inMemory map[string][]byte

func (m inMemory) ReadWeights(req *onnxstream.WeightRequest, dst []byte) error {
	b, ok := m[req.File]
	if !ok {
		return fmt.Errorf("%s is not in the map", req.File)
	}
	copy(dst, b)
	return nil
}

type detection struct {
	class int
	score float32
	box   [4]float32 // x1, y1, x2, y2
}

func iou(a, b [4]float32) float32 {
	w := max32(0, min32(a[2], b[2])-max32(a[0], b[0]))
	h := max32(0, min32(a[3], b[3])-max32(a[1], b[1]))
	inter := w * h
	area := func(r [4]float32) float32 { return (r[2] - r[0]) * (r[3] - r[1]) }
	return inter / max32(area(a)+area(b)-inter, 1e-9)
}

func min32(a, b float32) float32 { return float32(math.Min(float64(a), float64(b))) }
func max32(a, b float32) float32 { return float32(math.Max(float64(a), float64(b))) }

// decode reads output0 (1, 84, anchors): rows 0-3 box cx, cy, w, h; rows 4-83 class scores.
func decode(out []float32, anchors int) []detection {
	var cands []detection
	for i := 0; i < anchors; i++ {
		best, score := 0, float32(-1)
		for c := 0; c < 80; c++ {
			if s := out[(4+c)*anchors+i]; s > score {
				best, score = c, s
			}
		}
		if score < scoreThreshold {
			continue
		}
		cx, cy, w, h := out[i], out[anchors+i], out[2*anchors+i], out[3*anchors+i]
		cands = append(cands, detection{best, score, [4]float32{cx - w/2, cy - h/2, cx + w/2, cy + h/2}})
	}
	sort.SliceStable(cands, func(a, b int) bool { return cands[a].score > cands[b].score })
	var kept []detection
	for _, d := range cands {
		keep := true
		for _, k := range kept {
			if k.class == d.class && iou(k.box, d.box) > iouThreshold {
				keep = false
				break
			}
		}
		if keep {
			kept = append(kept, d)
		}
	}
	return kept
}

func main() {
	threads := flag.Int("threads", 0, "worker threads (0 = one per core)")
	flag.Parse()
	shared := filepath.Join("..", "..", "..", "shared")
	modelDir := filepath.Join(shared, "models", "yolov8n")
	inputPath := filepath.Join(shared, "data", "yolov8n", "input_images_1x3x640x640_f32.bin")
	if flag.NArg() > 0 {
		modelDir = flag.Arg(0)
	}
	if flag.NArg() > 1 {
		inputPath = flag.Arg(1)
	}
	if err := run(modelDir, inputPath, *threads); err != nil {
		fmt.Fprintln(os.Stderr, "yolo:", err)
		os.Exit(1)
	}
}

func run(modelDir, inputPath string, threads int) error {
	entries, err := os.ReadDir(modelDir)
	if err != nil {
		return err
	}
	weights, total := inMemory{}, 0
	for _, e := range entries {
		if filepath.Ext(e.Name()) == ".bin" {
			b, err := os.ReadFile(filepath.Join(modelDir, e.Name()))
			if err != nil {
				return err
			}
			weights[e.Name()] = b
			total += len(b)
		}
	}
	fmt.Printf("%d weights (%.1f MB) loaded into memory from %s\n", len(weights), float64(total)/1e6, modelDir)

	model, err := onnxstream.NewModel(onnxstream.Options{Threads: threads})
	if err != nil {
		return err
	}
	defer model.Close()
	if err := model.SetWeightsProvider(weights); err != nil {
		return err
	}
	text, err := os.ReadFile(filepath.Join(modelDir, "model.txt"))
	if err != nil {
		return err
	}
	if err := model.LoadString(string(text), ""); err != nil {
		return err
	}
	raw, err := os.ReadFile(inputPath)
	if err != nil {
		return err
	}
	if len(raw) != 3*640*640*4 {
		return fmt.Errorf("%s has %d bytes; expected float32 1x3x640x640", inputPath, len(raw))
	}
	input := make([]float32, len(raw)/4)
	for i := range input {
		input[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	if err := model.Push("images", []int64{1, 3, 640, 640}, input); err != nil {
		return err
	}
	start := time.Now()
	if err := model.Run(); err != nil {
		return err
	}
	elapsed := time.Since(start)
	out, err := model.OutputByName("output0")
	if err != nil {
		return err
	}
	values, err := out.Float32()
	if err != nil {
		return err
	}
	dets := decode(values, int(out.Shape[len(out.Shape)-1]))
	fmt.Printf("run: %.1f ms, %d detections\n", float64(elapsed.Microseconds())/1e3, len(dets))
	for _, d := range dets {
		fmt.Printf("%s %.2f [%.0f, %.0f, %.0f, %.0f]\n", coco[d.class], d.score, d.box[0], d.box[1], d.box[2], d.box[3])
	}
	return nil
}
