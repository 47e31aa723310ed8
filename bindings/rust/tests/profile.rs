//! Per-op profiles (ModelOptions::profile), their rendering and the roofline measurement, on a
//! three-op model whose shapes, bytes and FLOPs the test computes itself.
mod common;

use std::path::PathBuf;

use common::f32_bytes;
use onnxstream::{measure_roofline, BuiltinProvider, Model, ModelOptions, ProfileFormat, Roofline, Status};

/// y = x · W (2x3 · 3x4), z = relu(y), s = z + z.
const MODEL: &str = "mm:MatMul*input:x(2,3);w.bin(float32:3,4)*output:y(2,4)\n\
                     act:Relu*input:y(2,4)*output:z(2,4)\n\
                     sum:Add*input:z(2,4);z(2,4)*output:s(2,4)\n";
const X: [f32; 6] = [1.0, 2.0, 3.0, -1.0, 0.5, 2.0];
const W: [f32; 12] = [1.0, 0.0, -1.0, 2.0, 0.5, 1.0, 0.0, -2.0, 1.0, 1.0, 1.0, 1.0];
const F32: u64 = 4;

/// A folder holding w.bin, removed on drop.
struct WeightsDir(PathBuf);

impl WeightsDir {
    fn new(tag: &str) -> WeightsDir {
        let dir =
            std::env::temp_dir().join(format!("onnxstream-rust-profile-{}-{}", tag, std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("w.bin"), f32_bytes(&W)).unwrap();
        WeightsDir(dir)
    }
}

impl Drop for WeightsDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn model(dir: &WeightsDir, profile: bool) -> Model {
    let options = ModelOptions::new().threads(1).provider(BuiltinProvider::NoCache).profile(profile);
    let mut model = Model::new(&options).unwrap();
    model.load_str(MODEL, Some(&dir.0)).unwrap();
    model.push("x", &[2, 3], &X).unwrap();
    model
}

/// s computed here: 2 * relu(x · W).
fn expected_s() -> Vec<f32> {
    let mut s = vec![0f32; 8];
    for i in 0..2 {
        for j in 0..4 {
            let y: f32 = (0..3).map(|k| X[i * 3 + k] * W[k * 4 + j]).sum();
            s[i * 4 + j] = 2.0 * y.max(0.0);
        }
    }
    s
}

#[test]
fn profile_records_every_op_with_its_shapes_bytes_and_flops() {
    let dir = WeightsDir::new("ops");
    let mut m = model(&dir, true);
    assert!(m.profile().unwrap().is_empty(), "no profile before the first run");
    m.run().unwrap();
    assert_eq!(m.output_by_name("s").unwrap().data::<f32>().unwrap(), &expected_s()[..]);

    let ops = m.profile().unwrap();
    assert_eq!(ops.len(), 3);
    let names: Vec<(&str, &str)> = ops.iter().map(|o| (o.op_name.as_str(), o.op_type.as_str())).collect();
    assert_eq!(names, [("mm", "MatMul"), ("act", "Relu"), ("sum", "Add")]);
    let mut previous_end = 0;
    for (i, op) in ops.iter().enumerate() {
        assert_eq!(op.op_index, i);
        assert_eq!(op.line, i + 1);
        assert!(op.start_ns >= previous_end, "op {} starts before op {} ends: {:?}", i, i, ops);
        previous_end = op.start_ns + op.duration_ns;
        assert!(op.weight_wait_ns <= op.duration_ns && op.kernel_prepare_ns <= op.duration_ns, "{:?}", op);
        assert!(op.memory_bytes > 0, "{:?}", op);
    }

    let (m_rows, n_cols, k_inner) = (2u64, 4u64, 3u64);
    let mm = &ops[0];
    assert_eq!(mm.inputs, "float32[2,3], w:float32[3,4]");
    assert_eq!(mm.outputs, "float32[2,4]");
    assert_eq!(mm.flops, 2 * m_rows * n_cols * k_inner); // 2 per multiply-add
    assert_eq!(mm.weight_bytes, k_inner * n_cols * F32);
    assert_eq!(mm.activation_bytes, (m_rows * k_inner + m_rows * n_cols) * F32);

    let relu = &ops[1];
    assert_eq!((relu.inputs.as_str(), relu.outputs.as_str()), ("float32[2,4]", "float32[2,4]"));
    assert_eq!((relu.flops, relu.weight_bytes), (0, 0));
    assert_eq!(relu.activation_bytes, 2 * m_rows * n_cols * F32);

    let add = &ops[2];
    assert_eq!((add.flops, add.weight_bytes), (0, 0));
    assert_eq!(add.activation_bytes, 3 * m_rows * n_cols * F32); // z twice in, s out

    // Owned records: a later run replaces the library's profile, not this copy.
    m.push("x", &[2, 3], &[0.0f32; 6]).unwrap();
    m.run().unwrap();
    assert_eq!(ops[0].op_name, "mm");
    assert_eq!(m.profile().unwrap().len(), 3);
}

#[test]
fn render_profile_as_trace_json_and_summary() {
    let dir = WeightsDir::new("render");
    let mut m = model(&dir, true);
    assert_eq!(m.render_profile(ProfileFormat::TraceJson, None).unwrap_err().status(), Status::BadState);
    m.run().unwrap();

    let trace = m.render_profile(ProfileFormat::TraceJson, None).unwrap();
    assert!(trace.contains("\"traceEvents\""), "{}", trace);
    assert!(trace.contains("\"op\":\"mm\""), "{}", trace);
    assert!(trace.contains(&format!("\"flops\":{}", 2 * 2 * 4 * 3)), "{}", trace);

    let summary = m.render_profile(ProfileFormat::Summary, None).unwrap();
    assert!(summary.contains("MatMul") && summary.contains("total"), "{}", summary);
    assert!(!summary.contains("% peak"), "{}", summary);
    let peak = Roofline { flops_per_s: 1e9, bytes_per_s: 1e9 };
    let with_peak = m.render_profile(ProfileFormat::Summary, Some(&peak)).unwrap();
    assert!(with_peak.contains("% peak"), "{}", with_peak);
}

#[test]
fn without_the_option_there_is_no_profile() {
    let dir = WeightsDir::new("off");
    let mut m = model(&dir, false);
    m.run().unwrap();
    assert!(m.profile().unwrap().is_empty());
    for format in [ProfileFormat::TraceJson, ProfileFormat::Summary] {
        let e = m.render_profile(format, None).unwrap_err();
        assert_eq!(e.status(), Status::BadState);
        assert!(e.message().contains("ONNXSTREAM_FLAG_PROFILE"), "{}", e.message());
    }
    // profile(false) clears what profile(true) set.
    let options =
        ModelOptions::new().threads(1).provider(BuiltinProvider::NoCache).profile(true).profile(false);
    let mut cleared = Model::new(&options).unwrap();
    cleared.load_str(MODEL, Some(&dir.0)).unwrap();
    cleared.push("x", &[2, 3], &X).unwrap();
    cleared.run().unwrap();
    assert!(cleared.profile().unwrap().is_empty());
}

#[test]
fn measure_roofline_gives_positive_rates() {
    let r = measure_roofline(1).unwrap();
    assert!(r.flops_per_s > 0.0 && r.flops_per_s.is_finite(), "{:?}", r);
    assert!(r.bytes_per_s > 0.0 && r.bytes_per_s.is_finite(), "{:?}", r);
    let e = measure_roofline(5000).unwrap_err();
    assert_eq!(e.status(), Status::InvalidArgument);
    assert!(e.message().contains("threads"), "{}", e.message());
}
