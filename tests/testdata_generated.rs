//! The committed captures of testdata/ are exactly what the generator writes: anyone can
//! regenerate them (`cargo run --bin gen-testdata`) and every expected value is known.

use std::path::PathBuf;

#[test]
fn committed_testdata_matches_the_generator() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("testdata");
    for (name, bytes) in roce_testgen::testdata::all() {
        let on_disk = std::fs::read(dir.join(&name))
            .unwrap_or_else(|e| panic!("testdata/{name}: {e}; run `cargo run --bin gen-testdata`"));
        assert!(
            on_disk == bytes,
            "testdata/{name} differs from the generator; run `cargo run --bin gen-testdata`"
        );
    }
}
