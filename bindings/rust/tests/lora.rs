//! Model::add_lora on a one-MatMul model: y = x · (W + scale · alpha / rank · (up · down)ᵀ), computed here.
mod common;

use common::{f32_bytes, TempDir};
use onnxstream::{BuiltinProvider, Model, ModelOptions, Status};

const MODEL: &str = "/mm/MatMul:MatMul*input:x(2,3);w.bin(float32:3,4)*output:y(2,4)\n";
const X: [f32; 6] = [1.0, 2.0, 3.0, -1.0, 0.5, 2.0];
const W: [f32; 12] = [1.0, 0.0, -1.0, 2.0, 0.5, 1.0, 0.0, -2.0, 1.0, 1.0, 1.0, 1.0];
const UP: [f32; 4] = [1.0, 2.0, 3.0, 4.0]; // [out 4, rank 1]
const DOWN: [f32; 3] = [1.0, 0.0, -1.0]; // [rank 1, in 3]

/// A safetensors file of float32 tensors (name, shape, values).
fn write_lora(path: &std::path::Path, tensors: &[(&str, &[usize], &[f32])]) {
    let (mut header, mut data) = (String::from("{"), Vec::new());
    for (i, (name, shape, values)) in tensors.iter().enumerate() {
        let dims: Vec<String> = shape.iter().map(|d| d.to_string()).collect();
        let bytes = f32_bytes(values);
        header += &format!(
            "{}\"{}\":{{\"dtype\":\"F32\",\"shape\":[{}],\"data_offsets\":[{},{}]}}",
            if i > 0 { "," } else { "" },
            name,
            dims.join(","),
            data.len(),
            data.len() + bytes.len()
        );
        data.extend_from_slice(&bytes);
    }
    header += "}";
    let mut file = (header.len() as u64).to_le_bytes().to_vec();
    file.extend_from_slice(header.as_bytes());
    file.extend_from_slice(&data);
    std::fs::write(path, file).unwrap();
}

fn expected(scale: f32) -> Vec<f32> {
    let mut y = vec![0f32; 8];
    for r in 0..2 {
        for o in 0..4 {
            y[r * 4 + o] = (0..3).map(|i| X[r * 3 + i] * (W[i * 4 + o] + scale * UP[o] * DOWN[i])).sum();
        }
    }
    y
}

fn model(dir: &TempDir) -> Model {
    std::fs::write(dir.path().join("w.bin"), f32_bytes(&W)).unwrap();
    let options = ModelOptions::new().threads(1).provider(BuiltinProvider::NoCache);
    let mut model = Model::new(&options).unwrap();
    model.load_str(MODEL, Some(dir.path())).unwrap();
    model.push("x", &[2, 3], &X).unwrap();
    model
}

fn close(got: &[f32], want: &[f32]) -> bool {
    got.len() == want.len() && got.iter().zip(want).all(|(a, b)| (a - b).abs() <= 1e-5 * b.abs().max(1.0))
}

#[test]
fn add_lora_changes_the_weight_from_the_next_run() {
    let dir = TempDir::new("lora");
    let lora = dir.path().join("lora.safetensors");
    write_lora(&lora, &[("lora_unet_mm.lora_up.weight", &[4, 1], &UP), ("lora_unet_mm.lora_down.weight", &[1, 3], &DOWN)]);
    let mut m = model(&dir);
    m.run().unwrap();
    assert!(close(m.output_by_name("y").unwrap().data::<f32>().unwrap(), &expected(0.0)));
    assert_eq!(m.add_lora(&lora, 0.5, "lora_unet_").unwrap(), 1);
    m.run().unwrap();
    assert!(close(m.output_by_name("y").unwrap().data::<f32>().unwrap(), &expected(0.5)));
    assert_eq!(m.add_lora(&lora, 1.0, "other_").unwrap(), 0);
}

#[test]
fn add_lora_errors_carry_status_and_message() {
    let dir = TempDir::new("lora-errors");
    let mut m = model(&dir);
    let e = m.add_lora(dir.path().join("missing.safetensors"), 1.0, "").unwrap_err();
    assert_eq!(e.status(), Status::Io);
    let bad = dir.path().join("bad.safetensors");
    write_lora(&bad, &[("lora_unet_mm.lora_up.weight", &[4, 1], &UP), ("lora_unet_mm.lora_down.weight", &[1, 2], &DOWN[..2])]);
    let e = m.add_lora(&bad, 1.0, "").unwrap_err();
    assert_eq!(e.status(), Status::InvalidArgument);
    assert!(e.to_string().contains("lora_unet_mm"), "{}", e);
}
