//! Runs any model.txt model, like the C CLI onnxstream-run, and shows the Rust weights providers.
//!
//!     cargo run --example run -- MODEL_DIR --input NAME=FILE.bin [--input ...] [--threads N]
//!         [--weights nocache|prefetch|mmap|ram|rust-file|rust-memory|rust-lend] [--runs N] [--output-dir DIR]
//!
//! FILE is raw little-endian data whose shape is model.txt's declaration of NAME; the dtype is picked
//! by the file size (float32, int64, float16 or uint8). `rust-*` serve the weights from Rust:
//! `rust-file` reads each file when asked (the callback counterpart of `nocache`), `rust-memory`
//! copies from a map loaded up front, `rust-lend` lends the map's bytes without copying.
//! --output-dir writes each output as raw NAME.bin.

use std::collections::HashMap;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use onnxstream::{
    BoxError, BuiltinProvider, DType, Lease, Model, ModelOptions, WeightRequest, WeightsLender,
    WeightsProvider,
};

const USAGE: &str = "usage: run MODEL_DIR --input NAME=FILE.bin [--input ...] [--threads N] \
[--weights nocache|prefetch|mmap|ram|rust-file|rust-memory|rust-lend] [--runs N] [--output-dir DIR]";

struct FileReader(PathBuf);

impl WeightsProvider for FileReader {
    fn read(&mut self, req: &WeightRequest<'_>, dst: &mut [u8]) -> Result<(), BoxError> {
        File::open(self.0.join(&*req.file()))?.read_exact(dst)?;
        Ok(())
    }
}

struct Memory(HashMap<String, Arc<[u8]>>);

impl WeightsProvider for Memory {
    fn read(&mut self, req: &WeightRequest<'_>, dst: &mut [u8]) -> Result<(), BoxError> {
        dst.copy_from_slice(self.0.get(&*req.file()).ok_or("weight not in memory")?);
        Ok(())
    }
}

impl WeightsLender for Memory {
    fn lend(&mut self, req: &WeightRequest<'_>) -> Result<Lease, BoxError> {
        Ok(Lease::new(self.0.get(&*req.file()).ok_or("weight not in memory")?.clone()))
    }
}

fn load_all(dir: &Path) -> Result<HashMap<String, Arc<[u8]>>, BoxError> {
    let mut map = HashMap::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.extension().map_or(false, |e| e == "bin") {
            map.insert(
                path.file_name().unwrap().to_string_lossy().into_owned(),
                Arc::from(std::fs::read(&path)?),
            );
        }
    }
    Ok(map)
}

fn main() {
    if let Err(e) = real_main() {
        eprintln!("run: {}", e);
        std::process::exit(1);
    }
}

fn real_main() -> Result<(), BoxError> {
    let mut model_path: Option<PathBuf> = None;
    let mut inputs = Vec::new();
    let (mut threads, mut runs) = (0usize, 1usize);
    let mut weights = "prefetch".to_string();
    let mut output_dir: Option<PathBuf> = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{} needs a value\n{}", a, USAGE));
        match a.as_str() {
            "--input" => {
                let v = value()?;
                let eq = v.find('=').ok_or_else(|| format!("--input expects NAME=FILE, got '{}'", v))?;
                inputs.push((v[..eq].to_string(), PathBuf::from(&v[eq + 1..])));
            }
            "--threads" => threads = value()?.parse()?,
            "--runs" => runs = value()?.parse::<usize>()?.max(1),
            "--weights" => weights = value()?,
            "--output-dir" => output_dir = Some(PathBuf::from(value()?)),
            "-h" | "--help" => {
                println!("{}", USAGE);
                return Ok(());
            }
            s if s.starts_with('-') => return Err(format!("unknown option {}\n{}", s, USAGE).into()),
            _ if model_path.is_none() => model_path = Some(PathBuf::from(&a)),
            _ => return Err(format!("unexpected argument '{}'\n{}", a, USAGE).into()),
        }
    }
    let model_path = model_path.ok_or(USAGE)?;
    let model_dir = if model_path.is_dir() {
        model_path.clone()
    } else {
        model_path.parent().map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from("."))
    };

    let builtin = match weights.as_str() {
        "nocache" => BuiltinProvider::NoCache,
        "mmap" => BuiltinProvider::Mmap,
        "ram" => BuiltinProvider::Ram,
        _ => BuiltinProvider::Prefetch,
    };
    let mut model = Model::new(&ModelOptions::new().threads(threads).provider(builtin))?;
    match weights.as_str() {
        "nocache" | "prefetch" | "mmap" | "ram" => {}
        "rust-file" => model.set_weights_provider(FileReader(model_dir.clone()))?,
        "rust-memory" => model.set_weights_provider(Memory(load_all(&model_dir)?))?,
        "rust-lend" => model.set_weights_lender(Memory(load_all(&model_dir)?))?,
        other => return Err(format!("unknown --weights {}\n{}", other, USAGE).into()),
    }
    model.load(&model_path)?;

    let declared = model.inputs()?;
    for (name, file) in &inputs {
        let bytes = std::fs::read(file).map_err(|e| format!("{}: {}", file.display(), e))?;
        let decl = declared.iter().find(|i| &i.name == name).ok_or_else(|| {
            format!(
                "'{}' is not an input (inputs: {:?})",
                name,
                declared.iter().map(|i| &i.name).collect::<Vec<_>>()
            )
        })?;
        let n: i64 = decl.shape.iter().product();
        let dtype = [DType::Float32, DType::Int64, DType::Float16, DType::UInt8]
            .into_iter()
            .find(|d| n as usize * d.size() == bytes.len())
            .ok_or_else(|| {
                format!(
                    "{} has {} bytes, which fits no dtype for {} elements",
                    file.display(),
                    bytes.len(),
                    n
                )
            })?;
        model.push_bytes(name, dtype, &decl.shape, &bytes)?;
    }

    for r in 1..=runs {
        let start = Instant::now();
        model.run()?;
        let s = model.run_stats()?;
        println!(
            "run {}: {:.1} ms (weights: {:.1} MB read in {:.1} ms, waited {:.1} ms)",
            r,
            start.elapsed().as_secs_f64() * 1e3,
            s.weight_bytes_read as f64 / 1e6,
            s.weight_read_time.as_secs_f64() * 1e3,
            s.weight_wait_time.as_secs_f64() * 1e3
        );
    }
    if let Some(dir) = &output_dir {
        std::fs::create_dir_all(dir)?;
    }
    for out in model.outputs()? {
        let mut line = format!("output {}: {} {:?}", out.name(), out.dtype(), out.shape());
        if let Ok(v) = out.to_f32_vec() {
            let (lo, hi) =
                v.iter().fold((f32::INFINITY, f32::NEG_INFINITY), |(l, h), &x| (l.min(x), h.max(x)));
            let mean = v.iter().map(|&x| x as f64).sum::<f64>() / v.len().max(1) as f64;
            line += &format!(" min {} max {} mean {:.6}", lo, hi, mean);
        }
        if let Some(dir) = &output_dir {
            let file = dir.join(format!("{}.bin", out.name()));
            std::fs::write(&file, out.bytes())?;
            line += &format!(" -> {}", file.display());
        }
        println!("{}", line);
    }
    let m = model.memory_stats()?;
    println!("peak tensor bytes: {:.1} MB", m.peak_bytes as f64 / 1e6);
    Ok(())
}
