//! The safe API on a two-op model: providers (copying, zero-copy, failing, panicking), progress and
//! cancellation, ownership of host callbacks, and every error status.
mod common;

use std::ops::ControlFlow;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use common::*;
use onnxstream::{
    provider_fn, BuiltinProvider, DType, Error, LogLevel, Model, ModelOptions, Status, WeightRequest,
};

fn tiny_model(counters: &Counters) -> Model {
    let mut model = Model::new(&ModelOptions::new().threads(1)).unwrap();
    model.set_weights_provider(MapProvider::new(tiny_weights(), counters)).unwrap();
    model.load_str(TINY_MODEL, None).unwrap();
    model.push("x", &[1, 4], &X).unwrap();
    model
}

fn y(model: &Model) -> Vec<f32> {
    model.output_by_name("y").unwrap().data::<f32>().unwrap().to_vec()
}

#[test]
fn version_matches() {
    assert_eq!(onnxstream::version(), (0, 26, 0));
    assert_eq!(onnxstream::version_string(), "0.26.0");
}

#[test]
fn every_status_code_is_mapped() {
    let all = [
        (1, Status::InvalidArgument),
        (2, Status::InvalidModel),
        (3, Status::Io),
        (4, Status::Unsupported),
        (5, Status::OutOfMemory),
        (6, Status::Callback),
        (7, Status::Cancelled),
        (8, Status::BadState),
        (9, Status::Internal),
    ];
    assert_eq!(Status::from_code(0), None);
    for (code, status) in all {
        assert_eq!(Status::from_code(code), Some(status));
        assert_eq!(status.code(), code);
        assert_eq!(status.name(), onnxstream::status_name(code), "name of {}", code);
        assert!(!status.to_string().is_empty());
    }
    // Codes from a newer library survive the round trip.
    assert_eq!(Status::from_code(42), Some(Status::Unknown(42)));
    assert_eq!(Status::Unknown(42).code(), 42);
    assert_eq!(Status::Unknown(42).name(), onnxstream::status_name(42));
}

#[test]
fn error_is_std_error_with_status_and_message() {
    let e = Model::open("/nonexistent/onnxstream/model").unwrap_err();
    assert_eq!(e.status(), Status::Io);
    assert!(e.message().contains("/nonexistent/onnxstream/model"), "{}", e.message());
    let boxed: Box<dyn std::error::Error + Send + Sync> = Box::new(e.clone());
    assert!(boxed.to_string().contains("I/O error"), "{}", boxed);
}

#[test]
fn real_calls_produce_each_status() {
    let status = |r: Result<(), Error>| r.unwrap_err().status();

    // InvalidArgument: bad options, unknown input, wrong shape, NUL in a name (checked in Rust).
    assert_eq!(Model::new(&ModelOptions::new().threads(5000)).unwrap_err().status(), Status::InvalidArgument);
    let counters = Counters::default();
    let mut model = tiny_model(&counters);
    assert_eq!(status(model.push("nope", &[1, 4], &X)), Status::InvalidArgument);
    assert_eq!(status(model.push("x", &[4], &X)), Status::InvalidArgument);
    assert_eq!(status(model.push("x\0y", &[1, 4], &X)), Status::InvalidArgument);
    assert_eq!(model.output_by_name("y").unwrap_err().status(), Status::InvalidArgument);
    // BadState: a second load into the same handle; a run before any load.
    assert_eq!(status(model.load_str(TINY_MODEL, None)), Status::BadState);
    let mut empty = Model::new(&ModelOptions::new()).unwrap();
    assert_eq!(status(empty.run()), Status::BadState);
    // InvalidModel, Unsupported, Io.
    let mut m = Model::new(&ModelOptions::new()).unwrap();
    assert_eq!(status(m.load_str("this is not model.txt\n", None)), Status::InvalidModel);
    let mut m = Model::new(&ModelOptions::new()).unwrap();
    assert_eq!(status(m.load_str("n:NoSuchOperator*input:x(1)*output:y(1)\n", None)), Status::Unsupported);
    let mut m = Model::new(&ModelOptions::new()).unwrap();
    assert_eq!(status(m.load(Path::new("/nonexistent/dir"))), Status::Io);
    // Callback and Cancelled are covered by the provider and progress tests below.
}

#[test]
fn range_data_and_calibration() {
    let counters = Counters::default();
    let mut model = tiny_model(&counters);
    let dir = std::env::temp_dir().join(format!("onnxstream-rust-ranges-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("range_data.txt");
    let path = file.to_str().unwrap();
    std::fs::write(&file, "nosuchop,0,1\n").unwrap();
    assert_eq!(model.read_range_data(path).unwrap_err().status(), Status::InvalidArgument);
    std::fs::write(&file, "x,2,1\n").unwrap();
    assert_eq!(model.read_range_data(path).unwrap_err().status(), Status::InvalidModel);
    std::fs::write(&file, "x,-1,1\n").unwrap();
    model.read_range_data(path).unwrap();
    model.set_calibrate(true).unwrap();
    model.write_range_data(path).unwrap();
    model.set_calibrate(false).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn provider_serves_weights_and_outputs_are_typed_views() {
    let counters = Counters::default();
    let mut model = tiny_model(&counters);
    let inputs = model.inputs().unwrap();
    assert_eq!(inputs.len(), 1);
    assert_eq!(inputs[0].name, "x");
    assert_eq!(inputs[0].shape, vec![1, 4]);
    assert_eq!(inputs[0].dtype, DType::Float32);

    model.run().unwrap();
    assert_eq!(model.output_count(), 1);
    let out = model.output(0).unwrap();
    assert_eq!(out.name(), "y");
    assert_eq!(out.shape(), &[1, 4]);
    assert_eq!(out.dtype(), DType::Float32);
    assert_eq!(out.data::<f32>().unwrap(), &Y);
    assert_eq!(out.to_f32_vec().unwrap(), Y.to_vec());
    assert_eq!(out.data::<i64>().unwrap_err().status(), Status::InvalidArgument);
    let reads_after_first = Counters::get(&counters.reads);
    assert!(reads_after_first >= 2, "reads {}", reads_after_first);
    assert!(Counters::get(&counters.prefetches) >= 2);

    // A second run with a new input re-reads the weights (the callback provider caches nothing).
    model.push("x", &[1, 4], &[0.0f32; 4]).unwrap();
    model.run().unwrap();
    assert_eq!(y(&model), vec![20.0, 40.0, 60.0, 80.0]);
    assert_eq!(Counters::get(&counters.reads), reads_after_first + 2);
    let stats = model.run_stats().unwrap();
    assert_eq!(stats.weight_bytes_read, 32);
    // No cache_path: nothing is mapped from or stored to a packed-weights file.
    assert_eq!(stats.packed_weights_mapped, 0);
    assert_eq!(stats.packed_weights_stored, 0);
    assert_eq!(stats.kept_kernels, 0); // a host's provider: nothing is kept between runs
    assert!(model.memory_stats().unwrap().peak_bytes > 0);
    drop(model);
    assert_eq!(Counters::get(&counters.drops), 1);
}

#[test]
fn closure_provider() {
    let weights = tiny_weights();
    let mut model = Model::new(&ModelOptions::new().threads(1)).unwrap();
    model
        .set_weights_provider(provider_fn(move |req: &WeightRequest<'_>, dst: &mut [u8]| {
            assert_eq!(req.dtype(), DType::Float32);
            assert_eq!(req.shape(), &[4]);
            assert_eq!(req.byte_size(), 16);
            dst.copy_from_slice(&weights[&*req.file()]);
            Ok(())
        }))
        .unwrap();
    model.load_str(TINY_MODEL, None).unwrap();
    model.push("x", &[1, 4], &X).unwrap();
    model.run().unwrap();
    assert_eq!(y(&model), Y.to_vec());
}

#[test]
fn failing_provider_reports_its_message_and_model_stays_usable() {
    let counters = Counters::default();
    let mut model = Model::new(&ModelOptions::new().threads(1)).unwrap();
    let mut failing = MapProvider::new(tiny_weights(), &counters);
    failing.fail_on = Some("v.bin".to_string());
    model.set_weights_provider(failing).unwrap();
    model.load_str(TINY_MODEL, None).unwrap();
    model.push("x", &[1, 4], &X).unwrap();
    let e = model.run().unwrap_err();
    assert_eq!(e.status(), Status::Callback);
    assert!(e.message().contains("disk on fire while reading v.bin"), "{}", e.message());
    assert!(e.message().contains("v.bin"), "{}", e.message());
    assert_eq!(model.output_count(), 0);

    // Replacing the provider drops the old one exactly once; the model runs again.
    let good = Counters::default();
    model.set_weights_provider(MapProvider::new(tiny_weights(), &good)).unwrap();
    assert_eq!(Counters::get(&counters.drops), 1);
    model.run().unwrap();
    assert_eq!(y(&model), Y.to_vec());
    drop(model);
    assert_eq!(Counters::get(&counters.drops), 1);
    assert_eq!(Counters::get(&good.drops), 1);
}

#[test]
fn panicking_provider_becomes_a_callback_error() {
    let counters = Counters::default();
    let mut model = Model::new(&ModelOptions::new().threads(1)).unwrap();
    let mut p = MapProvider::new(tiny_weights(), &counters);
    p.panic_on = Some("w.bin".to_string());
    model.set_weights_provider(p).unwrap();
    model.load_str(TINY_MODEL, None).unwrap();
    model.push("x", &[1, 4], &X).unwrap();
    for _ in 0..2 {
        let e = model.run().unwrap_err();
        assert_eq!(e.status(), Status::Callback);
        assert!(e.message().contains("panicked: provider exploded on w.bin"), "{}", e.message());
    }
    drop(model);
    assert_eq!(Counters::get(&counters.drops), 1);
}

#[test]
fn long_error_messages_are_truncated_on_a_char_boundary() {
    let mut model = Model::new(&ModelOptions::new().threads(1)).unwrap();
    model
        .set_weights_provider(provider_fn(|_: &WeightRequest<'_>, _: &mut [u8]| Err("é".repeat(1000).into())))
        .unwrap();
    model.load_str(TINY_MODEL, None).unwrap();
    model.push("x", &[1, 4], &X).unwrap();
    let e = model.run().unwrap_err();
    assert_eq!(e.status(), Status::Callback);
    assert!(e.message().contains("éé"), "{}", e.message());
    assert!(!e.message().contains('\u{fffd}'), "split a UTF-8 sequence: {}", e.message());
}

#[test]
fn zero_copy_lender_releases_every_lease() {
    let counters = Counters::default();
    let mut model = Model::new(&ModelOptions::new().threads(1)).unwrap();
    model.set_weights_lender(MapLender::new(tiny_weights(), &counters)).unwrap();
    model.load_str(TINY_MODEL, None).unwrap();
    model.push("x", &[1, 4], &X).unwrap();
    for run in 1..=3 {
        model.run().unwrap();
        assert_eq!(y(&model), Y.to_vec());
        let lends = Counters::get(&counters.lends);
        assert!(lends >= 2 * run, "lends {}", lends);
        assert_eq!(Counters::get(&counters.releases), lends, "every lease released after run {}", run);
    }
    assert_eq!(Counters::get(&counters.reads), 0);
    drop(model);
    assert_eq!(Counters::get(&counters.drops), 1);
    assert_eq!(Counters::get(&counters.releases), Counters::get(&counters.lends));
}

#[test]
fn lender_of_the_wrong_size_is_rejected() {
    let counters = Counters::default();
    let mut model = Model::new(&ModelOptions::new().threads(1)).unwrap();
    let mut lender = MapLender::new(tiny_weights(), &counters);
    lender.short_by = 4;
    model.set_weights_lender(lender).unwrap();
    model.load_str(TINY_MODEL, None).unwrap();
    model.push("x", &[1, 4], &X).unwrap();
    let e = model.run().unwrap_err();
    assert_eq!(e.status(), Status::Callback);
    assert!(e.message().contains("lent 12 bytes but the weight needs 16"), "{}", e.message());
    // The rejected lease was dropped, not leaked.
    assert_eq!(Counters::get(&counters.releases), Counters::get(&counters.lends));
}

#[test]
fn progress_reports_every_op_and_can_cancel() {
    let counters = Counters::default();
    let mut model = tiny_model(&counters);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    model
        .set_progress_callback(move |p| {
            log.lock().unwrap().push((p.op_index, p.op_count, p.op_name.to_string(), p.op_type.to_string()));
            ControlFlow::Continue(())
        })
        .unwrap();
    model.run().unwrap();
    assert_eq!(
        *seen.lock().unwrap(),
        vec![(0, 2, "add".to_string(), "Add".to_string()), (1, 2, "mul".to_string(), "Mul".to_string())]
    );

    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    model
        .set_progress_callback(move |p| {
            c.fetch_add(1, Ordering::SeqCst);
            if p.op_index == 0 {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        })
        .unwrap();
    let e = model.run().unwrap_err();
    assert_eq!(e.status(), Status::Cancelled);
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(model.output_count(), 0);

    model.clear_progress_callback().unwrap();
    model.run().unwrap();
    assert_eq!(y(&model), Y.to_vec());
}

#[test]
fn panicking_progress_callback_cancels_with_its_message() {
    let counters = Counters::default();
    let mut model = tiny_model(&counters);
    model.set_progress_callback(|_| panic!("progress went wrong")).unwrap();
    let e = model.run().unwrap_err();
    assert_eq!(e.status(), Status::Callback);
    assert!(e.message().contains("progress callback panicked: progress went wrong"), "{}", e.message());
    model.clear_progress_callback().unwrap();
    model.run().unwrap();
}

#[test]
fn dropping_a_model_mid_way_drops_its_provider_exactly_once() {
    // Cancelled half way with a lender holding leases and the test still holding the counters.
    let counters = Counters::default();
    let mut model = Model::new(&ModelOptions::new().threads(1)).unwrap();
    model.set_weights_lender(MapLender::new(tiny_weights(), &counters)).unwrap();
    model.load_str(TINY_MODEL, None).unwrap();
    model.push("x", &[1, 4], &X).unwrap();
    model.set_progress_callback(|_| ControlFlow::Break(())).unwrap();
    assert_eq!(model.run().unwrap_err().status(), Status::Cancelled);
    assert_eq!(Counters::get(&counters.drops), 0);
    drop(model);
    assert_eq!(Counters::get(&counters.drops), 1);
    assert_eq!(Counters::get(&counters.releases), Counters::get(&counters.lends));

    // Never loaded: the provider is still dropped exactly once.
    let counters = Counters::default();
    let mut model = Model::new(&ModelOptions::new()).unwrap();
    model.set_weights_provider(MapProvider::new(tiny_weights(), &counters)).unwrap();
    drop(model);
    assert_eq!(Counters::get(&counters.drops), 1);

    // Failed mid-run on the second weight.
    let counters = Counters::default();
    let mut model = Model::new(&ModelOptions::new().threads(1)).unwrap();
    let mut p = MapProvider::new(tiny_weights(), &counters);
    p.fail_on = Some("v.bin".to_string());
    model.set_weights_provider(p).unwrap();
    model.load_str(TINY_MODEL, None).unwrap();
    model.push("x", &[1, 4], &X).unwrap();
    assert!(model.run().is_err());
    drop(model);
    assert_eq!(Counters::get(&counters.drops), 1);
}

#[test]
fn model_is_send_and_runs_on_another_thread() {
    fn assert_send<T: Send>() {}
    assert_send::<Model>();
    let counters = Counters::default();
    let model = tiny_model(&counters);
    let model = std::thread::spawn(move || {
        let mut model = model;
        model.run().unwrap();
        model
    })
    .join()
    .unwrap();
    assert_eq!(y(&model), Y.to_vec());
}

#[test]
fn log_callback_receives_diagnostics() {
    let lines = Arc::new(Mutex::new(Vec::<(LogLevel, String)>::new()));
    let sink = lines.clone();
    let mut model = Model::new(&ModelOptions::new().threads(1)).unwrap();
    model
        .set_log_callback(LogLevel::Info, move |level, msg| {
            sink.lock().unwrap().push((level, msg.to_string()))
        })
        .unwrap();
    model.set_weights_provider(MapProvider::new(tiny_weights(), &Counters::default())).unwrap();
    model.load_str(TINY_MODEL, None).unwrap();
    let lines = lines.lock().unwrap();
    assert!(lines.iter().any(|(l, m)| *l >= LogLevel::Info && m.contains("2 ops")), "{:?}", *lines);
}

#[test]
fn builtin_providers_read_files() {
    let dir = std::env::temp_dir().join(format!("onnxstream-rust-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("model.txt"), TINY_MODEL).unwrap();
    for (name, bytes) in tiny_weights() {
        std::fs::write(dir.join(name), bytes).unwrap();
    }
    for provider in
        [BuiltinProvider::NoCache, BuiltinProvider::Prefetch, BuiltinProvider::Mmap, BuiltinProvider::Ram]
    {
        let mut model = Model::new(&ModelOptions::new().threads(1).provider(provider)).unwrap();
        model.load(&dir).unwrap();
        model.push("x", &[1, 4], &X).unwrap();
        model.run().unwrap();
        assert_eq!(y(&model), Y.to_vec(), "{:?}", provider);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn max_bytes_budget_gives_out_of_memory_and_a_bigger_one_runs() {
    let counters = Counters::default();
    // 16 bytes: the pushed input (1x4 f32) fits exactly, the first weight or activation does not.
    let mut model = Model::new(&ModelOptions::new().threads(1).max_bytes(Some(16))).unwrap();
    model.set_weights_provider(MapProvider::new(tiny_weights(), &counters)).unwrap();
    model.load_str(TINY_MODEL, None).unwrap();
    model.push("x", &[1, 4], &X).unwrap();
    let e = model.run().unwrap_err();
    assert_eq!(e.status(), Status::OutOfMemory);
    assert!(e.message().contains("max_bytes"), "{}", e.message());
    // A second model with no budget runs the same graph correctly.
    let mut roomy = Model::new(&ModelOptions::new().threads(1).max_bytes(None)).unwrap();
    roomy.set_weights_provider(MapProvider::new(tiny_weights(), &counters)).unwrap();
    roomy.load_str(TINY_MODEL, None).unwrap();
    roomy.push("x", &[1, 4], &X).unwrap();
    roomy.run().unwrap();
    assert_eq!(y(&roomy), Y.to_vec());
}

fn write_tiny_folder(dir: &Path) {
    std::fs::write(dir.join("model.txt"), TINY_MODEL).unwrap();
    for (name, bytes) in tiny_weights() {
        std::fs::write(dir.join(name), bytes).unwrap();
    }
}

#[test]
fn pack_weights_into_model_safetensors() {
    let tmp = TempDir::new("pack");
    let dir = tmp.path().join("packed");
    std::fs::create_dir(&dir).unwrap();
    write_tiny_folder(&dir);
    onnxstream::pack_weights(&dir, true).unwrap();
    let store = dir.join("model.safetensors");
    assert!(store.is_file());
    assert!(bin_files(&dir).is_empty(), "left behind: {:?}", bin_files(&dir));
    assert_eq!(std::fs::read_to_string(dir.join("model.txt")).unwrap(), TINY_MODEL);
    // 8-byte header length, the JSON header naming both tensors, then their 32 bytes of data.
    let bytes = std::fs::read(&store).unwrap();
    let mut n = [0u8; 8];
    n.copy_from_slice(&bytes[..8]);
    let header_len = u64::from_le_bytes(n) as usize;
    let header = std::str::from_utf8(&bytes[8..8 + header_len]).unwrap();
    assert!(header.contains("\"w\"") && header.contains("\"v\"") && header.contains("F32"), "{}", header);
    assert_eq!(bytes.len(), 8 + header_len + 32);
    for provider in
        [BuiltinProvider::NoCache, BuiltinProvider::Prefetch, BuiltinProvider::Mmap, BuiltinProvider::Ram]
    {
        let mut model = Model::new(&ModelOptions::new().threads(1).provider(provider)).unwrap();
        model.load(&dir).unwrap();
        model.push("x", &[1, 4], &X).unwrap();
        model.run().unwrap();
        assert_eq!(y(&model), Y.to_vec(), "{:?}", provider);
    }

    // A folder that already has its store is refused with the library's message, and left as it was.
    let e = onnxstream::pack_weights(&dir, true).unwrap_err();
    assert_eq!(e.status(), Status::InvalidArgument);
    assert!(
        e.message().contains(dir.to_str().unwrap()) && e.message().contains("model.safetensors"),
        "{}",
        e.message()
    );
    assert_eq!(std::fs::read(&store).unwrap(), bytes);

    // Without remove_files the .bin files stay next to the store.
    let kept = tmp.path().join("kept");
    std::fs::create_dir(&kept).unwrap();
    write_tiny_folder(&kept);
    onnxstream::pack_weights(&kept, false).unwrap();
    assert_eq!(std::fs::read(kept.join("model.safetensors")).unwrap(), bytes);
    assert_eq!(bin_files(&kept), vec!["v.bin".to_string(), "w.bin".to_string()]);
    let mut model = Model::open(&kept).unwrap();
    model.push("x", &[1, 4], &X).unwrap();
    model.run().unwrap();
    assert_eq!(y(&model), Y.to_vec());
    assert_eq!(onnxstream::pack_weights(&kept, false).unwrap_err().status(), Status::InvalidArgument);
}

#[test]
fn pack_weights_errors() {
    let tmp = TempDir::new("pack-errors");
    // No model.txt.
    let e = onnxstream::pack_weights(tmp.path().join("missing"), true).unwrap_err();
    assert_eq!(e.status(), Status::Io);
    assert!(e.message().contains("missing"), "{}", e.message());
    // model.txt does not parse.
    std::fs::write(tmp.path().join("model.txt"), "this is not model.txt\n").unwrap();
    assert_eq!(onnxstream::pack_weights(tmp.path(), true).unwrap_err().status(), Status::InvalidModel);
    // A weight file is missing: nothing is written.
    std::fs::write(tmp.path().join("model.txt"), TINY_MODEL).unwrap();
    std::fs::write(tmp.path().join("w.bin"), f32_bytes(&W)).unwrap();
    let e = onnxstream::pack_weights(tmp.path(), true).unwrap_err();
    assert_eq!(e.status(), Status::Io);
    assert!(e.message().contains("v.bin"), "{}", e.message());
    assert!(!tmp.path().join("model.safetensors").exists());
    assert_eq!(bin_files(tmp.path()), vec!["w.bin".to_string()]);
    // A path with a NUL byte never reaches the library.
    let e = onnxstream::pack_weights("a\0b", true).unwrap_err();
    assert_eq!(e.status(), Status::InvalidArgument);
    assert!(e.message().contains("NUL"), "{}", e.message());
}

#[test]
fn float64_and_wide_integer_tensors_keep_their_types() {
    let mut model = Model::new(&ModelOptions::new().threads(1)).unwrap();
    model
        .load_str("t:Add*input:x(2);y(2)*output:t(2)\nm:Max*input:a(2);b(2)*output:m(2)\n", None)
        .unwrap();
    // 2^40 + 0.5 needs float64's mantissa; 2^63 + 1 is beyond i64.
    model.push("x", &[2], &[1_099_511_627_776.5f64, -3.0]).unwrap();
    model.push("y", &[2], &[1.0f64, 0.25]).unwrap();
    model.push("a", &[2], &[(1u64 << 63) + 1, 7]).unwrap();
    model.push("b", &[2], &[5u64, u64::MAX]).unwrap();
    model.run().unwrap();
    let t = model.output_by_name("t").unwrap();
    assert_eq!(t.dtype(), DType::Float64);
    assert_eq!(t.data::<f64>().unwrap(), &[1_099_511_627_777.5, -2.75]);
    let m = model.output_by_name("m").unwrap();
    assert_eq!(m.dtype(), DType::UInt64);
    assert_eq!(m.data::<u64>().unwrap(), &[(1u64 << 63) + 1, u64::MAX]);
}
