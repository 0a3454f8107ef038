//! Writes the crafted captures of `testdata/` (see testgen/src/testdata.rs for what each holds).
//! Usage: gen-testdata [DIR]   (default: testdata)

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let dir = PathBuf::from(std::env::args().nth(1).unwrap_or_else(|| "testdata".into()));
    for (name, bytes) in roce_testgen::testdata::all() {
        let path = dir.join(&name);
        if let Some(parent) = path.parent() {
            if let Err(e) = std::fs::create_dir_all(parent) {
                eprintln!("gen-testdata: {}: {e}", parent.display());
                return ExitCode::from(2);
            }
        }
        if let Err(e) = std::fs::write(&path, &bytes) {
            eprintln!("gen-testdata: {}: {e}", path.display());
            return ExitCode::from(2);
        }
        println!("{} ({} bytes)", path.display(), bytes.len());
    }
    ExitCode::SUCCESS
}
