//! YOLOv8n from ../shared with weights served from Rust memory: the output matches ONNX Runtime's
//! reference and, exactly, the C CLI (onnxstream-run) on the same input.
mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use onnxstream::{Model, ModelOptions};

const THREADS: usize = 2;

fn load_weights(dir: &Path) -> HashMap<String, Vec<u8>> {
    let mut map = HashMap::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().map_or(false, |e| e == "bin") {
            map.insert(
                path.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read(&path).unwrap(),
            );
        }
    }
    map
}

fn run_yolo(shared: &Path, zero_copy: bool) -> (Vec<i64>, Vec<f32>, Counters) {
    let model_dir = shared.join("models/yolov8n");
    let counters = Counters::default();
    let mut model = Model::new(&ModelOptions::new().threads(THREADS)).unwrap();
    if zero_copy {
        model.set_weights_lender(MapLender::new(load_weights(&model_dir), &counters)).unwrap();
    } else {
        model.set_weights_provider(MapProvider::new(load_weights(&model_dir), &counters)).unwrap();
    }
    // Only model.txt comes from disk: every weight comes from the map.
    let text = std::fs::read_to_string(model_dir.join("model.txt")).unwrap();
    model.load_str(&text, None).unwrap();
    let input = read_f32(&shared.join("data/yolov8n/input_images_1x3x640x640_f32.bin"));
    model.push("images", &[1, 3, 640, 640], &input).unwrap();
    model.run().unwrap();
    let out = model.output_by_name("output0").unwrap();
    let result = (out.shape().to_vec(), out.data::<f32>().unwrap().to_vec());
    drop(model);
    (result.0, result.1, counters)
}

fn cli() -> Option<PathBuf> {
    match std::env::var_os("ONNXSTREAM_RUN") {
        Some(p) => Some(PathBuf::from(p)),
        None => {
            eprintln!("ONNXSTREAM_RUN is not set: skipping the comparison with the C CLI");
            None
        }
    }
}

#[test]
fn yolov8n_matches_reference_and_c_cli() {
    let shared = match shared_dir() {
        Some(d) => d,
        None => return,
    };
    let (shape, output, counters) = run_yolo(&shared, false);
    assert_eq!(shape, vec![1, 84, 8400]);
    let expected = read_f32(&shared.join("data/yolov8n/expected_output0_1x84x8400_f32.bin"));
    let err = rel_l2(&output, &expected);
    eprintln!("YOLOv8n output0 vs ONNX Runtime: rel L2 {:.3e}", err);
    assert!(err <= 1e-4, "rel L2 {} > 1e-4", err);
    assert!(Counters::get(&counters.reads) > 0);
    assert_eq!(Counters::get(&counters.drops), 1);

    let cli = match cli() {
        Some(c) => c,
        None => return,
    };
    let out_dir = std::env::temp_dir().join(format!("onnxstream-rust-yolo-{}", std::process::id()));
    let status = Command::new(&cli)
        .arg(shared.join("models/yolov8n"))
        .arg("--input")
        .arg(format!("images={}", shared.join("data/yolov8n/input_images_1x3x640x640_f32.bin").display()))
        .args(["--threads", &THREADS.to_string(), "--provider", "nocache", "--output-dir"])
        .arg(&out_dir)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {}", cli.display(), e));
    assert!(status.status.success(), "{} failed: {}", cli.display(), String::from_utf8_lossy(&status.stderr));
    let (cli_shape, cli_output) = read_npy_f32(&out_dir.join("output0.npy"));
    std::fs::remove_dir_all(&out_dir).ok();
    assert_eq!(cli_shape, shape);
    let max_diff = output.iter().zip(&cli_output).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max);
    eprintln!("YOLOv8n output0 vs onnxstream-run: max |diff| {:e}", max_diff);
    assert_eq!(
        max_diff,
        0.0,
        "the Rust provider changed the result (rel L2 {:e})",
        rel_l2(&output, &cli_output)
    );
}

#[test]
fn yolov8n_zero_copy_lender() {
    let shared = match shared_dir() {
        Some(d) => d,
        None => return,
    };
    let (_, output, counters) = run_yolo(&shared, true);
    let expected = read_f32(&shared.join("data/yolov8n/expected_output0_1x84x8400_f32.bin"));
    assert!(rel_l2(&output, &expected) <= 1e-4);
    assert_eq!(Counters::get(&counters.reads), 0);
    assert!(Counters::get(&counters.lends) > 0);
    assert_eq!(Counters::get(&counters.releases), Counters::get(&counters.lends));
    assert_eq!(Counters::get(&counters.drops), 1);
}
