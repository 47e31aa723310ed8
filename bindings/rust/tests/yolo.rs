//! YOLOv8n from ../shared with weights served from Rust memory: the output matches ONNX Runtime's
//! reference and, exactly, the C CLI (onnxstream-run) on the same input. Its weights packed into one
//! model.safetensors give the same output, bit for bit.
mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use onnxstream::{BuiltinProvider, Model, ModelOptions, Status};

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

/// balanced keeps the prepared convolutions it chose after the first run; the later runs reuse them and
/// must still match ONNX Runtime.
#[test]
fn yolov8n_balanced_keeps_kernels() {
    let shared = match shared_dir() {
        Some(d) => d,
        None => return,
    };
    let mut model = Model::new(&ModelOptions::new().threads(THREADS)).unwrap();
    model.load(shared.join("models/yolov8n")).unwrap();
    let input = read_f32(&shared.join("data/yolov8n/input_images_1x3x640x640_f32.bin"));
    let expected = read_f32(&shared.join("data/yolov8n/expected_output0_1x84x8400_f32.bin"));
    model.push("images", &[1, 3, 640, 640], &input).unwrap();
    for run in 1..=3 {
        model.run().unwrap();
        let out = model.output_by_name("output0").unwrap();
        let err = rel_l2(out.data::<f32>().unwrap(), &expected);
        assert!(err <= 1e-4, "run {}: rel L2 vs ONNX Runtime {} > 1e-4", run, err);
    }
    let stats = model.run_stats().unwrap();
    assert!(stats.kept_kernels > 0, "no kept kernels");
    assert!(stats.kept_kernel_bytes > 0 && stats.kept_kernel_bytes <= 24 << 20, "{} bytes", stats.kept_kernel_bytes);
}

/// output0 of YOLOv8n loaded from `dir` with a built-in provider.
fn run_folder(shared: &Path, dir: &Path, provider: BuiltinProvider) -> Vec<f32> {
    let mut model = Model::new(&ModelOptions::new().threads(THREADS).provider(provider)).unwrap();
    model.load(dir).unwrap();
    let input = read_f32(&shared.join("data/yolov8n/input_images_1x3x640x640_f32.bin"));
    model.push("images", &[1, 3, 640, 640], &input).unwrap();
    model.run().unwrap();
    let out = model.output_by_name("output0").unwrap();
    assert_eq!(out.shape(), &[1, 84, 8400]);
    out.data::<f32>().unwrap().to_vec()
}

fn assert_bit_equal(a: &[f32], b: &[f32], what: &str) {
    assert_eq!(a.len(), b.len(), "{}", what);
    let differ = a.iter().zip(b).filter(|(x, y)| x.to_bits() != y.to_bits()).count();
    assert_eq!(differ, 0, "{}: {} of {} values differ (rel L2 {:e})", what, differ, a.len(), rel_l2(a, b));
}

#[test]
fn yolov8n_packed_weights_give_the_same_output() {
    let shared = match shared_dir() {
        Some(d) => d,
        None => return,
    };
    let original = shared.join("models/yolov8n");
    let files = bin_files(&original);
    assert!(files.len() > 100, "{} weight files", files.len());
    let tmp = TempDir::new("yolo-pack");

    // The loose .bin files: the reference's output.
    let bins = tmp.path().join("bins");
    copy_folder(&original, &bins);
    let from_files = run_folder(&shared, &bins, BuiltinProvider::NoCache);
    let expected = read_f32(&shared.join("data/yolov8n/expected_output0_1x84x8400_f32.bin"));
    let err = rel_l2(&from_files, &expected);
    assert!(err <= 1e-4, "rel L2 vs ONNX Runtime {} > 1e-4", err);
    let (_, from_memory, _) = run_yolo(&shared, false);
    assert_bit_equal(&from_files, &from_memory, "files vs Rust provider");

    // Packed, the .bin files removed: the same output with every way of reading the store.
    let packed = tmp.path().join("packed");
    copy_folder(&original, &packed);
    onnxstream::pack_weights(&packed, true).unwrap();
    assert!(packed.join("model.safetensors").is_file());
    assert!(packed.join("model.txt").is_file());
    assert_eq!(bin_files(&packed), Vec::<String>::new());
    let weight_bytes: u64 = files.iter().map(|f| std::fs::metadata(original.join(f)).unwrap().len()).sum();
    assert!(std::fs::metadata(packed.join("model.safetensors")).unwrap().len() > weight_bytes);
    for provider in [BuiltinProvider::NoCache, BuiltinProvider::Mmap, BuiltinProvider::Ram] {
        let from_store = run_folder(&shared, &packed, provider);
        assert_bit_equal(
            &from_store,
            &from_files,
            &format!("model.safetensors ({:?}) vs .bin files", provider),
        );
    }

    // Packed, the .bin files kept; packing it again is refused with the library's message.
    let kept = tmp.path().join("kept");
    copy_folder(&original, &kept);
    onnxstream::pack_weights(&kept, false).unwrap();
    assert!(kept.join("model.safetensors").is_file());
    assert_eq!(bin_files(&kept), files);
    let store = std::fs::read(kept.join("model.safetensors")).unwrap();
    assert_eq!(store, std::fs::read(packed.join("model.safetensors")).unwrap());
    let e = onnxstream::pack_weights(&kept, true).unwrap_err();
    assert_eq!(e.status(), Status::InvalidArgument);
    assert!(
        e.message().contains(kept.to_str().unwrap()) && e.message().contains("model.safetensors"),
        "{}",
        e.message()
    );
    assert_eq!(bin_files(&kept), files);
    assert_eq!(std::fs::read(kept.join("model.safetensors")).unwrap(), store);
    assert_bit_equal(
        &run_folder(&shared, &kept, BuiltinProvider::NoCache),
        &from_files,
        "kept vs .bin files",
    );
}
