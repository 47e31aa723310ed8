//! Shared fixtures: a two-op model (Add then Mul, one weight each) served from memory.
#![allow(dead_code)]

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use onnxstream::{BoxError, Lease, WeightRequest, WeightsLender, WeightsProvider};

/// y = (x + w) * v, x: (1,4) input, w and v: 4-element weights.
pub const TINY_MODEL: &str = "add:Add*input:x(1,4);w.bin(float32:4)*output:a(1,4)\n\
                              mul:Mul*input:a(1,4);v.bin(float32:4)*output:y(1,4)\n";
pub const X: [f32; 4] = [1.0, 2.0, 3.0, 4.0];
pub const W: [f32; 4] = [10.0, 20.0, 30.0, 40.0];
pub const V: [f32; 4] = [2.0, 2.0, 2.0, 2.0];
pub const Y: [f32; 4] = [22.0, 44.0, 66.0, 88.0];

pub fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

pub fn tiny_weights() -> HashMap<String, Vec<u8>> {
    let mut m = HashMap::new();
    m.insert("w.bin".to_string(), f32_bytes(&W));
    m.insert("v.bin".to_string(), f32_bytes(&V));
    m
}

/// Counts calls; shared between a provider (moved into the model) and the test.
#[derive(Clone, Default)]
pub struct Counters {
    pub reads: Arc<AtomicUsize>,
    pub prefetches: Arc<AtomicUsize>,
    pub drops: Arc<AtomicUsize>,
    pub lends: Arc<AtomicUsize>,
    pub releases: Arc<AtomicUsize>,
}

impl Counters {
    pub fn get(c: &Arc<AtomicUsize>) -> usize {
        c.load(Ordering::SeqCst)
    }
}

/// Serves weights from an in-memory map; `fail_on` makes one file fail, `panic_on` one panic.
pub struct MapProvider {
    pub weights: HashMap<String, Vec<u8>>,
    pub counters: Counters,
    pub fail_on: Option<String>,
    pub panic_on: Option<String>,
}

impl MapProvider {
    pub fn new(weights: HashMap<String, Vec<u8>>, counters: &Counters) -> MapProvider {
        MapProvider { weights, counters: counters.clone(), fail_on: None, panic_on: None }
    }
}

impl WeightsProvider for MapProvider {
    fn read(&mut self, req: &WeightRequest<'_>, dst: &mut [u8]) -> Result<(), BoxError> {
        self.counters.reads.fetch_add(1, Ordering::SeqCst);
        let file = req.file();
        if self.fail_on.as_deref() == Some(&*file) {
            return Err(format!("disk on fire while reading {}", file).into());
        }
        if self.panic_on.as_deref() == Some(&*file) {
            panic!("provider exploded on {}", file);
        }
        let bytes = self.weights.get(&*file).ok_or_else(|| format!("no weight {}", file))?;
        dst.copy_from_slice(bytes);
        Ok(())
    }

    fn prefetch(&mut self, _req: &WeightRequest<'_>) {
        self.counters.prefetches.fetch_add(1, Ordering::SeqCst);
    }
}

impl Drop for MapProvider {
    fn drop(&mut self) {
        self.counters.drops.fetch_add(1, Ordering::SeqCst);
    }
}

/// Bytes lent to the engine; counts its own release (drop).
pub struct CountedBytes {
    pub bytes: Arc<[u8]>,
    pub releases: Arc<AtomicUsize>,
}

impl AsRef<[u8]> for CountedBytes {
    fn as_ref(&self) -> &[u8] {
        &self.bytes
    }
}

impl Drop for CountedBytes {
    fn drop(&mut self) {
        self.releases.fetch_add(1, Ordering::SeqCst);
    }
}

/// Lends weights from an in-memory map without copying.
pub struct MapLender {
    pub weights: HashMap<String, Arc<[u8]>>,
    pub counters: Counters,
    /// Lend this many bytes fewer than asked (to test the size check).
    pub short_by: usize,
}

impl MapLender {
    pub fn new(weights: HashMap<String, Vec<u8>>, counters: &Counters) -> MapLender {
        MapLender {
            weights: weights.into_iter().map(|(k, v)| (k, Arc::from(v))).collect(),
            counters: counters.clone(),
            short_by: 0,
        }
    }
}

impl WeightsLender for MapLender {
    fn lend(&mut self, req: &WeightRequest<'_>) -> Result<Lease, BoxError> {
        let bytes = self.weights.get(&*req.file()).ok_or_else(|| format!("no weight {}", req.file()))?;
        let bytes: Arc<[u8]> =
            if self.short_by > 0 { Arc::from(&bytes[self.short_by..]) } else { bytes.clone() };
        self.counters.lends.fetch_add(1, Ordering::SeqCst);
        Ok(Lease::new(CountedBytes { bytes, releases: self.counters.releases.clone() }))
    }

    fn prefetch(&mut self, _req: &WeightRequest<'_>) {
        self.counters.prefetches.fetch_add(1, Ordering::SeqCst);
    }
}

impl Drop for MapLender {
    fn drop(&mut self) {
        self.counters.drops.fetch_add(1, Ordering::SeqCst);
    }
}

/// `../shared` next to the repository (override: ONNXSTREAM_SHARED_DIR). None (the test is skipped)
/// when absent, unless ONNXSTREAM_REQUIRE_SHARED is set (meson sets it), then it is a failure.
pub fn shared_dir() -> Option<PathBuf> {
    let dir = match std::env::var_os("ONNXSTREAM_SHARED_DIR") {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared"),
    };
    if dir.join("models/yolov8n/model.txt").is_file() {
        return Some(dir);
    }
    if std::env::var_os("ONNXSTREAM_REQUIRE_SHARED").is_some() {
        panic!("{} has no models/yolov8n (ONNXSTREAM_REQUIRE_SHARED is set)", dir.display());
    }
    eprintln!("skipped: {} has no models/yolov8n (set ONNXSTREAM_SHARED_DIR)", dir.display());
    None
}

/// Reads a raw little-endian f32 file.
pub fn read_f32(path: &std::path::Path) -> Vec<f32> {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {}", path.display(), e));
    bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect()
}

/// Reads a little-endian float32 .npy file (the onnxstream-run --output-dir format).
pub fn read_npy_f32(path: &std::path::Path) -> (Vec<i64>, Vec<f32>) {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {}", path.display(), e));
    assert_eq!(&bytes[..6], b"\x93NUMPY", "{} is not .npy", path.display());
    let (header_len, start) = if bytes[6] == 1 {
        (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10)
    } else {
        (u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize, 12)
    };
    let header = std::str::from_utf8(&bytes[start..start + header_len]).unwrap();
    assert!(header.contains("'<f4'"), "{}: not little-endian float32: {}", path.display(), header);
    let shape_text = &header[header.find("'shape': (").unwrap() + 10..];
    let shape_text = &shape_text[..shape_text.find(')').unwrap()];
    let shape =
        shape_text.split(',').filter(|s| !s.trim().is_empty()).map(|s| s.trim().parse().unwrap()).collect();
    let data = bytes[start + header_len..]
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    (shape, data)
}

/// ||a - b|| / ||b||.
pub fn rel_l2(a: &[f32], b: &[f32]) -> f64 {
    assert_eq!(a.len(), b.len());
    let (mut num, mut den) = (0f64, 0f64);
    for (x, y) in a.iter().zip(b) {
        num += (*x as f64 - *y as f64).powi(2);
        den += (*y as f64).powi(2);
    }
    (num / den.max(1e-30)).sqrt()
}

/// A fresh folder under the system temp dir, removed (with its content) when dropped, even when the test
/// fails.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::SeqCst);
        let dir = std::env::temp_dir().join(format!("onnxstream-rust-{}-{}-{}", tag, std::process::id(), n));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {}", dir.display(), e));
        TempDir(dir)
    }

    pub fn path(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Copies every file of `from` into `to` (created), e.g. a model folder.
pub fn copy_folder(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            std::fs::copy(&path, to.join(path.file_name().unwrap()))
                .unwrap_or_else(|e| panic!("copy {}: {}", path.display(), e));
        }
    }
}

/// The names of the .bin files of `dir`, sorted.
pub fn bin_files(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".bin"))
        .collect();
    names.sort();
    names
}
