//! YOLOv8n object detection with every weight served from a Rust in-memory map.
//!
//!     cargo run --example yolo [-- [MODEL_DIR [INPUT_1x3x640x640_f32.bin]] [--threads N]]
//!
//! Defaults to ../shared/models/yolov8n and its reference input (../shared/data/yolov8n). Prints one
//! line per detection: class, score, and the box [x1, y1, x2, y2] in input (640x640) pixels.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use onnxstream::{BoxError, Model, ModelOptions, WeightRequest, WeightsProvider};

const COCO: [&str; 80] = [
    "person",
    "bicycle",
    "car",
    "motorcycle",
    "airplane",
    "bus",
    "train",
    "truck",
    "boat",
    "traffic light",
    "fire hydrant",
    "stop sign",
    "parking meter",
    "bench",
    "bird",
    "cat",
    "dog",
    "horse",
    "sheep",
    "cow",
    "elephant",
    "bear",
    "zebra",
    "giraffe",
    "backpack",
    "umbrella",
    "handbag",
    "tie",
    "suitcase",
    "frisbee",
    "skis",
    "snowboard",
    "sports ball",
    "kite",
    "baseball bat",
    "baseball glove",
    "skateboard",
    "surfboard",
    "tennis racket",
    "bottle",
    "wine glass",
    "cup",
    "fork",
    "knife",
    "spoon",
    "bowl",
    "banana",
    "apple",
    "sandwich",
    "orange",
    "broccoli",
    "carrot",
    "hot dog",
    "pizza",
    "donut",
    "cake",
    "chair",
    "couch",
    "potted plant",
    "bed",
    "dining table",
    "toilet",
    "tv",
    "laptop",
    "mouse",
    "remote",
    "keyboard",
    "cell phone",
    "microwave",
    "oven",
    "toaster",
    "sink",
    "refrigerator",
    "book",
    "clock",
    "vase",
    "scissors",
    "teddy bear",
    "hair drier",
    "toothbrush",
];
const SCORE_THRESHOLD: f32 = 0.25;
const IOU_THRESHOLD: f32 = 0.45;

/// Serves weights from memory: the model never touches the weight files.
struct InMemory(HashMap<String, Vec<u8>>);

impl WeightsProvider for InMemory {
    fn read(&mut self, req: &WeightRequest<'_>, dst: &mut [u8]) -> Result<(), BoxError> {
        let bytes = self.0.get(&*req.file()).ok_or_else(|| format!("{} is not in the map", req.file()))?;
        dst.copy_from_slice(bytes);
        Ok(())
    }
}

#[derive(Clone, Copy, Debug)]
struct Detection {
    class: usize,
    score: f32,
    b: [f32; 4], // x1, y1, x2, y2
}

fn iou(a: &[f32; 4], b: &[f32; 4]) -> f32 {
    let w = (a[2].min(b[2]) - a[0].max(b[0])).max(0.0);
    let h = (a[3].min(b[3]) - a[1].max(b[1])).max(0.0);
    let inter = w * h;
    let area = |r: &[f32; 4]| (r[2] - r[0]) * (r[3] - r[1]);
    inter / (area(a) + area(b) - inter).max(1e-9)
}

/// output0 is (1, 84, anchors): rows 0-3 box cx, cy, w, h; rows 4-83 class scores.
fn decode(out: &[f32], anchors: usize) -> Vec<Detection> {
    let mut candidates = Vec::new();
    for i in 0..anchors {
        let (class, score) = (0..80)
            .map(|c| (c, out[(4 + c) * anchors + i]))
            .fold((0, f32::MIN), |best, x| if x.1 > best.1 { x } else { best });
        if score < SCORE_THRESHOLD {
            continue;
        }
        let (cx, cy, w, h) = (out[i], out[anchors + i], out[2 * anchors + i], out[3 * anchors + i]);
        candidates.push(Detection {
            class,
            score,
            b: [cx - w / 2.0, cy - h / 2.0, cx + w / 2.0, cy + h / 2.0],
        });
    }
    candidates.sort_by(|a, b| b.score.partial_cmp(&a.score).unwrap_or(std::cmp::Ordering::Equal));
    let mut kept: Vec<Detection> = Vec::new();
    for d in candidates {
        if kept.iter().all(|k| k.class != d.class || iou(&k.b, &d.b) <= IOU_THRESHOLD) {
            kept.push(d);
        }
    }
    kept
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let shared = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared");
    let mut positional = Vec::new();
    let mut threads = 0usize;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        if a == "--threads" {
            threads = args.next().ok_or("--threads needs a value")?.parse()?;
        } else {
            positional.push(PathBuf::from(a));
        }
    }
    let model_dir = positional.first().cloned().unwrap_or_else(|| shared.join("models/yolov8n"));
    let input_path = positional
        .get(1)
        .cloned()
        .unwrap_or_else(|| shared.join("data/yolov8n/input_images_1x3x640x640_f32.bin"));

    let mut weights = HashMap::new();
    for entry in std::fs::read_dir(&model_dir).map_err(|e| format!("{}: {}", model_dir.display(), e))? {
        let path = entry?.path();
        if path.extension().map_or(false, |e| e == "bin") {
            weights.insert(path.file_name().unwrap().to_string_lossy().into_owned(), std::fs::read(&path)?);
        }
    }
    let total: usize = weights.values().map(Vec::len).sum();
    println!(
        "{} weights ({:.1} MB) loaded into memory from {}",
        weights.len(),
        total as f64 / 1e6,
        model_dir.display()
    );

    let mut model = Model::new(&ModelOptions::new().threads(threads))?;
    model.set_weights_provider(InMemory(weights))?;
    model.load_str(&std::fs::read_to_string(model_dir.join("model.txt"))?, None)?;

    let input = read_f32(&input_path)?;
    model.push("images", &[1, 3, 640, 640], &input)?;
    let start = Instant::now();
    model.run()?;
    let elapsed = start.elapsed();

    let out = model.output_by_name("output0")?;
    let anchors = *out.shape().last().unwrap_or(&0) as usize;
    let detections = decode(out.data::<f32>()?, anchors);
    println!("run: {:.1} ms, {} detections", elapsed.as_secs_f64() * 1e3, detections.len());
    for d in &detections {
        println!(
            "{} {:.2} [{:.0}, {:.0}, {:.0}, {:.0}]",
            COCO[d.class], d.score, d.b[0], d.b[1], d.b[2], d.b[3]
        );
    }
    Ok(())
}

fn read_f32(path: &Path) -> Result<Vec<f32>, Box<dyn std::error::Error>> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: {}", path.display(), e))?;
    if bytes.len() != 3 * 640 * 640 * 4 {
        return Err(
            format!("{} has {} bytes; expected float32 1x3x640x640", path.display(), bytes.len()).into()
        );
    }
    Ok(bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect())
}
