//! Decoding in parallel changes nothing: the report and the per-frame output are byte-identical
//! whatever the number of threads.

mod common;

use common::*;

#[test]
fn threads_do_not_change_any_output() {
    for file in [
        "sample.pcap",
        "decode_all.pcap",
        "damaged.pcap",
        "analysis_psn.pcap",
        "formats/multi_interface.pcapng",
        "no_roce.pcap",
    ] {
        let path = testdata(file);
        for mode in [
            &["--json"][..],
            &["--packets", "--json"][..],
            &["--packets"][..],
            // Times are relative to the capture's first frame, shown or not (one thread used
            // to count from the first frame shown).
            &["--packets", "--roce-only"][..],
            &[][..],
        ] {
            let outputs: Vec<(Option<i32>, Vec<u8>)> = ["1", "2", "3"]
                .iter()
                .map(|t| {
                    let mut args = mode.to_vec();
                    args.extend_from_slice(&["--threads", t]);
                    let o = run_path(&path, &args);
                    (o.status.code(), o.stdout)
                })
                .collect();
            assert!(!outputs[0].1.is_empty(), "{file} {mode:?}");
            assert!(
                outputs.windows(2).all(|w| w[0] == w[1]),
                "{file} {mode:?}: output depends on --threads"
            );
        }
    }
}

#[test]
fn a_mapped_file_and_a_read_one_give_the_same_output() {
    // sample.pcap is large enough to be memory-mapped; --no-mmap reads it in blocks.
    let path = testdata("sample.pcap");
    assert!(std::fs::metadata(&path).unwrap().len() >= 1 << 20);
    for mode in [&["--json"][..], &["--packets", "--json"][..]] {
        let mapped = run_path(&path, mode);
        let read = run_path(&path, &[mode, &["--no-mmap"]].concat());
        assert_eq!(mapped.status.code(), Some(0), "{mode:?}");
        assert_eq!(read.status.code(), Some(0), "{mode:?}");
        assert!(!mapped.stdout.is_empty());
        assert!(
            mapped.stdout == read.stdout,
            "{mode:?}: output depends on --no-mmap"
        );
    }
}
